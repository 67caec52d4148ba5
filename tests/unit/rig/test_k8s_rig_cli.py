"""tests/rig/k8s_rig.py refuses bad input fast, with one clear message, and leaves nothing behind.

These run the real CLI as a subprocess against a temporary rig dir and private ports, so they never
touch a running shared rig; the preconditions they hit are checked before etcd or kube-apiserver start.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.rig.probes import free_ports, rig_processes
from tests.unit.rig_cli import run_rig_script


def run_rig(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_rig_script("k8s_rig.py", *args, env=env)


def assert_nothing_left(rig_dir: Path) -> None:
    assert not (rig_dir / "k8s").exists()
    assert not (rig_dir / "kubeconfig").exists()
    assert not (rig_dir / "rig.json").exists()
    assert rig_processes(rig_dir) == []


@pytest.fixture
def listener() -> Iterator[int]:
    """A port someone else is listening on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("option", "what"),
    [("--port", "kube-apiserver"), ("--etcd-port", "etcd client"), ("--etcd-peer-port", "etcd peer")],
)
def test_up_with_a_taken_port_fails_fast(tmp_path: Path, listener: int, option: str, what: str) -> None:
    ports = dict(zip(("--port", "--etcd-port", "--etcd-peer-port"), free_ports(3), strict=True))
    ports[option] = listener
    proc = run_rig("up", "--rig-dir", str(tmp_path), *(x for kv in ports.items() for x in map(str, kv)))
    assert proc.returncode == 2, proc.stderr
    assert f"port already in use: 127.0.0.1:{listener} ({what})" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert_nothing_left(tmp_path)


def test_up_without_binaries_names_build_sh(tmp_path: Path) -> None:
    port, etcd, peer = free_ports(3)
    proc = run_rig("up", "--rig-dir", str(tmp_path), "--bin-dir", "/nonexistent", "--port", str(port),
                   "--etcd-port", str(etcd), "--etcd-peer-port", str(peer))  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "not found in /nonexistent" in proc.stderr
    assert "bash tests/rig/k8s/build.sh" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert_nothing_left(tmp_path)


def test_up_without_openssl_fails_fast(tmp_path: Path) -> None:
    bins = tmp_path / "bin"
    bins.mkdir()
    for name in ("kube-apiserver", "kubectl", "etcd", "helm"):  # never run: openssl is checked first
        (bins / name).write_text("#!/bin/sh\nexit 1\n")
        (bins / name).chmod(0o755)
    port, etcd, peer = free_ports(3)
    rig_dir = tmp_path / "rig"
    proc = run_rig("up", "--rig-dir", str(rig_dir), "--bin-dir", str(bins), "--port", str(port),
                   "--etcd-port", str(etcd), "--etcd-peer-port", str(peer),
                   env={**os.environ, "PATH": str(tmp_path / "empty")})  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "openssl not found" in proc.stderr
    assert_nothing_left(rig_dir)


def test_up_rejects_clashing_ports(tmp_path: Path) -> None:
    proc = run_rig("up", "--rig-dir", str(tmp_path), "--port", "40000", "--etcd-port", "40000")
    assert proc.returncode == 2, proc.stderr
    assert "must differ" in proc.stderr
    assert_nothing_left(tmp_path)


def test_down_and_status_when_not_up(tmp_path: Path) -> None:
    down = run_rig("down", "--rig-dir", str(tmp_path))
    assert down.returncode == 0 and "was not up" in down.stdout
    status = run_rig("status", "--rig-dir", str(tmp_path))
    assert status.returncode == 1 and "not up" in status.stdout


def test_down_keeps_other_sections_of_rig_json(tmp_path: Path) -> None:
    rig_json = tmp_path / "rig.json"
    rig_json.write_text('{"kafka": {"name": "main"}, "k8s": {"kubeconfig": "/x", "ports": {}}}\n')
    proc = run_rig("down", "--rig-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert rig_json.read_text() == '{\n  "kafka": {\n    "name": "main"\n  }\n}\n'
