"""The broker plugin's replica selector (broker-plugin/, `MultiLevelRackAwareReplicaSelector`) on the real
main cluster, whose brokers run with it (tests/rig/kafka_rig.py; racks: broker 1 /dc1/r1, broker 2 /dc1/r2,
broker 3 /dc2/r1): follower fetching by the longest shared rack prefix.

A topic led in dc2 (broker 3) with a follower in dc1 (broker 1): a consumer in dc1 (another rack, /dc1/r9)
fetches from the dc1 follower, one in dc2 (/dc2/r7) from the leader, one in the follower's own rack
(/dc1/r1) from the follower, one without client.rack from the leader; each reads every record. Which broker
a consumer fetches from is librdkafka's statistics' `topics.<t>.partitions.<p>.broker`.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import KafkaRig, TopicFactory

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(180)]

Wait = Callable[..., Any]
SELECTOR = "io.kafkaplacement.broker.MultiLevelRackAwareReplicaSelector"
RECORDS = 300
LEADER, FOLLOWER = 3, 1  # /dc2/r1 leads, /dc1/r1 follows


def produce(rig: KafkaRig, topic: str) -> set[bytes]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": rig.bootstrap_servers, "acks": "all", "linger.ms": 5})
    values = {f"record-{i}".encode() for i in range(RECORDS)}
    for value in sorted(values):
        producer.produce(topic, value=value, partition=0)
        producer.poll(0)
    assert producer.flush(30) == 0
    return values


class Fetcher:
    """A consumer of partition 0 with a client.rack (None: none), reading from the beginning; ``brokers``
    collects the broker its statistics say it fetches from, in order."""

    def __init__(self, rig: KafkaRig, topic: str, rack: str | None) -> None:
        from confluent_kafka import Consumer, TopicPartition

        self.topic = topic
        self.brokers: list[int] = []
        self._lock = threading.Lock()
        conf: dict[str, Any] = {
            "bootstrap.servers": rig.bootstrap_servers,
            "group.id": f"it-selector-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
            "statistics.interval.ms": 100,
            "stats_cb": self._stats,
        }
        if rack is not None:
            conf["client.rack"] = rack
        self.consumer = Consumer(conf)
        self.consumer.assign([TopicPartition(topic, 0, -2)])  # -2: OFFSET_BEGINNING

    def _stats(self, raw: str) -> None:
        part = json.loads(raw).get("topics", {}).get(self.topic, {}).get("partitions", {}).get("0")
        if part is not None and int(part.get("broker", -1)) >= 0:
            with self._lock:
                self.brokers.append(int(part["broker"]))

    def now(self) -> int | None:
        with self._lock:
            return self.brokers[-1] if self.brokers else None

    def read_all(self, want: set[bytes], timeout: float = 60.0) -> set[bytes]:
        got: set[bytes] = set()
        deadline = time.monotonic() + timeout
        while got != want and time.monotonic() < deadline:
            for msg in self.consumer.consume(num_messages=500, timeout=0.5):
                assert msg.error() is None, msg.error()
                got.add(bytes(msg.value()))
        return got

    def close(self) -> None:
        self.consumer.close()


def test_the_main_clusters_brokers_run_the_selector(kafka_rig: KafkaRig, kafka_admin: Any) -> None:
    from confluent_kafka.admin import ConfigResource  # type: ignore[attr-defined]

    for node in kafka_rig.nodes:
        res = ConfigResource("broker", str(node.id))
        configs = kafka_admin.describe_configs([res], request_timeout=15)[res].result(timeout=30)
        assert configs["replica.selector.class"].value == SELECTOR, f"broker {node.id}"


@pytest.mark.parametrize(
    ("rack", "expected"),
    [
        ("/dc1/r9", FOLLOWER),  # same dc, another rack: the dc1 follower
        ("/dc2/r7", LEADER),  # the leader's dc: the leader
        ("/dc1/r1", FOLLOWER),  # the follower's own rack
        (None, LEADER),  # no client.rack: the leader
    ],
    ids=["dc1-r9", "dc2-r7", "dc1-r1", "no-rack"],
)
def test_consumers_fetch_from_the_closest_in_sync_replica(
    kafka_rig: KafkaRig,
    kafka_admin: Any,
    new_topic: TopicFactory,
    kafka_wait: Wait,
    rack: str | None,
    expected: int,
) -> None:
    racks = {n.id: n.rack for n in kafka_rig.nodes}
    assert racks[LEADER].startswith("/dc2/") and racks[FOLLOWER] == "/dc1/r1", racks
    topic = new_topic([[LEADER, FOLLOWER]])

    from confluent_kafka import TopicCollection

    def in_sync() -> bool:
        desc = kafka_admin.describe_topics(TopicCollection([topic]), request_timeout=10)[topic].result(
            timeout=15
        )
        p = desc.partitions[0]
        return p.leader.id == LEADER and sorted(r.id for r in p.isr) == sorted([LEADER, FOLLOWER])

    kafka_wait(f"{topic}: leader {LEADER}, ISR [{LEADER}, {FOLLOWER}]", in_sync)
    values = produce(kafka_rig, topic)
    kafka_wait(f"{topic}: follower {FOLLOWER} in sync after the writes", in_sync)

    fetcher = Fetcher(kafka_rig, topic, rack)
    try:
        got = fetcher.read_all(values)
        assert got == values, f"client.rack={rack}: read {len(got)} of {len(values)} records"
        kafka_wait(
            f"client.rack={rack} fetching from broker {expected} (statistics say {fetcher.now()})",
            lambda: fetcher.consumer.poll(0.2) is None and fetcher.now() == expected,
            timeout=30,
        )
        if expected == LEADER:  # the leader all along: never sent to a follower
            assert set(fetcher.brokers) == {LEADER}, fetcher.brokers
    finally:
        fetcher.close()
