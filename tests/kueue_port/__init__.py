"""Kueue's own scheduler integration tests (v0.17.0), ported as data and run on the real Kueue."""
