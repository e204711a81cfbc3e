"""Plain-language next steps, and the kubectl commands that show the same evidence."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from kueue_graphql.diagnosis.flavor_outcomes import ceilings, pod_set_quotas, requested
from kueue_graphql.diagnosis.model import Diagnosis, Layer, Stage
from kueue_graphql.kueue.exact import ZERO, format_quantity
from kueue_graphql.kueue.limits_prose import limit_levers
from kueue_graphql.kueue.messages import parse_taint
from kueue_graphql.kueue.model import KubeObject, QuotaLine, Reason, Verdict, Visibility
from kueue_graphql.kueue.objects import items, name, text
from kueue_graphql.kueue.owners import owner_facts
from kueue_graphql.kueue.vocabulary import Code

__all__ = ["commands_for", "next_steps_for"]


def _q(value: Decimal | None, resource: str | None) -> str:
    return format_quantity(value, resource) if value is not None else "?"


def _line(d: Diagnosis, flavor: str | None, resource: str | None) -> QuotaLine | None:
    for line in d.quota.lines:
        if line.flavor == flavor and line.resource == resource:
            return line
    return None


# Reasons that hold a Workload whatever the quota says.
_NOT_QUOTA_CODES = frozenset(
    {
        Code.LOCAL_QUEUE_NOT_FOUND,
        Code.LOCAL_QUEUE_STOPPED,
        Code.LOCAL_QUEUE_INACTIVE,
        Code.CLUSTER_QUEUE_NOT_FOUND,
        Code.CLUSTER_QUEUE_STOPPED,
        Code.CLUSTER_QUEUE_INACTIVE,
        Code.CLUSTER_QUEUE_TERMINATING,
        Code.NAMESPACE_NOT_SELECTED,
        Code.UNTOLERATED_FLAVOR_TAINT,
        Code.FLAVOR_NODE_AFFINITY_MISMATCH,
        Code.FLAVOR_NOT_FOUND,
        Code.RESOURCE_NOT_COVERED,
        Code.BEHIND_QUEUE_HEAD,
        Code.REQUEUE_BACKOFF,
        Code.TOPOLOGY_PLACEMENT_FAILED,
    }
)


# What fixes a ClusterQueue that lacks an object it references (its Active=False cause), keyed
# by cause code. {cq}: the ClusterQueue, {name}: the object, {controller}: who should run it.
_CONFIGURATION_STEPS: dict[Code, str] = {
    Code.FLAVOR_NOT_FOUND: (
        "ResourceFlavor {name} does not exist and ClusterQueue {cq} admits nothing until it "
        "does: an admin must create ResourceFlavor {name} or remove it from the ClusterQueue's "
        "resourceGroups; meanwhile resubmit to another LocalQueue."
    ),
    Code.ADMISSION_CHECK_NOT_FOUND: (
        "AdmissionCheck {name} does not exist and ClusterQueue {cq} admits nothing until it "
        "does: an admin must create it or remove it from admissionChecksStrategy."
    ),
    Code.ADMISSION_CHECK_INACTIVE: (
        "AdmissionCheck {name} is not active, so ClusterQueue {cq} admits nothing: {controller} "
        "must run and report the check Active (or an admin removes the check from the "
        "ClusterQueue's admissionChecksStrategy)."
    ),
    Code.TOPOLOGY_NOT_FOUND: (
        "Topology {name} does not exist, so ClusterQueue {cq} admits nothing: an admin must "
        "create it or fix the flavor's topologyName."
    ),
    Code.COHORT_CYCLE_DETECTED: (
        "Cohort {name} is part of a cycle of parentName references, so ClusterQueue {cq} "
        "admits nothing: an admin must break the cycle."
    ),
}


def next_steps_for(
    d: Diagnosis, flavors: Sequence[KubeObject] = (), checks: Sequence[KubeObject] = ()
) -> Iterator[str]:
    """Remedies for the reasons found; `flavors` (ResourceFlavors the caller may read) make
    the toleration to add exact; `checks` (AdmissionChecks) name the controller to run."""
    seen: set[str] = set()
    for step in _steps(d, {name(f): f for f in flavors}, {name(c): c for c in checks}):
        if step not in seen:
            seen.add(step)
            yield step


@dataclass(frozen=True)
class _Case:
    """One reason to remedy, with what its remedy may quote."""

    d: Diagnosis
    r: Reason
    flavors: Mapping[str, KubeObject]
    checks: Mapping[str, KubeObject]

    @property
    def cq(self) -> str | None:
        return self.d.cluster_queue

    @property
    def lq(self) -> str | None:
        return self.d.local_queue


def _exceeds_max_quota(c: _Case) -> Iterator[str]:
    r, cq, res = c.r, c.cq, c.r.resource
    pod_set = next(p for p in pod_set_quotas(c.d.reasons) if p.pod_set == r.pod_set)
    if not pod_set.never_fits:
        return  # another flavor Kueue tried only waits for quota: its remedy speaks
    line = _line(c.d, r.flavor, r.resource)
    req, cap = r.number("requested"), r.number("maximumCapacity")
    if len(pod_set.exceeded) == 1:
        cannot = f"can never provide more than {_q(cap, res)} in flavor {r.flavor}"
        asked = f"{_q(req, res)} {res}"
    else:
        cannot = (
            f"can never provide it in any flavor it tried (at most {ceilings(pod_set.exceeded)})"
        )
        asked = requested(pod_set.exceeded) or "more"
    yield (
        f"Shrink the request: the Workload needs {asked} at once but ClusterQueue {cq} "
        f"{cannot} (Kueue admits all Pods of a Workload together: fewer parallel Pods or "
        "smaller per-Pod requests)."
    )
    yield "Or submit to a LocalQueue whose ClusterQueue has more quota."
    for x in pod_set.exceeded:
        yield from limit_levers(_line(c.d, x.flavor, x.resource))
    if line is not None and line.limited_by == "BORROWING_LIMIT":
        yield (
            "Or ask an admin to raise borrowingLimit "
            f"({_q(line.borrowing_limit, res)}) or nominalQuota "
            f"({_q(line.nominal_quota, res)}) of ClusterQueue {cq}."
        )
    else:
        yield f"Or ask an admin to raise the nominalQuota of ClusterQueue {cq}."


def _waiting_for_quota(c: _Case) -> Iterator[str]:
    r, cq, res = c.r, c.cq, c.r.resource
    line = _line(c.d, r.flavor, r.resource)
    if line is not None and line.limited_by == "BORROWING_LIMIT":
        yield (
            f"Wait: ClusterQueue {cq} already borrows {_q(line.borrowed, res)} "
            f"{res} from cohort {line.cohort}, its borrowingLimit is "
            f"{_q(line.borrowing_limit, res)}; the Workload is admitted when "
            "running Workloads of this ClusterQueue finish."
        )
        yield f"Or ask an admin to raise the borrowingLimit of ClusterQueue {cq}."
    else:
        yield (
            f"Wait: {_q(r.number('moreNeeded'), res)} more {res} must be freed "
            f"in flavor {r.flavor} by Workloads that finish (or are preempted)."
        )
        yield from limit_levers(line)


def _local_queue_stopped(c: _Case) -> Iterator[str]:
    if c.r.object is not None:
        ns = c.d.workload.namespace if c.d.workload else ""
        yield (
            f"LocalQueue {c.lq} is stopped: ask its owner to resume it "
            f"(kubectl kueue resume localqueue {c.lq} -n {ns}), or resubmit to another "
            "LocalQueue."
        )


def _cluster_queue_not_found(c: _Case) -> Iterator[str]:
    missing = c.r.object.name if c.r.object is not None else c.cq
    yield (
        f"LocalQueue {c.lq} points to ClusterQueue {missing}, which does not exist: an "
        "admin must create it or fix the LocalQueue's spec.clusterQueue; meanwhile "
        "resubmit to another LocalQueue."
    )


def _configuration_step(c: _Case) -> Iterator[str]:
    """A ClusterQueue lacks the object the reason names (_CONFIGURATION_STEPS)."""
    if c.r.object is None:
        return
    check = c.checks.get(c.r.object.name)
    controller = text(check, "spec", "controllerName") if check is not None else None
    yield _CONFIGURATION_STEPS[Code(c.r.code)].format(
        cq=c.cq,
        name=c.r.object.name,
        controller=f"controller {controller}" if controller else "its controller",
    )


def _flavor_not_found(c: _Case) -> Iterator[str]:
    if c.r.object is not None:
        yield from _configuration_step(c)
    else:
        yield f"ResourceFlavor {c.r.flavor} is missing: an admin must create it."


def _cluster_queue_inactive(c: _Case) -> Iterator[str]:
    if not any(x.code in _CONFIGURATION_STEPS for x in c.d.reasons):
        yield (
            f"ClusterQueue {c.cq} admits nothing while it is inactive: an admin must read "
            f"its Active condition (kubectl get clusterqueue {c.cq} -o yaml) and fix "
            "that cause; meanwhile resubmit to another LocalQueue."
        )


def _untolerated_flavor_taint(c: _Case) -> Iterator[str]:
    r = c.r
    taint = r.message.removeprefix("untolerated taint ").rsplit(" in flavor ", 1)[0]
    parsed = parse_taint(taint)
    shown = f"{parsed[0]}={parsed[1] or ''}:{parsed[2] or ''}" if parsed is not None else taint
    yield (
        f"Flavor {r.flavor} of ClusterQueue {c.cq} only offers nodes tainted {shown}: add "
        "a matching toleration to the Pod template if the workload may run there, or "
        "submit to a LocalQueue whose ClusterQueue has another flavor."
    )
    flavor = c.flavors.get(r.flavor or "")
    for t in items(flavor, "spec", "nodeTaints") if flavor is not None else []:
        value = f', value: "{t["value"]}"' if t.get("value") else ""
        operator = "Equal" if t.get("value") else "Exists"
        yield (
            "The toleration, from ResourceFlavor "
            f"{r.flavor}'s nodeTaints: spec.template.spec.tolerations: "
            f"[{{key: {t.get('key')}, operator: {operator}{value}, "
            f"effect: {t.get('effect')}}}]"
        )


def _admission_check(c: _Case) -> Iterator[str]:
    if c.r.object is not None:
        yield (
            f"Admission check {c.r.object.name} is {c.r.kueue_reason}: see its controller's "
            "status and message."
        )


def _behind_queue_head(c: _Case) -> Iterator[str]:
    ahead = c.r.number("aheadInClusterQueue")
    head = c.r.object
    at_head = (
        f"Workload {head.name} of the same LocalQueue"
        if head is not None
        else "a Workload of another LocalQueue"
    )
    verdict = c.d.quota.verdict
    if verdict is Verdict.FITS_NOW:
        then = "the quota it needs is free now, so it is admitted once it reaches the head"
    elif verdict is Verdict.MUST_WAIT:
        then = "it then also waits for quota (see the quota lines)"
    elif verdict is Verdict.NEVER_FITS:
        then = "even then it never fits: shrink the request"
    else:
        then = "its own quota verdict is not known to you"
    yield (
        f"Wait: {_q(ahead, None)} Workload(s) are ahead in ClusterQueue {c.cq}; under "
        f"StrictFIFO Kueue tries nothing behind the head ({at_head}) until it is admitted or "
        f"removed; {then}."
    )
    if head is not None:
        yield (
            f"If Workload {head.name} should not go first, delete it or lower its priority: "
            "the next one becomes the head."
        )
    yield (
        "Or resubmit to a LocalQueue whose ClusterQueue is BestEffortFIFO (Kueue tries the "
        "Workloads behind a head that does not fit)."
    )


def _requeue_backoff(c: _Case) -> Iterator[str]:
    yield (
        "Kueue retries it by itself after the backoff in status.requeueState; if it keeps being "
        "requeued, read why in its Evicted condition and status.schedulingStats.evictions."
    )


def _insufficient_allocatable(c: _Case) -> Iterator[str]:
    res = c.r.resource
    wanted = c.r.number("requested")
    largest = max(
        (
            x.number("allocatable") or ZERO
            for x in c.d.reasons
            if x.code == Code.INSUFFICIENT_ALLOCATABLE and x.resource == res
        ),
        default=ZERO,
    )
    yield (
        f"The Pod requests {_q(wanted, res)} {res} and the nodes short of it offer at "
        f"most {_q(largest, res)} allocatable: waiting does not help there; shrink the "
        "per-Pod request (e.g. more Pods with less each) or add bigger nodes."
    )


# Causes whose one step only names the queues, the flavor or the resource: str.format templates
# over {cq}, {lq}, {flavor} and {resource}.
_SAID: dict[Code, str] = {
    Code.LOCAL_QUEUE_NOT_FOUND: (
        "LocalQueue {lq} does not exist: fix the kueue.x-k8s.io/queue-name label or "
        "create the LocalQueue."
    ),
    Code.CLUSTER_QUEUE_STOPPED: (
        "ClusterQueue {cq} is stopped: an admin must resume it "
        "(kubectl kueue resume clusterqueue {cq})."
    ),
    Code.NAMESPACE_NOT_SELECTED: (
        "ClusterQueue {cq}'s namespaceSelector excludes this namespace: use another queue."
    ),
    Code.CLUSTER_QUEUE_TERMINATING: (
        "ClusterQueue {cq} is being deleted and admits nothing new: resubmit to another "
        "LocalQueue (ask an admin which queue replaces it)."
    ),
    Code.FLAVOR_NODE_AFFINITY_MISMATCH: (
        "The Pod template's nodeSelector/affinity excludes flavor {flavor}'s node "
        "labels: relax them or use a queue whose flavors match."
    ),
    Code.RESOURCE_NOT_COVERED: (
        "ClusterQueue {cq} has no quota for {resource}: drop that request or use another queue."
    ),
    Code.INSUFFICIENT_RESOURCE: (
        "No node has enough free {resource} for one Pod: shrink the per-Pod request "
        "or add node capacity. Kueue's quota is not the limit here."
    ),
    Code.NODE_AFFINITY_MISMATCH: (
        "Some nodes do not match the Pod's nodeSelector/affinity (Kueue adds the "
        "flavor's nodeLabels): check node labels against the flavor."
    ),
    Code.UNTOLERATED_NODE_TAINT: (
        "Some nodes carry taints the Pod does not tolerate: add tolerations if intended."
    ),
}


def _topology_placement(c: _Case) -> Iterator[str]:
    """Kueue's TAS step found no domain with room for every Pod at the level asked."""
    fit = next((f for f in c.d.topology if f.pod_set == c.r.pod_set), None)
    if fit is None:
        return
    level = fit.level or "the level asked"
    if fit.mode == "required":
        yield (
            f"Relax the level: annotate pod set {fit.pod_set}'s template with "
            f"kueue.x-k8s.io/podset-preferred-topology: {level} instead of "
            "kueue.x-k8s.io/podset-required-topology; Kueue then places the Pods in one "
            "domain where it can, else across the next level up."
        )
    room = fit.domains[0].pods if fit.domains else fit.kueue_fitting
    if room:
        yield (
            f"Ask for fewer Pods per domain: the best {level} has room for {room} of the "
            f"{fit.pods_wanted} now; split the job, or place smaller slices with "
            "kueue.x-k8s.io/podset-slice-required-topology and kueue.x-k8s.io/podset-slice-size "
            "(each slice in one domain)."
        )
    flavor = f" (flavor {fit.flavor})" if fit.flavor else ""
    yield (
        f"Or use a flavor with more capacity at that level: ask an admin of ClusterQueue "
        f"{c.cq}{flavor}, or wait until Pods on those Nodes finish."
    )


