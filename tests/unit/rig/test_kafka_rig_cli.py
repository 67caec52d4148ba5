"""tests/rig/kafka_rig.py refuses bad input fast, with one clear message, and leaves nothing behind.

These run the real CLI as a subprocess against a temporary rig dir; the preconditions they hit are
checked before any JVM starts, so no Kafka rig (and no Java) is needed.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.rig.probes import free_ports, rig_jvms
from tests.unit.rig_cli import run_rig_script


def run_rig(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_rig_script("kafka_rig.py", *args, env=env)


def assert_nothing_left(rig_dir: Path, name: str) -> None:
    assert not (rig_dir / f"kafka-{name}").exists()
    assert not (rig_dir / "rig.json").exists()
    assert rig_jvms(rig_dir) == []


@pytest.fixture
def listener() -> Iterator[int]:
    """A port someone else is listening on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


def test_up_with_a_taken_broker_port_fails_fast(tmp_path: Path, listener: int) -> None:
    (cport,) = free_ports(1)
    proc = run_rig("up", "--name", "t1", "--nodes", "1", "--base-port", str(listener),
                   "--controller-base-port", str(cport), "--rig-dir", str(tmp_path))  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert f"port already in use: 127.0.0.1:{listener} (node 1 broker listener)" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert_nothing_left(tmp_path, "t1")


def test_up_with_a_taken_controller_port_names_it(tmp_path: Path, listener: int) -> None:
    (base,) = free_ports(1)
    proc = run_rig("up", "--name", "t2", "--nodes", "2", "--base-port", str(base),
                   "--controller-base-port", str(listener - 1), "--rig-dir", str(tmp_path))  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert f"127.0.0.1:{listener} (node 2 controller listener)" in proc.stderr
    assert_nothing_left(tmp_path, "t2")


def test_up_without_java_fails_fast(tmp_path: Path) -> None:
    base, cbase = free_ports(2)
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"} | {"PATH": str(tmp_path)}
    proc = run_rig("up", "--name", "t3", "--nodes", "1", "--base-port", str(base),
                   "--controller-base-port", str(cbase), "--rig-dir", str(tmp_path), env=env)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "java not found" in proc.stderr
    assert_nothing_left(tmp_path, "t3")


def test_up_without_jars_fails_fast(tmp_path: Path) -> None:
    base, cbase = free_ports(2)
    proc = run_rig("up", "--name", "t4", "--nodes", "1", "--base-port", str(base),
                   "--controller-base-port", str(cbase), "--libs", str(tmp_path / "nolibs"),
                   "--rig-dir", str(tmp_path))  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "jars not found" in proc.stderr and "fetch.sh" in proc.stderr
    assert_nothing_left(tmp_path, "t4")


def test_up_of_main_without_the_broker_plugin_fails_fast(tmp_path: Path) -> None:
    """The main cluster's brokers run the broker plugin's replica selector: no jar, no start."""
    base, cbase = free_ports(2)
    libs = tmp_path / "libs"  # enough for the jars check, which comes first
    libs.mkdir()
    (libs / "kafka_2.13-4.3.1.jar").touch()
    (libs / ".complete").touch()
    env = dict(os.environ) | {"KP_CACHE": str(tmp_path / "cache")}
    proc = run_rig("up", "--name", "main", "--kafka-version", "4.3.1", "--libs", str(libs),
                   "--base-port", str(base), "--controller-base-port", str(cbase),
                   "--rig-dir", str(tmp_path), env=env)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "broker plugin's jar is not built" in proc.stderr
    assert "bash scripts/build-broker-plugin.sh" in proc.stderr and "Traceback" not in proc.stderr
    assert_nothing_left(tmp_path, "main")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nodes", "0", "--base-port", "40000"], "--nodes and --dirs must be >= 1"),
        (["--base-port", "40000", "--controller-base-port", "40001"], "overlap"),
        ([], "has no default ports"),
        (["--base-port", "40000", "--racks", "/dc1/r1,,/dc2"], "bad --racks"),
    ],
)
def test_up_rejects_bad_arguments(tmp_path: Path, args: list[str], message: str) -> None:
    proc = run_rig("up", "--name", "t5", *args, "--rig-dir", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert_nothing_left(tmp_path, "t5")


def test_down_and_status_of_a_cluster_that_is_not_up(tmp_path: Path) -> None:
    down = run_rig("down", "--name", "t6", "--rig-dir", str(tmp_path))
    assert down.returncode == 0 and "was not up" in down.stdout
    status = run_rig("status", "--name", "t6", "--rig-dir", str(tmp_path))
    assert status.returncode == 1 and "not up" in status.stdout


def test_down_keeps_other_sections_of_rig_json(tmp_path: Path) -> None:
    rig_json = tmp_path / "rig.json"
    rig_json.write_text('{"k8s": {"kubeconfig": "/x"}, "kafka-t7": {"name": "t7", "nodes": []}}\n')
    proc = run_rig("down", "--name", "t7", "--rig-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert rig_json.read_text() == '{\n  "k8s": {\n    "kubeconfig": "/x"\n  }\n}\n'


def fake_entry(rig_dir: Path, name: str, port: int, cport: int) -> None:
    """A rig.json entry of a one-node cluster whose JVM is not running (no JVM needed)."""
    home = rig_dir / f"kafka-{name}" / "node-1"
    node = {"id": 1, "host": "127.0.0.1", "port": port, "controllerPort": cport, "rack": "/dc1/r1",
            "logDirs": [str(home / "data-0")], "pid": 999999999}  # fmt: skip
    entry = {"name": name, "bootstrapServers": f"127.0.0.1:{port}", "version": "4.3.1",
             "releaseVersion": "4.3-IV0", "libsDir": str(rig_dir / "libs"),
             "dataDir": str(rig_dir / f"kafka-{name}"), "nodes": [node]}  # fmt: skip
    (rig_dir / "rig.json").write_text(json.dumps({f"kafka-{name}": entry}))


def test_node_commands_on_a_cluster_that_is_not_up(tmp_path: Path) -> None:
    for cmd in ("stop-node", "start-node"):
        proc = run_rig(cmd, "--name", "t8", "--node", "1", "--rig-dir", str(tmp_path))
        assert proc.returncode == 2, proc.stderr
        assert "kafka rig 't8' is not up" in proc.stderr and "Traceback" not in proc.stderr


def test_node_commands_reject_an_unknown_node(tmp_path: Path) -> None:
    fake_entry(tmp_path, "t9", *free_ports(2))
    for cmd in ("stop-node", "start-node"):
        proc = run_rig(cmd, "--name", "t9", "--node", "7", "--rig-dir", str(tmp_path))
        assert proc.returncode == 2, proc.stderr
        assert "has no node 7 (nodes: 1)" in proc.stderr


def test_stop_node_of_a_stopped_node(tmp_path: Path) -> None:
    fake_entry(tmp_path, "t10", *free_ports(2))
    proc = run_rig("stop-node", "--name", "t10", "--node", "1", "--rig-dir", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert "node 1 is already stopped" in proc.stderr


def test_start_node_whose_port_is_taken(tmp_path: Path, listener: int) -> None:
    (cport,) = free_ports(1)
    fake_entry(tmp_path, "t11", listener, cport)
    proc = run_rig("start-node", "--name", "t11", "--node", "1", "--rig-dir", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    assert f"cannot start node 1: port already in use: 127.0.0.1:{listener}" in proc.stderr
    assert rig_jvms(tmp_path) == []
