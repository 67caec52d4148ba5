"""End-to-end fixtures: the operator as a real process against the rig's kube-apiserver and Kafka.

Reuses the rig fixtures of tests/integration/conftest.py (rig.json, Kafka, kubectl, namespaces).
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.transitions import outside_the_table
from tests.integration.conftest import *  # noqa: F403  (the rig fixtures, for this directory too)
from tests.integration.conftest import (
    KafkaRig,  # noqa: F401
    rig_json_path,
    wait_established,
)

from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import CORDON_CONFIG, ConfigChange, ConfigTarget, KafkaGateway
from kafka_placement.model.crd_parts import GROUP, PLURALS, VERSION
from kafka_placement.model.errors import PlacementError

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).parent / "kafka-placement"


class Operator:
    """``kafka-placement operator --namespace NS`` as a child process; its log is kept for failures."""

    def __init__(
        self,
        namespace: str,
        kubeconfig: str,
        log: Path,
        metrics_port: int = 0,
        env: dict[str, str] | None = None,
    ) -> None:
        self.namespace, self.kubeconfig, self.log = namespace, kubeconfig, log
        self.metrics_port = metrics_port  # 0 = no metrics endpoint; else served on 127.0.0.1
        self.env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        # an idle cluster is re-read from Kafka every 6 s (reconciles every 2 s), not the default 60 s, so a
        # change made behind the operator's back is seen soon; a test may ask for another period (0: always)
        env = {**os.environ, "KP_RESYNC_SECONDS": "6", **self.env, "KUBECONFIG": self.kubeconfig}
        out = self.log.open("ab")
        metrics = ["--metrics-port", str(self.metrics_port), "--metrics-address", "127.0.0.1"]
        self.proc = subprocess.Popen(
            [str(CLI), "operator", "--namespace", self.namespace, "--interval", "2", *metrics],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(30)
        self.proc = None
        outside = outside_the_table(self.log.read_text(errors="replace") if self.log.exists() else "")
        assert not outside, f"phase transitions the table (reconcile/phases.py) does not allow: {outside}"

    def cpu_seconds(self) -> float:
        """CPU time the operator's process has used so far (all its threads, librdkafka's too)."""
        assert self.proc is not None and self.proc.poll() is None, "the operator is not running"
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

    def tail(self, lines: int = 40) -> str:
        return (
            "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:]) if self.log.exists() else ""
        )


@pytest.fixture
def operator_env() -> dict[str, str]:
    """Extra environment of the operator process (a test module overrides this fixture to set it)."""
    return {}


@pytest.fixture
def operator(
    k8s_namespace: str,
    k8s_rig: dict[str, Any],
    k8s_api: Any,
    kubectl: Any,
    tmp_path: Path,
    operator_env: dict[str, str],
    request: pytest.FixtureRequest,
) -> Iterator[Operator]:
    kubectl("apply", "-f", str(ROOT / "crds"))
    crds = [f"crd/{plural}.{GROUP}" for plural in PLURALS.values()]
    wait_established(kubectl, *crds)
    op = Operator(k8s_namespace, str(k8s_rig["kubeconfig"]), tmp_path / "operator.log", env=operator_env)
    op.start()
    yield op
    op.kill(signal.SIGTERM)
    strip_finalizers(k8s_api, k8s_namespace)
    # the cordons of the intents whose finalizers were just stripped: left on purpose, so cleared here (the
    # cluster guard then reports only what a test left without meaning to)
    for name in ("kafka_rig", "secure_rig"):
        if name in request.fixturenames:
            rig = request.getfixturevalue(name)
            clear_cordons(
                rig.admin_settings()
                if name == "secure_rig"
                else ConnectionSettings(bootstrap_servers=rig.bootstrap_servers)
            )


def strip_finalizers(api: Any, ns: str) -> None:
    """Delete the namespace's custom resources, their finalizers stripped first: resources left behind
    would keep their finalizers forever once the operator is gone (in-process calls: eight kubectl
    processes cost seconds per test)."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    custom = client.CustomObjectsApi(api)
    for kind in ("LogDirCordon", "BrokerDecommission", "PlacementPolicy", "KafkaCluster"):
        plural = PLURALS[kind]
        try:
            items = custom.list_namespaced_custom_object(GROUP, VERSION, ns, plural)["items"]
            for item in items:
                if item["metadata"].get("finalizers"):
                    body = {"metadata": {"finalizers": []}}
                    custom.patch_namespaced_custom_object(
                        GROUP, VERSION, ns, plural, item["metadata"]["name"], body
                    )
            if items:
                custom.delete_collection_namespaced_custom_object(GROUP, VERSION, ns, plural)
        except ApiException as e:  # a CRD a test removed, a namespace already going: nothing to strip
            warnings.warn(f"{kind}s of {ns} left as they are: {e.status} {e.reason}", stacklevel=1)


