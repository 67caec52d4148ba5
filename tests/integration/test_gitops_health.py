"""What GitOps tools make of our resources (docs/gitops.md), with their real libraries: each kind, in each
phase the operator writes (its own status writer's output, set through the status subresource of the
rig's apiserver and read back), through kstatus' ``Compute`` (sigs.k8s.io/cli-utils, Flux's health
checks) and through the Argo CD health script docs/gitops/health.lua under gopher-lua (the interpreter
Argo CD embeds), both built from the Go module proxy by tests/rig/gitops/build.sh."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.integration.conftest import wait_established

from kafka_placement.model.crd_parts import GROUP, INVALID, PLURALS, VERSION
from kafka_placement.reconcile import status as st
from kafka_placement.reconcile.decide import decide
from kafka_placement.reconcile.decision import CLUSTER_UNREACHABLE, Failure, View

ROOT = Path(__file__).resolve().parents[2]
Kubectl = Any

SPECS = {
    "BrokerDecommission": {"clusterRef": {"name": "c"}, "brokers": [3]},
    "LogDirCordon": {"clusterRef": {"name": "c"}, "broker": 1, "logDirs": ["/data/a"]},
    "PlacementPolicy": {"clusterRef": {"name": "c"}, "topics": {"include": ["t"]}, "mode": "Enforce"},
}
# phase -> (kstatus, Argo CD) as a user expects: the operator at work is in progress; the user's turn
# (approval, pause) is not a failure (kstatus: in progress, as the spec is not realised yet; Argo CD:
# suspended); a failure that needs the user is one; Kafka not answering at all (a whole-cluster restart)
# is not: the intents wait Pending (reason ClusterUnreachable), an Executing one stays Executing
INTENT_PHASES = {
    st.PENDING: ("InProgress", "Progressing"),
    st.PLANNING: ("InProgress", "Progressing"),
    st.AWAITING_APPROVAL: ("InProgress", "Suspended"),
    st.EXECUTING: ("InProgress", "Progressing"),
    st.PAUSED: ("InProgress", "Suspended"),
    st.COMPLETED: ("Current", "Healthy"),
    st.FAILED: ("Failed", "Degraded"),
    st.CANCELLED: ("InProgress", "Progressing"),
}


@pytest.fixture(scope="module")
def checkers() -> Path:
    proc = subprocess.run(
        ["bash", str(ROOT / "tests" / "rig" / "gitops" / "build.sh")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return Path(proc.stdout.strip().splitlines()[-1])


def verdicts(checkers: Path, objects: list[dict[str, Any]]) -> dict[str, tuple[str, str, str]]:
    """name -> (kstatus status, Argo CD status, Argo CD message)."""
    listed = json.dumps(objects)
    out: dict[str, list[str]] = {}
    for cmd in (
        [str(checkers / "kstatus")],
        [str(checkers / "luahealth"), str(ROOT / "docs/gitops/health.lua")],
    ):
        proc = subprocess.run(cmd, input=listed, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        for line in proc.stdout.splitlines():
            row = json.loads(line)
            out.setdefault(row["name"], []).extend([row["status"], row["message"]])
    return {name: (v[0], v[2], v[3]) for name, v in out.items()}


def create(kubectl: Kubectl, ns: str, kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": kind, "metadata": {"name": name, "namespace": ns}}
    kubectl("apply", "-f", "-", input=json.dumps({**body, "spec": spec}))
    got: dict[str, Any] = json.loads(kubectl("-n", ns, "get", PLURALS[kind], name, "-o", "json").stdout)
    return got


def set_status(kubectl: Kubectl, ns: str, body: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    plural, name = PLURALS[body["kind"]], body["metadata"]["name"]
    patch = json.dumps({"status": status})
    kubectl("-n", ns, "patch", plural, name, "--subresource=status", "--type=merge", "-p", patch)
    got: dict[str, Any] = json.loads(kubectl("-n", ns, "get", plural, name, "-o", "json").stdout)
    return got


def test_each_kind_in_each_phase_is_what_flux_and_argo_cd_should_say(
    checkers: Path, kubectl: Kubectl, k8s_namespace: str
) -> None:
    kubectl("apply", "-f", str(ROOT / "crds"))
    wait_established(kubectl, *[f"crd/{p}.{GROUP}" for p in PLURALS.values()])
    ns, objects, expected = k8s_namespace, [], {}
    for kind, spec in SPECS.items():
        fresh = create(kubectl, ns, kind, f"{kind.lower()}-new", spec)
        objects.append(fresh)  # no status yet: the operator has not seen it (kstatus cannot tell: a resource
        # with no status is Current to it, until the operator writes Pending on the create event)
        expected[fresh["metadata"]["name"]] = ("Current", "Progressing")
        for phase, says in INTENT_PHASES.items():
            body = create(kubectl, ns, kind, f"{kind.lower()}-{phase.lower()}", spec)
            reason = {st.FAILED: "KafkaNotAuthorized", st.PAUSED: "PausedBySpec"}.get(phase, phase)
            objects.append(
                set_status(kubectl, ns, body, st.intent_status(body, phase, reason, f"in {phase}"))
            )
            expected[body["metadata"]["name"]] = says
        # Kafka does not answer: what decide writes for a Planning intent (Pending, ClusterUnreachable);
        # an Executing one gets no status (it stays Executing, above)
        down = Failure(CLUSTER_UNREACHABLE, "cannot reach Kafka at k:9092: timed out", False)
        body = create(kubectl, ns, kind, f"{kind.lower()}-unreachable", spec)
        body = set_status(kubectl, ns, body, st.intent_status(body, st.PLANNING, "Planning", "planning"))
        (p,) = decide(View([body], failure=down)).statuses
        assert (p.phase, p.reason) == (st.PENDING, "ClusterUnreachable")
        objects.append(set_status(kubectl, ns, body, st.intent_status(body, p.phase, p.reason, p.message)))
        expected[body["metadata"]["name"]] = ("InProgress", "Progressing")
        executing = next(o for o in objects if o["metadata"]["name"] == f"{kind.lower()}-executing")
        assert decide(View([executing], failure=down)).statuses == ()
    # a spec changed since the status was written: in progress whatever the phase says
    done = next(o for o in objects if o["metadata"]["name"] == "placementpolicy-completed")
    spec = {**SPECS["PlacementPolicy"], "mode": "Advise"}
    changed = create(kubectl, ns, "PlacementPolicy", "placementpolicy-completed", spec)
    assert changed["metadata"]["generation"] > done["status"]["observedGeneration"]
    objects = [changed if o is done else o for o in objects]
    expected["placementpolicy-completed"] = ("InProgress", "Progressing")

    cluster_spec = yaml.safe_load((ROOT / "examples" / "kafka-cluster.yaml").read_text())["spec"]
    connected = decide(View([])).cluster
    unreachable = decide(View([], failure=Failure(CLUSTER_UNREACHABLE, "no broker answers", False))).cluster
    assert connected is not None  # it answered until now: a whole-cluster restart looks so
    down = Failure(CLUSTER_UNREACHABLE, "no broker answers", False)
    restarting = decide(
        View([], failure=down, cluster_conditions=connected["conditions"], now=time.time())
    ).cluster
    bad_zone = "spec.execution.windows[0].timeZone: unknown time zone 'Europe/Pariss'"
    invalid = decide(View([], failure=Failure("InvalidSpec", bad_zone, False, INVALID))).cluster
    clusters = (
        ("connected", connected),
        ("unreachable", unreachable),
        ("restarting", restarting),
        ("invalid", invalid),
    )
    for name, status in clusters:
        assert status is not None
        body = create(kubectl, ns, "KafkaCluster", name, cluster_spec)
        status = {**status, "observedGeneration": body["metadata"]["generation"]}  # as the handler adds it
        objects.append(set_status(kubectl, ns, body, status))
    expected["connected"] = ("Current", "Healthy")
    expected["unreachable"] = ("Failed", "Degraded")  # never reached
    expected["restarting"] = ("InProgress", "Progressing")  # answered until now: for five minutes
    expected["invalid"] = ("Failed", "Degraded")  # the spec does not parse: the user must act

    got = verdicts(checkers, objects)
    assert {n: v[:2] for n, v in got.items()} == expected
    assert got["unreachable"][2] == "no broker answers"
    assert got["invalid"][2] == bad_zone  # Argo CD names the field
    assert got["brokerdecommission-awaitingapproval"][2] == "in AwaitingApproval"  # the Blocked condition's
    assert got["brokerdecommission-unreachable"][2].startswith(
        "cannot reach Kafka at k:9092"
    )  # Reconciling's
