"""The server the benchmark measures: the app `kueue-graphql serve` runs, on a loopback port.

    python benchmarks/server.py <kubeconfig> <port> [cache-ttl-seconds|default] [read-mode]

Without a TTL (or with `default`) the settings are the defaults of `kueue-graphql serve`. With
one, both per-identity caches (TokenReview answers and access decisions) use it; 0 turns them
off, so every request pays its TokenReview and SubjectAccessReviews ("cold"). The read mode is
`impersonate` (the default) or `cache` (`serve --read-mode`). The CLI has no flag for the
TokenReview cache, hence this small launcher.

`KGQL_BENCH_SUBSCRIPTIONS=N` (set by `benchmarks/live.py`) raises the subscription caps per
identity and in total to at least N, as an operator would with `--max-subscriptions-per-identity`
and `--max-subscriptions`: the benchmark opens N subscriptions as two users.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from dataclasses import replace

import heap

from kueue_graphql.http import ReadMode, ServerSettings, build_app
from kueue_graphql.http.server import Listener, listening_server


def dump_tasks(*_: object) -> None:
    """SIGUSR1: every live asyncio task's await chain on stderr (what outlives a client)."""
    for task in asyncio.all_tasks():
        print(f"--- {task.get_name()}", file=sys.stderr)
        awaited: object = task.get_coro()
        while awaited is not None:
            frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "ag_frame", None)
            if frame is not None:
                print(
                    f"  {frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}",
                    file=sys.stderr,
                )
            awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "ag_await", None)
    sys.stderr.flush()


def main(argv: list[str]) -> None:
    kubeconfig, port = argv[0], int(argv[1])
    read_mode = ReadMode(argv[3]) if len(argv) > 3 else ReadMode.IMPERSONATE
    settings = ServerSettings(kubeconfig=kubeconfig, read_mode=read_mode)
    if len(argv) > 2 and argv[2] != "default":
        ttl = float(argv[2])
        settings = ServerSettings(
            kubeconfig=kubeconfig,
            authz_cache_ttl_seconds=ttl,
            token_cache_ttl_seconds=ttl,
            read_mode=read_mode,
        )
    subscriptions = int(os.environ.get("KGQL_BENCH_SUBSCRIPTIONS", "0"))
    if subscriptions:
        live = settings.live_limits
        settings = replace(
            settings,
            live_limits=replace(
                live,
                per_identity=max(live.per_identity, subscriptions),
                total=max(live.total, subscriptions),
            ),
        )
    signal.signal(signal.SIGUSR1, dump_tasks)
    heap_report = os.environ.get("KGQL_BENCH_HEAP_REPORT")
    if heap_report:
        heap.install(heap_report, trim=os.environ.get("KGQL_BENCH_TRIM") == "1")
    # /metrics on the next port (benchmarks' convention: admission_path.metrics_url).
    listening_server(
        build_app(settings),
        settings,
        api=Listener("127.0.0.1", port),
        metrics=Listener("127.0.0.1", port + 1),
        log_level="warning",
    ).run()


if __name__ == "__main__":
    main(sys.argv[1:])
