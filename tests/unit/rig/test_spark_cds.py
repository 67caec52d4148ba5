"""The Spark drivers' class-data archive (tests/rig/spark_cds.py): in the venv, named to the drivers only
once it exists, with the JVM's CDS messages off; keyed by the JDK and pyspark's jars. No JVM: files only."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.rig import spark_cds


@pytest.fixture
def jdk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr("sys.prefix", str(tmp_path / "venv"))
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    return java


def test_the_drivers_map_the_archive_only_once_it_exists(jdk: Path) -> None:
    archive = spark_cds.archive()
    assert archive is not None and archive.parent == jdk.parents[2] / "venv" / "spark-cds"
    assert spark_cds.options() == []  # (a missing archive would also turn the JDK's own sharing off)
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"archive")
    assert spark_cds.options() == [f"-XX:SharedArchiveFile={archive}", "-Xlog:cds*=off"]


def test_another_jdk_has_another_archive(jdk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = spark_cds.archive()
    other = tmp_path / "jdk2" / "bin" / "java"
    other.parent.mkdir(parents=True)
    other.write_text("")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk2"))
    assert spark_cds.archive() not in (None, first)
