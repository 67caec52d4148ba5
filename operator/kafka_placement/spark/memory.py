"""Whether planning a snapshot fits in the memory given, refused before it starts when it would not.

A plan that runs out of memory is killed mid-way (the kernel's OOM killer, or the pod's limit) with no
word of why. So the planning process checks first, against a limit: ``--max-memory`` (the CLI's
``plan`` and ``operator`` commands), else the memory limit of its cgroup (a pod's ``resources.limits``),
else nothing is checked. Two checks, from what planning was measured to take in this project's local
engine (docs/benchmarks.md, "Memory refusal"):

- before a JSON snapshot file is read (``check_read``): reading and planning it peaks at about
  ``JSON_PEAK_PER_BYTE`` times the file's size (10.1-10.9x measured at 100k and 300k partitions);
- before the plan, the snapshot read (``check_plan``: any source, the operator's own read of Kafka
  included): the process's resident memory now plus ``PLAN_BYTES_PER_REPLICA`` per replica (265 bytes
  measured at 100k partitions, RF 3, beyond the memory held once the snapshot is read; the constant
  holds a margin: tests/bench/run_memory.py checks both estimates against measured peaks).

A refusal is an ``InsufficientMemoryError`` (the CLI's exit 3, the operator's planning failure with
reason ``InsufficientMemory``) naming the size, the need, the limit and where the limit came from. The
Spark engine plans on executors with their own memory and is not checked here.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..model.errors import BadInputError, InfeasibleError

JSON_PEAK_PER_BYTE = 11.5  # peak resident bytes of reading + planning, per byte of JSON snapshot
JSON_PEAK_BASE = 64 * 2**20  # the process before it reads anything (imports)
PLAN_BYTES_PER_REPLICA = 500  # planning's own memory beyond the snapshot's, per replica
CGROUP_ROOT = Path("/sys/fs/cgroup")
UNLIMITED_V1 = 2**60  # cgroup v1 reports "no limit" as a number near 2**63
_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}


class InsufficientMemoryError(InfeasibleError):
    """Planning would need more memory than the limit given: refused before it starts."""

    reason = "InsufficientMemory"


@dataclass(frozen=True, slots=True)
class Limit:
    """A memory limit in bytes and where it came from (for the refusal's message)."""

    bytes: int
    source: str


def parse_size(text: str, where: str = "--max-memory") -> int:
    """Bytes from ``3Gi``, ``2500Mi``, ``4G``, ``512m`` or a plain number of bytes (Kubernetes' quantity
    suffixes, case-insensitive); at least 1 MiB."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMgGtT][iI]?)?\s*", text)
    if m is None:
        raise BadInputError(f"not a size: {text[:40]!r} (e.g. 3Gi, 2500Mi, 4G or bytes)", where)
    unit = (m.group(2) or "").lower()
    size = int(float(m.group(1)) * (_BINARY.get(unit) or _UNITS[unit]))
    if size < 2**20:
        raise BadInputError(f"at least 1Mi, got {text.strip()}", where)
    return size


def cgroup_dirs(
    v1_controller: str, root: Path = CGROUP_ROOT, own: Path = Path("/proc/self/cgroup")
) -> tuple[bool, list[Path]]:
    """Whether the cgroups are v2, and the directories of this process's cgroup and each of its parents'
    (a container's, a pod's), its own first: v2's unified tree or, on v1, the hierarchy of
    ``v1_controller`` (``cpu`` is a link to ``cpu,cpuacct`` where both share one); in a container whose
    cgroup is the root of what it sees, the root alone."""
    try:
        lines = own.read_text().splitlines()
    except OSError:
        lines = []
    v2 = (root / "cgroup.controllers").exists()
    if v2:
        base, path = root, next((ln[3:] for ln in lines if ln.startswith("0::")), "/")
    else:
        base, fields = root / v1_controller, (ln.split(":", 2) for ln in lines)
        path = next((f[2] for f in fields if len(f) == 3 and v1_controller in f[1].split(",")), "/")
    here = base / path.strip("/") if path.strip("/") else base
    dirs = [here]
    while here != base and base in here.parents:
        here = here.parent
        dirs.append(here)
    return v2, dirs


def read_value(path: Path) -> str:
    """A cgroup interface file's text, stripped; empty when it is absent or unreadable."""
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def cgroup_limit(root: Path = CGROUP_ROOT, own: Path = Path("/proc/self/cgroup")) -> int | None:
    """The memory limit of this process's cgroup (a container's, a pod's), the tightest of its own and
    its parents', or None when none has one. cgroup v2 (``memory.max``) or v1 (the memory controller's
    ``memory.limit_in_bytes``)."""
    v2, dirs = cgroup_dirs("memory", root, own)
    texts = (read_value(d / ("memory.max" if v2 else "memory.limit_in_bytes")) for d in dirs)
    found = [int(t) for t in texts if t.isdigit() and int(t) < UNLIMITED_V1]
    return min(found) if found else None


def limit_of(max_memory: str | None, env: str = "KP_MAX_MEMORY") -> Limit | None:
    """The limit planning is held to: ``max_memory`` (a flag), else ``$KP_MAX_MEMORY`` (set by the
    operator command from its flag), else the cgroup's; None when there is none."""
    if max_memory is not None:
        return Limit(parse_size(max_memory), "--max-memory")
    given = os.environ.get(env)
    if given:
        return Limit(parse_size(given, env), "--max-memory")
    found = cgroup_limit()
    return None if found is None else Limit(found, "the memory limit of its cgroup, e.g. the pod's")


def resident_bytes() -> int:
    """This process's resident memory now (Linux ``/proc/self/statm``; 0 where unknown)."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB"


def check_read(file_bytes: int, limit: Limit | None, what: str) -> None:
    """Refuse to read a JSON snapshot of ``file_bytes`` whose reading and planning would not fit."""
    if limit is None:
        return
    need = JSON_PEAK_BASE + int(JSON_PEAK_PER_BYTE * file_bytes)
    if need > limit.bytes:
        raise InsufficientMemoryError(
            f"the snapshot {what} ({file_bytes / 2**20:.0f} MiB of JSON) needs about {_gib(need)} to read "
            f"and plan, more than {_gib(limit.bytes)} ({limit.source}); give it more memory, or plan with "
            "the Spark engine (`--engine spark`, `spark-k8s`), whose executors hold the work"
        )


def check_plan(replicas: int, partitions: int, limit: Limit | None, resident: int | None = None) -> None:
    """Refuse to plan a snapshot of ``replicas`` replicas when the process's memory now plus what planning
    them takes would exceed the limit."""
    if limit is None:
        return
    now = resident_bytes() if resident is None else resident
    need = now + PLAN_BYTES_PER_REPLICA * replicas
    if need > limit.bytes:
        raise InsufficientMemoryError(
            f"planning {partitions} partitions ({replicas} replicas) needs about {_gib(need)} "
            f"({_gib(now)} in use now, the snapshot included), more than {_gib(limit.bytes)} "
            f"({limit.source}); give it more memory, or plan with the Spark engine (`--engine spark`, "
            "`spark-k8s`), whose executors hold the work"
        )


__all__ = [
    "InsufficientMemoryError",
    "Limit",
    "cgroup_dirs",
    "cgroup_limit",
    "check_plan",
    "check_read",
    "limit_of",
    "parse_size",
    "read_value",
    "resident_bytes",
]
