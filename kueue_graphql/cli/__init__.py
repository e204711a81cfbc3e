"""The `kueue-graphql` command: checks every KUEUE_GRAPHQL_* variable, reads the flags
(arguments.py, from the settings model in settings.py), and dispatches: `serve` (serve.py),
`schema`, and the local runs `why` and `fits` (local.py, rendered by render.py)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence

from kueue_graphql.cli.arguments import _parser
from kueue_graphql.cli.settings import SettingError, unknown_variable

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    try:
        problem = unknown_variable(os.environ)
        if problem is not None:
            raise SettingError(problem)
        parser = _parser()
    except SettingError as refused:
        print(f"kueue-graphql: {refused}", file=sys.stderr)
        return 2
    try:
        args = parser.parse_args(argv)
    except SystemExit as ended:  # --help, --version, or a usage error already printed
        return ended.code if isinstance(ended.code, int) else 2
    # Each command imports what it uses, no more: `--help`, `--version` and a usage error load
    # neither the schema nor the Kubernetes client (benchmarks/cli_start.py measures it).
    if args.command == "schema":
        from kueue_graphql.graph.schema import schema_sdl

        sys.stdout.write(schema_sdl())
        return 0
    if args.command in ("why", "fits"):
        from kueue_graphql.cli import local

        return asyncio.run(local.why(args) if args.command == "why" else local.fits(args))
    from kueue_graphql.cli import serve

    return serve.run(args)
