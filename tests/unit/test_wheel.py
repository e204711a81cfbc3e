"""What the Containerfile does, minus the container engine (none runs here): the wheel builds
with uv, installs with its locked runtime dependencies into a clean virtualenv, and runs."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("uv") is None, reason="uv builds the wheel")
def test_the_wheel_installs_into_a_clean_venv_and_runs(tmp_path: Path) -> None:
    uv = shutil.which("uv") or "uv"
    subprocess.run(
        [uv, "build", "--wheel", "--out-dir", str(tmp_path / "dist")],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("kueue_graphql-*.whl")
    requirements = tmp_path / "requirements.txt"
    exported = subprocess.run(
        [uv, "export", "--frozen", "--no-dev", "--no-emit-project", "--format", "requirements-txt"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    )
    requirements.write_text(exported.stdout)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = [uv, "pip", "install", "--python", str(python)]
    subprocess.run([*install, "-r", str(requirements)], check=True, capture_output=True)
    subprocess.run([*install, "--no-deps", str(wheel)], check=True, capture_output=True)
    result = subprocess.run(
        [str(venv / "bin" / "kueue-graphql"), "--version"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"kueue-graphql {importlib.metadata.version('kueue-graphql')}"
    # Only the runtime dependencies came along: no test or lint tool.
    listed = subprocess.run(
        [uv, "pip", "list", "--python", str(python)], capture_output=True, text=True, check=True
    ).stdout.lower()
    assert "prometheus-client" in listed
    assert "pytest" not in listed
    assert "playwright" not in listed
