"""The typed graph: one module per kind, the root Query composed in `query.py`."""
