"""A broker the operator cannot work with (docs/compatibility.md, "Unsupported"): Kafka 2.3.1 in ZooKeeper
mode, before KIP-455 (no AlterPartitionReassignments / ListPartitionReassignments), one broker with two log
dirs and a topic, brought up by the rig (`kafka_rig.py up --zookeeper --kafka-version 2.3.1`) from Maven
Central's jars. The CLI refuses it with one line naming the release and the missing APIs (exit 1), the
operator puts its KafkaCluster in phase `Unsupported` and fails a LogDirCordon (drain) and a
BrokerDecommission on it with the same message; in both cases nothing is written to Kafka (the replica
stays in its dir, no throttle config is set). In `make test`'s ``compat`` lane; the operator's test needs
the k8s rig (`scripts/rig.sh up k8s`):

    .venv/bin/python -m pytest tests/compat/test_unsupported_kafka.py -q
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.compat import smoke
from tests.e2e.conftest import Operator, get

from kafka_placement.kafka.types import LogDirInfo

pytestmark = [pytest.mark.compat]

OLD = "2.3.1"  # the last release before KIP-455 (2.4)
TOPIC = "old-data"
EXIT_UNSUPPORTED = 1  # "any other failure" of the CLI's exit codes (docs/architecture.md: 0, 1, 2, 3 only)
MISSING = (
    "it runs Kafka 2.3, which lacks AlterPartitionReassignments (API key 45, Kafka 2.4+, submitting and "
    "cancelling moves (KIP-455)), ListPartitionReassignments (API key 46, Kafka 2.4+, reading moves in "
    "flight (KIP-455)); the operator needs Kafka 2.4 or newer (nothing was changed)"
)


@dataclass
class OldKafka:
    """The running 2.3.1 broker: its smoke view, the dir holding the topic's replica and the other one."""

    cluster: smoke.Cluster
    holding: str
    other: str

    def replica_dir(self) -> str:
        """The dir that holds partition 0 of the topic now (read with kafka-python, not the gateway)."""
        from kafka import KafkaAdminClient

        admin: Any = KafkaAdminClient(bootstrap_servers=self.cluster.bootstrap, request_timeout_ms=15000)
        try:
            (resp,) = admin.describe_log_dirs(brokers=[1])
        finally:
            admin.close()
        dirs = [LogDirInfo.of_response(1, d) for d in resp["log_dirs"]]
        found = [d.path for d in dirs for r in d.replicas if (r.topic, r.partition) == (TOPIC, 0)]
        assert len(found) == 1, dirs
        return found[0]


@pytest.fixture(scope="module")
def old_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OldKafka]:
    args = smoke.default_args(str(tmp_path_factory.mktemp("rig")), str(tmp_path_factory.mktemp("work")))
    name = "compat-old"
    cluster = smoke.Cluster(name, Path(args.rig_dir), Path(args.work))
    rig = ["--name", name, "--rig-dir", args.rig_dir]
    smoke.run(["env", f"KAFKA_VERSION={OLD}", "bash", smoke.FETCH], timeout=900)
    try:
        smoke.run([sys.executable, smoke.RIG, "up", *rig, "--zookeeper", "--kafka-version", OLD,
                   "--nodes", "1", "--base-port", str(args.base_port),
                   "--controller-base-port", str(args.controller_base_port)], timeout=300)  # fmt: skip
        entry = json.loads((cluster.rig_dir / "rig.json").read_text())[f"kafka-{name}"]
        cluster.entry, cluster.bootstrap = entry, entry["bootstrapServers"]
        from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

        admin = cluster.admin()
        for future in admin.create_topics([NewTopic(TOPIC, 1, 1)], request_timeout=30).values():
            future.result(timeout=60)
        dirs = cluster.log_dirs(1)
        old = OldKafka(cluster, "", "")
        smoke.wait_for(f"{TOPIC}-0 in a log dir", lambda: bool(_held(old)), 60)
        holding = old.replica_dir()
        yield OldKafka(cluster, holding, next(d for d in dirs if d != holding))
    finally:
        smoke.run([sys.executable, smoke.RIG, "down", *rig, "--stop-timeout", "0"], timeout=120, check=False)


def _held(old: OldKafka) -> str:
    try:
        return old.replica_dir()
    except AssertionError:
        return ""


def nothing_written(old: OldKafka) -> None:
    """The replica is in the dir it was created in, and no throttle config is set on the broker or topic."""
    assert old.replica_dir() == old.holding
    assert smoke.throttles_left(old.cluster, [TOPIC]) == []