def _topology_gated(c: _Case) -> Iterator[str]:
    yield (
        "Kueue lifts the kueue.x-k8s.io/topology gate within seconds of admission; if it stays, "
        "look at the Kueue controller's log (its topology ungater) and check that the "
        "Workload's status.admission still holds a topologyAssignment."
    )


def _node_failed(c: _Case) -> Iterator[str]:
    node = c.r.object.name if c.r.object is not None else None
    if node is not None:
        yield (
            f"Find out why Node {node} failed (kubectl describe node {node}): its kubelet, or "
            "whoever tainted it. Once its Pods there terminate (the node lifecycle controller "
            "evicts them after their not-ready toleration, 300 s by default, or delete them) "
            "Kueue moves the Workload's share to a replacement Node."
        )
    yield (
        "Kueue finds a replacement only in the same topology domain as the Pods that still "
        "run and only at the first try (TASFailedNodeReplacementFailFast): keep spare room in "
        "each domain, or ask with kueue.x-k8s.io/podset-preferred-topology so the whole "
        "Workload may move elsewhere after an eviction."
    )


def _node_failures(c: _Case) -> Iterator[str]:
    yield (
        "Kueue found no replacement for the failed Node and evicted the Workload; it requeues "
        "it and places every Pod anew. Check that its new Pods start, and that the failed "
        "Node is repaired or removed (its Terminating Pods stay until its kubelet returns or "
        "they are force-deleted)."
    )


