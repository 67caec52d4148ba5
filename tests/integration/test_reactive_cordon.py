"""Cordons on a cluster without KIP-1066 (metadata.version < 4.3-IV0, the legacy rig): Kafka cannot keep
new replicas off a cordoned dir, so the planner moves replicas that appeared there while still empty
(``plan --reactive-cordon``), and the executor moves them (that replicas holding data stay is unit-tested)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import NewTopic
from kafka.structs import TopicPartitionReplica
from tests.integration.conftest import (
    KafkaRig,
    confluent_admin,
    create_topics_everywhere,
    kafka_python_admin,
    wait_for,
)

from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import KafkaGateway

pytestmark = pytest.mark.kafka
CLI = str(Path(sys.executable).parent / "kafka-placement")


def dir_of(rig: KafkaRig, topic: str, broker: int) -> str | None:
    with KafkaGateway(ConnectionSettings(bootstrap_servers=rig.bootstrap_servers)) as gw:
        p = gw.snapshot().partition(topic, 0)
    assert p is not None
    return dict(zip(p.replicas, p.log_dirs, strict=True)).get(broker)


def test_empty_replica_on_a_cordoned_dir_is_moved_off_on_a_legacy_cluster(
    kafka_legacy_rig: KafkaRig, tmp_path: Path
) -> None:
    rig = kafka_legacy_rig
    cordoned, other = rig.node(1).log_dirs[0], rig.node(1).log_dirs[1]
    topic = f"it-reactive-{uuid.uuid4().hex[:8]}"
    admin = confluent_admin(rig)
    py_admin: Any = kafka_python_admin(rig)
    try:
        create_topics_everywhere(admin, [NewTopic(topic, num_partitions=1, replica_assignment=[[1, 2]])], rig)
        wait_for("replica on broker 1", lambda: dir_of(rig, topic, 1) is not None)
        if dir_of(rig, topic, 1) != cordoned:  # put the new, empty replica on the dir we cordon
            py_admin.alter_replica_log_dirs({TopicPartitionReplica(topic, 0, 1): cordoned})
            wait_for("replica on the cordoned dir", lambda: dir_of(rig, topic, 1) == cordoned)
        snap, plan = tmp_path / "snapshot.json", tmp_path / "plan.json"
        intents = tmp_path / "intents.yaml"
        intents.write_text(f"kind: LogDirCordon\nspec: {{broker: 1, logDirs: ['{cordoned}']}}\n")
        subprocess.run(
            [CLI, "snapshot", "--bootstrap-server", rig.bootstrap_servers, "-o", str(snap)], check=True
        )
        plain = subprocess.run(
            [CLI, "plan", "--snapshot", str(snap), "--intents", str(intents), "-o", "-"],
            check=True,
            capture_output=True,
            text=True,
        )
        assert not any(p["topic"] == topic for p in json.loads(plain.stdout)["partitions"])  # 4.3 semantics
        subprocess.run(
            [
                CLI,
                "plan",
                "--snapshot",
                str(snap),
                "--intents",
                str(intents),
                "--reactive-cordon",
                "-o",
                str(plan),
            ],
            check=True,
        )
        targets = {p["topic"]: p for p in json.loads(plan.read_text())["partitions"]}
        assert targets[topic]["replicas"] == [1, 2] and targets[topic]["log_dirs"][0] == other
        subprocess.run(
            [
                CLI,
                "execute",
                "--bootstrap-server",
                rig.bootstrap_servers,
                "--plan",
                str(plan),
                "--state",
                str(tmp_path / "state.json"),
                "--wait",
                "--poll-seconds",
                "1",
            ],
            check=True,
            timeout=180,
        )
        assert dir_of(rig, topic, 1) == other
    finally:
        admin.delete_topics([topic])[topic].result(30)
        py_admin.close()
