import pytest
from graphql import GraphQLError

from kueue_graphql.cli import _parser, main
from kueue_graphql.cli.serve import is_loopback, settings_from
from kueue_graphql.core.errors import BadRequestError, ForbiddenError
from kueue_graphql.graph.errors import coded_error
from kueue_graphql.graph.pagination import paginate

ALL_INTERFACES = "0.0.0.0"  # noqa: S104 -- the address a local-mode server must refuse


def objects(*names: tuple[str, str]) -> list[dict[str, object]]:
    return [{"metadata": {"namespace": ns, "name": n}} for ns, n in names]


def test_pages_follow_the_cursor_and_end() -> None:
    items = objects(("b", "x"), ("a", "z"), ("a", "y"))
    first = paginate(items, 2, None, 100, lambda o: o["metadata"])
    assert [o["name"] for o in first.nodes] == ["y", "z"]  # type: ignore[index]
    assert first.page_info.has_next_page
    assert first.counted == 3
    second = paginate(items, 2, first.page_info.end_cursor, 100, lambda o: o["metadata"])
    assert [o["name"] for o in second.nodes] == ["x"]  # type: ignore[index]
    assert not second.page_info.has_next_page


@pytest.mark.parametrize("first", [0, 101, -1])
def test_page_size_is_required_and_capped(first: int) -> None:
    with pytest.raises(BadRequestError):
        paginate([], first, None, 100, lambda o: o)


def test_bad_cursor_is_bad_request() -> None:
    with pytest.raises(BadRequestError):
        paginate(objects(("a", "b")), 1, "%%%not-a-cursor", 100, lambda o: o)


def test_forbidden_error_names_verb_resource_namespace() -> None:
    error = GraphQLError(
        "x", original_error=ForbiddenError("list", "kueue.x-k8s.io", "workloads", "team-b")
    )
    coded = coded_error(error)
    assert coded.extensions is not None
    assert coded.extensions["code"] == "FORBIDDEN"
    assert "list" in coded.message
    assert "workloads.kueue.x-k8s.io" in coded.message
    assert "team-b" in coded.message


def test_unexpected_exceptions_are_masked() -> None:
    coded = coded_error(GraphQLError("x", original_error=KeyError("secret-internal-detail")))
    assert coded.message == "Unexpected error."
    assert coded.extensions == {"code": "INTERNAL"}


def test_loopback_detection() -> None:
    assert is_loopback("127.0.0.1")
    assert is_loopback("::1")
    assert is_loopback("localhost")
    assert not is_loopback(ALL_INTERFACES)


def test_local_mode_refuses_non_loopback_bind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--auth-mode", "local", "--host", ALL_INTERFACES]) == 2
    # Exit 2 alone is also what a missing kubeconfig or a taken port gives.
    assert capsys.readouterr().err == "--auth-mode local binds to a loopback address only\n"


def test_env_vars_configure_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUEUE_GRAPHQL_PORT", "9999")
    monkeypatch.setenv("KUEUE_GRAPHQL_AUTH_MODE", "local")
    monkeypatch.setenv("KUEUE_GRAPHQL_MAX_DEPTH", "5")
    args = _parser().parse_args(["serve"])
    assert args.port == 9999
    settings = settings_from(args)
    assert settings.auth_mode.value == "local"
    assert settings.query_limits.max_depth == 5
    flag_wins = _parser().parse_args(["serve", "--port", "1234"])
    assert flag_wins.port == 1234
