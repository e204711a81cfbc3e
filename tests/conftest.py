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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `disrupts_cluster` (tests/service/test_fault.py freezes kube-apiserver) run
    after all others: the subscription load test that opens 60 subscriptions timed out when it
    ran after the fault test in the same process, even 20 s after the API server was back."""
    disruptive = [item for item in items if item.get_closest_marker("disrupts_cluster")]
    if disruptive:
        kept = [item for item in items if not item.get_closest_marker("disrupts_cluster")]
        items[:] = kept + disruptive
