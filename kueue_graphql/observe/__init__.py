"""What the process reports about itself: its Prometheus series (metrics.py), recorded by every
I/O layer above (kube/, auth/, graph/, http/); below kube/ and apart from the pure packages."""