def _said(c: _Case) -> Iterator[str]:
    yield _SAID[Code(c.r.code)].format(cq=c.cq, lq=c.lq, flavor=c.r.flavor, resource=c.r.resource)


_REMEDIES: dict[Code, Callable[[_Case], Iterator[str]]] = {
    Code.EXCEEDS_MAX_QUOTA: _exceeds_max_quota,
    Code.WAITING_FOR_QUOTA: _waiting_for_quota,
    Code.LOCAL_QUEUE_STOPPED: _local_queue_stopped,
    Code.LOCAL_QUEUE_INACTIVE: _local_queue_stopped,
    Code.LOCAL_QUEUE_NOT_FOUND: _said,
    Code.CLUSTER_QUEUE_NOT_FOUND: _cluster_queue_not_found,
    Code.CLUSTER_QUEUE_STOPPED: _said,
    Code.FLAVOR_NOT_FOUND: _flavor_not_found,
    Code.ADMISSION_CHECK_NOT_FOUND: _configuration_step,
    Code.ADMISSION_CHECK_INACTIVE: _configuration_step,
    Code.TOPOLOGY_NOT_FOUND: _configuration_step,
    Code.COHORT_CYCLE_DETECTED: _configuration_step,
    Code.CLUSTER_QUEUE_INACTIVE: _cluster_queue_inactive,
    Code.NAMESPACE_NOT_SELECTED: _said,
    Code.CLUSTER_QUEUE_TERMINATING: _said,
    Code.UNTOLERATED_FLAVOR_TAINT: _untolerated_flavor_taint,
    Code.FLAVOR_NODE_AFFINITY_MISMATCH: _said,
    Code.RESOURCE_NOT_COVERED: _said,
    Code.ADMISSION_CHECK_PENDING: _admission_check,
    Code.ADMISSION_CHECK_RETRY: _admission_check,
    Code.ADMISSION_CHECK_REJECTED: _admission_check,
    Code.ADMISSION_CHECK_FAILED: _admission_check,
    Code.INSUFFICIENT_RESOURCE: _said,
    Code.NODE_AFFINITY_MISMATCH: _said,
    Code.UNTOLERATED_NODE_TAINT: _said,
    Code.INSUFFICIENT_ALLOCATABLE: _insufficient_allocatable,
    Code.BEHIND_QUEUE_HEAD: _behind_queue_head,
    Code.REQUEUE_BACKOFF: _requeue_backoff,
    Code.TOPOLOGY_PLACEMENT_FAILED: _topology_placement,
    Code.TOPOLOGY_GATED: _topology_gated,
    Code.TOPOLOGY_NODE_UNHEALTHY: _node_failed,
    Code.TOPOLOGY_NODE_REPLACEMENT: _node_failed,
    Code.NODE_FAILURES: _node_failures,
}
"""The next steps for each cause code; a code not listed has none of its own."""


