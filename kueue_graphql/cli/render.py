"""What `kueue-graphql why` asks (WHY_QUERY) and how the CLI shows the answers in a terminal:
`diagnose` (render_diagnosis) and `whatIf` (render_what_if, for `why --what-if` and `fits`).
Plain functions over the GraphQL response's JSON; `--output json` prints that JSON instead."""

from __future__ import annotations

from typing import Any

WHY_QUERY = """
query Why($namespace: String!, $kind: String!, $name: String!) {
  diagnose(namespace: $namespace, kind: $kind, name: $name) {
    stage
    layer
    summary
    owner { kind name }
    workload { name }
    localQueue { name }
    clusterQueue { name }
    blockingRef { kind name namespace }
    reasons {
      code kueueReason message source resource flavor podSet
      object { kind name namespace }
      numbers { name value { quantity amount } }
    }
    quota {
      visibility clusterQueue verdict detail
      lines {
        flavor resource verdict limitedBy cohort countsThisWorkload
        requested { quantity amount } nominalQuota { quantity amount }
        borrowingLimit { quantity amount } lendingLimit { quantity amount }
        reserved { quantity amount } used { quantity amount } borrowed { quantity amount }
        maximumCapacity { quantity amount } availableNow { quantity amount }
        cohortCanLend { quantity amount }
        bindingLimits { kind name limit value { quantity } withheld { quantity } }
      }
    }
    pods {
      pod { name }
      phase scheduledStatus scheduledReason scheduledMessage nodeName nodeSelector
      tolerations failedScheduling
      reasons { code message resource object { kind name } }
    }
    queuePosition { visibility positionInClusterQueue positionInLocalQueue priority detail }
    preemptor { uid workload { name namespace } job { name } }
    evictions { reason underlyingCause count }
    topology {
      podSet topology mode level podsWanted kueueFitting flavor hiddenBecause
      domains { values pods nodes }
    }
    nextSteps
    commands
  }
}
"""


# The query behind `kueue-graphql fits` and `why --what-if`.
WHAT_IF_QUERY = """
query WhatIf($namespace: String!, $localQueue: String, $podSets: [WhatIfPodSetInput!],
             $fromJob: ObjectNameInput, $priority: Int) {
  whatIf(namespace: $namespace, localQueue: $localQueue, podSets: $podSets, fromJob: $fromJob,
         priority: $priority) {
    verdict limitedBy summary clusterQueueName numbersFrom detail kueueMessage admissionChecks
    priority priorityClass preempts
    preemptionTargets { name namespace clusterQueueName reason }
    localQueue { name }
    podSets {
      name count
      requests { resource value { quantity } } totalRequests { resource value { quantity } }
      resourceGroups {
        resources flavor verdict limitedBy borrows borrowingLevel mayPreempt preemptsFirstIn
        preempts
        attempts { flavor verdict borrows borrowingLevel reasons }
      }
    }
    quota {
      flavor resource verdict limitedBy cohort
      requested { quantity } nominalQuota { quantity } borrowingLimit { quantity }
      lendingLimit { quantity } reserved { quantity } availableNow { quantity }
      maximumCapacity { quantity }
      bindingLimits { kind name limit value { quantity } withheld { quantity } }
    }
    nextSteps
  }
}
"""


def _q(amount: Any) -> str:
    return str(amount["quantity"]) if isinstance(amount, dict) else "-"


