"""The server the benchmark measures: the app `kueue-graphql serve` runs, on a loopback port.

    python benchmarks/server.py <kubeconfig> <port> [cache-ttl-seconds|default] [read-mode]

Without a TTL (or with `default`) the settings are the defaults of `kueue-graphql serve`. With
one, both per-identity caches (TokenReview answers and access decisions) use it; 0 turns them
off, so every request pays its TokenReview and SubjectAccessReviews ("cold"). The read mode is
`impersonate` (the default) or `cache` (`serve --read-mode`). The CLI has no flag for the
TokenReview cache, hence this small launcher.
"""

from __future__ import annotations

import sys

import uvicorn

from kueue_graphql.http import ReadMode, ServerSettings, build_app


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
    uvicorn.run(build_app(settings), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(sys.argv[1:])
