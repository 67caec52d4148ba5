"""The rig's class-data archives (tests/rig/jvm_cds.py): one per JDK and classpath; while none exists the
cluster's first broker is told to write one at exit, which a normal stop renames into place and a SIGKILL
discards; a stale training file is removed. No JVM: files only."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from tests.rig import jvm_cds, kafka_rig


@pytest.fixture
def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path, Path]:
    monkeypatch.setenv("KP_CACHE", str(tmp_path / "cache"))
    java = tmp_path / "jdk" / "java"
    java.parent.mkdir()
    java.write_text("")
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "kafka_2.13-4.4.0.jar").write_bytes(b"x" * 10)
    home = tmp_path / "node-1"
    home.mkdir()
    return str(java), libs, home


def test_without_an_archive_the_first_broker_trains_and_a_normal_stop_puts_it_in_place(
    rig: tuple[str, Path, Path],
) -> None:
    java, libs, home = rig
    assert jvm_cds.options(java, [libs], home, train=False) == []  # (the other nodes, the storage tool)
    (opt,) = jvm_cds.options(java, [libs], home, train=True)
    training = Path(opt.removeprefix("-XX:ArchiveClassesAtExit="))
    assert opt.startswith("-XX:ArchiveClassesAtExit=") and ".training-" in training.name
    assert jvm_cds.training(home)  # (a teardown stops it first, and waits for it)
    training.write_bytes(b"archive")  # what the JVM writes at its exit
    jvm_cds.settle(home, clean=True)
    assert not jvm_cds.training(home)
    archive = jvm_cds.archive_for(java, [libs])
    assert archive.read_bytes() == b"archive" and not training.exists()
    assert not (home / jvm_cds.TRAINING_NOTE).exists()
    # every JVM of that JDK and classpath maps it now, the first broker included
    assert jvm_cds.options(java, [libs], home, train=True) == [f"-XX:SharedArchiveFile={archive}"]


def test_a_sigkilled_trainee_leaves_no_archive(rig: tuple[str, Path, Path]) -> None:
    java, libs, home = rig
    (opt,) = jvm_cds.options(java, [libs], home, train=True)
    training = Path(opt.split("=", 1)[1])
    training.write_bytes(b"half")  # killed mid-write
    jvm_cds.settle(home, clean=False)
    assert not training.exists() and not jvm_cds.archive_for(java, [libs]).exists()
    jvm_cds.settle(home, clean=True)  # (nothing noted any more: nothing to do)


def test_another_classpath_or_jdk_has_an_archive_of_its_own(
    rig: tuple[str, Path, Path], tmp_path: Path
) -> None:
    java, libs, _ = rig
    first = jvm_cds.archive_for(java, [libs])
    plugin = tmp_path / "plugin.jar"
    plugin.write_bytes(b"p")
    assert jvm_cds.archive_for(java, [libs, plugin]) != first  # the main cluster's brokers: the plugin too
    (libs / "kafka_2.13-4.4.0.jar").write_bytes(b"y" * 11)  # another build of the jars
    assert jvm_cds.archive_for(java, [libs]) != first
    other = Path(java).with_name("java17")
    other.write_text("")
    assert jvm_cds.archive_for(str(other), [libs]) != jvm_cds.archive_for(java, [libs])


def test_a_stale_training_file_is_removed_when_the_next_trainee_starts(rig: tuple[str, Path, Path]) -> None:
    java, libs, home = rig
    archive = jvm_cds.archive_for(java, [libs])
    archive.parent.mkdir(parents=True)
    stale = archive.with_name(f"{archive.stem}.training-00000000.jsa")
    stale.write_bytes(b"old")
    old = time.time() - jvm_cds.STALE_TRAINING_S - 60
    os.utime(stale, (old, old))
    recent = archive.with_name(f"{archive.stem}.training-11111111.jsa")
    recent.write_bytes(b"another lane's, running")
    jvm_cds.options(java, [libs], home, train=True)
    assert not stale.exists() and recent.exists()


def test_the_rigs_brokers_and_storage_tool_get_the_archive_other_jvms_do_not(
    rig: tuple[str, Path, Path], tmp_path: Path
) -> None:
    java, libs, _ = rig
    nodes = tuple(kafka_rig.Node(i, 19091 + i, 19191 + i, "/r1", tmp_path / f"node-{i}", 2) for i in (1, 2))
    for n in nodes:
        n.home.mkdir(exist_ok=True)
    cluster = kafka_rig.Cluster("c", nodes, 2, None, "4.4.0", libs, tmp_path)

    def cds(node: kafka_rig.Node, main: str, **kw: Path) -> list[str]:
        return [a for a in kafka_rig.java_cmd(java, cluster, node, main, **kw) if "Archive" in a]

    assert cds(nodes[0], "kafka.Kafka")[0].startswith("-XX:ArchiveClassesAtExit=")  # the first node trains
    assert cds(nodes[1], "kafka.Kafka") == [] and cds(nodes[0], "kafka.tools.StorageTool") == []
    jvm_cds.archive_for(java, [libs]).write_bytes(b"archive")
    for node in nodes:
        for main in ("kafka.Kafka", "kafka.tools.StorageTool"):
            assert cds(node, main) == [f"-XX:SharedArchiveFile={jvm_cds.archive_for(java, [libs])}"]
    assert cds(nodes[0], "org.apache.zookeeper.server.quorum.QuorumPeerMain") == []
    assert cds(nodes[0], "kafka.Kafka", libs=tmp_path / "other-libs") == []  # another release's jars