def quota_table(lines: list[dict[str, Any]]) -> list[str]:
    """A quota table's header and rows (`diagnose`'s and `whatIf`'s lines, same columns)."""
    out = [
        "  flavor/resource            requested  nominal  borrowLimit  reserved  max-ever  "
        "free-now  verdict"
    ]
    for line in lines:
        fr = f"{line['flavor']}/{line['resource']}"
        limited = f" ({line['limitedBy']})" if line.get("limitedBy") else ""
        out.append(
            f"  {fr:<26} {_q(line['requested']):>9}  {_q(line['nominalQuota']):>7}  "
            f"{_q(line['borrowingLimit']):>11}  {_q(line['reserved']):>8}  "
            f"{_q(line['maximumCapacity']):>8}  {_q(line['availableNow']):>8}  "
            f"{line['verdict']}{limited}"
        )
        # Limits set elsewhere in the cohort tree (the queue's own are in the columns).
        for b in (line.get("bindingLimits") or []) if line.get("limitedBy") == "COHORT" else []:
            who = f"{b['kind']} {b['name'] or '(name not disclosed)'}"
            kept = f", keeps {_q(b['withheld'])}" if b.get("withheld") else ""
            out.append(f"    limited by {who}: {b['limit']} {_q(b['value'])}{kept}")
    return out


def render_diagnosis(d: dict[str, Any]) -> str:
    """The `diagnose` result (WHY_QUERY's shape) as text for a terminal."""
    out: list[str] = []
    owner = d.get("owner") or {"kind": "Workload", "name": (d.get("workload") or {}).get("name")}
    target = f"{owner.get('kind') or 'Workload'}/{owner.get('name') or '?'}"
    out.append(f"{target}: {d['stage']} (look at: {d['layer']})")
    out.append(f"  {d['summary']}")
    workload = (d.get("workload") or {}).get("name")
    queues = [
        f"Workload {workload}" if workload else "no Workload",
        f"LocalQueue {(d.get('localQueue') or {}).get('name', '-')}",
        f"ClusterQueue {(d.get('clusterQueue') or {}).get('name', '-')}",
    ]
    out.append("  " + ", ".join(queues))
    blocking = d.get("blockingRef")
    if blocking:
        where = f" -n {blocking['namespace']}" if blocking.get("namespace") else ""
        out.append(f"  held by: {blocking['kind']} {blocking['name']}{where}")
    if d.get("reasons"):
        out.append("")
        out.append("Reasons:")
        for r in d["reasons"]:
            written = f" [{r['kueueReason']}]" if r.get("kueueReason") else ""
            out.append(f"  - {r['code']}{written} ({r['source'].lower()}): {r['message']}")
            numbers = r.get("numbers") or []
            nums = ", ".join(f"{n['name']}={n['value']['quantity']}" for n in numbers)
            if nums:
                out.append(f"      {nums}")
    quota = d["quota"]
    if quota["visibility"] != "NOT_APPLICABLE":
        out.append("")
        header = f"Quota in ClusterQueue {quota.get('clusterQueue') or '-'}"
        if quota["visibility"] != "AVAILABLE":
            out.append(f"{header}: {quota['visibility']} ({quota['detail']})")
        else:
            out.append(f"{header}: {quota.get('verdict')}")
            out.extend(quota_table(quota["lines"]))
            if quota.get("detail"):
                out.append(f"  ({quota['detail']})")
    for pod in d.get("pods") or []:
        out.append("")
        out.append(
            f"Pod {pod['pod']['name']}: {pod['phase']}, PodScheduled={pod['scheduledStatus']} "
            f"{pod.get('scheduledReason') or ''}".rstrip()
        )
        if pod.get("nodeSelector"):
            out.append(f"  nodeSelector: {', '.join(pod['nodeSelector'])}")
        if pod.get("scheduledMessage"):
            out.append(f"  scheduler: {pod['scheduledMessage']}")
        for r in pod.get("reasons") or []:
            out.append(f"  - {r['code']}: {r['message']}")
    position = d["queuePosition"]
    if position["visibility"] == "AVAILABLE":
        out.append("")
        out.append(
            f"Queue position: {position['positionInLocalQueue']} in LocalQueue, "
            f"{position['positionInClusterQueue']} in ClusterQueue (0 = next)"
        )
        if position.get("detail"):
            out.append(f"  ({position['detail']})")
    elif position["visibility"] != "NOT_APPLICABLE":
        out.append("")
        out.append(f"Queue position: {position['visibility']} ({position['detail']})")
    preemptor = d.get("preemptor")
    if preemptor:
        out.append("")
        who = preemptor.get("workload")
        shown = (
            f"Workload {who['name']} -n {who['namespace']}"
            if who
            else f"a Workload you may not read (UID {preemptor['uid']})"
        )
        job = (preemptor.get("job") or {}).get("name")
        out.append(f"Preempted by: {shown}" + (f" (Job {job})" if job else ""))
    if d.get("evictions"):
        rows = ", ".join(
            "/".join(filter(None, (e["reason"], e["underlyingCause"]))) + f" x{e['count']}"
            for e in d["evictions"]
        )
        out.append(f"Evictions so far: {rows}")
    for fit in d.get("topology") or []:
        out.append("")
        mode = f" ({fit['mode']})" if fit.get("mode") else ""
        out.append(
            f"Topology {fit['topology']}, pod set {fit['podSet']}: {fit['podsWanted']} Pods in one "
            f"{fit.get('level') or 'domain'}{mode}"
        )
        if fit.get("domains") is None:
            out.append(f"  Kueue's best domain: room for {fit.get('kueueFitting')} Pods")
            out.append(f"  (domains not shown: {fit.get('hiddenBecause')})")
        for room in fit.get("domains") or []:
            out.append(
                f"  {'/'.join(room['values'])}: room for {room['pods']} on {room['nodes']} Node(s)"
            )
    if d.get("nextSteps"):
        out.append("")
        out.append("Next steps:")
        out.extend(f"  - {step}" for step in d["nextSteps"])
    if d.get("commands"):
        out.append("")
        out.append("Same evidence with kubectl:")
        out.extend(f"  $ {cmd}" for cmd in d["commands"])
    return "\n".join(out) + "\n"


