"""End to end: a PlacementPolicy's replicationFactor executed for real, 2 -> 3 -> 2, under a producer.

The operator runs as a real process against the rig's kube-apiserver and Kafka (3 brokers, racks 1 /dc1/r1,
2 /dc1/r2, 3 /dc2/r1). A topic at RF 2 with ``min.insync.replicas=2``, spread over both data centres, takes
an idempotent ``acks=all`` producer for the whole test; an Enforce policy raises its RF to 3, then lowers it
to 2 again, each time ``Completed``. The live cluster shows every partition at the declared RF, in sync,
still spread over both data centres; a sampler of the topic's metadata never sees an ISR below min ISR; the
producer gets no delivery error, and every acknowledged record is read back, once, in order.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from tests.e2e.conftest import KafkaRig, Operator, get, wait_phase
from tests.e2e.test_operator import snapshot
from tests.e2e.test_operator_policies import TWO_LEVELS, apply, patch_spec, resource
from tests.integration.conftest import read_to_end

pytestmark = [pytest.mark.kafka, pytest.mark.k8s, pytest.mark.timeout(900)]

MIN_ISR = 2
PARTITIONS = 4
# RF 2 spread over both data centres (broker 3 is dc2), as the policy's rack rule asks
START = [[1, 3], [3, 2], [2, 3], [3, 1]]


class Producing:
    """An idempotent acks=all producer thread writing keys 0, 1, 2, ... (key i to partition i % PARTITIONS)
    until stopped; it keeps what Kafka acknowledged and every delivery error."""

    def __init__(self, rig: KafkaRig, topic: str) -> None:
        self.topic = topic
        self.stop = threading.Event()
        self.acked: dict[int, list[tuple[int, int]]] = {p: [] for p in range(PARTITIONS)}  # (offset, key)
        self.errors: list[str] = []
        self.unflushed = -1
        self._producer = Producer(
            {
                "bootstrap.servers": rig.bootstrap_servers,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 20,
            }
        )
        self._thread = threading.Thread(target=self._run, name="rf-producer")

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:
            self.acked[msg.partition()].append((msg.offset(), int(msg.key())))

    def _run(self) -> None:
        i = 0
        while not self.stop.is_set() and i < 200_000:  # bounded: ~150 records/s
            self._producer.produce(
                self.topic,
                key=str(i).encode(),
                value=f"v{i}".encode(),
                partition=i % PARTITIONS,
                on_delivery=self._delivered,
            )
            self._producer.poll(0)
            i += 1
            time.sleep(0.005)
        self.unflushed = self._producer.flush(300)  # bounded: a busy rig acks late, never loses

    def count(self) -> int:
        return sum(len(v) for v in self.acked.values())

    def __enter__(self) -> Producing:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self._thread.join(330)


class IsrSampler:
    """Samples the topic's metadata (replicas and ISR per partition) until stopped; keeps the smallest ISR
    seen and where."""

    def __init__(self, rig: KafkaRig, topic: str) -> None:
        self.topic = topic
        self.admin = AdminClient({"bootstrap.servers": rig.bootstrap_servers})
        self.stop = threading.Event()
        self.samples = 0
        self.smallest: tuple[int, str] = (99, "")
        self._thread = threading.Thread(target=self._run, name="isr-sampler")

    def _run(self) -> None:
        while not self.stop.wait(0.5):
            try:
                md = self.admin.list_topics(topic=self.topic, timeout=10).topics[self.topic]
            except Exception:  # a busy broker answers late: the next sample
                continue
            if md.error is not None or len(md.partitions) != PARTITIONS:
                continue
            self.samples += 1
            for p in md.partitions.values():
                if len(p.isrs) < self.smallest[0]:
                    self.smallest = (len(p.isrs), f"partition {p.id} replicas {p.replicas} isr {p.isrs}")

    def __enter__(self) -> IsrSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self._thread.join(30)


def at_rf(rig: KafkaRig, topic: str, rf: int) -> dict[int, tuple[tuple[int, ...], tuple[int, ...]]]:
    """Each partition's (replicas, ISR) once every partition has ``rf`` replicas, all in sync, over both
    data centres ({} until then)."""
    racks = {n.id: n.rack for n in rig.nodes}
    found = {p.partition: (p.replicas, p.isr) for p in snapshot(rig).partitions if p.topic == topic}
    ok = len(found) == PARTITIONS and all(
        len(reps) == len(set(reps)) == rf
        and set(isr) == set(reps)
        and {racks[b].strip("/").split("/")[0] for b in reps} == {"dc1", "dc2"}
        for reps, isr in found.values()
    )
    return found if ok else {}


def set_rf(kubectl: Any, op: Operator, ns: str, rf: int) -> dict[str, Any]:
    """Declare ``rf`` and wait for the policy's Completed of that generation."""
    patch_spec(kubectl, ns, "placementpolicy", "rf", {"replicationFactor": rf})
    generation = get(kubectl, ns, "placementpolicy", "rf")["metadata"]["generation"]
    body = wait_phase(
        kubectl,
        op,
        ns,
        "placementpolicy",
        "rf",
        ("Completed", "Failed"),
        timeout=420,
        until=lambda s: s.get("observedGeneration") == generation,
    )
    assert body["status"]["phase"] == "Completed", body["status"]
    return body


