"""The rig runs any Kafka release from 3.7 (tests/compat/smoke.py brings each up): the version is read
from the jars, 3.7 and 3.8 get a static quorum, settings an older release does not know are left out,
and fetch.sh asks for the tiered cluster's test jar only with --tiered. No JVM, no network."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.rig import kafka_rig
from tests.rig.probes import free_ports
from tests.unit.rig_cli import run_rig_script

FETCH = Path(kafka_rig.__file__).parent / "kafka" / "fetch.sh"


def cluster(version: str, tmp_path: Path) -> kafka_rig.Cluster:
    nodes = tuple(
        kafka_rig.Node(i, 19091 + i, 19191 + i, "/dc1/r1", tmp_path / f"node-{i}", 2) for i in (1, 2, 3)
    )
    return kafka_rig.Cluster("compat", nodes, 2, None, version, tmp_path / "libs", tmp_path)


def props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


@pytest.mark.parametrize(
    ("version", "key"),
    [("3.7.2", (3, 7)), ("3.9.0-rc1", (3, 9)), ("4.10.0", (4, 10)), ("nightly", (0, 0))],
)
def test_version_key(version: str, key: tuple[int, int]) -> None:
    assert kafka_rig.version_key(version) == key


def test_the_version_is_read_from_the_jars(tmp_path: Path) -> None:
    assert kafka_rig.kafka_version_of(tmp_path) is None
    (tmp_path / "kafka_2.13-3.8.1.jar").touch()
    (tmp_path / "kafka_2.13-3.8.1-test.jar").touch()
    assert kafka_rig.kafka_version_of(tmp_path) == "3.8.1"
    (tmp_path / "kafka_2.13-4.0.2.jar").touch()  # two releases mixed: none
    assert kafka_rig.kafka_version_of(tmp_path) is None


@pytest.mark.parametrize("version", ["3.7.2", "3.8.1"])
def test_before_3_9_a_static_quorum_and_no_newer_settings(version: str, tmp_path: Path) -> None:
    c = cluster(version, tmp_path)
    assert not c.dynamic_quorum
    p = props(kafka_rig.server_properties(c, c.nodes[1]))
    assert p["controller.quorum.voters"] == "1@127.0.0.1:19192,2@127.0.0.1:19193,3@127.0.0.1:19194"
    assert "controller.quorum.bootstrap.servers" not in p
    assert p["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19093"  # no controller listener before 3.9
    assert not [k for k in p if k.startswith("share.coordinator.")]


@pytest.mark.parametrize("version", ["3.9.2", "4.3.1", "4.4.0"])
def test_from_3_9_a_dynamic_quorum(version: str, tmp_path: Path) -> None:
    c = cluster(version, tmp_path)
    assert c.dynamic_quorum
    p = props(kafka_rig.server_properties(c, c.nodes[0]))
    assert p["controller.quorum.bootstrap.servers"] == "127.0.0.1:19192,127.0.0.1:19193,127.0.0.1:19194"
    assert "controller.quorum.voters" not in p
    assert "CONTROLLER://127.0.0.1:19192" in p["advertised.listeners"]
    share = "share.coordinator.state.topic.replication.factor"
    assert (share in p) == (kafka_rig.version_key(version) >= (4, 0))


def test_a_release_older_than_3_7_is_refused(tmp_path: Path) -> None:
    base, cbase = free_ports(2)
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "kafka_2.13-3.6.2.jar").touch()
    (libs / ".complete").touch()
    proc = run_rig_script("kafka_rig.py", "up", "--name", "t1", "--nodes", "1", "--libs", str(libs),
                          "--base-port", str(base), "--controller-base-port", str(cbase),
                          "--rig-dir", str(tmp_path))  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "Kafka 3.6.2 is older than the oldest release the rig runs (3.7" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "kafka-t1").exists()


def test_a_java_tools_failure_is_shown_without_its_stack_frames() -> None:
    out = (
        'Exception in thread "main" java.lang.IllegalArgumentException: requirement failed: bad\n'
        "\tat scala.Predef$.require(Predef.scala:337)\n"
        "\tat kafka.tools.StorageTool.main(StorageTool.scala)\n"
        "Caused by: x\n\t... 5 more\n"
    )
    assert kafka_rig.without_stack_frames(out) == [
        'Exception in thread "main" java.lang.IllegalArgumentException: requirement failed: bad',
        "Caused by: x",
    ]


def fake_cache(tmp_path: Path, version: str) -> Path:
    libs = tmp_path / "cache" / "kafka" / version / "libs"
    libs.mkdir(parents=True)
    (libs / ".complete").touch()
    return libs


def fetch(tmp_path: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ) | {"KP_CACHE": str(tmp_path / "cache"), "KAFKA_VERSION": "4.4.0"}
    if path is not None:
        env["PATH"] = path
    return subprocess.run(["bash", str(FETCH), *args], capture_output=True, text=True, env=env, timeout=60)


def test_fetch_of_cached_plain_jars_needs_no_test_jar(tmp_path: Path) -> None:
    libs = fake_cache(tmp_path, "4.4.0")
    proc = fetch(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == str(libs)
    assert not (libs.parent / "tiered").exists()


def test_fetch_tiered_asks_maven_for_the_test_jar(tmp_path: Path) -> None:
    """With the plain jars cached and no test jar, --tiered goes to Maven (here: none on PATH)."""
    fake_cache(tmp_path, "4.4.0")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    java = shutil.which("java")
    if java is None:
        pytest.skip("no java on PATH")
    (bin_dir / "java").symlink_to(java)
    tools = ["bash", "dirname", "grep", "head", "mkdir", "flock", "sed", "cut", "date", "cat"]
    for tool in tools:
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    proc = fetch(tmp_path, "--tiered", path=str(bin_dir))
    assert proc.returncode == 1
    assert "mvn not found" in proc.stderr


def test_fetch_refuses_an_unknown_argument(tmp_path: Path) -> None:
    proc = fetch(tmp_path, "--tierd")
    assert proc.returncode == 2 and "unknown argument '--tierd'" in proc.stderr


def zookeeper_cluster(version: str, tmp_path: Path) -> kafka_rig.Cluster:
    nodes = tuple(kafka_rig.Node(i, 19091 + i, 0, "/dc1/r1", tmp_path / f"node-{i}", 2) for i in (1, 2, 3))
    return kafka_rig.Cluster("zk", nodes, 2, None, version, tmp_path / "libs", tmp_path, zookeeper_port=19192)


@pytest.mark.parametrize("version", ["2.3.1", "3.9.2"])
def test_zookeeper_mode_brokers_have_a_broker_id_and_zookeeper_connect_and_no_kraft(
    version: str, tmp_path: Path
) -> None:
    c = zookeeper_cluster(version, tmp_path)
    assert c.zookeeper and not c.dynamic_quorum and c.quorum == "zookeeper"
    p = props(kafka_rig.server_properties(c, c.nodes[1]))
    assert (p["broker.id"], p["zookeeper.connect"]) == ("2", "127.0.0.1:19192")
    assert p["listeners"] == p["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19093"
    kraft = ("process.roles", "node.id", "controller.listener.names", "metadata.log.dir")
    assert not [k for k in p if k in kraft or k.startswith("controller.quorum") or k in kafka_rig.KRAFT_ONLY]
    assert p["broker.rack"] == "/dc1/r1" and len(p["log.dirs"].split(",")) == 2
    assert c.nodes[1].ports == ((19093, "broker"),)


def test_the_zookeeper_server_config(tmp_path: Path) -> None:
    c = zookeeper_cluster("3.9.2", tmp_path)
    cfg = props(kafka_rig.zookeeper_config(c))
    assert cfg["clientPort"] == "19192" and cfg["clientPortAddress"] == "127.0.0.1"
    assert cfg["dataDir"] == str(tmp_path / "kafka-zk" / "zookeeper" / "data")
    assert c.zookeeper_libs == c.libs  # no zookeeper dir of its own beside the jars: Kafka's own
    (tmp_path / "zookeeper").mkdir()
    assert c.zookeeper_libs == tmp_path / "zookeeper"


def test_the_jars_of_a_release_before_2_4_are_scala_2_12(tmp_path: Path) -> None:
    (tmp_path / "kafka_2.12-2.3.1.jar").touch()
    assert kafka_rig.kafka_version_of(tmp_path) == "2.3.1"
    assert kafka_rig.kafka_jar(tmp_path, "2.3.1") == tmp_path / "kafka_2.12-2.3.1.jar"


def test_zookeeper_mode_is_refused_from_4_0(tmp_path: Path) -> None:
    libs = fake_cache(tmp_path, "4.0.2")
    (libs / "kafka_2.13-4.0.2.jar").touch()
    with pytest.raises(kafka_rig.RigError) as e:
        kafka_rig.check_libs(libs, "4.0.2", zookeeper=True)
    assert e.value.exit_code == 2 and "Kafka 4.0.2 has no ZooKeeper mode" in str(e.value)
    libs = fake_cache(tmp_path, "2.3.1")
    (libs / "kafka_2.12-2.3.1.jar").touch()
    kafka_rig.check_libs(libs, "2.3.1", zookeeper=True)  # older than 3.7 is fine without KRaft
