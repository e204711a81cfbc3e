"""Analysis units and analysis CPU per document: the largest legitimate queries, the bombs, and
documents built to be as slow as the default limits allow.

No control plane needed: the documents are analysed in this process exactly as the server does
(DocumentChecks.analyse: parse, measure, validate). Run by hand or `make bench-units`; it
prints figures and asserts nothing:

    uv run python benchmarks/analysis_units.py [--repeats 7]

Printed per document: its units (what the decision is made on, the same on every machine), the
decision with the default limits (the limit that refused it), and the analysis CPU
(time.thread_time, the median and the minimum of `--repeats` runs) with the CPU per unit. The
units limit and the wall-clock backstop (docs/service.md, *Limits*) are set from these: the
backstop far above the slowest document any default limit lets through.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from graphql import GraphQLError, parse, specified_rules

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kueue_graphql.graph.query_cost import (  # noqa: E402
    QueryLimits,
    QueryRefusedError,
    measure_document,
)
from kueue_graphql.graph.schema import build_schema  # noqa: E402
from tests import query_bombs as bombs  # noqa: E402
from tests.legit_queries import diagnosis_query, docs_queries  # noqa: E402

# Limits lifted so that a refused document's units can still be counted.
UNLIMITED = QueryLimits(**bombs.EVERY_LIMIT_BUT_UNITS, max_analysis_units=10**100)


def documents() -> list[tuple[str, str]]:
    schema = build_schema()._schema
    # The three with the most units, as docs/service.md's table lists them.
    docs = sorted(
        docs_queries(), key=lambda item: -measure_document(parse(item[1]), UNLIMITED).units
    )[:3]
    return [
        *((f"docs {where}", text) for where, text in docs),
        ("every Diagnosis field, depth 3", diagnosis_query(schema)),
        # As slow as the default limits allow: the most fields the tokens allow (unknown
        # ones, so validation also looks for suggestions), and the most comparisons.
        ("1,990 unknown fields", "{ " + " ".join(f"f{i}" for i in range(1990)) + " }"),
        ("141 same fields (9,870 comparisons)", bombs.field_bomb(141)),
        *((f"bomb: fan-out {n}", bombs.fan_out(n)) for n in (12, 20, 40)),
        ("bomb: alias fan-out 12", bombs.alias_fan_out(12)),
        ("bomb: 600 aliases", bombs.alias_bomb(600)),
        ("bomb: 1,900 same fields", bombs.field_bomb(1900)),
        ("bomb: 600-level nesting", bombs.nesting_bomb(600)),
    ]


def units(text: str) -> str:
    try:
        return f"{measure_document(parse(text, max_tokens=10**6), UNLIMITED).units:.3g}"
    except (QueryRefusedError, GraphQLError, RecursionError) as error:
        return f"- ({type(error).__name__})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    strawberry_schema = build_schema()
    checks, schema = strawberry_schema.checks, strawberry_schema._schema  # type: ignore[attr-defined]
    rules = tuple(specified_rules)
    limits = QueryLimits()
    print(
        f"defaults: --max-analysis-units {limits.max_analysis_units}, "
        f"backstop --max-analysis-ms {limits.max_analysis_seconds * 1000:g}"
    )
    print(
        f"{'document':38} {'units':>9} {'decision (default limits)':40} "
        f"{'CPU ms med/min':>15} {'us/unit':>8}"
    )
    for label, text in documents():
        seconds = []
        errors: list[str] = []
        for _ in range(args.repeats):
            started = time.thread_time()
            _, found = checks.analyse(schema, text, rules)
            seconds.append(time.thread_time() - started)
            errors = [error.message for error in found]
        decision = "accepted" if not errors else "refused: " + errors[0][:30]
        counted = units(text)
        median, least = statistics.median(seconds) * 1000, min(seconds) * 1000
        per_unit = (
            f"{median * 1000 / float(counted):.1f}" if counted[0].isdigit() and not errors else "-"
        )
        print(f"{label:38} {counted:>9} {decision:40} {median:7.1f}/{least:<7.1f} {per_unit:>8}")


if __name__ == "__main__":
    main()
