"""Every scenario object through (nearly) every field: no unexpected error anywhere."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kueue_graphql.context import RequestLimits
from kueue_graphql.graph.schema import QueryLimits
from tests.cluster.driver import Cluster
from tests.service.conftest import Server, running_server

pytestmark = pytest.mark.cluster

# The query below walks every object with every edge (each Job's Pods, each Workload's
# diagnosis...): over the whole scenario set it needs more API calls than the default
# per-request budget of 200 allows, which is the budget doing its job. This test is about the
# fields, so its server allows more; likewise its estimated cost (fields x page sizes) is above
# the default 50,000 since amounts became `value { quantity amount }`.
EVERY_FIELD_BUDGET = 2000
EVERY_FIELD_COST = 100_000


@pytest.fixture
async def server(service_kubeconfig: Path) -> AsyncIterator[Server]:
    limits = RequestLimits(api_call_budget=EVERY_FIELD_BUDGET)
    async with running_server(
        service_kubeconfig,
        request_limits=limits,
        query_limits=QueryLimits(max_cost=EVERY_FIELD_COST),
    ) as started:
        yield started


OBJECT = (
    "id name namespace uid labels annotations creationTimestamp raw "
    "events { reason message type count involvedObject { kind name } }"
)

# Amounts through the current `Quantity` fields; the ClusterQueues' and Nodes' also through the
# deprecated flat ones they replaced (answered until 0.3.0; all of them everywhere would pass
# the cost limit).
QTY = "value { quantity amount }"
USAGE = "name totalValue { quantity amount } borrowedValue { quantity amount }"
OLD_USAGE = f"{USAGE} total totalAmount borrowed borrowedAmount"
QUOTA = (
    "name nominalQuotaValue { quantity amount } borrowingLimitValue { quantity amount } "
    "lendingLimitValue { quantity amount } nominalQuota nominalQuotaAmount borrowingLimit "
    "borrowingLimitAmount lendingLimit lendingLimitAmount"
)

EVERYTHING = f"""
{{
  workloads(first: 100) {{
    totalCount
    nodes {{
      {OBJECT}
      queueName active priority status maximumExecutionTimeSeconds
      priorityClassRef {{ group kind name }}
      podSets {{ name count minCount requests {{ resource {QTY} }}
                 totalRequests {{ resource {QTY} }} }}
      totalRequests {{ resource {QTY} }}
      conditions {{ type status reason message lastTransitionTime observedGeneration }}
      admission {{ clusterQueue podSetAssignments {{ name count flavors {{ resource flavor }}
                   resourceUsage {{ resource {QTY} }} }} }}
      admissionChecks {{ name state message lastTransitionTime retryCount }}
      requeueState {{ count requeueAt }}
      resourceRequests {{ name resources {{ resource quantity }} }}
      accumulatedPastExecutionTimeSeconds
      ownerReferences {{ apiVersion kind name uid controller }}
      queuePosition {{ positionInClusterQueue positionInLocalQueue priority }}
      priorityClass {{ name value description }}
      localQueue {{ name stopPolicy fairSharing pendingWorkloads reservingWorkloads
                    admittedWorkloads clusterQueueName conditions {{ type status reason }}
                    flavorsReservation {{ name resources {{ {USAGE} }} }}
                    flavorsUsage {{ name resources {{ {USAGE} }} }} }}
      clusterQueue {{ name }}
      job {{ name queueName suspend parallelism completions active succeeded failed startTime
             completionTime conditions {{ type status reason }}
             pods {{ name phase reason message nodeName nodeSelector
                     requests {{ resource quantity }}
                     tolerations {{ key operator value effect tolerationSeconds }}
                     conditions {{ type status reason message }}
                     containerStatuses {{ name ready restartCount image
                       state {{ state reason message exitCode startedAt finishedAt }}
                       lastState {{ state }} }}
                     node {{ name taints {{ key value effect }} unschedulable
                             capacity {{ resource quantity }} conditions {{ type status }} }} }} }}
    }}
  }}
  clusterQueues(first: 100) {{
    nodes {{
      {OBJECT}
      cohortName queueingStrategy namespaceSelector preemption flavorFungibility
      admissionChecksStrategy stopPolicy fairSharing pendingWorkloads reservingWorkloads
      admittedWorkloads conditions {{ type status reason message }}
      cohort {{ name explicit parentName resourceGroups {{ coveredResources }} fairSharing }}
      resourceGroups {{ coveredResources flavors {{ name flavor {{ name topologyName }}
        resources {{ {QUOTA} }} }} }}
      flavors {{ name nodeLabels nodeTaints {{ key value effect }} }}
      flavorsReservation {{ name resources {{ {OLD_USAGE} }} }}
      flavorsUsage {{ name resources {{ {OLD_USAGE} }} }}
      localQueues {{ name namespace }}
      workloads(first: 5) {{ nodes {{ name status }} edges {{ cursor node {{ id }} }}
        pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }} totalCount }}
    }}
  }}
  resourceFlavors(first: 100) {{ nodes {{ {OBJECT} nodeLabels topologyName topology {{ name }}
    tolerations {{ key }} nodeTaints {{ key }}
    clusterQueues(first: 5) {{ nodes {{ name }} totalCount }}
    nodes {{ name }} }} }}
  admissionChecks(first: 100) {{ nodes {{ {OBJECT} controllerName parameters
    conditions {{ type status reason }} }} }}
  workloadPriorityClasses(first: 100) {{ nodes {{ {OBJECT} value description }} }}
  topologies(first: 100) {{ nodes {{ {OBJECT} levels {{ nodeLabel }} }} }}
  cohorts(first: 100) {{ nodes {{ id name explicit parent {{ name }}
    children(first: 5) {{ nodes {{ name }} totalCount }}
    members(first: 5) {{ nodes {{ name }} totalCount }} raw events {{ reason }} }} }}
  namespaces(first: 100) {{ nodes {{ {OBJECT} phase localQueues {{ name }} }} }}
  kubernetesNodes(first: 100) {{ nodes {{ {OBJECT}
    allocatable {{ resource {QTY} quantity amount }} }} }}
  viewer {{ username uid groups extra }}
}}
"""


@pytest.mark.parametrize("user", ["admin", "viewer"])
async def test_every_field_answers_for_cluster_readers(
    server: Server, cluster: Cluster, user: str
) -> None:
    body = await server.query(EVERYTHING, token=cluster.token(user))
    # cq-missing-flavor (60-diagnosis-cases.yaml) names a ResourceFlavor that does not exist:
    # navigating to it is NOT_FOUND, the one error expected here.
    errors = [
        e
        for e in body.get("errors") or []
        if not (
            e["extensions"]["code"] == "NOT_FOUND" and "'flavor-does-not-exist'" in e["message"]
        )
    ]
    assert not errors, errors
    assert body["data"]["workloads"]["totalCount"] >= 10
    assert body["data"]["clusterQueues"]["nodes"]


async def test_every_field_as_a_tenant_is_answered_or_forbidden(
    server: Server, cluster: Cluster
) -> None:
    own_namespace = EVERYTHING.replace(
        "workloads(first: 100)", 'workloads(first: 100, namespace: "team-a")'
    )
    body = await server.query(own_namespace, token=cluster.token("alice"))
    codes = {error["extensions"]["code"] for error in body.get("errors", [])}
    assert codes == {"FORBIDDEN"}
    workloads = body["data"]["workloads"]["nodes"]
    assert len(workloads) >= 10
    assert all(w["namespace"] == "team-a" for w in workloads)
    assert body["data"]["clusterQueues"] is None
