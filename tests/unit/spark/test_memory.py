"""The memory refusal's pure parts (spark/memory.py): sizes, the cgroup's limit (v1 and v2, the tightest
of a cgroup and its parents), which limit holds, and when a read or a plan is refused, saying why. The
refusal under a real kernel limit: tests/integration/test_memory_refusal.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_placement.model.errors import BadInputError
from kafka_placement.spark import memory
from kafka_placement.spark.memory import InsufficientMemoryError, Limit


@pytest.mark.parametrize(
    ("text", "size"),
    [("3Gi", 3 * 2**30), ("2500Mi", 2500 * 2**20), ("4G", 4 * 10**9), ("512m", 512 * 10**6),
     ("1.5Gi", 3 * 2**29), (str(2**30), 2**30)],
)  # fmt: skip
def test_sizes_read_as_kubernetes_quantities(text: str, size: int) -> None:
    assert memory.parse_size(text) == size


@pytest.mark.parametrize(
    ("text", "says"), [("3x", "not a size"), ("", "not a size"), ("100k", "at least 1Mi")]
)
def test_a_bad_size_is_refused_naming_the_flag(text: str, says: str) -> None:
    with pytest.raises(BadInputError, match=says) as e:
        memory.parse_size(text)
    assert e.value.location == "--max-memory"


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_the_cgroup_limit_is_the_tightest_of_the_process_cgroup_and_its_parents(tmp_path: Path) -> None:
    v1, own = tmp_path / "v1", tmp_path / "self"
    own.write_text("4:memory:/kubepods/pod1/c1\n0::/\n")
    _tree(v1, {"memory/memory.limit_in_bytes": str(2**63 - 4096),
               "memory/kubepods/pod1/memory.limit_in_bytes": str(3 * 2**30),
               "memory/kubepods/pod1/c1/memory.limit_in_bytes": str(2**63 - 4096)})  # fmt: skip
    assert memory.cgroup_limit(v1, own) == 3 * 2**30
    v2 = tmp_path / "v2"
    own.write_text("0::/a/b\n")
    _tree(v2, {"cgroup.controllers": "memory", "a/memory.max": str(2**30), "a/b/memory.max": "max"})
    assert memory.cgroup_limit(v2, own) == 2**30
    own.write_text("0::/\n")  # a container's own namespace: its cgroup is the root it sees
    _tree(v2, {"memory.max": "max"})
    assert memory.cgroup_limit(v2, own) is None
    assert memory.cgroup_limit(tmp_path / "none", tmp_path / "missing") is None


def test_the_flag_wins_over_the_environment_and_the_environment_over_the_cgroup(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(memory, "cgroup_limit", lambda: 5 * 2**30)
    monkeypatch.setenv("KP_MAX_MEMORY", "2Gi")
    assert memory.limit_of("1Gi") == Limit(2**30, "--max-memory")
    assert memory.limit_of(None) == Limit(2 * 2**30, "--max-memory")
    monkeypatch.delenv("KP_MAX_MEMORY")
    got = memory.limit_of(None)
    assert got is not None and got.bytes == 5 * 2**30 and "cgroup" in got.source
    monkeypatch.setattr(memory, "cgroup_limit", lambda: None)
    assert memory.limit_of(None) is None


def test_a_read_or_a_plan_over_the_limit_is_refused_with_the_sizes_and_the_setting() -> None:
    limit = Limit(2**30, "--max-memory")
    memory.check_read(80 * 2**20, limit, "s.json")  # 80 MiB of JSON: about 1 GiB, within
    with pytest.raises(InsufficientMemoryError) as e:
        memory.check_read(100 * 2**20, limit, "s.json")
    assert e.value.exit_code == 3 and e.value.reason == "InsufficientMemory"
    assert (
        "s.json (100 MiB of JSON) needs about 1.19 GiB" in e.value.message
        and "(--max-memory)" in e.value.message
    )
    memory.check_plan(3_000_000, 1_000_000, None)  # no limit: nothing checked
    memory.check_plan(1_000_000, 300_000, limit, resident=2**29)
    with pytest.raises(InsufficientMemoryError, match=r"planning 1000000 partitions \(3000000 replicas\)"):
        memory.check_plan(3_000_000, 1_000_000, limit, resident=2**29)
    assert memory.resident_bytes() > 0