def render_what_if(w: dict[str, Any]) -> str:
    """The `whatIf` result (WHAT_IF_QUERY's shape) as text for a terminal."""
    out = [f"{w['verdict']}: {w['summary']}"]
    queue = (w.get("localQueue") or {}).get("name")
    out.append(
        f"  LocalQueue {queue}, ClusterQueue {w.get('clusterQueueName') or '-'}; figures from "
        f"{w['numbersFrom']}"
    )
    if w.get("priorityClass"):
        out.append(f"  priority {w.get('priority')} (class {w['priorityClass']})")
    if w.get("detail") and w["detail"] not in w["summary"]:
        out.append(f"  ({w['detail']})")
    for ps in w.get("podSets") or []:
        per_pod = ", ".join(f"{r['resource']}={r['value']['quantity']}" for r in ps["requests"])
        out.append(f"Pod set {ps['name']}: {ps['count']} x ({per_pod})")
        for g in ps.get("resourceGroups") or []:
            extra = " borrowing" if g.get("borrows") else ""
            if g.get("preemptsFirstIn"):
                extra += f" (unless Kueue preempts in {g['preemptsFirstIn']} first)"
            if g.get("preempts"):
                extra += f" (preempting {g['preempts']} lower-priority Workload(s))"
            limited = f" ({g['limitedBy']})" if g.get("limitedBy") else ""
            out.append(
                f"  {', '.join(g['resources'])}: flavor {g.get('flavor') or '-'}, "
                f"{g['verdict']}{limited}{extra}"
            )
            for a in g.get("attempts") or []:
                for reason in a.get("reasons") or []:
                    out.append(f"    {a['flavor']}: {reason}")
    if w.get("quota"):
        out.append("Quota:")
        out.extend(quota_table(w["quota"]))
    if w.get("kueueMessage"):
        out.append(f"Kueue would write: {w['kueueMessage']}")
    if w.get("nextSteps"):
        out.append("Next steps:")
        out.extend(f"  - {step}" for step in w["nextSteps"])
    return "\n".join(out) + "\n"