def _remedy(code: str) -> Callable[[_Case], Iterator[str]] | None:
    known = Code.of(code)
    if known is not None:
        return _REMEDIES.get(known)
    # A reason Kueue wrote that is not one of our codes (condition_reason keeps it as written):
    # an admission check's own reason still points at the check.
    return _admission_check if code.startswith("AdmissionCheck") else None


def _steps(
    d: Diagnosis, flavors: Mapping[str, KubeObject], checks: Mapping[str, KubeObject]
) -> Iterator[str]:
    if d.stage is Stage.NOT_MANAGED:
        yield (
            "Kueue ignores this object. To queue it under Kueue, create it with the label "
            "kueue.x-k8s.io/queue-name=<your LocalQueue>."
        )
    incomplete = next((r for r in d.reasons if r.code == Code.POD_GROUP_INCOMPLETE), None)
    if incomplete is not None:
        yield (
            "Create the group's missing Pods (same kueue.x-k8s.io/pod-group-name label), or "
            "lower kueue.x-k8s.io/pod-group-total-count on every Pod of the group to the number "
            "you mean to run."
        )
    elif d.stage is Stage.NO_WORKLOAD_YET:
        yield (
            "Check that Kueue is running and its integration for this kind is enabled "
            "(Kueue creates the Workload within seconds)."
        )
    for r in d.reasons:
        remedy = _remedy(r.code)
        if remedy is not None:
            yield from remedy(_Case(d, r, flavors, checks))
    quota_is_the_problem = not any(r.code in _NOT_QUOTA_CODES for r in d.reasons)
    if (
        d.stage is Stage.WAITING_FOR_QUOTA_RESERVATION
        and d.quota.verdict is Verdict.FITS_NOW
        and quota_is_the_problem
    ):
        yield "Quota is free now: the next scheduling cycle should admit it."
    if d.stage in (Stage.PREEMPTED, Stage.EVICTED):
        yield "Kueue requeues an evicted Workload by itself; it waits for quota again."
    if d.stage is Stage.DEACTIVATED:
        yield "Reactivate it (set spec.active=true on the Workload) once the cause is fixed."
    if d.stage is Stage.RUNNING:
        yield "Nothing blocks it: Kueue admitted it and its Pods run."
    if d.stage in (Stage.FINISHED_SUCCEEDED, Stage.FINISHED_FAILED):
        yield "Nothing to do: the Workload has finished and released its quota."
    if d.stage is Stage.ADMITTED_PODS_PENDING and d.layer is Layer.RUNTIME:
        no_pods = any(r.code == Code.NO_PODS_YET for r in d.reasons)
        facts = owner_facts(d.owner.kind) if d.owner is not None else None
        if no_pods and d.owner is not None and facts is not None:
            yield (
                f"Kueue's part is done; who acts next: {facts.pods_created_by}. Check that it "
                f"runs and what it reports (its logs; the {d.owner.kind}'s status and events)."
            )
        else:
            yield "Look at the node and the Pod's container statuses: the kubelet holds it."


