"""The Kubernetes client's key files (kube/key_files.py): a kubeconfig's inline key lands in this process's
own directory, never loose in the temp dir, and the directories of processes that no longer run are swept.
No apiserver: loading a kubeconfig writes the files without connecting (the operator's own, against the
rig's apiserver, is tests/integration/test_kube_key_files.py)."""

from __future__ import annotations

import base64
import os
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.unit.private_dirs import vanishing

from kafka_placement.kube import gateway, key_files
from kafka_placement.model.errors import PlacementError

KEY = "-----BEGIN PRIVATE KEY-----\nnot a real key, only its path is looked at\n-----END PRIVATE KEY-----\n"


def inline_kubeconfig(path: Path) -> Path:
    b64 = base64.b64encode(KEY.encode()).decode()
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:1\n"
        "contexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n"
        f"users:\n- name: u\n  user:\n    client-certificate-data: {b64}\n    client-key-data: {b64}\n"
    )
    return path


@pytest.fixture
def tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # re-read TMPDIR
    monkeypatch.setattr(key_files, "_OWN", None)
    from kubernetes import client
    from kubernetes.config import kube_config

    monkeypatch.setattr(kube_config, "_temp_files", {})  # the client's cache of the files it wrote
    monkeypatch.setattr(client.Configuration, "_default", client.Configuration._default)  # put back after
    yield tmp_path


def files_holding_the_key(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]


def test_a_kubeconfig_s_inline_key_is_written_only_in_this_process_s_directory(tmp: Path) -> None:
    api = gateway.load_config(str(inline_kubeconfig(tmp / "kubeconfig")))
    own = key_files.process_dir()
    assert own.parent == tmp / f"kafka-placement-{os.getuid()}"
    assert own.name.startswith(f"kube-{os.getpid()}-")
    assert Path(api.configuration.key_file).parent == own
    assert {p.parent for p in files_holding_the_key(tmp)} == {own}  # the certificate's copy too
    assert stat.S_IMODE(own.parent.stat().st_mode) == 0o700


def test_the_default_kubeconfig_too_and_a_second_load_reuses_the_files(
    tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubernetes import client, config
    from kubernetes.config import kube_config

    # (the client reads $KUBECONFIG once, when imported)
    kubeconfig = str(inline_kubeconfig(tmp / "kubeconfig"))
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", kubeconfig)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    gateway.load_default_config()

    first = client.Configuration.get_default_copy().key_file
    config.load_kube_config()  # as kopf's login does, without a directory of its own
    assert client.Configuration.get_default_copy().key_file == first
    assert {p.parent for p in files_holding_the_key(tmp)} == {key_files.process_dir()}


def test_the_directories_of_processes_that_no_longer_run_are_swept(tmp: Path) -> None:
    base = key_files.private_dir()
    argv = [sys.executable, "-c", "import os; print(os.getpid())"]
    dead = subprocess.run(argv, capture_output=True, text=True, check=True)
    stale = [base / f"kube-{dead.stdout.strip()}-1", base / f"kube-{os.getpid()}-1", base / "kube-junk"]
    for d in stale:
        d.mkdir()
        (d / "tmpkey").write_text(KEY)
    own = key_files.process_dir()  # sweeps first
    assert own.is_dir() and stat.S_IMODE(own.stat().st_mode) == 0o700
    assert not any(d.exists() for d in stale)  # a dead pid, our pid with another start time (reused), junk
    assert key_files.sweep(base) == [] and own.exists()  # the running process's own is kept


def test_an_exit_removes_its_directory_and_the_user_s_once_empty(tmp: Path) -> None:
    own = key_files.process_dir()
    (own / "tmpkey").write_text(KEY)
    other = own.parent / "0123456789abcdef.pem"  # a PEM file of secret_files: the user's directory stays
    other.write_text("pem")
    key_files.remove(own)
    assert not own.exists() and own.parent.is_dir()
    other.unlink()
    own.mkdir()
    key_files.remove(own)
    assert not own.parent.exists()  # nothing left in the temp dir


def test_a_key_directory_it_cannot_make_or_trust_is_named(tmp: Path) -> None:
    (tmp / f"kafka-placement-{os.getuid()}").write_text("not a directory")
    with pytest.raises(PlacementError, match="must be a directory owned by"):
        key_files.process_dir()
    tempfile.tempdir = str(tmp / "missing" / "deeper")  # (the fixture puts it back)
    with pytest.raises(PlacementError, match=r"cannot make .*the directory of this user.s key files"):
        key_files.private_dir()


def test_a_user_s_directory_removed_by_another_exit_before_its_use_is_made_again(
    tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vanishing(monkeypatch, times=1)
    own = key_files.process_dir()
    assert own.is_dir() and own.parent == tmp / f"kafka-placement-{os.getuid()}"


def test_a_directory_that_vanishes_twice_is_named(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vanishing(monkeypatch, times=2)
    with pytest.raises(PlacementError, match=r"cannot make this process's key directory: .*kube-"):
        key_files.process_dir()
