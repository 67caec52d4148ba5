"""PEM files from Secrets (reconcile/secret_files.py): one private file per content, reused, pruned."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from tests.unit.private_dirs import vanishing

from kafka_placement.model.errors import PlacementError
from kafka_placement.reconcile import secret_files


@pytest.fixture(autouse=True)
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # re-read TMPDIR
    return tmp_path


def test_same_content_is_one_file_reused_by_every_call(private_tmp: Path) -> None:
    paths = {secret_files.pem_file("-----BEGIN CERTIFICATE-----\nabc\n") for _ in range(50)}
    assert len(paths) == 1
    path = Path(paths.pop())
    assert path.read_text() == "-----BEGIN CERTIFICATE-----\nabc\n"
    assert path.parent.parent == private_tmp
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    other = Path(secret_files.pem_file("another key"))
    assert other != path and sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, other.name])


def test_files_unused_for_a_day_are_removed(private_tmp: Path) -> None:
    old = Path(secret_files.pem_file("rotated away"))
    stale = time.time() - secret_files.STALE_S - 60
    os.utime(old, (stale, stale))
    kept = Path(secret_files.pem_file("current"))
    assert not old.exists() and kept.exists()


def test_a_directory_others_may_read_is_refused(private_tmp: Path) -> None:
    directory = private_tmp / f"kafka-placement-{os.getuid()}"
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    with pytest.raises(PlacementError, match="mode 0700"):
        secret_files.pem_file("key")


def test_a_directory_removed_by_another_process_s_exit_before_the_write_is_made_again(
    private_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = vanishing(monkeypatch, times=1)  # the empty directory made, then removed by another exit
    path = Path(secret_files.pem_file("key"))
    assert path.read_text() == "key" and len(calls) == 2
