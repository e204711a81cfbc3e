"""The one error of configuring the Kubernetes client, apart from the client itself: the CLI
catches it without importing kubernetes_asyncio (kube/transport.py raises it)."""

from __future__ import annotations

__all__ = ["KubeConfigError"]


class KubeConfigError(Exception):
    """The Kubernetes client cannot be configured; the message says what to do."""
