"""The ASGI middleware on its own, with plain ASGI apps."""

import asyncio
from typing import Any

import httpx

from kueue_graphql.http.middleware import BodySizeLimit, Deadline, DropImpersonationHeaders


async def slow_app(scope: Any, receive: Any, send: Any) -> None:
    await asyncio.sleep(5)


async def echo_headers(scope: Any, receive: Any, send: Any) -> None:
    names = b",".join(k for k, _ in scope["headers"])
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": names})


async def echo_body(scope: Any, receive: Any, send: Any) -> None:
    message = await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": message["body"]})


def client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


async def test_deadline_answers_504_when_work_runs_over() -> None:
    async with client(Deadline(slow_app, seconds=0.1)) as http:
        response = await http.post("/graphql", json={})
    assert response.status_code == 504
    assert response.json()["errors"][0]["extensions"]["code"] == "UNAVAILABLE"


async def test_client_impersonation_headers_never_reach_the_app() -> None:
    async with client(DropImpersonationHeaders(echo_headers)) as http:
        response = await http.get(
            "/", headers={"Impersonate-User": "admin", "Impersonate-Group": "x", "X-Kept": "1"}
        )
    assert b"impersonate" not in response.content.lower()
    assert b"x-kept" in response.content


async def test_body_under_the_cap_passes_through_unchanged() -> None:
    async with client(BodySizeLimit(echo_body, max_bytes=100)) as http:
        response = await http.post("/", content=b"x" * 100)
        too_big = await http.post("/", content=b"x" * 101)
    assert response.content == b"x" * 100
    assert too_big.status_code == 413
