"""Would it fit? Kueue's scheduling of a Workload that does not exist yet, pure.

Laid out as Kueue v0.17.0 lays out its scheduler, so it can be reviewed file against file:

- `model`: the Workload-to-be (pod sets), what the answer may look at, and the answer;
- `job`: a batch/v1 Job's pod sets (pkg/controller/jobs/job);
- `gates`: the queue checks that hold every Workload (workload controller, `nominate`);
- `flavorassigner`: pkg/scheduler/flavorassigner/flavorassigner.go (`findFlavorForPodSets`,
  `checkFlavorForPodSets`, `fitsResourceQuota`);
- `modes`: its granular assignment mode (`granularMode`, `isPreferred`, `shouldTryNextFlavor`);
- `borrowing`: the borrowing level (preemption/classical/hierarchical_preemption.go
  `FindHeightOfLowestSubtreeThatFits`);
- `preemption`: pkg/scheduler/preemption (within the ClusterQueue);
- `scheduler`: the cycle for one Workload (pkg/scheduler/scheduler.go), `what_if`;
- `disclosure`: the answer without quota figures;
- `explanation`: the user-facing summary, detail and next steps.

Pure: the caller passes the objects it could read (Observed markers for the rest) and whether
numbers may be shown.
"""

from kueue_graphql.whatif.job import (
    PodSpecSet,
    pod_sets_from_job,
    pod_sets_from_job_set,
    pod_sets_of,
    pod_specs_from_job,
    pod_specs_from_job_set,
    pod_specs_from_ray_job,
    pod_specs_of_ray_cluster,
)
from kueue_graphql.whatif.model import (
    FlavorAttempt,
    GroupAssignment,
    PodSetOutcome,
    PreemptionCandidate,
    PreemptionTarget,
    ProposedPodSet,
    TopologyInput,
    TopologyOutcome,
    WhatIfInput,
    WhatIfResult,
)
from kueue_graphql.whatif.scheduler import what_if

__all__ = [
    "FlavorAttempt",
    "GroupAssignment",
    "PodSetOutcome",
    "PodSpecSet",
    "PreemptionCandidate",
    "PreemptionTarget",
    "ProposedPodSet",
    "TopologyInput",
    "TopologyOutcome",
    "WhatIfInput",
    "WhatIfResult",
    "pod_sets_from_job",
    "pod_sets_from_job_set",
    "pod_sets_of",
    "pod_specs_from_job",
    "pod_specs_from_job_set",
    "pod_specs_from_ray_job",
    "pod_specs_of_ray_cluster",
    "what_if",
]
