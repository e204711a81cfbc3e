"""Turn the free-text messages Kueue and kube-scheduler write into structured reasons.

The shapes follow Kueue v0.17.0 (pkg/scheduler/flavorassigner, pkg/scheduler/scheduler.go,
pkg/controller/core/workload_controller.go) and kube-scheduler 1.36 (framework.FitError), with
the older and newer variants we know of. Parsing is defensive: a part we do not recognise is
kept verbatim with code "Unrecognized", never dropped and never an exception.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from decimal import Decimal

from kueue_graphql.kueue.exact import ARITHMETIC, QuantityError, format_quantity, parse_quantity
from kueue_graphql.kueue.model import Number, ObjectRef, Reason, ReasonSource
from kueue_graphql.kueue.vocabulary import (
    GRANULAR_PENDING_REASONS,
    KUEUE_API,
    LEGACY_PENDING_REASONS,
    Code,
)

__all__ = [
    "GRANULAR_PENDING_REASONS",
    "LEGACY_PENDING_REASONS",
    "parse_failed_scheduling",
    "parse_kueue_message",
    "split_flavor_parts",
]

_QTY = r"[+-]?[0-9.]+(?:[eE][+-]?\d+|[a-zA-Z]+)?"
_PODSET_PREFIX = re.compile(r"^couldn't assign flavors to pod set (?P<ps>[^:]+): (?P<rest>.*)$")
_PODSET_ERROR = re.compile(r"^failed to assign flavors to pod set (?P<ps>[^:]+): (?P<rest>.*)$")
_EXCEEDS = re.compile(
    r"^insufficient quota for (?P<res>\S+) in flavor (?P<flavor>[^,\s]+)(?: in ClusterQueue)?"
)
_PREVIOUS = re.compile(rf"previously considered podsets requests \((?P<v>{_QTY})\)")
_CURRENT = re.compile(rf"current podset request \((?P<v>{_QTY})\)")
_MAXCAP = re.compile(rf"maximum capacity \((?P<v>{_QTY})\)")
_OLD_REQ_MAX = re.compile(rf"request > maximum capacity \((?P<req>{_QTY}) > (?P<max>{_QTY})\)")
_UNUSED = re.compile(
    r"^insufficient unused quota(?: in cohort)? for (?P<res>\S+) in flavor (?P<flavor>[^,\s]+)"
)
_MORE_NEEDED = re.compile(rf"(?P<v>{_QTY}) more needed")
_TAINT = re.compile(r"^untolerated taint (?P<taint>.+) in flavor (?P<flavor>\S+)$")
_AFFINITY = re.compile(r"^flavor (?P<flavor>\S+) doesn't match node affinity$")
_FLAVOR_NOT_FOUND = re.compile(r"^flavor (?P<flavor>\S+) not found$")
_TOPOLOGY_NOT_FIT = re.compile(
    r'^topology "(?P<topology>[^"]+)" (?:doesn\'t allow to fit(?: any of (?P<none>\d+))?'
    r"|allows to fit only (?P<fit>\d+) out of (?P<of>\d+))(?: (?P<unit>pod|slice)\(s\))?"
)
_RESOURCE_UNAVAILABLE = re.compile(r"^resource (?P<res>\S+) unavailable in ClusterQueue$")

_QUEUE_MESSAGES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"^LocalQueue (?P<n>\S+) doesn't exist"), Code.LOCAL_QUEUE_NOT_FOUND, "LocalQueue"),
    (
        re.compile(r"^LocalQueue (?P<n>\S+) is terminating or missing"),
        Code.LOCAL_QUEUE_NOT_FOUND,
        "LocalQueue",
    ),
    (re.compile(r"^LocalQueue (?P<n>\S+) is inactive"), Code.LOCAL_QUEUE_INACTIVE, "LocalQueue"),
    (re.compile(r"^LocalQueue (?P<n>\S+) is stopped"), Code.LOCAL_QUEUE_STOPPED, "LocalQueue"),
    (
        re.compile(r"^ClusterQueue (?P<n>\S+) (?:doesn't exist|not found)"),
        Code.CLUSTER_QUEUE_NOT_FOUND,
        "ClusterQueue",
    ),
    (
        re.compile(r"^ClusterQueue (?P<n>\S+) is terminating or missing"),
        Code.CLUSTER_QUEUE_NOT_FOUND,
        "ClusterQueue",
    ),
    (
        re.compile(r"^ClusterQueue (?P<n>\S+) is inactive"),
        Code.CLUSTER_QUEUE_INACTIVE,
        "ClusterQueue",
    ),
    (
        re.compile(r"^ClusterQueue (?P<n>\S+) is stopped"),
        Code.CLUSTER_QUEUE_STOPPED,
        "ClusterQueue",
    ),
)


def _number(name: str, raw: str) -> Number | None:
    try:
        return Number(name=name, value=parse_quantity(raw), text=raw)
    except QuantityError:
        return None


def _numbers(*pairs: tuple[str, str | None]) -> tuple[Number, ...]:
    out = []
    for name, raw in pairs:
        if raw is None:
            continue
        n = _number(name, raw)
        if n is not None:
            out.append(n)
    return tuple(out)


def split_flavor_parts(message: str) -> list[tuple[str | None, str]]:
    """Split a flavor-assigner message into (pod set, part) pairs.

    Pod sets are joined by "; ", the parts of one pod set by ", ". A part itself may contain
    ", " (the quota shapes do), so a new part is started only where a known part begins.
    """
    out: list[tuple[str | None, str]] = []
    for chunk in _PODSET_SEPARATOR.split(message):
        chunk = chunk.strip()
        match = _PODSET_PREFIX.match(chunk)
        pod_set: str | None = None
        if match:
            pod_set, chunk = match.group("ps"), match.group("rest")
        for part in _split_parts(chunk):
            out.append((pod_set, part))
    return out


# "; " also joins the pieces of TAS's not-fit message (tas_flavor_snapshot.go notFitMessage,
# multiLayerNotFitMessage): ". Total nodes: 6; excluded: ..." and "; 1/2 slice(s) fit on level".
_PODSET_SEPARATOR = re.compile(r"; (?!excluded: |\d+/\d+ slice\(s\) fit on level )")

_PART_START = re.compile(
    r", (?=insufficient |untolerated taint |flavor \S+ (?:doesn't match|not found)|resource \S+ "
    r"unavailable|could not assign )"
)


def _split_parts(chunk: str) -> list[str]:
    return [p.strip() for p in _PART_START.split(chunk) if p.strip()]


def _flavor_part(part: str, pod_set: str | None, kueue_reason: str | None) -> Reason:
    base = Reason(
        code=Code.UNRECOGNIZED,
        message=part,
        source=ReasonSource.CONDITION,
        kueue_reason=kueue_reason,
        pod_set=pod_set,
    )
    if m := _EXCEEDS.match(part):
        old = _OLD_REQ_MAX.search(part)
        prev, cur, cap = _PREVIOUS.search(part), _CURRENT.search(part), _MAXCAP.search(part)
        numbers = _numbers(
            ("previouslyConsidered", prev.group("v") if prev else None),
            ("podSetRequest", cur.group("v") if cur else None),
            ("requested", cur.group("v") if cur else (old.group("req") if old else None)),
            ("maximumCapacity", cap.group("v") if cap else (old.group("max") if old else None)),
        )
        # "requested" is what the Workload needs so far: earlier pod sets + this one (the
        # diagnosis replaces it with the all-pod-set aggregate where it can read the Workload).
        before = next((n for n in numbers if n.name == "previouslyConsidered"), None)
        if before is not None and before.value:
            numbers = tuple(
                Number(
                    n.name,
                    ARITHMETIC.add(n.value, before.value),
                    format_quantity(ARITHMETIC.add(n.value, before.value), m.group("res")),
                )
                if n.name == "requested"
                else n
                for n in numbers
            )
        flavor = m.group("flavor")
        return replace(
            base,
            code=Code.EXCEEDS_MAX_QUOTA,
            resource=m.group("res"),
            flavor=flavor,
            numbers=numbers,
            object=ObjectRef("ResourceFlavor", flavor, None, KUEUE_API),
        )
    if m := _UNUSED.match(part):
        more = _MORE_NEEDED.search(part)
        return replace(
            base,
            code=Code.WAITING_FOR_QUOTA,
            resource=m.group("res"),
            flavor=m.group("flavor"),
            numbers=_numbers(("moreNeeded", more.group("v") if more else None)),
        )
    # Messages whose culprit is the flavor itself.
    for pattern, code in (
        (_TAINT, Code.UNTOLERATED_FLAVOR_TAINT),
        (_AFFINITY, Code.FLAVOR_NODE_AFFINITY_MISMATCH),
        (_FLAVOR_NOT_FOUND, Code.FLAVOR_NOT_FOUND),
    ):
        if m := pattern.match(part):
            flavor = m.group("flavor")
            return replace(
                base,
                code=code,
                flavor=flavor,
                object=ObjectRef("ResourceFlavor", flavor, None, KUEUE_API),
            )
    if m := _TOPOLOGY_NOT_FIT.match(part):
        # Kueue's TAS step (tas_flavor_snapshot.go notFitMessage): how many Pods (or slices)
        # of the pod set its best domain at the level asked could take, out of how many.
        # Counted in slices when the pod set asks for slices ("slice(s)").
        wanted = m.group("of") or m.group("none")
        unit = "Slices" if m.group("unit") == "slice" else ""
        return replace(
            base,
            code=Code.TOPOLOGY_PLACEMENT_FAILED,
            object=ObjectRef("Topology", m.group("topology"), None, KUEUE_API),
            numbers=tuple(
                Number(label + unit, Decimal(value), value)
                for label, value in (
                    ("fitting", m.group("fit") or ("0" if m.group("none") else None)),
                    ("wanted", wanted),
                )
                if value is not None
            ),
        )
    if m := _RESOURCE_UNAVAILABLE.match(part):
        return replace(base, code=Code.RESOURCE_NOT_COVERED, resource=m.group("res"))
    return base


def parse_taint(taint: str) -> tuple[str, str | None, str | None] | None:
    """(key, value, effect) from the forms the taint appears in: "k=v:Effect", "k:Effect",
    Go's "{k v Effect <nil>}" and protobuf's "&Taint{Key:k,Value:v,Effect:E,...}"."""
    taint = taint.strip()
    if m := re.match(r"^&Taint\{Key:(?P<k>[^,]*),Value:(?P<v>[^,]*),Effect:(?P<e>[^,]*)", taint):
        return m.group("k"), m.group("v") or None, m.group("e") or None
    if m := re.match(r"^\{(?P<k>\S+) (?P<v>\S*) (?P<e>\S+)(?: .*)?\}$", taint):
        return m.group("k"), m.group("v") or None, m.group("e") or None
    if m := re.match(r"^(?P<k>[^=:\s]+)(?:=(?P<v>[^:\s]*))?(?::(?P<e>\S+))?$", taint):
        return m.group("k"), m.group("v"), m.group("e")
    return None


def parse_kueue_message(
    message: str, kueue_reason: str | None, source: ReasonSource
) -> list[Reason]:
    """Structured reasons from one QuotaReserved/Pending message (condition or event)."""
    message = message.strip()
    if not message:
        return []
    for pattern, code, kind in _QUEUE_MESSAGES:
        if m := pattern.match(message):
            return [
                Reason(
                    code=code,
                    message=message,
                    source=source,
                    kueue_reason=kueue_reason,
                    object=ObjectRef(kind, m.group("n"), None, KUEUE_API),
                )
            ]
    simple = {
        "Workload namespace doesn't match ClusterQueue selector": Code.NAMESPACE_NOT_SELECTED,
        "The workload has failed admission checks": Code.ADMISSION_CHECK_FAILED,
    }
    if message in simple:
        return [Reason(simple[message], message, source, kueue_reason=kueue_reason)]
    if m := _PODSET_ERROR.match(message):
        return [
            Reason(
                Code.FLAVOR_ASSIGNMENT_ERROR,
                message,
                source,
                kueue_reason=kueue_reason,
                pod_set=m.group("ps"),
            )
        ]
    if _PODSET_PREFIX.match(message) or message.startswith(("insufficient ", "untolerated ")):
        parts = [
            replace(_flavor_part(part, ps, kueue_reason), source=source)
            for ps, part in split_flavor_parts(message)
        ]
        if parts:
            return parts
    code = kueue_reason if kueue_reason in GRANULAR_PENDING_REASONS else Code.UNRECOGNIZED
    return [Reason(code or Code.UNRECOGNIZED, message, source, kueue_reason=kueue_reason)]


# kube-scheduler: "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated
# taint(s). preemption: 0/2 nodes are available: 2 No preemption victims found ..."
_FIT_ERROR = re.compile(r"^0/(?P<total>\d+) nodes are available:(?P<rest>.*)$", re.DOTALL)
_HISTOGRAM_ITEM = re.compile(r"^(?P<count>\d+) (?P<reason>.+)$")


def _scheduler_code(reason: str) -> tuple[str, str | None]:
    if m := re.match(r"^Insufficient (?P<res>\S+)$", reason):
        return Code.INSUFFICIENT_RESOURCE, m.group("res")
    lowered = reason.lower()
    if "node affinity/selector" in lowered or "node selector" in lowered:
        return Code.NODE_AFFINITY_MISMATCH, None
    if "untolerated taint" in lowered or "taints that the pod didn't tolerate" in lowered:
        return Code.UNTOLERATED_NODE_TAINT, None
    if "were unschedulable" in lowered:
        return Code.NODE_UNSCHEDULABLE, None
    if "pod affinity" in lowered or "anti-affinity" in lowered:
        return Code.POD_AFFINITY_MISMATCH, None
    if "free ports" in lowered:
        return Code.HOST_PORT_CONFLICT, None
    if "topology spread" in lowered:
        return Code.TOPOLOGY_SPREAD_MISMATCH, None
    if "volume" in lowered or "persistentvolumeclaim" in lowered:
        return Code.VOLUME_CONSTRAINT, None
    if "too many pods" in lowered:
        return Code.TOO_MANY_PODS, None
    return Code.SCHEDULER_FILTER, None


def parse_failed_scheduling(message: str, source: ReasonSource) -> list[Reason]:
    """Reasons from kube-scheduler's FitError text (PodScheduled condition or event)."""
    message = message.strip()
    m = _FIT_ERROR.match(message)
    if not m:
        return [Reason(Code.SCHEDULER_FILTER, message, source)] if message else []
    total = m.group("total")
    rest = m.group("rest")
    # "<histogram>. <PostFilter message>": DRA's "no new claims to deallocate", preemption's
    # own "preemption: 0/N nodes ..." follow the first full stop.
    filter_part = re.split(r"\.(?:\s|$)", rest.strip(), maxsplit=1)[0].strip()
    out: list[Reason] = []
    if not filter_part:
        out.append(Reason(Code.NO_NODES, message, source, numbers=_numbers(("nodes", total))))
        return out
    for item in _split_histogram(filter_part):
        hm = _HISTOGRAM_ITEM.match(item)
        if not hm:
            out.append(Reason(Code.SCHEDULER_FILTER, item, source))
            continue
        code, resource = _scheduler_code(hm.group("reason"))
        out.append(
            Reason(
                code=code,
                message=item,
                source=source,
                resource=resource,
                numbers=(
                    Number("nodes", Decimal(int(hm.group("count"))), hm.group("count")),
                    Number("totalNodes", Decimal(int(total)), total),
                ),
            )
        )
    return out


def _split_histogram(text: str) -> Iterable[str]:
    # Items are "<n> <reason>" joined by ", "; a reason may itself contain ", ", so split only
    # where a count follows. A PreFilter message has no count and stays whole.
    return [p.strip() for p in re.split(r", (?=\d+ )", text) if p.strip()]
