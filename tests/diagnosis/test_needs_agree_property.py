"""Property: what a summary, a reason or a next step says a Workload needs is the quota lines'
number (issue 10). Pod sets are generated; the Workload, ClusterQueue and everything else are
the objects captured from the real control plane (too-big-3x1cpu), with spec.podSets, the
ClusterQueue's nominal quota and its reservation replaced, and Kueue's QuotaReserved message
written the way Kueue v0.17's flavor assigner writes it (pkg/scheduler/flavorassigner/
flavorassigner.go fitsResourceQuota: pod sets in order, each adding to what earlier ones took)."""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_graphql.diagnosis import Verdict, diagnose
from kueue_graphql.kueue.exact import format_quantity
from tests.diagnosis.captured import as_input, load

DATA = load("too-big-3x1cpu")
MILLI = [250, 500, 1000, 1500, 2000, 3000]

pod_sets = st.lists(
    st.tuples(st.integers(min_value=1, max_value=6), st.sampled_from(MILLI)),
    min_size=1,
    max_size=4,
)


def _workload(sets: list[tuple[int, int]], message: str) -> dict[str, Any]:
    wl = copy.deepcopy(DATA["workload"])
    template = wl["spec"]["podSets"][0]["template"]
    wl["spec"]["podSets"] = []
    for i, (count, milli) in enumerate(sets):
        t = copy.deepcopy(template)
        for c in t["spec"]["containers"]:
            c["resources"] = {"requests": {"cpu": f"{milli}m"}}
        wl["spec"]["podSets"].append({"name": f"ps{i}", "count": count, "template": t})
    wl["status"].pop("resourceRequests", None)
    for cond in wl["status"]["conditions"]:
        if cond["type"] == "QuotaReserved":
            cond["message"] = message
    return wl


def _cluster_queue(nominal_milli: int, reserved_milli: int) -> dict[str, Any]:
    cq = copy.deepcopy(DATA["clusterQueue"])
    for group in cq["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            for res in flavor["resources"]:
                if res["name"] == "cpu":
                    res["nominalQuota"] = f"{nominal_milli}m"
    cq["status"]["flavorsReservation"] = [
        {"name": "standard", "resources": [{"name": "cpu", "total": f"{reserved_milli}m"}]}
    ]
    return cq


def _kueue_message(sets: list[tuple[int, int]], nominal: int, reserved: int) -> str | None:
    """Kueue's message: a part per pod set that does not fit now, joined by "; "; the first
    that can never fit (NoFit) ends the walk. None: everything fits."""
    parts = []
    before = 0

    def q(v: int) -> str:
        return format_quantity(Decimal(f"{v}e-3"), "cpu")

    for i, (count, milli) in enumerate(sets):
        current = count * milli
        prefix = f"couldn't assign flavors to pod set ps{i}: "
        if before + current > nominal:
            parts.append(
                prefix + "insufficient quota for cpu in flavor standard, previously considered "
                f"podsets requests ({q(before)}) + current podset request ({q(current)}) > "
                f"maximum capacity ({q(nominal)})"
            )
            break
        if before + current > nominal - reserved:
            more = before + current - (nominal - reserved)
            parts.append(
                prefix + f"insufficient unused quota for cpu in flavor standard, {q(more)} more "
                "needed"
            )
        before += current
    return "; ".join(parts) or None


def _cpu_numbers(text: str) -> list[Decimal]:
    """Every "<n> cpu" amount a sentence states as what the Workload needs."""
    out = []
    for m in re.finditer(r"needs (?P<v>[0-9.]+m?) cpu", text):
        v = m.group("v")
        out.append(Decimal(f"{v[:-1]}e-3") if v.endswith("m") else Decimal(v))
    return out


@settings(max_examples=150, deadline=None)
@given(
    sets=pod_sets,
    nominal=st.integers(min_value=1, max_value=12).map(lambda n: n * 500),
    reserved_share=st.integers(min_value=0, max_value=4),
)
def test_summary_reasons_and_steps_state_the_quota_lines_number(
    sets: list[tuple[int, int]], nominal: int, reserved_share: int
) -> None:
    reserved = nominal * reserved_share // 4
    message = _kueue_message(sets, nominal, reserved)
    if message is None:
        return  # Kueue would have admitted it
    inp = as_input(DATA, "viewer")
    inp = replace(
        inp,
        workload=_workload(sets, message),
        cluster_queue=_cluster_queue(nominal, reserved),
        events=[],
    )
    d = diagnose(inp)
    [line] = [x for x in d.quota.lines if x.resource == "cpu"]
    total = Decimal(f"{sum(c * m for c, m in sets)}e-3")
    assert line.requested == total
    for r in d.reasons:
        if r.resource == "cpu" and r.number("requested") is not None:
            assert r.number("requested") == line.requested, r
    stated = _cpu_numbers(d.summary) + [n for s in d.next_steps for n in _cpu_numbers(s)]
    assert all(n == line.requested for n in stated), (d.summary, d.next_steps, line.requested)
    if line.requested > Decimal(f"{nominal}e-3"):
        assert line.verdict is Verdict.NEVER_FITS
        assert stated, d.summary  # the need is said, with the line's number
