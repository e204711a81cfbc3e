"""Kueue's TAS integration tests (test/integration/singlecluster/tas/tas_test.go, v0.17.0), ported
as data (tas/tas_test.yaml) and run on the real control plane (issue 23 item 5).

A case is one Go `It`: a fixture (the Go `When`'s BeforeEach: a Topology of `levels`, Nodes with
the Go test's labels and allocatable, a TAS ResourceFlavor `node-group: tas`, a ClusterQueue with
`quota`, a LocalQueue), then steps. The runner makes every name unique per case (prefix
`kp-<id>-`: namespace, Topology, flavor, ClusterQueue, Nodes and their hostname label) and keeps
the case's Nodes to itself: each carries the label `kueue-graphql.example/kp-tas: <id>`, which
its flavor selects, and a NoSchedule taint its flavor tolerates (so no other test's Pod lands on
them). Before each Workload is created, whatIf is asked for it (as viewer, who may list Nodes,
Pods and Workloads); after the step, both Kueue's state (against the Go test's expectation) and
whatIf's answer (against what Kueue then did: admitted or not, and the topologyAssignment) are
checked.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kueue_graphql.kueue.topology import decode_assignment
from tests.kueue_port.kube import Kube, KubeError
from tests.kueue_port.runner import (
    POLL_SECONDS,
    _finish,
    _update_status,
    condition,
    is_true,
)

DATA = Path(__file__).parent / "tas" / "tas_test.yaml"
LEVELS = {
    "block": "cloud.provider.com/topology-block",
    "rack": "cloud.provider.com/topology-rack",
    "hostname": "kubernetes.io/hostname",
}
CASE_LABEL = "kueue-graphql.example/kp-tas"
ISOLATION = {"key": CASE_LABEL, "operator": "Exists", "effect": "NoSchedule"}
IMAGE = "registry.invalid/kueue-graphql/sleep:never-pulled"
DEADLINE_SECONDS = 60.0
GONE_SECONDS = 120.0

Obj = dict[str, Any]
Ask = Callable[[str, str, list[Obj]], Awaitable[Obj]]
"""whatIf as viewer: (namespace, local queue, podSets input) -> the whatIf answer."""


@dataclass(frozen=True)
class TasCase:
    id: str
    go_file: str
    go_path: tuple[str, ...]
    fixture: Obj
    steps: tuple[Obj, ...]
    divergent: str | None = None

    @property
    def go_test(self) -> str:
        return f"{self.go_file}: " + " / ".join(self.go_path)

    @property
    def prefix(self) -> str:
        return f"kp-{self.id}-"

    @property
    def namespace(self) -> str:
        return self.prefix + "ns"

    def node_name(self, name: str) -> str:
        return self.prefix + name


def load_tas_cases(path: Path = DATA) -> list[TasCase]:
    doc = yaml.safe_load(path.read_text())
    cases = [
        TasCase(
            id=raw["id"],
            go_file=doc["goFile"],
            go_path=tuple(raw["go"]),
            fixture=doc["fixtures"][raw["use"]],
            # A fixture's own steps (Workloads its BeforeEach creates) come first.
            steps=(
                *(doc["fixtures"][raw["use"]].get("steps") or ()),
                *(raw.get("steps") or ()),
            ),
            divergent=raw.get("divergent"),
        )
        for raw in doc["cases"]
    ]
    if len({c.id for c in cases}) != len(cases):
        raise ValueError("duplicate case ids")
    return cases


@dataclass
class TasOutcome:
    kueue_unmet: list[str] = field(default_factory=list)
    whatif_unmet: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)


# -- manifests --------------------------------------------------------------------------------
def _node(case: TasCase, raw: Obj) -> Obj:
    labels = {"node-group": "tas", CASE_LABEL: case.id, **(raw.get("labels") or {})}
    for short, key in LEVELS.items():
        if short in raw:
            value = raw[short]
            labels[key] = case.node_name(value) if short == "hostname" else value
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": case.node_name(raw["name"]), "labels": labels},
        "spec": {"taints": [_isolation_taint(case), *(raw.get("taints") or [])]},
    }


def _isolation_taint(case: TasCase) -> Obj:
    return {"key": CASE_LABEL, "value": case.id, "effect": "NoSchedule"}


def _queues(case: TasCase) -> list[Obj]:
    levels = [{"nodeLabel": LEVELS[lv]} for lv in case.fixture["levels"]]
    quota = [{"name": r, "nominalQuota": q} for r, q in case.fixture["quota"].items()]
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": case.namespace}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
         "metadata": {"name": case.prefix + "default"}, "spec": {"levels": levels}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
         "metadata": {"name": case.prefix + "tas-flavor"},
         "spec": {"nodeLabels": {"node-group": "tas", CASE_LABEL: case.id},
                  "topologyName": case.prefix + "default", "tolerations": [ISOLATION]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
         "metadata": {"name": case.prefix + "cluster-queue"},
         "spec": {"namespaceSelector": {"matchLabels": {
                      "kubernetes.io/metadata.name": case.namespace}},
                  "resourceGroups": [{"coveredResources": list(case.fixture["quota"]),
                                      "flavors": [{"name": case.prefix + "tas-flavor",
                                                   "resources": quota}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
         "metadata": {"name": "local-queue", "namespace": case.namespace},
         "spec": {"clusterQueue": case.prefix + "cluster-queue"}},
    ]  # fmt: skip


def _topology_request(raw: Obj | None) -> Obj | None:
    if not raw:
        return None
    return {
        {"required": "required", "preferred": "preferred"}[k]: LEVELS[v] for k, v in raw.items()
    }


def _requests(raw: Obj) -> Obj:
    """`cpu` plus any other `requests` of one Pod."""
    return {**({"cpu": raw["cpu"]} if "cpu" in raw else {}), **(raw.get("requests") or {})}


def _container(raw: Obj) -> Obj:
    resources: Obj = {}
    if requests := _requests(raw):
        resources["requests"] = requests
    if "limitCpu" in raw:
        resources["limits"] = {"cpu": raw["limitCpu"]}
    return {"name": "c", "image": IMAGE, "resources": resources}


def _workload(case: TasCase, raw: Obj) -> Obj:
    pod_sets = []
    for ps in raw["podSets"]:
        pod_spec: Obj = {"restartPolicy": "Never", "containers": [_container(ps)]}
        if ps.get("nodeSelector"):
            pod_spec["nodeSelector"] = dict(ps["nodeSelector"])
        if ps.get("affinity"):
            pod_spec["affinity"] = {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": ps["affinity"]}]}}}  # fmt: skip
        made: Obj = {"name": ps["name"], "count": ps["count"], "template": {"spec": pod_spec}}
        if request := _topology_request(ps.get("topology")):
            made["topologyRequest"] = request
        pod_sets.append(made)
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": raw["name"], "namespace": case.namespace},
        "spec": {"queueName": "local-queue", "podSets": pod_sets},
    }


def _pod(case: TasCase, raw: Obj) -> Obj:
    spec: Obj = {"containers": [_container(raw)], "terminationGracePeriodSeconds": 0}
    if raw.get("nodeName"):
        spec["nodeName"] = case.node_name(raw["nodeName"])
    meta: Obj = {"name": raw["name"], "namespace": case.namespace}
    if raw.get("annotations"):
        meta["annotations"] = dict(raw["annotations"])
    if raw.get("finalizers"):
        meta["finalizers"] = list(raw["finalizers"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _what_if_pod_sets(raw: Obj) -> list[Obj] | None:
    """The Workload's pod sets as whatIf's podSets input; None when whatIf cannot express them
    (node affinity is not part of that input)."""
    out = []
    for ps in raw["podSets"]:
        if ps.get("affinity"):
            return None
        # Limits only: Kueue counts them as requests.
        wanted = _requests(ps) or {"cpu": ps["limitCpu"]}
        requests = [{"resource": r, "quantity": q} for r, q in wanted.items()]
        given: Obj = {"name": ps["name"], "count": ps["count"], "requests": requests}
        if ps.get("nodeSelector"):
            given["nodeSelector"] = [{"key": k, "value": v} for k, v in ps["nodeSelector"].items()]
        if topology := _topology_request(ps.get("topology")):
            given["topology"] = topology
        out.append(given)
    return out


# -- the cluster side -------------------------------------------------------------------------
def _make_node(kube: Kube, case: TasCase, raw: Obj) -> None:
    """Created, then Ready with its allocatable, the not-ready taint dropped (Go
    util.CreateNodesWithStatus; no kubelet runs here)."""
    node = kube.create(_node(case, raw))
    name = node["metadata"]["name"]

    def ready(obj: Obj) -> None:
        obj["status"] = {
            "allocatable": dict(raw["allocatable"]),
            "capacity": dict(raw["allocatable"]),
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "simulated by the test"}],
        }  # fmt: skip

    _update_status(kube, "Node", name, None, ready)
    _set_node_taints(kube, case, raw["name"], list(raw.get("taints") or []))


def _set_node_taints(kube: Kube, case: TasCase, name: str, taints: list[Obj]) -> None:
    kube.merge_patch(
        "Node", case.node_name(name), {"spec": {"taints": [_isolation_taint(case), *taints]}}
    )


def _workload_obj(kube: Kube, case: TasCase, name: str) -> Obj | None:
    return kube.get("Workload", name, case.namespace)


def _kueue_domains(case: TasCase, wl: Obj) -> list[list[Any]] | None:
    psa = ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []
    if not psa:
        return None
    decoded = decode_assignment(psa[0].get("topologyAssignment"))
    if decoded is None:
        return None
    return [[v.removeprefix(case.prefix) for v in d.values] + [d.count] for d in decoded.domains]


def _unmet(kube: Kube, case: TasCase, expect: Obj) -> list[str]:
    found = []
    for name, domains in (expect.get("admitted") or {}).items():
        wl = _workload_obj(kube, case, name)
        if not (is_true(wl, "QuotaReserved") and is_true(wl, "Admitted")):
            reserved = condition(wl, "QuotaReserved") or {}
            found.append(f"{name}: not admitted ({reserved.get('message', 'no condition')})")
        elif domains is not None and _kueue_domains(case, wl or {}) != domains:
            found.append(f"{name}: assignment {_kueue_domains(case, wl or {})} != {domains}")
    for name in expect.get("pending") or []:
        wl = _workload_obj(kube, case, name)
        reserved = condition(wl, "QuotaReserved") or {}
        if reserved.get("status") != "False":
            found.append(f"{name}: not pending (QuotaReserved {reserved.get('status')})")
    return found


def _retry_inadmissible(kube: Kube, case: TasCase, quota: Obj) -> None:
    """The Go test calls qcache.NotifyRetryInadmissible by hand (kueue#8653: Kueue does not
    retry a pending Workload when a non-TAS Pod leaves); a ClusterQueue quota change makes
    Kueue retry."""
    flavor = {
        "name": case.prefix + "tas-flavor",
        "resources": [{"name": r, "nominalQuota": q} for r, q in quota.items()],
    }
    patch = {"spec": {"resourceGroups": [{"coveredResources": list(quota),
                                          "flavors": [flavor]}]}}  # fmt: skip
    kube.merge_patch("ClusterQueue", case.prefix + "cluster-queue", patch)


async def _expect(kube: Kube, case: TasCase, expect: Obj, retry: Obj | None = None) -> list[str]:
    """Every fact of `expect` holds (bounded wait, then `holdSeconds`). `retry`: a quota to
    set and reset on the ClusterQueue every few seconds meanwhile (Kueue then retries its
    pending Workloads, whatever its cache had seen at the previous retry)."""
    end = time.monotonic() + DEADLINE_SECONDS
    pokes = 0
    next_poke = time.monotonic()
    while unmet := _unmet(kube, case, expect):
        if time.monotonic() > end:
            return unmet
        if retry and time.monotonic() >= next_poke:
            _retry_inadmissible(kube, case, retry if pokes % 2 == 0 else case.fixture["quota"])
            pokes += 1
            next_poke = time.monotonic() + 3
        await asyncio.sleep(POLL_SECONDS)
    hold = float(expect.get("holdSeconds", 0))
    end = time.monotonic() + hold
    while time.monotonic() < end:
        if unmet := _unmet(kube, case, expect):
            return [f"(within {hold:.0f}s) {u}" for u in unmet]
        await asyncio.sleep(POLL_SECONDS)
    return []


def _compare_what_if(case: TasCase, name: str, answer: Obj, kueue: Obj | None) -> list[str]:
    """whatIf (asked before the Workload existed) against what Kueue then did."""
    admitted = is_true(kueue, "QuotaReserved")
    fits = answer["verdict"] == "FITS_NOW"
    if fits != admitted:
        return [f"{name}: whatIf {answer['verdict']} ({answer['summary']}), Kueue "
                f"{'admitted it' if admitted else 'did not'}"]  # fmt: skip
    if not admitted or kueue is None:
        return []
    placed = answer["podSets"][0]["topology"] or {}
    predicted = placed.get("topologyAssignment") or {}
    shown = [
        [v.removeprefix(case.prefix) for v in d["values"]] + [d["count"]]
        for d in predicted.get("domains") or []
    ]
    actual = _kueue_domains(case, kueue)
    return [] if shown == actual else [f"{name}: whatIf placed {shown}, Kueue {actual}"]


async def _act(
    kube: Kube, case: TasCase, step: Obj, ask: Ask, out: TasOutcome
) -> dict[str, Obj | None]:
    """One step's action; whatIf is asked before each Workload is created (None where it
    cannot be). Returns the Workloads created with whatIf's answer for each."""
    asked: dict[str, Obj | None] = {}
    for raw in step.get("create") or []:
        if raw.get("kind") == "Pod":
            pod = kube.create(_pod(case, raw))
            if raw.get("phase"):
                _set_phase(kube, case, pod["metadata"]["name"], raw["phase"])
            continue
        given = _what_if_pod_sets(raw)
        asked[raw["name"]] = (
            await ask(case.namespace, "local-queue", given) if given is not None else None
        )
        if given is None:
            out.log.append(f"{raw['name']}: whatIf not asked (node affinity)")
        kube.create(_workload(case, raw))
    for raw in step.get("createNodes") or []:
        _make_node(kube, case, raw)
    for name in step.get("finish") or []:
        _update_status(kube, "Workload", name, case.namespace, _finish)
    for name, phase in (step.get("podPhase") or {}).items():
        _set_phase(kube, case, name, phase)
    for name in step.get("deletePods") or []:
        kube.delete("Pod", name, case.namespace)
    for name, taints in (step.get("nodeTaints") or {}).items():
        _set_node_taints(kube, case, name, list(taints))
    for name, labels in (step.get("nodeLabels") or {}).items():
        kube.merge_patch("Node", case.node_name(name), {"metadata": {"labels": labels}})
    return asked


