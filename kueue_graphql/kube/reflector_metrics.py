"""The reflectors' state on /metrics, labelled by resource (`workloads`, `clusterqueues`):
computed when scraped, so the reflectors pay nothing per event for it.

Mirrors k8s.io/client-go@v0.36.3/tools/cache/reflector_metrics.go in purpose; the series names
(`kueue_graphql_cache_*`) are this service's.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kueue_graphql.kube.reflector import Reflector


class ReflectorCollector(Collector):
    """Every reflector's state, read at scrape time (see the module docstring)."""

    def __init__(self, reflectors: Iterable[Reflector]) -> None:
        self._reflectors = list(reflectors)

    def collect(self) -> Iterator[Metric]:
        labels = ["resource"]
        objects = GaugeMetricFamily(
            "kueue_graphql_cache_objects",
            "Objects in the cache read mode's store of each Kueue kind.",
            labels=labels,
        )
        synced = GaugeMetricFamily(
            "kueue_graphql_cache_synced",
            "1 once the kind's first complete list is in the store, else 0 (/readyz waits).",
            labels=labels,
        )
        age = GaugeMetricFamily(
            "kueue_graphql_cache_last_event_age_seconds",
            "Seconds since the kind's informer last heard from the API server (a list, an "
            "event, a bookmark or a watch opened); the API server ends each watch after 60 s.",
            labels=labels,
        )
        version = GaugeMetricFamily(
            "kueue_graphql_cache_resource_version",
            "The resourceVersion the kind's store is at (etcd's revision; numeric).",
            labels=labels,
        )
        lists = CounterMetricFamily(
            "kueue_graphql_cache_lists",
            "Complete lists of the kind, the first one included (re-lists: this minus 1).",
            labels=labels,
        )
        gone = CounterMetricFamily(
            "kueue_graphql_cache_watch_gone",
            "Watches ended by 410 Gone (the resourceVersion was too old): each one re-lists.",
            labels=labels,
        )
        watches = CounterMetricFamily(
            "kueue_graphql_cache_watches",
            "Watch streams opened for the kind (the API server ends each after 60 s; "
            "restarts: this minus 1).",
            labels=labels,
        )
        events = CounterMetricFamily(
            "kueue_graphql_cache_watch_events",
            "Watch events applied to the kind's store (ADDED, MODIFIED, DELETED, BOOKMARK).",
            labels=labels,
        )
        failures = CounterMetricFamily(
            "kueue_graphql_cache_failures",
            "Failed lists or watches of the kind (connection errors, 5xx, timeouts), each "
            "followed by a backoff.",
            labels=labels,
        )
        now = time.monotonic()
        for reflector in self._reflectors:
            status, label = reflector.status, [reflector.resource.plural]
            objects.add_metric(label, reflector.store.size() if status.synced else 0)
            synced.add_metric(label, 1 if status.synced else 0)
            if status.heard_at is not None:
                age.add_metric(label, max(0.0, now - status.heard_at))
            if status.resource_version.isdigit():
                version.add_metric(label, float(status.resource_version))
            lists.add_metric(label, status.lists)
            gone.add_metric(label, status.gone)
            watches.add_metric(label, status.watches)
            events.add_metric(label, status.events)
            failures.add_metric(label, status.failures)
        yield from (objects, synced, age, version, lists, gone, watches, events, failures)
