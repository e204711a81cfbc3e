"""The `kueue-graphql` command: checks every KUEUE_GRAPHQL_* variable, reads the flags
(arguments.py, from the settings model in settings.py), and dispatches: `serve` (serve.py),
`schema`, and the local runs `why` and `fits` (local.py, rendered by render.py)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence

from kueue_graphql.cli import local, serve
from kueue_graphql.cli.arguments import _parser
from kueue_graphql.cli.settings import SettingError, unknown_variable
from kueue_graphql.graph.schema import schema_sdl

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
    if args.command == "schema":
        sys.stdout.write(schema_sdl())
        return 0
    if args.command == "why":
        return asyncio.run(local.why(args))
    if args.command == "fits":
        return asyncio.run(local.fits(args))
    return serve.run(args)
