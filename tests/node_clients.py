"""The Node project in tests/node (the graphql-http audit, urql, Apollo Client), installed and
run from the tests against the real server.

`installed()` runs `npm ci` from tests/node/package-lock.json (exact versions and integrity
hashes) when tests/node/node_modules (ignored by git) was not installed from the committed lock,
so a fresh clone installs it on its first test run; later runs only compare a hash. `run()`
runs one of its scripts, bounded in time: on the deadline its whole process group is killed
and the test fails. Both run Node in its own process: the server under test shares the test's
event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import shutil
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent / "node"
LOCK = PROJECT / "package-lock.json"
# Written into node_modules after a successful `npm ci` (which removes node_modules first).
STAMP = PROJECT / "node_modules" / ".kueue-graphql-lock.sha256"
MINIMUM_NODE_MAJOR = 20  # global fetch and AbortSignal.timeout
INSTALL_SECONDS = 300.0
RUN_SECONDS = 180.0


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str


async def bounded(argv: list[str], seconds: float, env: dict[str, str] | None = None) -> Finished:
    """`argv` run in PROJECT in a new process group; AssertionError (the group killed) when it
    has not finished after `seconds`."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=PROJECT,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), seconds)
    except TimeoutError:
        command = " ".join(argv[:2])
        raise AssertionError(f"{command} did not finish within {seconds:.0f} s") from None
    finally:
        if process.returncode is None:  # timed out or cancelled: leave nothing behind
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
    assert process.returncode is not None
    return Finished(process.returncode, out.decode(), err.decode())


def _lock_digest() -> str:
    return hashlib.sha256(LOCK.read_bytes()).hexdigest()


async def _check_node() -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        raise AssertionError(
            f"the Node client tests need Node.js >= {MINIMUM_NODE_MAJOR} and npm on PATH "
            "(Debian: apt-get install nodejs npm)"
        )
    version = (await bounded(["node", "--version"], 60)).stdout.strip()  # 'v20.20.2'
    if int(version.lstrip("v").split(".")[0]) < MINIMUM_NODE_MAJOR:
        raise AssertionError(f"Node.js {version} is too old: need >= {MINIMUM_NODE_MAJOR}")


async def installed() -> Path:
    """PROJECT with node_modules installed from the committed lock file (`npm ci` if needed)."""
    await _check_node()
    digest = _lock_digest()
    if STAMP.is_file() and STAMP.read_text().strip() == digest:
        return PROJECT
    # --ignore-scripts: no package runs code at install time.
    npm = await bounded(
        ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], INSTALL_SECONDS
    )
    if npm.returncode:
        raise AssertionError(
            f"npm ci in {PROJECT} failed (it needs the npm registry or npm's cache):\n"
            f"{npm.stderr.strip()[-2000:]}"
        )
    STAMP.write_text(digest + "\n")
    return PROJECT


async def run(script: str, env: dict[str, str], seconds: float = RUN_SECONDS) -> Finished:
    """`node <script>` of PROJECT with `env` added to this process's environment (the server's
    URL and a token go there, never on a command line)."""
    await installed()
    return await bounded(["node", script], seconds, env={**os.environ, **env})


@contextlib.asynccontextmanager
async def started(script: str, env: dict[str, str]) -> AsyncIterator[asyncio.subprocess.Process]:
    """`node <script>` of PROJECT running while the caller reads its stdout line by line (and
    bounds its own waits); on exit its whole process group is killed if still running."""
    await installed()
    process = await asyncio.create_subprocess_exec(
        "node",
        script,
        cwd=PROJECT,
        env={**os.environ, **env},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        await process.wait()


def json_lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]
