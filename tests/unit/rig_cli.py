"""Running a rig script (tests/rig/*.py) as its users do, for the unit tests of its precondition checks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

RIG_DIR = Path(__file__).resolve().parents[1] / "rig"
# every run of these tests ends at a precondition check, in about a second; a rig that got past them would
# start its servers and take far longer
RIG_TIMEOUT_S = 60.0


def run_rig_script(
    script: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``tests/rig/<script> args``'s outcome; a run still going after ``RIG_TIMEOUT_S`` fails the test."""
    try:
        return subprocess.run(
            [sys.executable, str(RIG_DIR / script), *args],
            capture_output=True,
            text=True,
            timeout=RIG_TIMEOUT_S,
            env=env,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{script} {' '.join(args[:1])} still running after {RIG_TIMEOUT_S:g} s: past its checks")
