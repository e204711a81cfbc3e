"""`kueue-graphql --help`, `--version`, a usage error and `why --server` load neither the
Kubernetes client nor the GraphQL schema (issue 24, item 7: --help cost 6.7 s of CPU when it
imported kubernetes_asyncio's 1,258 modules). Checked by the modules a fresh interpreter holds
after the command, not by timing it (benchmarks/cli_start.py prints the CPU seconds)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("kubernetes_asyncio", "strawberry", "graphql", "starlette", "uvicorn", "prometheus_client")

PROBE = """
import contextlib, io, json, sys
from kueue_graphql.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def _loaded(*argv: str) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return int(result["code"]), set(result["modules"])


@pytest.mark.parametrize(
    "argv",
    [("--help",), ("--version",), ("why", "--help"), ("fits", "--help"), ("serve", "--help"),
     ("no-such-command",)],
    ids=lambda argv: " ".join(argv),
)  # fmt: skip
def test_help_version_and_usage_errors_load_nothing_heavy(argv: tuple[str, ...]) -> None:
    code, modules = _loaded(*argv)
    assert code in (0, 2)
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))


def test_the_probe_sees_heavy_imports() -> None:
    # The check above is only worth something if the probe sees what a command imports.
    code, modules = _loaded("schema")
    assert code == 0
    assert {"strawberry", "graphql"} <= modules
