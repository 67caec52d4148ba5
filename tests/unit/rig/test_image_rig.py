"""tests/rig/image_rig.py: the stand-in base's OCI layout is self-consistent (every digest names its
blob), the project image is named as the chart's default, and its cache key follows what the build reads."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

import pytest
import yaml
from tests.rig import image_rig


def test_layout_digests_name_their_blobs(tmp_path: Path) -> None:
    layer = tmp_path / "rootfs.tar"
    with tarfile.open(layer, "w") as tar:
        info = tarfile.TarInfo("etc/hostname")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"kp\n"))
    digest = image_rig.write_layout(layer, tmp_path / "layout", "kp-test:1")
    layout = tmp_path / "layout"

    def blob(digest: str) -> bytes:
        return (layout / "blobs" / "sha256" / digest.split(":", 1)[1]).read_bytes()

    for path in (layout / "blobs" / "sha256").iterdir():
        assert "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest() == "sha256:" + path.name
    index = json.loads((layout / "index.json").read_text())
    (entry,) = index["manifests"]
    assert entry["digest"] == digest
    assert entry["annotations"]["org.opencontainers.image.ref.name"] == "kp-test:1"
    manifest = json.loads(blob(digest))
    config = json.loads(blob(manifest["config"]["digest"]))
    assert config["rootfs"]["diff_ids"] == [manifest["layers"][0]["digest"]]
    assert blob(manifest["layers"][0]["digest"]) == layer.read_bytes()
    assert not list((layout / "blobs" / "sha256").glob("*.partial"))


def test_the_image_is_named_as_the_charts_default() -> None:
    chart = Path(image_rig.REPO, "charts", "kafka-placement-operator")
    values = yaml.safe_load((chart / "values.yaml").read_text())
    app = yaml.safe_load((chart / "Chart.yaml").read_text())["appVersion"]
    assert values["image"]["tag"] == ""  # the chart then uses its appVersion
    assert image_rig.chart_image() == f"{values['image']['repository']}:{app}"


def test_the_cache_key_follows_the_sources(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "operator" / "pkg" / "__pycache__").mkdir(parents=True)
    for name in ("Dockerfile", ".dockerignore", "pyproject.toml", "README.md"):
        (repo / name).write_text(name)
    (repo / "operator" / "pkg" / "a.py").write_text("A = 1\n")
    chart = repo / "charts" / "kafka-placement-operator"
    chart.mkdir(parents=True)
    (chart / "Chart.yaml").write_text("appVersion: 0.1.0\n")
    (chart / "values.yaml").write_text("image:\n  repository: kafka-placement-operator\n")
    monkeypatch.setattr(image_rig, "REPO", repo)
    key = image_rig.image_key("sha256:base")
    (repo / "operator" / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert image_rig.image_key("sha256:base") == key  # not read by the build (.dockerignore)
    assert image_rig.image_key("sha256:other") != key
    (repo / "operator" / "pkg" / "a.py").write_text("A = 2\n")
    assert image_rig.image_key("sha256:base") != key
    changed = image_rig.image_key("sha256:base")
    (repo / "Dockerfile").write_text("FROM x\n")
    assert image_rig.image_key("sha256:base") != changed


def test_pruning_keeps_the_most_recently_used_archives(tmp_path: Path) -> None:
    for i, name in enumerate(("a", "b", "c", "d")):
        (tmp_path / f"operator-{name}.tar").write_bytes(b"x")
        os.utime(tmp_path / f"operator-{name}.tar", (1000 + i, 1000 + i))
    os.utime(tmp_path / "operator-a.tar")  # just reused from the cache
    (tmp_path / "other.tar").write_bytes(b"y")
    gone = image_rig.prune_archives(tmp_path, 2)
    assert sorted(p.name for p in gone) == ["operator-b.tar", "operator-c.tar"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["operator-a.tar", "operator-d.tar", "other.tar"]
