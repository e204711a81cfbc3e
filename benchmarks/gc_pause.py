"""What `gc.freeze()` after the cache's sync saves: one full garbage collection's pause with
10,000 cached Workloads, tracked and frozen. No control plane needed:

    uv run python benchmarks/gc_pause.py [--workloads 10000]

It fills the Workload store (kube/store.py, indexed by lookups/cache_indexes.py, as a
reflector's list does) with Workloads shaped
like `make bench-scale`'s pending ones as the API server returns them (metadata, spec, a
QuotaReserved=False condition, resourceRequests; managedFields stripped as on ingest), then
times `gc.collect()` three times before and after `gc.freeze()`. In the server a full
collection runs on the event loop: every request waits for it.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from typing import Any

from scale import workload

from kueue_graphql.kube.resources import WORKLOAD
from kueue_graphql.lookups.cache_indexes import kueue_store


def as_listed(index: int) -> dict[str, Any]:
    obj = workload(index)
    obj["metadata"].update(
        uid=f"uid-{index}",
        resourceVersion=str(index),
        creationTimestamp="2026-12-03T00:00:00Z",
        generation=1,
    )
    obj["status"] = {
        "conditions": [
            {
                "type": "QuotaReserved",
                "status": "False",
                "reason": "Pending",
                "message": "couldn't assign flavors to pod set main: insufficient quota for cpu",
                "lastTransitionTime": "2026-12-03T00:00:00Z",
                "observedGeneration": 1,
            }
        ],
        "resourceRequests": [{"name": "main", "resources": {"cpu": "1", "memory": "64Mi"}}],
    }
    decoded: dict[str, Any] = json.loads(json.dumps(obj))  # fresh objects, as decoded
    return decoded


def full_collection_ms() -> float:
    started = time.perf_counter()
    gc.collect()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", type=int, default=10_000)
    args = parser.parse_args()
    store = kueue_store(WORKLOAD)
    store.replace([as_listed(i) for i in range(args.workloads)], "1")
    gc.collect()
    print(f"{store.size()} Workloads cached; {len(gc.get_objects())} objects tracked by the GC")
    tracked = [full_collection_ms() for _ in range(3)]
    gc.freeze()
    frozen = [full_collection_ms() for _ in range(3)]
    print("full collection, tracked: " + " ".join(f"{ms:.1f}" for ms in tracked) + " ms")
    print("full collection, frozen:  " + " ".join(f"{ms:.1f}" for ms in frozen) + " ms")


if __name__ == "__main__":
    main()
