"""The worker-side read-only RBAC the chart's README documents (issue 25) is the test
environment's, the one test_multikueue.py checks on real workers: the same objects, field by
field."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
READER_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding")


def _reader_objects(documents: list[Any]) -> dict[str, Any]:
    return {
        d["kind"]: d
        for d in documents
        if d and d["kind"] in READER_KINDS and "reader" in d["metadata"]["name"]
    }


def test_the_chart_readme_documents_the_worker_reader_the_tests_use() -> None:
    readme = (REPO / "charts" / "kueue-graphql" / "README.md").read_text()
    section = readme.split("## MultiKueue workers", 1)[1].split("\n## ", 1)[0]
    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", section, re.S) if "ClusterRole" in b]
    documented = _reader_objects(list(yaml.safe_load_all(block)))
    manifest = REPO / "tests" / "cluster" / "manifests" / "worker" / "10-worker.yaml"
    used = _reader_objects(list(yaml.safe_load_all(manifest.read_text())))
    assert set(documented) == set(READER_KINDS)
    assert documented == used
