"""Reuse the service's real-server fixtures (tests/service/conftest.py) for diagnosis tests."""

from tests.service.conftest import server, service_kubeconfig

__all__ = ["server", "service_kubeconfig"]
