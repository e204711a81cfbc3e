"""The MultiKueue worker clusters the service reads with an identity of its own (issue 25).

`--worker-kubeconfig NAME=PATH` (repeatable): NAME is the worker's MultiKueueCluster name on the
manager, PATH a kubeconfig of the service's own read-only identity on that worker, never the
Secret the manager's Kueue uses (that one may create and delete Workloads and Jobs there).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kueue_graphql.core.names import is_name

FORM = "NAME=PATH (NAME: the worker's MultiKueueCluster on the manager; PATH: a kubeconfig)"


@dataclass(frozen=True)
class WorkerKubeconfig:
    """The service's kubeconfig for one worker, by its MultiKueueCluster's name."""

    cluster: str
    path: Path


def parse_worker_kubeconfig(text: str) -> WorkerKubeconfig:
    """One `NAME=PATH`; ValueError saying what is wrong and the form expected."""
    name, equals, path = text.partition("=")
    name, path = name.strip(), path.strip()
    shown = repr(text if len(text) <= 80 else text[:80] + "...")
    if not equals or not name or not path:
        raise ValueError(f"{shown} is not {FORM}")
    if not is_name(name):
        raise ValueError(
            f"{shown}: {name[:80]!r} cannot be a MultiKueueCluster's name (at most 253 "
            "lowercase letters, digits, '-' and '.', starting and ending with a letter or digit)"
        )
    return WorkerKubeconfig(name, Path(path).expanduser())


def parse_worker_kubeconfigs(texts: Iterable[str]) -> tuple[WorkerKubeconfig, ...]:
    """Every `NAME=PATH` in order; ValueError on the first malformed one or a NAME given twice."""
    parsed: dict[str, WorkerKubeconfig] = {}
    for text in texts:
        worker = parse_worker_kubeconfig(text)
        if worker.cluster in parsed:
            raise ValueError(
                f"worker {worker.cluster!r} is given twice ({parsed[worker.cluster].path} and "
                f"{worker.path}): one kubeconfig per worker cluster"
            )
        parsed[worker.cluster] = worker
    return tuple(parsed.values())
