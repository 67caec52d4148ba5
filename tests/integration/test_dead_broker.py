"""Decommissioning a broker that crashed (real rig, the CLI: snapshot, plan, execute --wait).

A topic of 30 partitions (RF 2, min.insync.replicas 1) over the three brokers; an idempotent producer writes
with acks=all while broker 3 is SIGKILLed and never restarted during the test. Right after the crash the
snapshot must work; alive is the cluster's word, so until the cluster fences broker 3
(broker.session.timeout.ms) it is listed alive and unreachable, then not alive, which a snapshot shows
within seconds; the decommission of broker 3 is planned from that one and executed with ``--wait``: the
safety gate must not pause on the under-replication the plan repairs (every partition of the topic that
named broker 3 is out of sync). At the end every partition has two replicas on live brokers, all in sync, no
throttle is left, and every acknowledged record is read back exactly once. Broker 3 is always restarted
(finally), which then holds no replica of the topic.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.integration.conftest import read_to_end, wait_for
from tests.integration.test_executor_broker_down import node_running, rig_node, throttle_configs

from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import KafkaGateway

if TYPE_CHECKING:
    from conftest import KafkaRig, TopicFactory

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(420)]

CLI = Path(sys.executable).parent / "kafka-placement"
DEAD = 3
PARTITIONS = 30
RECORDS = 20_000


class Producer:
    """An idempotent acks=all producer in a thread: numbered records, round robin over the partitions,
    until stopped or RECORDS are sent; remembers which numbers Kafka acknowledged."""

    def __init__(self, servers: str, topic: str) -> None:
        from confluent_kafka import Producer as Client

        self.topic = topic
        self.acked: set[int] = set()
        self.failed: list[str] = []
        self.stop = threading.Event()
        self.client = Client(
            {
                "bootstrap.servers": servers,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 120_000,
            }
        )
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.failed.append(str(err))
        else:
            self.acked.add(int(msg.value()))

    def _run(self) -> None:
        for n in range(RECORDS):
            if self.stop.is_set():
                break
            while True:
                try:
                    self.client.produce(
                        self.topic,
                        value=str(n).encode(),
                        partition=n % PARTITIONS,
                        on_delivery=self._delivered,
                    )
                    break
                except BufferError:
                    self.client.poll(0.1)
            self.client.poll(0)
            if n % 100 == 99:
                time.sleep(0.01)  # a steady stream over the crash, not one burst before it

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(60)
        assert self.client.flush(120) == 0, "records still unacknowledged after 120 s"


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=timeout)


def test_a_crashed_broker_is_decommissioned(
    kafka_rig: KafkaRig, new_topic: TopicFactory, tmp_path: Path
) -> None:
    assert node_running(kafka_rig, DEAD), f"broker {DEAD} of the rig is not running"
    assignment = [[1 + p % 3, 1 + (p + 1) % 3] for p in range(PARTITIONS)]  # 20 of 30 name broker 3
    topic = new_topic(assignment, config={"min.insync.replicas": "1"})
    servers = kafka_rig.bootstrap_servers
    with KafkaGateway(ConnectionSettings(servers)) as gw:
        throttles_before = throttle_configs(gw, topic)
    producer = Producer(servers, topic)
    producer.thread.start()
    killed = False
    try:
        wait_for("records acknowledged before the crash", lambda: len(producer.acked) >= 2_000, timeout=60)
        kill = rig_node("stop-node", kafka_rig, DEAD, "--kill")
        killed = True
        assert kill.returncode == 0, kill.stderr + kill.stdout
        crashed_at = time.monotonic()

        snapshot = tmp_path / "snapshot.json"

        def fenced() -> dict[str, Any] | None:
            snap = run_cli("snapshot", "--bootstrap-server", servers, "-o", str(snapshot))
            assert snap.returncode == 0, snap.stderr  # at once: no waiting for the crash to settle
            taken: dict[str, Any] = json.loads(snapshot.read_text())
            # not fenced yet: the cluster still calls it alive, so it is unreachable, never dead
            return None if DEAD in taken.get("unreachableBrokers", []) else taken

        doc = wait_for(
            f"the cluster fences broker {DEAD} (a snapshot names it not alive)", fenced, timeout=60
        )
        dead = [b for b in doc["brokers"] if b["id"] == DEAD]
        assert dead and dead[0].get("alive") is False and dead[0]["logDirs"] == [], dead
        assert all(b.get("alive", True) for b in doc["brokers"] if b["id"] != DEAD)
        mine = [p for p in doc["partitions"] if p["topic"] == topic]
        assert len(mine) == PARTITIONS  # none missing: the snapshot waits for lagging metadata
        wait_for("the crash seen in the ISRs", lambda: len(out_of_sync(servers, topic)) == 20, timeout=60)

        intents = tmp_path / "intents.yaml"
        intents.write_text(f"kind: BrokerDecommission\nspec: {{brokers: [{DEAD}]}}\n")
        plan, state = tmp_path / "plan.json", tmp_path / "state.json"
        planned = run_cli("plan", "--snapshot", str(snapshot), "--intents", str(intents), "-o", str(plan))
        assert planned.returncode == 0, planned.stderr
        entries = json.loads(plan.read_text())["partitions"]
        moved = [e for e in entries if e["topic"] == topic]
        assert len(moved) == 20 and all(DEAD not in e["replicas"] for e in moved)
        executed = run_cli(
            "execute", "--bootstrap-server", servers, "--plan", str(plan), "--state", str(state),
            "--throttle", "50000000", "--wait", "--poll-seconds", "0.5",
        )  # fmt: skip
        assert executed.returncode == 0, executed.stdout + executed.stderr
        record = json.loads(state.read_text())
        assert record["phase"] == "Completed"
        assert record["counters"]["submissions"] == len(entries)  # each partition once
        assert record["counters"]["resubmitted"] == 0
        print(f"decommissioned dead broker {DEAD} {time.monotonic() - crashed_at:.1f}s after the crash")
        producer.finish()
        assert not producer.failed, producer.failed[:5]

        with KafkaGateway(ConnectionSettings(servers)) as fresh:
            after = {p.partition: p for p in fresh.snapshot().partitions if p.topic == topic}
            assert len(after) == PARTITIONS
            for p in after.values():
                assert len(p.replicas) == 2 and DEAD not in p.replicas, p

            def in_sync() -> list[Any]:  # a follower that caught up joins the ISR moments later
                parts = [p for p in fresh.snapshot().partitions if p.topic == topic]
                return [p for p in parts if set(p.isr) != set(p.replicas)]

            wait_for(
                "every partition back in sync on the live brokers",
                lambda: not in_sync(),
                60,
                why=lambda: str(in_sync()),
            )

            def left() -> dict[str, Any]:  # the live brokers' and the topic's
                return throttle_configs(fresh, topic)

            assert left() and all(not k.startswith(f"{DEAD}:") for k in left())
            # no throttle left: removed through the controller before Completed, applied by each broker
            # moments later (strict: nothing else removes them)
            wait_for(
                "the throttles as before the execution",
                lambda: (now := left()) == {k: v for k, v in throttles_before.items() if k in now},
                30,
                why=lambda: f"{left()} against {throttles_before}",
            )
        read = [int(v or b"-1") for rs in read_to_end(servers, topic, PARTITIONS).values() for _, _, v in rs]
        assert len(read) == len(set(read)), "a record was read twice"
        assert producer.acked <= set(read), f"{len(producer.acked - set(read))} acknowledged records lost"
    finally:
        producer.stop.set()
        if killed or not node_running(kafka_rig, DEAD):
            restarted = rig_node("start-node", kafka_rig, DEAD)
            assert restarted.returncode == 0 or "already running" in restarted.stderr, restarted.stderr


def out_of_sync(servers: str, topic: str) -> list[int]:
    with KafkaGateway(ConnectionSettings(servers)) as gw:
        described = gw.describe_partitions([topic])
    return [n for (_, n), p in described.items() if p.under_replicated]
