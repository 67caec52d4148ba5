"""End to end: an operator run out of a cluster with a kubeconfig holding its material inline (here the
CA, ``certificate-authority-data``; a ``client-key-data`` takes the same path, tests/unit/kube/
test_key_files.py) writes it only into a directory of its own process under the user's private
directory, never loose in the temp dir, for kopf's login and for its own client alike; a SIGKILLed
operator's directory is removed by the next one, and an operator that stops normally removes its own.

The rig's kube-apiserver only (no Kafka: the KafkaCluster names a port nothing listens on, and the
operator reconciling it to Unreachable shows that both of its clients reached the apiserver). Two
operator starts, about 20 s.
"""

from __future__ import annotations

import base64
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.conftest import Operator, strip_finalizers, wait_phase
from tests.e2e.test_operator import apply, cluster_manifest
from tests.integration.conftest import wait_established, wait_for

from kafka_placement.model.crd_parts import GROUP, PLURALS

pytestmark = [pytest.mark.k8s, pytest.mark.timeout(240)]
ROOT = Path(__file__).resolve().parents[2]


def inline_kubeconfig(k8s_rig: dict[str, Any], path: Path) -> Path:
    ca = base64.b64encode(Path(k8s_rig["caFile"]).read_bytes()).decode()
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: rig\n"
        f"clusters:\n- name: rig\n  cluster:\n    server: {k8s_rig['server']}\n"
        f"    certificate-authority-data: {ca}\n"
        "contexts:\n- name: rig\n  context:\n    cluster: rig\n    user: admin\n"
        f"users:\n- name: admin\n  user:\n    token: {k8s_rig['token']}\n"
    )
    return path


def holding(root: Path, content: bytes) -> set[Path]:
    """The files under ``root`` whose bytes hold ``content``."""
    return {p for p in root.rglob("*") if p.is_file() and content in p.read_bytes()}


def own_dirs(tmp: Path) -> dict[int, Path]:
    """The operators' key directories (pid -> dir) under the private directory in ``tmp``."""
    base = tmp / f"kafka-placement-{os.getuid()}"
    return {int(d.name.split("-")[1]): d for d in base.glob("kube-*")} if base.is_dir() else {}


def test_inline_kubeconfig_material_lives_in_the_operators_own_dir_and_no_crash_leaves_it(
    k8s_rig: dict[str, Any], kubectl: Any, k8s_api: Any, k8s_namespace: str, tmp_path: Path
) -> None:
    kubectl("apply", "-f", str(ROOT / "crds"))
    wait_established(kubectl, *(f"crd/{plural}.{GROUP}" for plural in PLURALS.values()))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    kubeconfig = inline_kubeconfig(k8s_rig, tmp_path / "kubeconfig")
    ca = Path(k8s_rig["caFile"]).read_bytes()
    env = {"TMPDIR": str(tmp)}

    first = Operator(k8s_namespace, str(kubeconfig), tmp_path / "first.log", env=env)
    first.start()
    try:
        apply(kubectl, k8s_namespace, cluster_manifest("nowhere", "127.0.0.1:1"))
        wait_phase(kubectl, first, k8s_namespace, "KafkaCluster", "nowhere", ("Unreachable",))
        assert first.proc is not None
        pid = first.proc.pid
        dirs = own_dirs(tmp)
        assert set(dirs) == {pid}, (dirs, first.tail())
        assert holding(tmp, ca) and {p.parent for p in holding(tmp, ca)} == {dirs[pid]}, holding(tmp, ca)
        assert "Activity 'login' succeeded" in first.tail(200)  # kopf's login, handlers/register.py
        assert (dirs[pid].parent.stat().st_mode & 0o777) == 0o700
    finally:
        first.kill(signal.SIGKILL)
    assert dirs[pid].is_dir()  # a SIGKILL runs no exit handler

    second = Operator(k8s_namespace, str(kubeconfig), tmp_path / "second.log", env=env)
    second.start()
    try:
        assert second.proc is not None
        other = second.proc.pid
        wait_for(
            "the second operator's login",
            lambda: "Activity 'login' succeeded" in second.tail(200),
            timeout=60,
            why=second.tail,
        )
        assert set(own_dirs(tmp)) == {other}  # the SIGKILLed one's, swept
        assert {p.parent for p in holding(tmp, ca)} == {own_dirs(tmp)[other]}
    finally:
        second.kill(signal.SIGTERM)
        strip_finalizers(k8s_api, k8s_namespace)  # (no operator left to remove kopf's)
    assert own_dirs(tmp) == {} and not holding(tmp, ca)  # a normal stop removes its own
