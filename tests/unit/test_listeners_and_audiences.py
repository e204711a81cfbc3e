"""The metrics listener's routing and flags, and --token-audience's parsing and checks (the real
server and control plane: tests/service/test_metrics_listener.py, test_token_audience.py)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from kueue_graphql.auth.authenticators import audience_confirmed
from kueue_graphql.cli import _parser
from kueue_graphql.cli.serve import settings_from, settings_problem
from kueue_graphql.http.server import ByListener, Listener, listener_problem
from tests.unit.test_cli_first_run import kubeconfig, one_line_refusal, run


class Recorder:
    def __init__(self) -> None:
        self.scopes: list[dict[str, Any]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.scopes.append(scope)


async def _nothing() -> Any:
    return {}


async def _drop(message: Any) -> None:
    return None


async def test_requests_are_routed_by_the_port_they_arrived_on() -> None:
    api, metrics = Recorder(), Recorder()
    routed = ByListener(api, metrics, metrics_port=9090)
    for scope in (
        {"type": "http", "server": ("127.0.0.1", 9090), "path": "/metrics"},
        {"type": "http", "server": ("127.0.0.1", 8080), "path": "/metrics"},
        {"type": "websocket", "server": ("10.0.0.1", 8080), "path": "/graphql"},
        {"type": "lifespan"},
    ):
        await routed(scope, _nothing, _drop)
    assert [s["server"][1] for s in metrics.scopes] == [9090]
    assert [s["type"] for s in api.scopes] == ["http", "websocket", "lifespan"]


def test_metrics_flags_and_their_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    args = _parser().parse_args(["serve"])
    assert (args.metrics_host, args.metrics_port) == (None, 9090)
    monkeypatch.setenv("KUEUE_GRAPHQL_METRICS_PORT", "0")
    monkeypatch.setenv("KUEUE_GRAPHQL_METRICS_HOST", "0.0.0.0")  # noqa: S104 -- a flag value
    args = _parser().parse_args(["serve"])
    assert (args.metrics_host, args.metrics_port) == ("0.0.0.0", 0)  # noqa: S104


def test_the_metrics_port_must_differ_from_the_api_port() -> None:
    problem = listener_problem(Listener("127.0.0.1", 8080), Listener("127.0.0.2", 8080))
    assert problem is not None
    assert "--metrics-port" in problem
    assert listener_problem(Listener("127.0.0.1", 8080), Listener("127.0.0.1", 9090)) is None
    assert listener_problem(Listener("127.0.0.1", 8080), None) is None
    assert Listener("::1", 9090).url == "http://[::1]:9090"


def test_serve_refuses_a_taken_or_shared_metrics_port(tmp_path: Path) -> None:
    config = str(kubeconfig(tmp_path / "config"))

    def refusal(api_port: int, metrics_port: int) -> str:
        ports = ["--port", str(api_port), "--metrics-port", str(metrics_port)]
        return one_line_refusal(run("serve", "--kubeconfig", config, *ports, home=tmp_path))

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        line = refusal(0, port)
    assert f"cannot listen on 127.0.0.1:{port}" in line
    assert "--metrics-port" in line
    assert "a port of its own" in refusal(8765, 8765)


def test_token_audiences_from_flags_else_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def audiences(*argv: str) -> tuple[str, ...]:
        return settings_from(_parser().parse_args(["serve", *argv])).token_audiences

    assert audiences() == ()
    assert audiences("--token-audience", "a", "--token-audience", "b", "--token-audience", "a") == (
        "a",
        "b",
    )
    monkeypatch.setenv("KUEUE_GRAPHQL_TOKEN_AUDIENCE", "kueue-graphql, other,")
    assert audiences() == ("kueue-graphql", "other")
    # A flag replaces the environment's list rather than adding to it.
    assert audiences("--token-audience", "only") == ("only",)
    empty = settings_from(_parser().parse_args(["serve", "--token-audience", " "]))
    assert "--token-audience must not be empty" in str(settings_problem(empty))


def test_an_accepted_review_must_name_an_audience_asked_for() -> None:
    wanted = ("kueue-graphql",)
    assert audience_confirmed(wanted, {"authenticated": True, "audiences": ["kueue-graphql"]})
    assert audience_confirmed(wanted, {"audiences": ["x", "kueue-graphql"]})
    # An authenticator that ignored spec.audiences, or answered for another one.
    assert not audience_confirmed(wanted, {"authenticated": True})
    assert not audience_confirmed(wanted, {"audiences": ["https://kubernetes.default.svc"]})
    assert not audience_confirmed(wanted, {"audiences": "kueue-graphql"})
    # Without audiences asked for, any acceptance stands (the behaviour without the flag).
    assert audience_confirmed((), {"authenticated": True})
