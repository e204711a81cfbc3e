"""Names and namespaces a caller passes in: what Kubernetes allows, nothing else."""

import pytest

from kueue_graphql.core.errors import BadRequestError
from kueue_graphql.core.names import check_name, check_namespace


@pytest.mark.parametrize("name", ["a", "team-a", "job-too-big-3x1cpu-4f2a1", "a.b-c.d", "x" * 253])
def test_valid_names(name: str) -> None:
    assert check_name(name) == name


@pytest.mark.parametrize(
    "name", ["", "A", "a/b", "..", "a..b", ".a", "a.", "-a", "a_b", "a b", "x?y", "é", "x" * 254]
)
def test_invalid_names(name: str) -> None:
    with pytest.raises(BadRequestError, match="invalid name"):
        check_name(name)


@pytest.mark.parametrize("namespace", ["default", "team-a", "kube-system", "x" * 63])
def test_valid_namespaces(namespace: str) -> None:
    assert check_namespace(namespace) == namespace


@pytest.mark.parametrize("namespace", ["", "a.b", "Team", "a/b", "-a", "x" * 64])
def test_invalid_namespaces(namespace: str) -> None:
    with pytest.raises(BadRequestError, match="invalid namespace"):
        check_namespace(namespace)


def test_a_long_name_is_not_echoed_whole() -> None:
    with pytest.raises(BadRequestError) as raised:
        check_name("Y" * 10_000)
    assert len(raised.value.message) < 250
