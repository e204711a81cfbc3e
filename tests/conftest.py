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


# The markers that move tests to the end of the run, in this order.
RUN_LAST = ("changes_nodes", "disrupts_cluster")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `changes_nodes` (the TAS modules: test_topology.py, test_topology_whatif.py,
    kueue_port/test_tas_port.py add Nodes, then remove them) run after all others but the
    disruptive ones: kube-scheduler retries a Pending Pod when a Node is added, and its
    PodScheduled message then counts those Nodes ("0/8 nodes are available") until its next
    retry, minutes after they are gone; docs/why.md#3's printed answer ran into that. Tests
    marked `disrupts_cluster` (tests/service/test_fault.py freezes kube-apiserver) run last: the
    subscription load test that opens 60 subscriptions timed out when it ran after the fault test
    in the same process, even 20 s after the API server was back. Within each group the order
    is kept."""

    def rank(item: pytest.Item) -> int:
        marked = [i for i, name in enumerate(RUN_LAST) if item.get_closest_marker(name)]
        return marked[-1] + 1 if marked else 0

    items[:] = sorted(items, key=rank)
