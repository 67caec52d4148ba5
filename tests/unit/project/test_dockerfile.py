"""The image recipe: the Dockerfile lints clean (hadolint, or the built-in fallback checks), follows the
image conventions (docs/architecture.md, section 2), and its builder step (`pip wheel` of the project) works.

No Docker daemon is needed: what CI can check without building the image is checked here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LINT = ROOT / "scripts" / "lint-dockerfile.sh"
DOCKERFILE = ROOT / "Dockerfile"


def _lint(dockerfile: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(LINT), str(dockerfile)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )


def test_dockerfile_lints_clean() -> None:
    proc = _lint(DOCKERFILE)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_builtin_fallback_checks_pass_on_the_dockerfile_and_catch_violations(tmp_path: Path) -> None:
    no_venv = str(tmp_path / "no-venv")  # forces the fallback: no pip, no hadolint
    proc = _lint(DOCKERFILE, VENV=no_venv)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "built-in checks" in proc.stdout
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN pip install x && apt-get install -y y\nUSER root\n")
    proc = _lint(bad, VENV=no_venv)
    assert proc.returncode == 1
    for problem in ("USER is root", "latest tag", "--no-install-recommends", "--no-cache-dir"):
        assert problem in proc.stderr, proc.stderr


def test_dockerfile_conventions() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    froms = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", text, re.MULTILINE)
    stages = [alias for _, alias in froms]
    assert stages == ["deps", "builder", "runtime"], "multi-stage: the dependencies, the project, the runtime"
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim", text, re.MULTILINE)
    assert "openjdk-17-jre-headless" in text
    assert re.search(r"^USER 10001(:10001)?$", text, re.MULTILINE)
    assert 'ENTRYPOINT ["kafka-placement"]' in text
    assert 'CMD ["operator", "--all-namespaces"]' in text
    for env in ("HOME=/tmp", "PYTHONDONTWRITEBYTECODE=1"):
        assert env in text, env
    assert "pip wheel --no-cache-dir --no-deps --wheel-dir /wheels ." in text
    # the dependencies' layer is built from pyproject.toml alone: nothing copied into its stage but that
    deps = text[text.index(" AS deps") : text.index(" AS builder")]
    assert re.findall(r"^COPY (\S+)", deps, re.MULTILINE) == ["pyproject.toml"], deps
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    for entry in (".venv", ".rig", "tests/bench/out", ".mypy_cache", ".pytest_cache"):
        assert entry in ignored, entry


def test_builder_stage_wheel_builds(tmp_path: Path) -> None:
    """What the builder stage runs (without dependencies: those come from the registry as wheels)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "-q", "-w", str(tmp_path), "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheels = [p.name for p in tmp_path.glob("*.whl")]
    assert len(wheels) == 1 and wheels[0].startswith("kafka_placement_operator-0.1.0-"), wheels
