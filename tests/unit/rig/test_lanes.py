"""The lanes of `make test` (tests/rig/lanes.py): every rig-backed test file runs in exactly one lane, and
the lanes' rigs share no state dir and no port."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.rig.lanes import LANES, REPO_ROOT, rig_backed_files
from tests.rig.leftovers import _DEFAULT_PORTS

POD_LISTENER_SHIFT = 1000  # tests/rig/kafka_rig.py --pod-address: a broker's port + 1000, with the node


def test_every_rig_backed_test_file_is_in_exactly_one_lane() -> None:
    named = [p for lane in LANES for p in lane.paths]
    assert len(named) == len(set(named)), sorted({p for p in named if named.count(p) > 1})
    assert sorted(named) == rig_backed_files()


def test_a_new_test_file_without_a_lane_is_found(tmp_path: Path) -> None:
    (tmp_path / "tests" / "e2e").mkdir(parents=True)
    (tmp_path / "tests" / "integration").mkdir()
    (tmp_path / "tests" / "e2e" / "test_new.py").write_text("")
    (tmp_path / "tests" / "e2e" / "conftest.py").write_text("")
    assert rig_backed_files(tmp_path) == ["tests/e2e/test_new.py"]


def test_the_lanes_rigs_share_no_state_dir_and_no_port() -> None:
    assert len({lane.rig_dir for lane in LANES}) == len(LANES)
    dirs = [lane.rig_dir for lane in LANES]
    assert not [(a, b) for a in dirs for b in dirs if b.startswith(a + "/")]  # nested: leftovers would mix
    taken: dict[int, str] = {}
    for lane in LANES:
        ports = {p + lane.port_offset for p in _DEFAULT_PORTS}
        if "node" in lane.rigs:  # main's and legacy's brokers also listen for pods
            brokers = range(29092 + lane.port_offset, 29292 + lane.port_offset)
            ports |= {p + POD_LISTENER_SHIFT for p in ports if p in brokers}
        clash = {p: taken[p] for p in ports if p in taken}
        assert not clash, f"lane {lane.name} shares ports with {clash}"
        taken.update(dict.fromkeys(ports, lane.name))
    assert max(taken) < 32768, "a rig port in Linux's ephemeral range could be taken by any client"


def test_only_one_lane_runs_the_node() -> None:
    assert [lane.name for lane in LANES if "node" in lane.rigs] == ["node"]


def test_the_cli_prints_a_lanes_environment_and_paths() -> None:
    def run(*args: str) -> str:
        cmd = [sys.executable, "tests/rig/lanes.py", *args]
        env = {k: v for k, v in os.environ.items() if k != "KP_RIG_PORT_OFFSET"}  # the lanes' own offsets
        return subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, check=True, env=env).stdout

    assert run("names").split() == [lane.name for lane in LANES]
    kafka = next(lane for lane in LANES if lane.name == "kafka")
    env = run("env", "kafka")
    assert f"KP_RIG_PORT_OFFSET={kafka.port_offset}" in env and "RIGS='main legacy secure k8s spark'" in env
    assert run("paths", "kafka").split() == list(kafka.paths)