def clear_cordons(settings: ConnectionSettings) -> None:
    """Remove every dynamic ``cordoned.log.dirs`` of the cluster's live brokers (KIP-1066); a broker that
    dies meanwhile (a test of dead brokers) is skipped: it answers no config request."""
    with KafkaGateway(settings) as gw:
        if not gw.supports_cordon():
            return
        for b in gw.broker_ids():
            target = ConfigTarget.broker(b)
            try:
                entry = gw.describe_configs([target])[target].get(CORDON_CONFIG)
                if entry is not None and entry.value and entry.is_dynamic:
                    gw.incremental_alter_configs({target: [ConfigChange(CORDON_CONFIG, "DELETE")]})
            except PlacementError as e:
                warnings.warn(f"broker {b} left as it is: {e.message}", stacklevel=1)


def metric_samples(op: Operator, name: str, wait_s: float = 30) -> list[Any]:
    """The samples named ``name`` that the operator process serves on its metrics endpoint (waits up to
    ``wait_s`` for the endpoint: the process may have just started)."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    deadline = time.monotonic() + wait_s
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{op.metrics_port}/metrics", timeout=5) as r:
                text = r.read().decode()
            break
        except OSError:
            assert time.monotonic() < deadline, f"no metrics endpoint\n{op.tail()}"
            time.sleep(0.5)
    return [s for f in text_string_to_metric_families(text) for s in f.samples if s.name == name]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@functools.cache
def _custom_objects(kubeconfig: str) -> Any:
    """A client of the rig's kube-apiserver for the tests' polls of our resources: a read in this process
    costs milliseconds of CPU where a kubectl process costs about 0.1 s (the polls were 1,500 a run)."""
    from kubernetes import client, config

    return client.CustomObjectsApi(config.new_client_from_config(config_file=kubeconfig))  # type: ignore[no-untyped-call]


def get(kubectl: Any, ns: str, kind: str, name: str) -> dict[str, Any]:
    """The resource as the apiserver has it, {} when it cannot be read (absent, or the apiserver did
    not answer): our four kinds read in this process, any other kind with kubectl."""
    import json

    plural = {k.lower(): v for k, v in PLURALS.items()}.get(kind.lower())
    kubeconfig = getattr(kubectl, "kubeconfig", None)
    if plural is not None and kubeconfig is not None:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            api = _custom_objects(kubeconfig)
            body: dict[str, Any] = api.get_namespaced_custom_object(GROUP, VERSION, ns, plural, name)
            return body
        except (ApiException, HTTPError):
            return {}
    out = kubectl("-n", ns, "get", kind, name, "-o", "json", check=False)
    return json.loads(out.stdout) if out.returncode == 0 else {}


def wait_phase(
    kubectl: Any,
    op: Operator,
    ns: str,
    kind: str,
    name: str,
    phases: tuple[str, ...],
    timeout: float = 120,
    until: Callable[[dict[str, Any]], bool] = lambda status: True,
) -> dict[str, Any]:
    """The resource once its phase is one of ``phases`` and its status satisfies ``until``."""
    deadline = time.monotonic() + timeout
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        body = get(kubectl, ns, kind, name)
        status = body.get("status") or {}
        if status.get("phase") in phases and until(status):
            return body
        time.sleep(1)
    pytest.fail(
        f"{kind}/{name} never reached {phases}; status: {body.get('status')}\noperator log:\n{op.tail()}",
        pytrace=False,
    )


WaitFor = Callable[..., Any]


@pytest.fixture(scope="session")
def operator_image(rig_json: dict[str, Any]) -> Iterator[str]:
    """The project image, built (or taken from the cache) and imported into the node once for the session
    (the import unpacks its layers in containerd: about 40 CPU s, paid by each module that used it until
    2026-12-06), removed from the node at the end. Only the Helm and Spark-on-pods tests start pods of it:
    tests/integration/test_chart.py installs the chart with an image no node has, so its releases never
    start an operator whatever is loaded."""
    from tests.integration.test_node import node_entry
    from tests.rig.image_rig import chart_image

    entry = node_entry(rig_json)
    rig_dir = rig_json_path().parent
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve().parents[1] / "rig" / "image_rig.py"), "load",
         "--rig-dir", str(rig_dir)],
        capture_output=True, text=True, timeout=3000,
    )  # fmt: skip
    assert proc.returncode == 0, f"image_rig.py load failed:\n{proc.stderr[-4000:]}"
    name = f"docker.io/library/{chart_image()}"
    yield name
    ctr = [entry["ctr"], f"--address={entry['containerdSocket']}", "--namespace=k8s.io"]
    subprocess.run([*ctr, "images", "rm", name], capture_output=True, timeout=120, check=False)
