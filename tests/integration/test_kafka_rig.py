"""The real Kafka rig does what the operator relies on: JBOD log dirs, KIP-113 dir moves, KIP-455
reassignments, KIP-1066 cordoned log dirs (4.3 metadata.version) and their rejection on the legacy
(pre-4.3-IV0) cluster. Real brokers only (`make rig-up`); every wait is bounded; topics are deleted.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.rig.probes import free_ports, rig_jvms

if TYPE_CHECKING:
    from conftest import KafkaRig, TopicFactory

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(180)]

REPO_ROOT = Path(__file__).resolve().parents[2]
RIG_CLI = REPO_ROOT / "tests" / "rig" / "kafka_rig.py"
Wait = Callable[..., Any]
CORDON_METADATA_LEVEL = 30  # metadata.version feature level of 4.3-IV0 (the first with cordoned.log.dirs)


# ----------------------------------------------------------------------------------------- helpers


def log_dirs_of(py_admin: Any, broker: int) -> dict[str, dict[str, Any]]:
    """kafka-python DescribeLogDirs for one broker: log dir path -> result dict."""
    (resp,) = py_admin.describe_log_dirs(brokers=[broker])
    assert resp["broker"] == broker
    return {d["log_dir"]: d for d in resp["log_dirs"]}


def dirs_holding(py_admin: Any, broker: int, topic: str, partition: int) -> dict[str, bool]:
    """Log dirs of `broker` holding topic-partition -> is_future_key (True while a dir move copies)."""
    held: dict[str, bool] = {}
    for path, d in log_dirs_of(py_admin, broker).items():
        for t in d["topics"]:
            if t["name"] != topic:
                continue
            for p in t["partitions"]:
                if p["partition_index"] == partition:
                    held[path] = bool(p["is_future_key"])
    return held


def set_cordoned(rig: KafkaRig, broker: int, dirs: list[str] | None) -> None:
    """cordoned.log.dirs on one broker through confluent-kafka incremental_alter_configs (None: delete)."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
    )

    admin = AdminClient({"bootstrap.servers": rig.bootstrap_servers})
    op = AlterConfigOpType.SET if dirs is not None else AlterConfigOpType.DELETE
    entry = ConfigEntry("cordoned.log.dirs", ",".join(dirs or []), incremental_operation=op)
    res = ConfigResource("broker", str(broker), incremental_configs=[entry])
    admin.incremental_alter_configs([res], request_timeout=30)[res].result(timeout=60)


def produce(rig: KafkaRig, topic: str, messages: list[tuple[int, bytes]]) -> None:
    from confluent_kafka import Producer

    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": rig.bootstrap_servers, "acks": "all", "linger.ms": 5})

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    for partition, value in messages:
        producer.produce(topic, value=value, partition=partition, on_delivery=delivered)
    assert producer.flush(30) == 0, "messages still in flight after 30s"
    assert not errors, errors


