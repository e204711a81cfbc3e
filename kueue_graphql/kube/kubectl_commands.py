"""What running one of the diagnosis's own kubectl (and `kubectl kueue`) commands reads, as
the accesses a SubjectAccessReview checks: `Diagnosis.commands` shows a command only to a caller
who may run it. A bounded parser of the diagnosis's own command forms (shlex over one line);
a form it does not know is not shown."""

from __future__ import annotations

import shlex

from kueue_graphql.kube.authz import Access
from kueue_graphql.kube.resources import (
    ADMISSION_CHECK,
    CLUSTER_QUEUE,
    COHORT,
    EVENT,
    JOB,
    LOCAL_QUEUE,
    NODE,
    POD,
    RESOURCE_FLAVOR,
    VISIBILITY_LOCAL_QUEUE,
    WORKLOAD,
    Resource,
)

_VISIBILITY_CLUSTER_QUEUE = Resource(
    "ClusterQueue",
    VISIBILITY_LOCAL_QUEUE.group,
    VISIBILITY_LOCAL_QUEUE.version,
    "clusterqueues",
    False,
)
_COMMAND_KINDS = {
    "job": JOB,
    "jobs": JOB,
    "workload": WORKLOAD,
    "workloads": WORKLOAD,
    "localqueue": LOCAL_QUEUE,
    "clusterqueue": CLUSTER_QUEUE,
    "clusterqueues": CLUSTER_QUEUE,
    "cohorts": COHORT,
    "resourceflavor": RESOURCE_FLAVOR,
    "admissioncheck": ADMISSION_CHECK,
    "events": EVENT,
    "nodes": NODE,
    "node": NODE,
    "pod": POD,
    "pods": POD,
}


def command_accesses(command: str) -> list[Access] | None:
    """What running one of the diagnosis's own kubectl commands reads (None: a form this does
    not know, so it is not shown)."""
    argv = shlex.split(command)[1:]
    options: dict[str, str] = {}
    positional: list[str] = []
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg in ("-n", "-o", "-l", "-c", "--for", "--field-selector", "--raw"):
            options[arg] = argv[index + 1] if index + 1 < len(argv) else ""
            index += 2
            continue
        if arg.startswith("-"):
            options[arg] = ""
        else:
            positional.append(arg)
        index += 1
    ns = options.get("-n")
    cluster_wide = "-A" in options
    if positional[:1] == ["get"] and "--raw" in options:
        parts = options["--raw"].strip("/").split("/")
        if len(parts) == 8 and parts[1] == VISIBILITY_LOCAL_QUEUE.group:
            return [Access("get", VISIBILITY_LOCAL_QUEUE, parts[4], parts[6], "pendingworkloads")]
        return None
    if positional[:1] == ["get"] and len(positional) in (2, 3):
        resource = _COMMAND_KINDS.get(positional[1])
        if resource is None:
            return None
        name = positional[2] if len(positional) == 3 else None
        scope = ns if resource.namespaced else None
        return [Access("get" if name else "list", resource, scope, name)]
    if positional[:2] == ["describe", "pod"] and len(positional) == 3:
        return [Access("get", POD, ns, positional[2]), Access("list", EVENT, ns)]
    if positional[:2] == ["describe", "node"] and len(positional) == 3:
        # describe node also lists the node's Pods and its Events in every namespace.
        return [
            Access("get", NODE, None, positional[2]),
            Access("list", POD),
            Access("list", EVENT),
        ]
    if positional[:2] == ["kueue", "list"] and len(positional) == 3:
        listed = _COMMAND_KINDS.get(positional[2])
        if listed is None:
            return None
        accesses = [Access("list", listed, None if cluster_wide else ns)]
        if listed is WORKLOAD:
            # kueuectl shows queue positions from the visibility API of each ClusterQueue.
            accesses.append(
                Access("get", _VISIBILITY_CLUSTER_QUEUE, subresource="pendingworkloads")
            )
        owner = options.get("--for")
        if owner:
            kind, _, name = owner.partition("/")
            owner_resource = _COMMAND_KINDS.get(kind)
            if owner_resource is None:
                return None
            accesses.append(Access("get", owner_resource, ns, name))
        if "-c" in options:
            accesses.append(Access("get", CLUSTER_QUEUE, None, options["-c"]))
        return accesses
    return None
