"""The quota disclosure policy, off and on, on the real control plane through HTTP.

alice may `get` LocalQueue team-a/lq-research but not its ClusterQueue (cq-research-borrower, in
cohort research under org). The same query, as alice, against a server with the policy off (the
default) and one with `--quota-disclosure quota`: the responses are compared field by field,
and the fields that differ must be exactly DISCLOSED (the list docs/service.md documents). The
figures she then sees must equal what kubectl shows admin, and what viewer (who may read the
ClusterQueue) sees from her own RBAC.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from kueue_graphql.core.modes import QuotaDisclosure
from kueue_graphql.kueue.exact import parse_quantity
from tests.cluster.driver import Cluster
from tests.service.conftest import Server, running_server

pytestmark = pytest.mark.cluster

DOCS = Path(__file__).resolve().parents[2] / "docs" / "service.md"

AMOUNTS = "{ quantity }"
LINE = f"""flavor resource nominalQuota {AMOUNTS} borrowingLimit {AMOUNTS}
  lendingLimit {AMOUNTS} reserved {AMOUNTS} used {AMOUNTS} borrowed {AMOUNTS} cohort
  cohortCanLend {AMOUNTS} maximumCapacity {AMOUNTS} availableNow {AMOUNTS} verdict limitedBy"""
QUERY = f"""
query Q($ns: String!, $lq: String!, $cq: String!) {{
  localQueue(namespace: $ns, name: $lq) {{
    name clusterQueueName pendingWorkloads
    quota {{
      clusterQueueName numbersFrom cohort detail
      lines {{ {LINE} }}
      cohortTotals {{ cohort flavor resource nominalQuota {AMOUNTS} reserved {AMOUNTS}
                     clusterQueues }}
    }}
    clusterQueue {{ name cohortName }}
  }}
  clusterQueue(name: $cq) {{ name }}
  whatIf(namespace: $ns, localQueue: $lq,
         podSets: [{{count: 1, requests: [{{resource: "cpu", quantity: "1"}}]}}]) {{
    verdict limitedBy summary clusterQueueName numbersFrom detail kueueMessage admissionChecks
    localQueue {{ name }}
    podSets {{ name count requests {{ resource quantity }} totalRequests {{ resource quantity }}
              resourceGroups {{ resources flavor verdict limitedBy borrows mayPreempt
                               attempts {{ flavor verdict borrows reasons }} }} }}
    quota {{ {LINE} requested {AMOUNTS} }}
    reasons {{ code message }}
    nextSteps
  }}
}}
"""
VARIABLES = {"ns": "team-a", "lq": "lq-research", "cq": "cq-research-borrower"}

# What the policy changes for a caller who may `get` the LocalQueue but not its ClusterQueue;
# every other field of the response stays as it is (docs/service.md, "Quota disclosure").
DISCLOSED = {
    "localQueue.quota",
    "whatIf.verdict",
    "whatIf.limitedBy",
    "whatIf.summary",
    "whatIf.numbersFrom",
    "whatIf.detail",
    "whatIf.kueueMessage",
    "whatIf.podSets.resourceGroups",
    "whatIf.quota",
    "whatIf.reasons",
    "whatIf.nextSteps",
}


def flatten(value: Any, path: str = "") -> dict[str, Any]:
    """{dotted path without list indices + "#index": leaf}."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(flatten(inner, f"{path}.{key}" if path else key))
        return out
    if isinstance(value, list):
        out = {}
        for index, inner in enumerate(value):
            out.update(flatten(inner, f"{path}#{index}"))
        return out or {path: []}
    return {path: value}


def _field(path: str) -> str:
    return re.sub(r"#\d+", "", path)


def _changed(off: dict[str, Any], on: dict[str, Any]) -> set[str]:
    a, b = flatten(off), flatten(on)
    return {_field(p) for p in a.keys() | b.keys() if a.get(p, "<absent>") != b.get(p, "<absent>")}


def _covered(fields: set[str]) -> set[str]:
    """The documented field each changed leaf belongs to (or the leaf itself if none)."""
    out = set()
    for f in fields:
        owner = next((d for d in DISCLOSED if f == d or f.startswith(d + ".")), f)
        out.add(owner)
    return out


def _errors(body: dict[str, Any]) -> dict[str, str]:
    return {
        ".".join(str(p) for p in e.get("path") or []): e["extensions"]["code"]
        for e in body.get("errors") or []
    }


@pytest.fixture(scope="module")
async def disclosing(service_kubeconfig: Path) -> AsyncIterator[Server]:
    async with running_server(service_kubeconfig, quota_disclosure=QuotaDisclosure.QUOTA) as s:
        yield s


@pytest.fixture(scope="module")
async def verdict_only(service_kubeconfig: Path) -> AsyncIterator[Server]:
    async with running_server(service_kubeconfig, quota_disclosure=QuotaDisclosure.VERDICT) as s:
        yield s


