"""Starting the server a benchmark measures, in a process of its own, on a loopback port: the
one launcher every benchmark uses (each builds its own command line).

`launched` starts the command, waits until /readyz answers 200 (bounded; SystemExit when the
process exits first or the time passes), yields (url, process, seconds to ready), and stops the
process afterwards (SIGTERM, then SIGKILL after 10 s).
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_ready(
    url: str, process: subprocess.Popen[bytes], seconds: float, what: str = "the server"
) -> float:
    """Poll `url`/readyz until it answers 200; the seconds that took. SystemExit when the
    process exits first or `seconds` pass (every benchmark that starts a server uses this)."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if process.poll() is not None:
            raise SystemExit(f"{what} exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return time.monotonic() - started
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"{what} did not become ready within {seconds:g} s")


@contextmanager
def launched(
    command: Sequence[str],
    port: int,
    *,
    ready_seconds: float,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    what: str = "the server",
) -> Iterator[tuple[str, subprocess.Popen[bytes], float]]:
    """The server `command` runs, listening on 127.0.0.1:`port`, once ready (module docstring)."""
    process = subprocess.Popen(list(command), cwd=cwd, env=None if env is None else dict(env))
    url = f"http://127.0.0.1:{port}"
    try:
        took = wait_ready(url, process, ready_seconds, what)
        yield url, process, took
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
