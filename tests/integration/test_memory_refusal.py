"""A snapshot too large for the memory given is refused before it is planned, never killed mid-plan
(spark/memory.py), under a real memory limit: `kafka-placement plan` runs in a cgroup of its own with a
100 MiB limit (the kernel's, as a pod's ``resources.limits.memory`` is), on a 50k-partition snapshot
whose plan peaks near 175 MiB of resident memory when nothing limits it. With the limit read from
the cgroup the command refuses at once (exit 3, the size, the need and the limit named, no out-of-memory
kill counted); told it has 100 GiB instead, the same command is killed by the kernel, which is what the
refusal spares."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).parent / "kafka-placement"
LIMIT = 100 * 2**20
CGROUPS = Path("/sys/fs/cgroup")


def _own_memory_cgroup() -> tuple[Path, str, str]:
    """This process's memory cgroup dir, its limit file and its OOM-kill counter file (v2 or v1)."""
    lines = Path("/proc/self/cgroup").read_text().splitlines()
    if (CGROUPS / "cgroup.controllers").exists():
        path = next(ln[3:] for ln in lines if ln.startswith("0::"))
        return CGROUPS / path.strip("/"), "memory.max", "memory.events"
    path = next(ln.split(":", 2)[2] for ln in lines if ln.split(":")[1:2] == ["memory"])
    return CGROUPS / "memory" / path.strip("/"), "memory.limit_in_bytes", "memory.oom_control"


@pytest.fixture
def cgroup() -> Iterator[tuple[Path, str]]:
    """A child memory cgroup with a LIMIT-byte limit, removed afterwards; (its dir, its OOM file)."""
    parent, limit_file, oom_file = _own_memory_cgroup()
    child = parent / f"kp-memory-test-{uuid.uuid4().hex[:6]}"
    try:
        child.mkdir()
        (child / limit_file).write_text(str(LIMIT))
    except OSError as e:
        pytest.fail(f"cannot make a memory cgroup under {parent} (the suite runs as root): {e}")
    yield child, oom_file
    for _ in range(50):  # a killed process leaves its cgroup a moment later
        try:
            child.rmdir()
            break
        except OSError:
            subprocess.run(["sleep", "0.1"], check=False)


def _oom_kills(child: Path, oom_file: str) -> int:
    for line in (child / oom_file).read_text().splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill":
            return int(value)
    raise AssertionError(f"no oom_kill counter in {child / oom_file}")


def _plan_in(child: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [
        str(CLI),
        "plan",
        "--snapshot",
        str(tmp / "snapshot.json"),
        "--intents",
        str(tmp / "intents.yaml"),
    ]
    script = f'echo $$ > {child / "cgroup.procs"} && exec "$@"'
    return subprocess.run(
        ["sh", "-c", script, "sh", *command, "-o", str(tmp / "plan.json"), *extra],
        capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


def test_a_snapshot_too_large_for_the_cgroup_is_refused_not_killed(
    cgroup: tuple[Path, str], tmp_path: Path
) -> None:
    from tests.bench.generator import scenario

    snap, intents = scenario("all", brokers=50, partitions=50_000, topics=100)
    (tmp_path / "snapshot.json").write_text(snap.dumps())
    (tmp_path / "intents.yaml").write_text(intents)
    child, oom_file = cgroup

    refused = _plan_in(child, tmp_path)
    assert refused.returncode == 3, refused.stderr[-2000:]
    last = refused.stderr.strip().splitlines()[-1]
    assert (
        last.startswith("kafka-placement plan: error: the snapshot") and f"{LIMIT / 2**30:.2f} GiB" in last
    ), last
    assert "memory limit of its cgroup" in last and "--engine spark" in last, last
    assert _oom_kills(child, oom_file) == 0 and not (tmp_path / "plan.json").exists()

    killed = _plan_in(child, tmp_path, "--max-memory", "100Gi")  # a limit that is not the real one
    assert killed.returncode in (-9, 137), (killed.returncode, killed.stderr[-2000:])
    assert _oom_kills(child, oom_file) >= 1