def test_policy_raises_and_lowers_the_replication_factor_under_a_producer(
    operator: Operator, kubectl: Any, k8s_namespace: str, kafka_rig: KafkaRig, new_topic: Any, kafka_wait: Any
) -> None:
    ns = k8s_namespace
    topic = new_topic(START, config={"min.insync.replicas": str(MIN_ISR)})
    with Producing(kafka_rig, topic) as producing, IsrSampler(kafka_rig, topic) as sampler:
        kafka_wait("the producer's first acks", lambda: producing.count() >= 200, timeout=120)
        apply(
            kubectl,
            ns,
            resource("KafkaCluster", "prod", {"bootstrapServers": kafka_rig.bootstrap_servers}),
            resource(
                "PlacementPolicy",
                "rf",
                {
                    "clusterRef": {"name": "prod"},
                    "topics": {"include": [topic]},
                    "rackAwareness": TWO_LEVELS,
                    "replicationFactor": 2,  # what the topic has: nothing moves
                },
            ),
        )
        first = wait_phase(
            kubectl, operator, ns, "placementpolicy", "rf", ("Completed", "Failed"), timeout=300
        )
        assert first["status"]["phase"] == "Completed", first["status"]

        up = set_rf(kubectl, operator, ns, 3)
        assert up["status"]["plan"]["moves"] == PARTITIONS, up["status"]  # every partition gains a replica
        kafka_wait("every partition at RF 3, in sync", lambda: at_rf(kafka_rig, topic, 3), timeout=120)

        before = producing.count()
        down = set_rf(kubectl, operator, ns, 2)
        assert down["status"]["plan"]["moves"] == PARTITIONS, down["status"]
        assert down["status"]["plan"]["id"] != up["status"]["plan"]["id"]
        settled = kafka_wait(
            "every partition at RF 2, in sync", lambda: at_rf(kafka_rig, topic, 2), timeout=120
        )
        # the producer kept going through the decrease
        kafka_wait("acks after the decrease", lambda: producing.count() > before + 100, timeout=120)
    assert producing.unflushed == 0 and producing.errors == [], (producing.unflushed, producing.errors[:10])
    assert sampler.samples > 0 and sampler.smallest[0] >= MIN_ISR, sampler.smallest
    assert all(len(reps) == 2 for reps, _ in settled.values()), settled

    read = {
        p: [(offset, int(key or b"-1")) for offset, key, _ in records]
        for p, records in read_to_end(kafka_rig.bootstrap_servers, topic, PARTITIONS).items()
    }
    for p in range(PARTITIONS):
        acked = sorted(producing.acked[p])
        keys = [k for _, k in read[p]]
        assert read[p] == acked, f"partition {p}: read {len(read[p])}, acked {len(acked)}"
        assert keys == sorted(keys) and all(k % PARTITIONS == p for k in keys)  # in order, each once
    assert sum(len(v) for v in read.values()) == producing.count() > 0
