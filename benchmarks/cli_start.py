"""CPU seconds to start `kueue-graphql` for commands that need neither the API server nor the
schema (issue 24, item 7: target < 0.5 s for --help), beside a bare `python -c pass` in the same
run (the ideal: an interpreter that does nothing). `schema` (which builds the schema) is shown
for scale. No control plane needed.

    make bench-cli            # or: uv run --frozen python benchmarks/cli_start.py --repeats 5
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys

COMMANDS = [
    ("python -c pass (ideal)", [sys.executable, "-c", "pass"]),
    ("--help", [sys.executable, "-m", "kueue_graphql.cli", "--help"]),
    ("--version", [sys.executable, "-m", "kueue_graphql.cli", "--version"]),
    ("why --help", [sys.executable, "-m", "kueue_graphql.cli", "why", "--help"]),
    ("a usage error", [sys.executable, "-m", "kueue_graphql.cli", "no-such-command"]),
    ("schema (builds the schema)", [sys.executable, "-m", "kueue_graphql.cli", "schema"]),
]


def cpu_seconds(argv: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; {args.repeats} runs each; CPU s (user+sys)")
    ideal = None
    for name, argv in COMMANDS:
        runs = [cpu_seconds(argv) for _ in range(max(1, args.repeats))]
        median = statistics.median(runs)
        ideal = median if ideal is None else ideal
        print(f"  {name:<28} median {median:.3f}  min {min(runs):.3f}  x{median / ideal:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