def _set_phase(kube: Kube, case: TasCase, name: str, phase: str) -> None:
    def change(obj: Obj) -> None:
        obj.setdefault("status", {})["phase"] = phase

    _update_status(kube, "Pod", name, case.namespace, change)


async def run_tas_case(kube: Kube, case: TasCase, ask: Ask) -> TasOutcome:
    out = TasOutcome()
    for obj in _queues(case):
        kube.create(obj)
    for raw in case.fixture.get("nodes") or []:
        _make_node(kube, case, raw)
    for index, step in enumerate(case.steps, start=1):
        asked = await _act(kube, case, step, ask, out)
        if step.get("expect"):
            unmet = await _expect(kube, case, step["expect"], step.get("retryInadmissible"))
            out.kueue_unmet += [f"step {index}: {u}" for u in unmet]
        for name, answer in asked.items():
            if answer is None:
                continue
            found = _compare_what_if(case, name, answer, _workload_obj(kube, case, name))
            out.whatif_unmet += [f"step {index}: {f}" for f in found]
    return out


async def clean_up(kube: Kube, case: TasCase) -> list[str]:
    """Everything the case made, waited until gone (bounded)."""
    ns = case.namespace
    for pod in _list(kube, "Pod", ns):
        if pod["metadata"].get("finalizers"):
            kube.merge_patch("Pod", pod["metadata"]["name"], {"metadata": {"finalizers": None}}, ns)
    targets = [
        *[("Workload", w["metadata"]["name"], ns) for w in _list(kube, "Workload", ns)],
        *[("Pod", p["metadata"]["name"], ns) for p in _list(kube, "Pod", ns)],
        ("LocalQueue", "local-queue", ns),
        ("ClusterQueue", case.prefix + "cluster-queue", None),
        ("ResourceFlavor", case.prefix + "tas-flavor", None),
        ("Topology", case.prefix + "default", None),
        *[("Node", n["metadata"]["name"], None) for n in _nodes_of(kube, case)],
        ("Namespace", ns, None),
    ]
    left = []
    for kind, name, where in targets:
        kube.delete(kind, name, where)
    end = time.monotonic() + GONE_SECONDS
    for kind, name, where in targets:
        while kube.get(kind, name, where) is not None:
            if time.monotonic() > end:
                left.append(f"{kind} {where or ''}/{name} not gone")
                break
            await asyncio.sleep(POLL_SECONDS)
    return left


def _list(kube: Kube, kind: str, ns: str) -> list[Obj]:
    try:
        return kube.list(kind, ns)
    except KubeError:
        return []


def _nodes_of(kube: Kube, case: TasCase) -> list[Obj]:
    return [
        n
        for n in kube.list("Node")
        if (n["metadata"].get("labels") or {}).get(CASE_LABEL) == case.id
    ]


def materialized(case: TasCase) -> list[Obj]:
    """The case's objects as created (for a reader: names, labels, taints)."""
    return [*_queues(case), *[_node(case, n) for n in case.fixture.get("nodes") or []]] + [
        copy.deepcopy(s) for s in case.steps
    ]
