"""Shared fixtures. The `cluster` fixture gives every test the same real control plane."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from tests.cluster.driver import Cluster, running_cluster


@pytest.fixture(scope="session")
def cluster(pytestconfig: pytest.Config) -> Iterator[Cluster]:
    """The real kube-apiserver + Kueue from tests/cluster, started once per test run.

    A control plane already started with `make cluster-up` is reused and left running; otherwise
    one is started here and stopped (every process, and .cluster/) when the run ends.
    """
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    with contextlib.ExitStack() as lifetime:
        # Starting (and on a cold machine building) takes a while: let its progress through.
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            started = lifetime.enter_context(running_cluster())
        yield started
