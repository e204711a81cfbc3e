"""Typed reads from Kubernetes objects held as decoded JSON.

Every accessor tolerates missing or wrongly typed fields: the objects come from an API server
whose version we do not control, and a diagnosis must degrade, not crash.

The one accessor family of the package: kube/, lookups/ and graph/ read objects through it too
(the layers contract puts kueue/ below them; kube/ already takes its vocabulary from here).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from kueue_graphql.kueue.model import KubeObject, ObjectRef

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
QUEUE_NAME_ANNOTATION = "kueue.x-k8s.io/queue-name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"


def dig(obj: object, *path: str) -> Any:
    """obj["a"]["b"]... or None when any step is missing or not a mapping."""
    cur: Any = obj
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def text(obj: object, *path: str) -> str | None:
    value = dig(obj, *path)
    return value if isinstance(value, str) else None


def mapping(obj: object, *path: str) -> Mapping[str, Any]:
    value = dig(obj, *path)
    return value if isinstance(value, Mapping) else {}


def items(obj: object, *path: str) -> list[Mapping[str, Any]]:
    value = dig(obj, *path)
    if not isinstance(value, Sequence) or isinstance(value, str):
        return []
    return [v for v in value if isinstance(v, Mapping)]


def metadata(obj: object) -> Mapping[str, Any]:
    """obj["metadata"], or {} when missing or not a mapping."""
    return mapping(obj, "metadata")


def spec(obj: object) -> Mapping[str, Any]:
    """obj["spec"], or {} when missing or not a mapping."""
    return mapping(obj, "spec")


def status(obj: object) -> Mapping[str, Any]:
    """obj["status"], or {} when missing or not a mapping."""
    return mapping(obj, "status")


def name(obj: KubeObject) -> str:
    return text(obj, "metadata", "name") or ""


def namespace(obj: KubeObject) -> str | None:
    return text(obj, "metadata", "namespace")


def uid(obj: KubeObject) -> str | None:
    return text(obj, "metadata", "uid")


def labels(obj: KubeObject) -> Mapping[str, Any]:
    return mapping(obj, "metadata", "labels")


def kind(obj: KubeObject) -> str:
    return text(obj, "kind") or ""


def ref(obj: KubeObject, default_kind: str = "") -> ObjectRef:
    return ObjectRef(
        kind=kind(obj) or default_kind,
        name=name(obj),
        namespace=namespace(obj),
        api_version=text(obj, "apiVersion"),
    )


def condition(obj: object, type_: str) -> Mapping[str, Any] | None:
    for cond in items(obj, "status", "conditions"):
        if cond.get("type") == type_:
            return cond
    return None


def condition_true(obj: object, type_: str) -> bool:
    cond = condition(obj, type_)
    return cond is not None and cond.get("status") == "True"


def parse_time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def events_for(
    events: Sequence[KubeObject], kind_: str, name_: str, uid_: str | None = None
) -> Iterator[KubeObject]:
    """Events about one object, in either core/v1 (involvedObject) or events.k8s.io/v1
    (regarding) shape, oldest first."""
    matched: list[tuple[str, KubeObject]] = []
    for event in events:
        subject = mapping(event, "involvedObject") or mapping(event, "regarding")
        if subject.get("kind") != kind_ or subject.get("name") != name_:
            continue
        if uid_ and subject.get("uid") and subject.get("uid") != uid_:
            continue
        matched.append((event_time(event), event))
    matched.sort(key=lambda pair: pair[0])
    return (event for _, event in matched)


def event_time(event: KubeObject) -> str:
    for path in (
        ("lastTimestamp",),
        ("series", "lastObservedTime"),
        ("eventTime",),
        ("deprecatedLastTimestamp",),
        ("firstTimestamp",),
        ("metadata", "creationTimestamp"),
    ):
        value = text(event, *path)
        if value:
            return value
    return ""


def event_message(event: KubeObject) -> str:
    return text(event, "message") or text(event, "note") or ""


def event_count(event: KubeObject) -> int:
    for path in (("count",), ("series", "count"), ("deprecatedCount",)):
        value = dig(event, *path)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 1
