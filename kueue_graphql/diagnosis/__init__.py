"""Why is my job waiting? A pure diagnosis of Kueue's admission path.

Functions here take Kubernetes objects already read as the calling user (see
`DiagnosisInput`) and do no I/O, so the GraphQL API and the CLI share them.
"""

from kueue_graphql.diagnosis.diagnose import diagnose
from kueue_graphql.diagnosis.model import (
    Diagnosis,
    DiagnosisInput,
    Eviction,
    Layer,
    PodSchedulingProblem,
    Preemptor,
    QueuePosition,
    Stage,
    verdict_key,
)
from kueue_graphql.kueue.model import (
    Absent,
    BindingLimit,
    Failed,
    Forbidden,
    KubeObject,
    Number,
    ObjectRef,
    Observed,
    QuotaLine,
    QuotaReport,
    Reason,
    ReasonSource,
    Verdict,
    Visibility,
)

__all__ = [
    "Absent",
    "BindingLimit",
    "Diagnosis",
    "DiagnosisInput",
    "Eviction",
    "Failed",
    "Forbidden",
    "KubeObject",
    "Layer",
    "Number",
    "ObjectRef",
    "Observed",
    "PodSchedulingProblem",
    "Preemptor",
    "QueuePosition",
    "QuotaLine",
    "QuotaReport",
    "Reason",
    "ReasonSource",
    "Stage",
    "Verdict",
    "Visibility",
    "diagnose",
    "verdict_key",
]