async def test_policy_off_then_on_changes_exactly_the_documented_fields(
    server: Server, disclosing: Server, cluster: Cluster
) -> None:
    # alice's own RBAC: the LocalQueue yes, the ClusterQueue no (what the comparison rests on).
    assert cluster.kubectl("auth", "can-i", "get", "localqueues/lq-research", "-n", "team-a",
                           user="alice", check=False).stdout.strip() == "yes"  # fmt: skip
    assert cluster.kubectl("auth", "can-i", "get", "clusterqueues", user="alice",
                           check=False).stdout.strip() == "no"  # fmt: skip
    token = cluster.token("alice")
    off = await server.query(QUERY, VARIABLES, token=token)
    on = await disclosing.query(QUERY, VARIABLES, token=token)

    # Off: exactly as without the policy: FORBIDDEN, no figure anywhere.
    assert _errors(off) == {
        "localQueue.quota": "FORBIDDEN",
        "localQueue.clusterQueue.cohortName": "FORBIDDEN",
        "clusterQueue": "FORBIDDEN",
    }
    assert off["data"]["localQueue"]["quota"] is None
    what_if_off = off["data"]["whatIf"]
    assert (what_if_off["verdict"], what_if_off["numbersFrom"]) == ("UNKNOWN", "NONE")
    assert what_if_off["quota"] == []
    assert "quota disclosure policy is off" in what_if_off["detail"]

    # On: the ClusterQueue object itself stays FORBIDDEN; the figures come from the policy.
    assert _errors(on) == {
        "localQueue.clusterQueue.cohortName": "FORBIDDEN",
        "clusterQueue": "FORBIDDEN",
    }
    assert on["data"]["localQueue"]["quota"]["numbersFrom"] == "DISCLOSURE_POLICY"
    assert on["data"]["whatIf"]["numbersFrom"] == "DISCLOSURE_POLICY"

    changed = _changed(off["data"], on["data"])
    assert _covered(changed) == DISCLOSED, sorted(changed)


def _q(value: Any) -> Decimal | None:
    return None if value is None else parse_quantity(str(value["quantity"]))


async def test_disclosed_figures_equal_kubectl_and_the_callers_own_rbac(
    server: Server, disclosing: Server, cluster: Cluster
) -> None:
    on = await disclosing.query(QUERY, VARIABLES, token=cluster.token("alice"))
    quota = on["data"]["localQueue"]["quota"]
    cq = cluster.get_json("clusterqueue", "cq-research-borrower")
    spec_quota = {
        (f["name"], r["name"]): r
        for g in cq["spec"]["resourceGroups"]
        for f in g["flavors"]
        for r in f["resources"]
    }
    reserved = {
        (f["name"], r["name"]): parse_quantity(r["total"])
        for f in cq["status"].get("flavorsReservation") or []
        for r in f["resources"]
    }
    assert {(x["flavor"], x["resource"]) for x in quota["lines"]} == set(spec_quota)
    for line in quota["lines"]:
        key = (line["flavor"], line["resource"])
        want = spec_quota[key]
        assert _q(line["nominalQuota"]) == parse_quantity(want["nominalQuota"])
        assert _q(line["borrowingLimit"]) == (
            parse_quantity(want["borrowingLimit"]) if "borrowingLimit" in want else None
        )
        assert _q(line["reserved"]) == reserved.get(key, 0)
        assert line["cohort"] == "research"
        assert _q(line["availableNow"]) is not None
    # Cohort totals: the whole tree under org, summed from what admin lists.
    cohorts = {c["metadata"]["name"]: c for c in cluster.get_json("cohorts")["items"]}

    def root(name: str) -> str:
        while (cohorts.get(name) or {}).get("spec", {}).get("parentName"):
            name = cohorts[name]["spec"]["parentName"]
        return name

    members = [
        c
        for c in cluster.get_json("clusterqueues")["items"]
        if c["spec"].get("cohortName") and root(c["spec"]["cohortName"]) == "org"
    ]
    cpu = next(
        t for t in quota["cohortTotals"] if (t["flavor"], t["resource"]) == ("standard", "cpu")
    )
    assert cpu["cohort"] == "org"
    assert cpu["clusterQueues"] == len(members)
    assert _q(cpu["nominalQuota"]) == sum(
        parse_quantity(r["nominalQuota"])
        for c in members
        for g in c["spec"]["resourceGroups"]
        for f in g["flavors"]
        if f["name"] == "standard"
        for r in f["resources"]
        if r["name"] == "cpu"
    )
    assert _q(cpu["reserved"]) == sum(
        parse_quantity(r["total"])
        for c in members
        for f in (c.get("status") or {}).get("flavorsReservation") or []
        if f["name"] == "standard"
        for r in f["resources"]
        if r["name"] == "cpu"
    )
    # viewer may read the ClusterQueue herself: the same figures, from her own RBAC.
    own = await server.query(QUERY, VARIABLES, token=cluster.token("viewer"))
    viewer_quota = own["data"]["localQueue"]["quota"]
    assert viewer_quota["numbersFrom"] == "CALLER_RBAC"
    assert {**viewer_quota, "numbersFrom": None} == {**quota, "numbersFrom": None}
    assert own["data"]["whatIf"]["quota"] == on["data"]["whatIf"]["quota"]
    # And no other tenant's ClusterQueue name reaches alice (only her own queue's).
    text = str(on)
    assert "cq-research-lender" not in text


async def test_verdict_level_discloses_verdicts_without_figures(
    server: Server, verdict_only: Server, cluster: Cluster
) -> None:
    body = await verdict_only.query(QUERY, VARIABLES, token=cluster.token("alice"))
    assert _errors(body)["localQueue.quota"] == "FORBIDDEN"
    what_if = body["data"]["whatIf"]
    assert what_if["numbersFrom"] == "DISCLOSURE_POLICY"
    assert what_if["verdict"] in ("MUST_WAIT", "FITS_NOW", "NEVER_FITS")
    assert what_if["quota"] == []
    assert not re.search(r"\d+ more needed|maximum capacity \(", str(what_if))


def test_docs_list_the_disclosed_fields() -> None:
    text = DOCS.read_text()
    section = text[text.index("### Quota disclosure") :]
    for name in DISCLOSED:
        assert f"`{name}`" in section, name
