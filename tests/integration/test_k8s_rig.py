"""The real kube-apiserver rig works for what the operator needs: CRDs with a status subresource, a kopf
operator watching them, and helm-rendered manifests validated server-side.

Needs `python tests/rig/k8s_rig.py up` (or `make rig-up`); nothing here is mocked.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.integration.conftest import wait_established

pytestmark = pytest.mark.k8s

GROUP = "rigtest.kafkaplacement.io"
CRD_NAME = f"widgets.{GROUP}"
CRD = textwrap.dedent(
    f"""\
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: {CRD_NAME}
    spec:
      group: {GROUP}
      scope: Namespaced
      names:
        kind: Widget
        plural: widgets
        singular: widget
        listKind: WidgetList
      versions:
        - name: v1
          served: true
          storage: true
          subresources:
            status: {{}}
          additionalPrinterColumns:
            - name: Size
              type: integer
              jsonPath: .spec.size
            - name: Phase
              type: string
              jsonPath: .status.phase
          schema:
            openAPIV3Schema:
              type: object
              properties:
                spec:
                  type: object
                  properties:
                    size:
                      type: integer
                      minimum: 0
                status:
                  type: object
                  x-kubernetes-preserve-unknown-fields: true
    """
)

Kubectl = Callable[..., "subprocess.CompletedProcess[str]"]


def poll(what: str, check: Callable[[], Any], timeout: float = 60.0, every: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = check()
            if last:
                return last
        except Exception as e:  # not there yet
            last = e
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}; last: {last!r}", pytrace=False)
        time.sleep(every)


def widget(name: str, size: int) -> str:
    return json.dumps(
        {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": size}}
    )


@pytest.fixture(scope="module")
def widget_crd(kubectl: Kubectl) -> Iterator[str]:
    """The Widget CRD, applied and Established."""
    kubectl("apply", "-f", "-", input=CRD)
    wait_established(kubectl, f"crd/{CRD_NAME}")
    yield CRD_NAME
    kubectl("delete", "crd", CRD_NAME, "--wait=false", check=False)


def test_crd_is_served_and_status_subresource_patches(
    kubectl: Kubectl, widget_crd: str, k8s_namespace: str
) -> None:
    ns = k8s_namespace
    resources = kubectl("api-resources", f"--api-group={GROUP}", "-o", "name").stdout.split()
    assert resources == [CRD_NAME]

    kubectl("-n", ns, "create", "-f", "-", input=widget("w1", 3))
    kubectl(
        "-n", ns, "patch", "widget", "w1", "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": {"phase": "Ready", "observed": 3}}),
    )  # fmt: skip
    obj = json.loads(kubectl("-n", ns, "get", "widget", "w1", "-o", "json").stdout)
    assert obj["status"] == {"phase": "Ready", "observed": 3}
    assert obj["spec"] == {"size": 3}
    assert obj["metadata"]["generation"] == 1  # a status write is not a spec change

    # a main-resource update cannot touch status (the subresource owns it)
    kubectl(
        "-n", ns, "patch", "widget", "w1", "--type=merge",
        "-p", json.dumps({"spec": {"size": 4}, "status": {"phase": "Hacked"}}),
    )  # fmt: skip
    obj = json.loads(kubectl("-n", ns, "get", "widget", "w1", "-o", "json").stdout)
    assert obj["status"]["phase"] == "Ready" and obj["spec"] == {"size": 4}

    table = kubectl("-n", ns, "get", "widget", "w1").stdout.splitlines()
    assert table[0].split() == ["NAME", "SIZE", "PHASE"]  # the CRD's printer columns
    assert table[1].split()[:3] == ["w1", "4", "Ready"]

    # server-side schema validation is live
    bad = kubectl("-n", ns, "create", "-f", "-", input=widget("w2", -1), check=False)
    assert bad.returncode != 0 and "spec.size" in bad.stderr


def test_kopf_standalone_handles_a_widget(
    kubectl: Kubectl, widget_crd: str, k8s_namespace: str, k8s_rig: dict[str, Any], tmp_path: Path
) -> None:
    ns = k8s_namespace
    handlers = tmp_path / "handlers.py"
    handlers.write_text(
        textwrap.dedent(
            f"""\
            import kopf


            @kopf.on.startup()
            def configure(settings: kopf.OperatorSettings, **_):
                settings.posting.enabled = False
                settings.watching.server_timeout = 30


            @kopf.on.create("{GROUP}", "v1", "widgets")
            def on_create(spec, name, patch, **_):
                patch.status["phase"] = "Seen"
                return {{"seen": True, "size": spec.get("size"), "name": name}}
            """
        )
    )
    log = tmp_path / "kopf.log"
    env = {**os.environ, "KUBECONFIG": str(k8s_rig["kubeconfig"])}
    with open(log, "w") as out:
        kopf = subprocess.Popen(
            [sys.executable, "-m", "kopf", "run", "--standalone", "--namespace", ns, "--verbose",
             str(handlers)],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp_path, start_new_session=True,
        )  # fmt: skip
    try:
        name = f"w-{uuid.uuid4().hex[:6]}"
        kubectl("-n", ns, "create", "-f", "-", input=widget(name, 7))

        def handled() -> dict[str, Any] | None:
            assert kopf.poll() is None, f"kopf exited {kopf.returncode}:\n{log.read_text()[-3000:]}"
            status = json.loads(kubectl("-n", ns, "get", "widget", name, "-o", "json").stdout).get("status")
            return status if status and "on_create" in status else None

        status = poll(f"kopf to handle widget {name} (log {log})", handled, timeout=60)
        assert status["on_create"] == {"seen": True, "size": 7, "name": name}
        assert status["phase"] == "Seen"
    finally:
        if kopf.poll() is None:
            kopf.send_signal(signal.SIGINT)
            try:
                kopf.wait(timeout=30)
            except subprocess.TimeoutExpired:
                kopf.kill()
                kopf.wait()
                pytest.fail(f"kopf did not stop within 30s of SIGINT:\n{log.read_text()[-3000:]}")
    assert kopf.returncode == 0, log.read_text()[-3000:]


def test_helm_template_passes_server_side_dry_run(
    kubectl: Kubectl, k8s_rig: dict[str, Any], k8s_namespace: str, tmp_path: Path
) -> None:
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: rigtest\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("greeting: hello\n")
    (chart / "templates" / "configmap.yaml").write_text(
        textwrap.dedent(
            """\
            apiVersion: v1
            kind: ConfigMap
            metadata:
              name: {{ .Release.Name }}-cm
              labels:
                app.kubernetes.io/managed-by: {{ .Release.Service }}
            data:
              greeting: {{ .Values.greeting | quote }}
            """
        )
    )
    helm_home = tmp_path / "helm-home"
    env = {
        **os.environ,
        "HELM_CACHE_HOME": str(helm_home / "cache"),
        "HELM_CONFIG_HOME": str(helm_home / "config"),
        "HELM_DATA_HOME": str(helm_home / "data"),
    }
    rendered = subprocess.run(
        [str(k8s_rig["helm"]), "template", "rt", str(chart), "--namespace", k8s_namespace,
         "--set", "greeting=hi"],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    assert rendered.returncode == 0, rendered.stderr
    assert "name: rt-cm" in rendered.stdout

    applied = kubectl("-n", k8s_namespace, "apply", "--dry-run=server", "-o", "json", "-f", "-",
                      input=rendered.stdout)  # fmt: skip
    obj = json.loads(applied.stdout)
    assert obj["kind"] == "ConfigMap" and obj["data"] == {"greeting": "hi"}
    assert obj["metadata"]["namespace"] == k8s_namespace
    # dry run: nothing was created
    got = kubectl("-n", k8s_namespace, "get", "configmap", "rt-cm", check=False)
    assert got.returncode != 0 and "NotFound" in got.stderr

    # and server-side validation rejects what is invalid
    bad = kubectl("-n", k8s_namespace, "apply", "--dry-run=server", "-f", "-",
                  input=rendered.stdout.replace("name: rt-cm", "name: RT_CM"), check=False)  # fmt: skip
    assert bad.returncode != 0 and "Invalid" in bad.stderr
