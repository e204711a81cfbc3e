"""The stage handlers of a diagnosis, grouped by where the Workload is on the admission path."""
