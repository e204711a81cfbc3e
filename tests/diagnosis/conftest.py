"""Reuse the service's real-server fixtures (tests/service/conftest.py) for diagnosis tests."""

from tests.service.conftest import read_mode, server, service_kubeconfig

__all__ = ["read_mode", "server", "service_kubeconfig"]
