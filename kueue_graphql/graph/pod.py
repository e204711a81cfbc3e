"""core/v1 Pod: where the admission path ends (scheduling, containers)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import strawberry

from kueue_graphql.graph.base import KubeObject
from kueue_graphql.graph.common import (
    Condition,
    Info,
    Toleration,
    as_json,
    conditions,
    field,
    reads,
    tolerations,
)
from kueue_graphql.graph.pagination import Connection, connection, page_request
from kueue_graphql.graph.quantity import ResourceQuantity, quantities
from kueue_graphql.kube.client import JsonObject
from kueue_graphql.kube.resources import POD
from kueue_graphql.kueue.objects import spec, status
from kueue_graphql.kueue.requests import pod_requests

if TYPE_CHECKING:
    from kueue_graphql.graph.kubernetes_node import KubernetesNode


@strawberry.type
class ContainerState:
    state: str = strawberry.field(description="waiting, running, terminated or unknown.")
    reason: str | None
    message: str | None
    exit_code: int | None
    started_at: str | None
    finished_at: str | None


def _state(raw: dict[str, Any] | None) -> ContainerState | None:
    if not raw:
        return None
    for name in ("waiting", "running", "terminated"):
        if name in raw:
            detail = raw[name] or {}
            return ContainerState(
                state=name,
                reason=detail.get("reason"),
                message=detail.get("message"),
                exit_code=detail.get("exitCode"),
                started_at=detail.get("startedAt"),
                finished_at=detail.get("finishedAt"),
            )
    return ContainerState(
        state="unknown",
        reason=None,
        message=None,
        exit_code=None,
        started_at=None,
        finished_at=None,
    )


@strawberry.type
class ContainerStatus:
    name: str
    ready: bool
    restart_count: int
    image: str | None
    state: ContainerState | None
    last_state: ContainerState | None


@strawberry.type(description="core/v1 Pod.")
class Pod(KubeObject):
    RESOURCE = POD

    @strawberry.field
    async def phase(self, info: Info) -> str | None:
        return status(await self.obj(info)).get("phase")

    @field(description="Pod conditions, including PodScheduled (why it is unplaced).")
    async def conditions(self, info: Info) -> list[Condition] | None:
        return conditions(await self.obj(info))

    @strawberry.field
    async def reason(self, info: Info) -> str | None:
        return status(await self.obj(info)).get("reason")

    @strawberry.field
    async def message(self, info: Info) -> str | None:
        return status(await self.obj(info)).get("message")

    @strawberry.field
    async def node_name(self, info: Info) -> str | None:
        return spec(await self.obj(info)).get("nodeName")

    @strawberry.field
    async def node(
        self, info: Info
    ) -> Annotated[KubernetesNode, strawberry.lazy("kueue_graphql.graph.kubernetes_node")] | None:
        from kueue_graphql.graph.kubernetes_node import KubernetesNode

        name = spec(await self.obj(info)).get("nodeName")
        return KubernetesNode.ref(name) if name else None

    @strawberry.field
    async def node_selector(self, info: Info) -> strawberry.scalars.JSON | None:
        return as_json(dict(spec(await self.obj(info)).get("nodeSelector") or {}))

    @strawberry.field
    async def tolerations(self, info: Info) -> list[Toleration] | None:
        return tolerations(spec(await self.obj(info)).get("tolerations"))

    @field(
        description="`spec.schedulingGates` by name. kube-scheduler leaves a gated Pod alone; "
        "`kueue.x-k8s.io/topology` is lifted by Kueue once topology-aware scheduling placed "
        "the Pod (with its domain's node selector)."
    )
    async def scheduling_gates(self, info: Info) -> list[str] | None:
        return [
            str(g.get("name", ""))
            for g in spec(await self.obj(info)).get("schedulingGates") or []
            if isinstance(g, dict)
        ]

    @field(description="Effective per-pod requests (as the scheduler counts them).")
    async def requests(self, info: Info) -> list[ResourceQuantity] | None:
        return quantities(pod_requests(spec(await self.obj(info))))

    @strawberry.field
    async def container_statuses(self, info: Info) -> list[ContainerStatus] | None:
        obj = await self.obj(info)
        return [
            ContainerStatus(
                name=str(c.get("name", "")),
                ready=bool(c.get("ready", False)),
                restart_count=int(c.get("restartCount", 0)),
                image=c.get("image"),
                state=_state(c.get("state")),
                last_state=_state(c.get("lastState")),
            )
            for c in status(obj).get("containerStatuses") or []
        ]


@strawberry.type
class PodQuery:
    @strawberry.field
    async def pod(self, info: Info, namespace: str, name: str) -> Pod | None:
        return Pod.from_json(await reads(info).get(POD, namespace, name))

    @strawberry.field
    async def pods(
        self,
        info: Info,
        first: int,
        after: str | None = None,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> Connection[Pod] | None:
        found = await reads(info).list_page(
            POD, namespace, label_selector=label_selector, page=page_request(info, first, after)
        )
        return connection(found, Pod.from_json, after=after)


def sorted_pods(objects: list[JsonObject]) -> list[Pod]:
    """Pods in the graph, by name (a Job's, a JobSet's, an owner's)."""
    return sorted((Pod.from_json(p) for p in objects), key=lambda p: p.ref_name)
