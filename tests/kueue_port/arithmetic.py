"""One source of arithmetic (issue 21, item 3), held over every Workload of the ported cases.

For a one-pod-set Workload waiting for quota, diagnosed while the caller may read its quota:
the quota line's `requested` is the Workload's own request, and every "N more" figure of the
summary (its current part: what diagnose marks earlier follows " [earlier, no longer current:"),
of the reasons and of the next steps is that line's requested - availableNow. Kueue's own "N
more needed" must be that figure too, unless diagnose reports it as Kueue's earlier attempt
(Kueue writes the message at its last attempt for the Workload and does not rewrite it when
the ClusterQueue's usage changes without a new attempt). whatIf, asked for the same state
(before the Workload's creation), must say Kueue's figure wherever Kueue's is current.
A difference is a disagreement (agreement.py counts it).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from kueue_graphql.kueue.exact import parse_quantity

__all__ = ["EARLIER", "diagnose_differs", "kueue_figures", "what_if_differs"]

Obj = dict[str, Any]
EARLIER = " [earlier, no longer current:"
_NAME = r"([a-z0-9][a-z0-9.-]*[a-z0-9]|[a-z0-9])"
_KUEUE = re.compile(rf"insufficient unused quota for (\S+) in flavor {_NAME}, (\S+) more needed")
_SAID = re.compile(rf"(\d\S*) more (\S+)(?: must be freed?)? in flavor {_NAME}")


def _amount(value: Obj | None) -> Decimal | None:
    if not value:
        return None
    return parse_quantity(str(value.get("amount") if "amount" in value else value["quantity"]))


def kueue_figures(message: str) -> list[tuple[tuple[str, str], Decimal, str]]:
    """Kueue's (or whatIf's) "N more needed" parts: ((flavor, resource), N, the part)."""
    return [
        ((m.group(2), m.group(1)), parse_quantity(m.group(3)), m.group(0))
        for m in _KUEUE.finditer(message)
    ]


def _own_requests(wl: Obj) -> dict[str, Decimal]:
    (ps,) = wl["spec"]["podSets"]
    count = int(ps.get("count", 1))
    out: dict[str, Decimal] = {"pods": Decimal(count)}
    for c in ps["template"]["spec"].get("containers") or []:
        for res, value in ((c.get("resources") or {}).get("requests") or {}).items():
            out[res] = out.get(res, Decimal(0)) + parse_quantity(str(value)) * count
    return out


def needed_by_line(lines: list[Obj]) -> dict[tuple[str, str], Decimal]:
    out = {}
    for ln in lines:
        req, avail = _amount(ln.get("requested")), _amount(ln.get("availableNow"))
        if req is not None and avail is not None and not ln.get("countsThisWorkload"):
            out[(ln["flavor"], ln["resource"])] = req - avail
    return out


def diagnose_differs(d: Obj, wl: Obj, message: str) -> list[str]:
    """Where diagnose's figures (summary, reasons, next steps, `requested`) and Kueue's current
    one are not the quota line's requested - availableNow."""
    if len(wl["spec"]["podSets"]) != 1 or d["quota"]["visibility"] != "AVAILABLE":
        return []
    lines = d["quota"]["lines"]
    needed = needed_by_line(lines)
    out = []
    own = _own_requests(wl)
    for ln in lines:
        req = _amount(ln.get("requested"))
        if ln["resource"] in own and req != own[ln["resource"]]:
            out.append(
                f"quota line {ln['flavor']}/{ln['resource']} requested {req}; the Workload "
                f"requests {own[ln['resource']]}"
            )
    current, _, earlier = d["summary"].partition(EARLIER)
    said = [("summary", m) for m in _SAID.finditer(current)]
    said += [("next step", m) for step in d["nextSteps"] for m in _SAID.finditer(step)]
    for where, m in said:
        key = (m.group(3), m.group(2))
        if key in needed and parse_quantity(m.group(1)) != needed[key]:
            out.append(
                f"{where} says {m.group(0)!r}; quota line {key[0]}/{key[1]}: requested - "
                f"availableNow = {needed[key]}"
            )
    for r in d["reasons"]:
        more = next((n for n in r.get("numbers") or [] if n["name"] == "moreNeeded"), None)
        key = (r.get("flavor"), r.get("resource"))
        if more is not None and key in needed and _amount(more["value"]) != needed[key]:
            out.append(f"reason {r['message']!r}; quota line: {needed[key]}")
    for key, figure, part in kueue_figures(message):
        if part in earlier or key not in needed:
            continue  # diagnose reports it as Kueue's earlier attempt
        if figure != needed[key]:
            out.append(
                f"Kueue's {part!r} taken as current; quota line {key[0]}/{key[1]}: requested - "
                f"availableNow = {needed[key]}"
            )
    return out


def what_if_differs(answer: Obj, kueue_message: str, summary: str) -> list[str]:
    """whatIf (asked before the Workload's creation) against Kueue's figure, where diagnose
    (its `summary`) takes Kueue's as current; and whatIf's own figures against its quota lines."""
    out: list[str] = []
    if len(answer.get("podSets") or []) != 1:
        return out  # Kueue's figure for a later pod set adds what the earlier ones take
    mine = {key: figure for key, figure, _ in kueue_figures(str(answer.get("kueueMessage") or ""))}
    for ps in answer.get("podSets") or []:
        for group in ps.get("resourceGroups") or []:
            for attempt in group.get("attempts") or []:
                for reason in attempt.get("reasons") or []:
                    mine.update({k: f for k, f, _ in kueue_figures(reason)})
    if len(answer.get("podSets") or []) == 1:
        lines = {(ln["flavor"], ln["resource"]): ln for ln in answer.get("quota") or []}
        for key, figure in mine.items():
            ln = lines.get(key)
            req = _amount(ln.get("requested")) if ln else None
            avail = _amount(ln.get("availableNow")) if ln else None
            if req is not None and avail is not None and figure != req - avail:
                out.append(
                    f"whatIf says {figure} more needed in {key}; its quota line {req - avail}"
                )
    _, _, earlier = summary.partition(EARLIER)
    for key, figure, part in kueue_figures(kueue_message):
        if part in earlier or key not in mine:
            continue
        if mine[key] != figure:
            out.append(f"whatIf: {mine[key]} more needed in {key[0]}/{key[1]}; Kueue: {part!r}")
    return out
