"""KGQL_MULTIKUEUE (tests/cluster/multikueue.py): off unless `1`, anything else refused; the
kubeconfig Secrets the manager's Kueue reads have the shape its validation accepts."""

from __future__ import annotations

import base64

import pytest
import yaml

from tests.cluster import driver, multikueue


@pytest.mark.parametrize("value", [None, "", "0", " 0 "])
def test_off_by_default(value: str | None) -> None:
    assert multikueue.enabled(value) is False


def test_on_with_1() -> None:
    assert multikueue.enabled("1") is True


@pytest.mark.parametrize("value", ["yes", "true", "2", "worker-1"])
def test_anything_else_is_refused_with_the_accepted_values(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match="accepted values are 1 \\(on\\), 0, empty or unset"):
        multikueue.enabled(value)
    monkeypatch.setenv(multikueue.SWITCH, value)
    with pytest.raises(driver.ClusterError, match=multikueue.SWITCH):
        driver.multikueue_enabled()


def test_the_secret_holds_a_kubeconfig_kueue_accepts() -> None:
    """Kueue v0.17.0 (multikueuecluster.go validateKubeconfig) refuses token files,
    certificate-authority file paths, insecure TLS and exec plugins: CA inline, token inline."""
    document = multikueue.kubeconfig_document(
        "https://127.0.0.1:6443", b"PEM", "kueue-system:multikueue-manager", "t0ken"
    )
    secret = multikueue.kubeconfig_secret("worker-1", document)
    assert (secret["metadata"]["namespace"], secret["metadata"]["name"]) == (
        "kueue-system",
        "multikueue-worker-1",
    )
    stored = yaml.safe_load(base64.b64decode(secret["data"]["kubeconfig"]))
    assert stored == document
    (cluster,) = stored["clusters"]
    assert set(cluster["cluster"]) == {"server", "certificate-authority-data"}
    assert base64.b64decode(cluster["cluster"]["certificate-authority-data"]) == b"PEM"
    (user,) = stored["users"]
    assert user["user"] == {"token": "t0ken"}
    assert multikueue.secret_name(multikueue.UNREACHABLE) == "multikueue-unreachable"