def _cmd(*args: str) -> str:
    return " ".join(shlex.quote(a) for a in args)


def commands_for(d: Diagnosis) -> Iterator[str]:
    ns = (d.workload.namespace if d.workload else None) or (d.owner.namespace if d.owner else None)
    if d.owner is not None and ns:
        yield _cmd("kubectl", "get", d.owner.kind.lower(), d.owner.name, "-n", ns, "-o", "yaml")
        yield _cmd(
            "kubectl", "kueue", "list", "workload", "-n", ns,
            "--for", f"{d.owner.kind.lower()}/{d.owner.name}",
        )  # fmt: skip
    if d.workload is not None and ns:
        yield _cmd("kubectl", "get", "workload", d.workload.name, "-n", ns, "-o", "yaml")
        yield _cmd(
            "kubectl", "get", "events", "-n", ns, "--field-selector",
            f"involvedObject.kind=Workload,involvedObject.name={d.workload.name}",
        )  # fmt: skip
    if d.stage in (Stage.NOT_MANAGED, Stage.NO_WORKLOAD_YET) and d.owner is not None and ns:
        yield _cmd(
            "kubectl", "get", "events", "-n", ns, "--field-selector",
            f"involvedObject.name={d.owner.name}",
        )  # fmt: skip
    kueue_side = d.stage in (
        Stage.NO_WORKLOAD_YET,
        Stage.WAITING_FOR_QUOTA_RESERVATION,
        Stage.WAITING_FOR_ADMISSION_CHECKS,
        Stage.EVICTED,
        Stage.PREEMPTED,
    )
    if kueue_side and d.local_queue and ns:
        yield _cmd("kubectl", "get", "localqueue", d.local_queue, "-n", ns, "-o", "yaml")
    # A ClusterQueue that does not exist has nothing to show (and `kubectl get` fails on it).
    if kueue_side and d.cluster_queue and d.quota.visibility is not Visibility.ABSENT:
        yield _cmd("kubectl", "get", "clusterqueue", d.cluster_queue, "-o", "yaml")
        yield _cmd("kubectl", "kueue", "list", "workload", "-A", "-c", d.cluster_queue)
    # A stopped queue is not in Kueue's queue manager: the visibility API answers NotFound.
    stopped = any(
        str(r.code) in (Code.LOCAL_QUEUE_STOPPED, Code.CLUSTER_QUEUE_STOPPED) for r in d.reasons
    )
    if d.stage is Stage.WAITING_FOR_QUOTA_RESERVATION and d.local_queue and ns and not stopped:
        yield _cmd(
            "kubectl", "get", "--raw",
            f"/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{ns}/localqueues/"
            f"{d.local_queue}/pendingworkloads",
        )  # fmt: skip
    if kueue_side and any(line.cohort for line in d.quota.lines):
        # A cohort may exist only as a cohortName, without a Cohort object: list both.
        yield _cmd("kubectl", "get", "cohorts")
        yield _cmd(
            "kubectl", "get", "clusterqueues", "-o",
            "custom-columns=NAME:.metadata.name,COHORT:.spec.cohortName,"
            "RESERVED:.status.flavorsReservation",
        )  # fmt: skip
    flavors = sorted({r.flavor for r in d.reasons if r.flavor})
    for flavor in flavors:
        yield _cmd("kubectl", "get", "resourceflavor", flavor, "-o", "yaml")
    for check in sorted(
        {r.object.name for r in d.reasons if r.object and r.object.kind == "AdmissionCheck"}
    ):
        yield _cmd("kubectl", "get", "admissioncheck", check, "-o", "yaml")
    if d.stage in (Stage.ADMITTED_PODS_PENDING, Stage.RUNNING) and d.owner is not None and ns:
        yield _cmd(
            "kubectl", "kueue", "list", "pods", "-n", ns,
            "--for", f"{d.owner.kind.lower()}/{d.owner.name}",
        )  # fmt: skip
    for pod in d.pods:
        if pod.pod.namespace:
            yield _cmd("kubectl", "describe", "pod", pod.pod.name, "-n", pod.pod.namespace)
            yield _cmd(
                "kubectl", "get", "events", "-n", pod.pod.namespace, "--field-selector",
                f"involvedObject.name={pod.pod.name},reason=FailedScheduling",
            )  # fmt: skip
        if pod.node_selector:
            selector = ",".join(f"{k}={v}" for k, v in sorted(pod.node_selector.items()))
            yield _cmd("kubectl", "get", "nodes", "-l", selector, "-o", "wide")
        if pod.node_name:
            yield _cmd("kubectl", "describe", "node", pod.node_name)
    if d.layer is Layer.SCHEDULER:
        yield _cmd(
            "kubectl", "get", "nodes", "-o",
            "custom-columns=NAME:.metadata.name,CPU:.status.allocatable.cpu,"
            "MEMORY:.status.allocatable.memory,TAINTS:.spec.taints",
        )  # fmt: skip
