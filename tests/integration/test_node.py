"""The rig's real node (tests/rig/node_rig.py): it registers Ready at the apiserver's version, runs a pod
from a locally imported image to completion, and pods reach the rig's Kafka (its pod listener, by the
Kafka protocol) and the apiserver through the `kubernetes` Service (kube-proxy).

Needs `make rig-up`; nothing is mocked. The probe image is built here: tests/rig/node/probe (Go, static)
packed by tests/rig/node/image.py, cached by the probe source's hash.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from tests.rig.node.image import pack

pytestmark = pytest.mark.k8s

PROBE_SRC = Path(__file__).resolve().parents[1] / "rig" / "node" / "probe"


def node_entry(rig_json: dict[str, Any]) -> dict[str, Any]:
    entry = rig_json.get("node")
    if not isinstance(entry, dict) or "name" not in entry:
        pytest.fail(
            "rig.json has no 'node' section: the node rig is not up; run `make rig-up`", pytrace=False
        )
    return entry


def probe_image(tmp: Path, entry: dict[str, Any]) -> str:
    """Build the probe (static Go binary) into an image, import it into the node; returns its name."""
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(PROBE_SRC.iterdir()))).hexdigest()[:12]
    name = f"kp-rig/probe:{digest}"
    rootfs = tmp / "rootfs"
    rootfs.mkdir()
    cache = Path(os.environ.get("KP_CACHE", str(Path.home() / ".cache" / "kafka-placement")))
    env = {
        **os.environ,
        "CGO_ENABLED": "0",
        "GOTOOLCHAIN": "local",
        "GOCACHE": os.environ.get("GOCACHE", str(cache / "go" / "build-cache")),
        "GOFLAGS": "-mod=mod",
    }
    subprocess.run(
        ["go", "build", "-trimpath", "-o", str(rootfs / "probe"), "."],
        cwd=PROBE_SRC, env=env, check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    archive = tmp / "probe.tar"
    pack(rootfs, name, archive, entrypoint=["/probe"], user="65534:65534")
    subprocess.run(
        [entry["ctr"], f"--address={entry['containerdSocket']}", "--namespace=k8s.io",
         "images", "import", str(archive)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return name


def test_node_is_ready_at_the_apiservers_version(kubectl: Any, rig_json: dict[str, Any]) -> None:
    entry = node_entry(rig_json)
    node = json.loads(kubectl("get", "node", entry["name"], "-o", "json").stdout)
    ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}
    assert ready["Ready"] == "True", node["status"]["conditions"]
    assert node["status"]["nodeInfo"]["kubeletVersion"] == rig_json["k8s"]["version"]
    assert node["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://")
    addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
    assert addresses["InternalIP"] == entry["address"]


def test_a_pod_reaches_kafka_and_the_apiserver_and_runs_to_completion(
    kubectl: Any, rig_json: dict[str, Any], k8s_namespace: str, tmp_path: Path
) -> None:
    entry = node_entry(rig_json)
    kafka = rig_json["kafka"]
    assert kafka.get("podAddress") == entry["address"], "Kafka main has no listener on the node's bridge"
    image = probe_image(tmp_path, entry)
    svc = json.loads(kubectl("get", "service", "kubernetes", "-n", "default", "-o", "json").stdout)
    checks = [f"kafka={b}" for b in kafka["podBootstrapServers"].split(",")]
    checks.append(f"tcp={svc['spec']['clusterIP']}:443")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "probe", "namespace": k8s_namespace},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "probe",
                    "image": image,
                    "imagePullPolicy": "Never",
                    "args": checks,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "allowPrivilegeEscalation": False,
                        "readOnlyRootFilesystem": True,
                        "capabilities": {"drop": ["ALL"]},
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                }
            ],
        },
    }
    kubectl("apply", "-f", "-", input=json.dumps(pod))
    deadline = time.monotonic() + 120
    phase = ""
    while time.monotonic() < deadline:
        phase = kubectl("get", "pod", "probe", "-n", k8s_namespace, "-o", "jsonpath={.status.phase}").stdout
        if phase in ("Succeeded", "Failed"):
            break
        time.sleep(1)
    logs = kubectl("logs", "probe", "-n", k8s_namespace, check=False)
    described = kubectl("describe", "pod", "probe", "-n", k8s_namespace, check=False).stdout[-3000:]
    assert phase == "Succeeded", f"phase {phase!r}; logs:\n{logs.stdout}{logs.stderr}\n{described}"
    lines = logs.stdout.strip().splitlines()
    assert len(lines) == len(checks) and all(x.startswith("ok ") for x in lines), logs.stdout
