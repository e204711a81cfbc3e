"""Shared fixtures. The `cluster` fixture gives every test the same real control plane."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster.driver import Cluster, running_cluster


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    """The real kube-apiserver + Kueue from tests/cluster, started once per test run.

    A control plane already started with `make cluster-up` is reused and left running; otherwise
    one is started here and stopped (every process, and .cluster/) when the run ends.
    """
    with running_cluster() as started:
        yield started