def consume_all(rig: KafkaRig, topic: str, expected: int, wait: Wait) -> list[tuple[int, int, bytes]]:
    """Read `expected` messages from the beginning with a fresh group: (partition, offset, value)."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": rig.bootstrap_servers,
            "group.id": f"it-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    got: list[tuple[int, int, bytes]] = []
    try:
        consumer.subscribe([topic])

        def read() -> bool:
            for msg in consumer.consume(num_messages=100, timeout=0.5):
                assert msg.error() is None, msg.error()
                got.append((int(msg.partition() or 0), int(msg.offset() or 0), bytes(msg.value() or b"")))
            return len(got) >= expected

        wait(f"{expected} messages from {topic}", read)
    finally:
        consumer.close()
    return got


# ----------------------------------------------------------------------------------------- main cluster


def test_rig_shape(kafka_rig: KafkaRig) -> None:
    assert kafka_rig.version.startswith("4.4.")  # the rig's release (tests/rig/kafka_rig.py)
    assert kafka_rig.release_version == "4.4-IV2"  # its latest production metadata.version
    assert len(kafka_rig.nodes) == 3
    assert [n.rack for n in kafka_rig.nodes] == ["/dc1/r1", "/dc1/r2", "/dc2/r1"]
    assert all(len(n.log_dirs) == 2 for n in kafka_rig.nodes)


def test_topic_with_explicit_assignment_produces_and_consumes(
    kafka_rig: KafkaRig, kafka_admin: Any, new_topic: TopicFactory, kafka_wait: Wait
) -> None:
    assignment = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
    topic = new_topic(assignment)
    md = kafka_admin.list_topics(topic=topic, timeout=10).topics[topic]
    assert {p: list(m.replicas) for p, m in md.partitions.items()} == dict(enumerate(assignment))
    assert {p: m.leader for p, m in md.partitions.items()} == {0: 1, 1: 2, 2: 3}

    sent = [(i % 3, f"m{i}".encode()) for i in range(30)]
    produce(kafka_rig, topic, sent)
    got = consume_all(kafka_rig, topic, len(sent), kafka_wait)
    for p in range(3):
        assert [v for (q, _o, v) in sorted(got) if q == p] == [v for (q, v) in sent if q == p]
        assert [o for (q, o, _v) in sorted(got) if q == p] == list(range(10))


def test_describe_log_dirs_sees_every_dir_of_every_broker(kafka_rig: KafkaRig, kafka_py_admin: Any) -> None:
    responses = kafka_py_admin.describe_log_dirs()
    seen = {r["broker"]: {d["log_dir"]: d for d in r["log_dirs"]} for r in responses}
    assert set(seen) == {n.id for n in kafka_rig.nodes}
    for node in kafka_rig.nodes:
        assert set(seen[node.id]) == set(node.log_dirs), f"broker {node.id}"
        for d in seen[node.id].values():
            assert d["error_code"] == 0
            assert d["total_bytes"] > 0 and 0 <= d["usable_bytes"] <= d["total_bytes"]
            assert isinstance(d["is_cordoned"], bool)  # DescribeLogDirs v5 negotiated: the field is there


def test_alter_replica_log_dirs_moves_replica_between_dirs_of_one_broker(
    kafka_rig: KafkaRig, kafka_py_admin: Any, new_topic: TopicFactory, kafka_wait: Wait
) -> None:
    from kafka import TopicPartitionReplica
    from kafka.errors import NoError

    topic = new_topic([[1, 2]])
    produce(kafka_rig, topic, [(0, b"x" * 1000) for _ in range(50)])
    (source,) = kafka_wait("replica on broker 1", lambda: dirs_holding(kafka_py_admin, 1, topic, 0))
    target = next(d for d in kafka_rig.node(1).log_dirs if d != source)

    result = kafka_py_admin.alter_replica_log_dirs({TopicPartitionReplica(topic, 0, 1): target})
    assert result == {TopicPartitionReplica(topic, 0, 1): NoError}

    kafka_wait(
        f"{topic}-0 on broker 1 to end in {target}",
        lambda: dirs_holding(kafka_py_admin, 1, topic, 0) == {target: False},
    )
    (size,) = [
        p["partition_size"]
        for t in log_dirs_of(kafka_py_admin, 1)[target]["topics"]
        if t["name"] == topic
        for p in t["partitions"]
    ]
    assert size > 50_000  # the data moved with the replica
    assert len(consume_all(kafka_rig, topic, 50, kafka_wait)) == 50


def test_alter_partition_reassignments_moves_replica_between_brokers(
    kafka_rig: KafkaRig, kafka_admin: Any, kafka_py_admin: Any, new_topic: TopicFactory, kafka_wait: Wait
) -> None:
    from kafka import TopicPartition

    topic = new_topic([[1, 2]])
    produce(kafka_rig, topic, [(0, b"y" * 1000) for _ in range(20)])
    tp = TopicPartition(topic, 0)

    result = kafka_py_admin.alter_partition_reassignments({tp: [3, 2]}, timeout_ms=30000)
    assert result == {tp: None}, result
    kafka_wait(
        "reassignment to finish",
        lambda: tp not in kafka_py_admin.list_partition_reassignments([tp], timeout_ms=10000),
    )

    def settled() -> bool:
        p = kafka_admin.list_topics(topic=topic, timeout=10).topics[topic].partitions[0]
        return list(p.replicas) == [3, 2] and sorted(p.isrs) == [2, 3]

    kafka_wait("metadata to show replicas [3, 2] in sync", settled)
    kafka_wait("broker 1 to drop its replica", lambda: dirs_holding(kafka_py_admin, 1, topic, 0) == {})
    assert len(dirs_holding(kafka_py_admin, 3, topic, 0)) == 1
    assert len(consume_all(kafka_rig, topic, 20, kafka_wait)) == 20


def test_cordoned_log_dirs_reported_by_describe_log_dirs(
    kafka_rig: KafkaRig, kafka_py_admin: Any, new_topic: TopicFactory, kafka_wait: Wait
) -> None:
    features = kafka_py_admin.describe_features()
    assert features["metadata.version"]["finalized"][0] >= CORDON_METADATA_LEVEL
    node = kafka_rig.node(2)
    cordoned, free = node.log_dirs[1], node.log_dirs[0]
    set_cordoned(kafka_rig, 2, [cordoned])
    try:
        kafka_wait(
            f"{cordoned} reported cordoned (DescribeLogDirs v5 IsCordoned)",
            lambda: (
                {p: d["is_cordoned"] for p, d in log_dirs_of(kafka_py_admin, 2).items()}
                == {cordoned: True, free: False}
            ),
        )
        # KIP-1066: new replicas never land in a cordoned dir.
        topic = new_topic([[2], [2], [2], [2]])
        for partition in range(4):
            assert kafka_wait(
                "replica placed", lambda p=partition: dirs_holding(kafka_py_admin, 2, topic, p)
            ) == {free: False}
    finally:
        set_cordoned(kafka_rig, 2, None)
    kafka_wait(
        "cordon lifted",
        lambda: not any(d["is_cordoned"] for d in log_dirs_of(kafka_py_admin, 2).values()),
    )


def test_up_with_a_port_of_the_running_rig_fails_fast(kafka_rig: KafkaRig, tmp_path: Path) -> None:
    port = kafka_rig.nodes[0].port
    proc = subprocess.run(
        [sys.executable, str(RIG_CLI), "up", "--name", "clash", "--nodes", "1", "--base-port", str(port),
         "--rig-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert f"127.0.0.1:{port} (node 1 broker listener)" in proc.stderr
    assert "already in use" in proc.stderr
    assert not (tmp_path / "kafka-clash").exists() and not (tmp_path / "rig.json").exists()


def test_failed_format_leaves_nothing_running(tmp_path: Path) -> None:
    """A real failure after the preconditions (the storage tool rejects the release version)."""
    base, cbase = free_ports(2)
    proc = subprocess.run(
        [sys.executable, str(RIG_CLI), "up", "--name", "badrv", "--nodes", "1", "--base-port", str(base),
         "--controller-base-port", str(cbase), "--release-version", "9.9-IV9", "--rig-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "storage format failed" in proc.stderr and "9.9-IV9" in proc.stderr
    assert not (tmp_path / "kafka-badrv").exists() and not (tmp_path / "rig.json").exists()
    assert not rig_jvms(tmp_path)


def test_up_that_never_gets_ready_stops_the_jvms_it_started(tmp_path: Path) -> None:
    base, cbase = free_ports(2)
    proc = subprocess.run(
        [sys.executable, str(RIG_CLI), "up", "--name", "slow", "--nodes", "1", "--base-port", str(base),
         "--controller-base-port", str(cbase), "--timeout", "0.5", "--rig-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "not ready after" in proc.stderr and "stopping what was started" in proc.stderr
    assert not (tmp_path / "kafka-slow").exists() and not (tmp_path / "rig.json").exists()
    assert not rig_jvms(tmp_path)


# ----------------------------------------------------------------------------------------- legacy cluster


def test_legacy_cluster_rejects_cordoned_log_dirs(kafka_legacy_rig: KafkaRig) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from kafka import KafkaAdminClient

    py_admin = KafkaAdminClient(
        bootstrap_servers=kafka_legacy_rig.bootstrap_servers, request_timeout_ms=15000
    )
    try:
        level = py_admin.describe_features()["metadata.version"]["finalized"][0]
        assert level < CORDON_METADATA_LEVEL
        assert kafka_legacy_rig.release_version == "4.2-IV1"

        with pytest.raises(KafkaException) as raised:
            set_cordoned(kafka_legacy_rig, 1, [kafka_legacy_rig.node(1).log_dirs[1]])
        err = raised.value.args[0]
        assert err.code() == KafkaError.INVALID_CONFIG
        assert "cordoned.log.dirs" in err.str() and "requires metadata.version >= 4.3-IV0" in err.str()

        # The 4.3 binaries still answer DescribeLogDirs v5 at the old metadata.version: IsCordoned is present
        # and false. Support must be read from the finalized metadata.version, not from the field.
        for d in log_dirs_of(py_admin, 1).values():
            assert d["is_cordoned"] is False
    finally:
        py_admin.close()
