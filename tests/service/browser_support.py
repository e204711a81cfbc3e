"""Chromium (Debian's, driven by Playwright) against a `kueue-graphql serve` process: the server
process, the browser, and a page whose requests to any host but loopback are aborted."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.cluster.driver import Cluster
from tests.service.conftest import free_ports
from tests.waiting import READY_SECONDS, wait_until

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@dataclass
class Process:
    url: str
    process: subprocess.Popen[str]
    log: Path
    # The metrics listener's (--metrics-port).
    metrics_url: str

    def log_lines(self) -> list[dict[str, Any]]:
        lines = []
        for line in self.log.read_text().splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:
                pytest.fail(f"a log line that is not JSON: {line!r}")
        return lines


@contextlib.contextmanager
def served_process(cluster: Cluster, log: Path, *arguments: str) -> Iterator[Process]:
    """`kueue-graphql serve` (JSON log into `log`) as the service account, on loopback ports,
    once ready; `arguments` are added to its command line."""
    port, metrics_port = free_ports(2)
    command = [
        sys.executable,
        "-m",
        "kueue_graphql.cli",
        "serve",
        "--kubeconfig",
        str(cluster.server_kubeconfig),
        "--port",
        str(port),
        "--metrics-port",
        str(metrics_port),
        "--log-format",
        "json",
        *arguments,
    ]
    with log.open("w") as output:
        process = subprocess.Popen(
            command, stdout=output, stderr=subprocess.STDOUT, text=True, cwd=REPO
        )
    server = Process(f"http://127.0.0.1:{port}", process, log, f"http://127.0.0.1:{metrics_port}")
    try:

        def ready() -> bool:
            assert process.poll() is None, log.read_text()
            try:
                return httpx.get(server.url + "/readyz", timeout=30).status_code == 200
            except httpx.TransportError:
                return False

        wait_until("the served process ready", ready, READY_SECONDS, 0.2, detail=log.read_text)
        yield server
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextlib.contextmanager
def launched_browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


@dataclass
class OfflinePage:
    """A page whose requests to any host but loopback are aborted (as in a cluster without
    the internet), with what it tried to reach and what its Content-Security-Policy refused."""

    page: Any
    outside: list[str]
    console_errors: list[str]

    def refused_by_policy(self) -> list[str]:
        return [text for text in self.console_errors if "Content Security Policy" in text]


@contextlib.contextmanager
def offline_page(browser: Any, **context_options: Any) -> Iterator[OfflinePage]:
    context = browser.new_context(**context_options)
    outside: list[str] = []

    def only_loopback(route: Any) -> None:
        url = route.request.url
        if url.startswith("data:") or urlsplit(url).hostname in LOOPBACK_HOSTS:
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    context.route("**/*", only_loopback)
    page = context.new_page()
    console_errors: list[str] = []
    page.on(
        "console", lambda message: message.type == "error" and console_errors.append(message.text)
    )
    try:
        yield OfflinePage(page, outside, console_errors)
    finally:
        context.close()
