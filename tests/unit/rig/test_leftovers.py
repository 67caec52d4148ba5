"""tests/rig/leftovers.py finds what a rig left running (processes of its rig dir and their ports) and
nothing else; it runs after `make demo` and `make test` tear the rig down."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.rig.leftovers import busy_ports, leftovers, main
from tests.rig.probes import bridge_alias, rig_bridges

# a stand-in for a rig process: listens on a loopback port, prints it, then sleeps
SERVER = (
    "import socket, sys, time\n"
    "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
    "print(s.getsockname()[1], flush=True); time.sleep(60)\n"
)


def alias(directory: Path, name: str) -> str:
    """A symlink called ``name`` to this Python (a process whose argv[0] looks like ``name``)."""
    directory.mkdir(exist_ok=True)
    link = directory / name
    if not link.exists():
        link.symlink_to(Path(sys.executable).resolve())
    return str(link)


def start(argv0: str, *args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], int]:
    p = subprocess.Popen([argv0, "-c", SERVER, *args], env=env, stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    return p, int(p.stdout.readline())


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for p in started:
        p.kill()
        p.wait()


def test_lists_the_rigs_processes_with_their_ports_and_only_those(
    tmp_path: Path, procs: list[subprocess.Popen[str]]
) -> None:
    rig, other = tmp_path / "rig", tmp_path / "other-rig"
    bin_dir = tmp_path / "bin"
    jvm, jvm_port = start(alias(bin_dir, "java"), f"-Dkafka.placement.rig={rig}/kafka-main/node-1")
    etcd, etcd_port = start(alias(bin_dir, "etcd"), f"--data-dir={rig}/etcd")
    stranger, _ = start(alias(bin_dir, "etcd"), f"--data-dir={other}/etcd")  # another checkout's rig
    # the other lane of `make test`: its rig dir's name starts with this one's
    lane = f"{rig}-kafka"
    lane_jvm, _ = start(alias(bin_dir, "java"), f"-Dkafka.placement.rig={lane}/kafka-main/node-1")
    lane_etcd, _ = start(alias(bin_dir, "etcd"), f"--data-dir={lane}/k8s/etcd")
    procs.extend([jvm, etcd, stranger, lane_jvm, lane_etcd])
    found = {x.pid: x for x in leftovers(rig)}
    assert set(found) == {jvm.pid, etcd.pid}
    assert found[jvm.pid].ports == (jvm_port,) and found[etcd.pid].ports == (etcd_port,)
    assert busy_ports((jvm_port, etcd_port)) == sorted((jvm_port, etcd_port))
    assert main(["--rig-dir", str(rig)]) == 1

    for p in (jvm, etcd):
        p.kill()
        p.wait()
    deadline = time.monotonic() + 5
    while leftovers(rig) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert leftovers(rig) == []
    assert busy_ports((jvm_port, etcd_port)) == []
    assert main(["--rig-dir", str(rig)]) == 0
    assert [x.pid for x in leftovers(other)] == [stranger.pid]
    assert {x.pid for x in leftovers(Path(lane))} == {lane_jvm.pid, lane_etcd.pid}


def test_finds_an_operator_whose_kubeconfig_points_into_the_rig(
    tmp_path: Path, procs: list[subprocess.Popen[str]]
) -> None:
    rig = tmp_path / "rig"
    env = {"KUBECONFIG": str(rig / "kubeconfig"), "PATH": "/usr/bin:/bin"}
    p = subprocess.Popen(
        ["kafka-placement", "-c", SERVER],
        executable=sys.executable,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    procs.append(p)
    assert p.stdout is not None
    port = int(p.stdout.readline())
    assert [(x.pid, x.ports) for x in leftovers(rig)] == [(p.pid, (port,))]


@pytest.mark.skipif(os.geteuid() != 0, reason="creating a network link needs root")
def test_names_only_the_bridge_its_rig_created(tmp_path: Path) -> None:
    """The node rig's bridge is machine-wide: another checkout's (a different alias) is not a leftover."""
    rig, other = tmp_path / "rig", tmp_path / "other-rig"
    mine, theirs = f"kpt{os.getpid() % 10**6}a", f"kpt{os.getpid() % 10**6}b"
    try:
        for link, owner in ((mine, rig), (theirs, other)):
            subprocess.run(["ip", "link", "add", link, "type", "bridge"], check=True)
            subprocess.run(["ip", "link", "set", link, "alias", bridge_alias(owner)], check=True)
        assert rig_bridges(rig) == [mine]
        assert rig_bridges(other) == [theirs]
        assert main(["--rig-dir", str(rig)]) == 1
    finally:
        for link in (mine, theirs):
            subprocess.run(["ip", "link", "delete", link], check=False, capture_output=True)
    assert rig_bridges(rig) == []
    assert main(["--rig-dir", str(rig)]) == 0
