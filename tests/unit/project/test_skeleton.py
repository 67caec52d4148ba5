"""The project skeleton: package layout, console script, and the layer rules that CI enforces."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import kafka_placement
from kafka_placement.cli import main

ROOT = Path(__file__).resolve().parents[3]
VENV_BIN = Path(sys.executable).parent


def test_import_operator_is_the_standard_library_module() -> None:
    # The source root is named operator/; the package inside is kafka_placement, so the standard
    # library's operator module must still win in the installed environment, from any directory.
    for cwd in (ROOT, ROOT / "operator", Path("/")):
        out = subprocess.run(
            [sys.executable, "-c", "import operator; print(operator.__file__); print(operator.attrgetter)"],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        stdlib = sysconfig.get_paths()["stdlib"]
        assert out[0].startswith(stdlib), f"from {cwd}: operator resolved to {out[0]}, not under {stdlib}"
        assert "attrgetter" in out[1]


def test_console_script_version_and_help() -> None:
    exe = VENV_BIN / "kafka-placement"
    assert exe.exists(), "the console script is installed by `pip install -e .`"
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.strip() == f"kafka-placement {kafka_placement.__version__}"
    helptext = subprocess.run([str(exe), "--help"], capture_output=True, text=True, check=True).stdout
    assert "usage: kafka-placement" in helptext


def test_no_command_prints_help_and_exits_2(capsys: object) -> None:
    assert main([]) == 2


@pytest.mark.parametrize(
    ("module", "injected", "contract"),
    [
        ("model/__init__.py", "import kafka_placement.kafka", "model imports nothing of ours"),
        ("reconcile/reconciler.py", "import kubernetes", "one gateway to Kubernetes"),
        ("spark/k8s.py", "from kubernetes import client", "one gateway to Kubernetes"),
        ("reconcile/reconciler.py", "import confluent_kafka", "one gateway to Kafka"),
        ("execution/executor.py", "from kafka.errors import KafkaError", "one gateway to Kafka"),
        ("reconcile/decide.py", "import time", "the reconcile decisions are pure"),
        (
            "reconcile/decide.py",
            "import kafka_placement.kube.gateway",
            "the reconcile decisions are pure",
        ),
        ("reconcile/healing.py", "import time", "the reconcile decisions are pure"),
        ("reconcile/retiring.py", "import time", "the reconcile decisions are pure"),
        ("reconcile/pressure.py", "import time", "the reconcile decisions are pure"),
        ("planning/exact.py", "import kafka_placement.planning.goals", "no circle in planning"),
        ("reconcile/reconciler.py", "import kopf", "only handlers import kopf"),
        ("execution/executor.py", "import kopf", "only handlers import kopf"),
        ("reconcile/reconciler.py", "import kafka_placement.handlers.runtime", "layers: cli > handlers"),
    ],
)
def test_import_linter_rejects_a_layer_violation(
    tmp_path: Path, module: str, injected: str, contract: str
) -> None:
    # The contracts must be able to fail: inject a forbidden import into a copy of the tree.
    lint = VENV_BIN / "lint-imports"
    shutil.copytree(ROOT / "operator", tmp_path / "operator", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "operator")}
    clean = subprocess.run([str(lint), "--no-cache"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    target = tmp_path / "operator" / "kafka_placement" / module
    target.write_text(target.read_text() + f"\n{injected}  # noqa\n")
    broken = subprocess.run([str(lint), "--no-cache"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert broken.returncode != 0
    lines = broken.stdout.splitlines()
    assert any(line.startswith(contract) and line.endswith("BROKEN") for line in lines), broken.stdout