def test_the_cli_refuses_a_broker_before_kip_455(old_kafka: OldKafka, tmp_path: Path) -> None:
    bootstrap = old_kafka.cluster.bootstrap
    out = tmp_path / "snapshot.json"
    snap = smoke.cli("snapshot", "--bootstrap-server", bootstrap, "-o", str(out), check=False)
    expected = (
        f"kafka-placement snapshot: error: the Kafka cluster at {bootstrap} is not supported: {MISSING}"
    )
    assert (snap.returncode, snap.stderr.strip(), snap.stdout) == (EXIT_UNSUPPORTED, expected, "")
    assert not out.exists()
    # a plan made elsewhere (a snapshot written by hand: a move of the replica to the other dir) is not run
    dirs = [
        {"path": d, "totalBytes": 10**11, "usableBytes": 5 * 10**10, "cordoned": False, "online": True}
        for d in (old_kafka.holding, old_kafka.other)
    ]
    partition = {"topic": TOPIC, "partition": 0, "replicas": [1], "logDirs": [old_kafka.holding]}
    snapshot = {
        "version": 1,
        "clusterId": None,
        "brokers": [{"id": 1, "rack": "/dc1/r1", "logDirs": dirs}],
        "partitions": [{**partition, "leader": 1, "isr": [1], "sizeBytes": 0}],
    }
    (tmp_path / "by-hand.json").write_text(json.dumps(snapshot))
    intents, plan = tmp_path / "intents.yaml", tmp_path / "plan.json"
    intents.write_text(
        f"kind: LogDirCordon\nspec: {{broker: 1, logDirs: ['{old_kafka.holding}'], drain: true}}\n"
    )
    smoke.cli(
        "plan", "--snapshot", str(tmp_path / "by-hand.json"), "--intents", str(intents), "-o", str(plan)
    )
    assert len(json.loads(plan.read_text())["partitions"]) == 1
    state = tmp_path / "state.json"
    run = smoke.cli("execute", "--bootstrap-server", bootstrap, "--plan", str(plan), "--state", str(state),
                    "--throttle", "1000000", "--wait", check=False)  # fmt: skip
    expected = f"kafka-placement execute: error: the Kafka cluster at {bootstrap} is not supported: {MISSING}"
    assert (run.returncode, run.stderr.strip()) == (EXIT_UNSUPPORTED, expected)
    assert not state.exists()
    nothing_written(old_kafka)


def test_the_operator_says_unsupported_and_moves_nothing(
    old_kafka: OldKafka, operator: Operator, kubectl: Any, k8s_namespace: str
) -> None:
    ns, bootstrap = k8s_namespace, old_kafka.cluster.bootstrap
    manifest = (
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {name: old}\n"
        f"spec: {{bootstrapServers: '{bootstrap}', throttleBytesPerSecond: 10000000}}\n---\n"
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: LogDirCordon\nmetadata: {name: drain-dir}\n"
        f"spec: {{clusterRef: {{name: old}}, broker: 1, logDirs: ['{old_kafka.holding}'], drain: true}}\n"
        "---\n"
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: BrokerDecommission\nmetadata: {name: retire-1}\n"
        "spec: {clusterRef: {name: old}, brokers: [1]}\n"
    )  # approval Automatic (the default): the drain would execute at once on a supported cluster
    kubectl("-n", ns, "apply", "-f", "-", input=manifest)
    message = f"the Kafka cluster at {bootstrap} is not supported: {MISSING}"

    intents = (("logdircordon", "drain-dir"), ("brokerdecommission", "retire-1"))

    def failed() -> bool:
        return all((get(kubectl, ns, *i).get("status") or {}).get("phase") == "Failed" for i in intents)

    smoke.wait_for("the intents Failed", failed, 120)
    for kind, name in intents:  # refused before planning: the decommission of the only broker would be
        status = get(kubectl, ns, kind, name)["status"]  # Infeasible on a supported cluster
        conditions = {c["type"]: c for c in status.get("conditions") or ()}
        assert conditions["Blocked"]["reason"] == "KafkaUnsupported", (status, operator.tail())
        assert conditions["Blocked"]["message"] == message
        assert not status.get("plan") and not status.get("progress"), status
    kc = get(kubectl, ns, "kafkacluster", "old")["status"]
    assert kc["phase"] == "Unsupported", kc
    stalled = {c["type"]: c for c in kc["conditions"]}["Stalled"]
    assert (stalled["status"], stalled["reason"], stalled["message"]) == ("True", "KafkaUnsupported", message)
    events = kubectl("-n", ns, "get", "events", "-o", "json").stdout
    reasons = {(e["involvedObject"]["kind"], e["reason"]) for e in json.loads(events)["items"]}
    assert ("KafkaCluster", "KafkaUnsupported") in reasons, reasons
    assert ("LogDirCordon", "KafkaUnsupported") in reasons, reasons
    assert ("BrokerDecommission", "KafkaUnsupported") in reasons, reasons
    nothing_written(old_kafka)
    # the resources go at once: nothing was ever cordoned or throttled on the brokers
    kubectl("-n", ns, "delete", "logdircordon", "drain-dir", "--wait=true", "--timeout=60s")
    kubectl("-n", ns, "delete", "brokerdecommission", "retire-1", "--wait=true", "--timeout=60s")
    kubectl("-n", ns, "delete", "kafkacluster", "old", "--wait=true", "--timeout=60s")
    nothing_written(old_kafka)  # nor by any reconcile since
    log = operator.tail(100_000)
    assert "Traceback" not in log, log[-5000:]
