"""Traffic sampling against the real main cluster: ``kafka-placement snapshot --traffic-window`` while
producers write at skewed, known rates (two hot partitions, a few cold ones, one idle) and two consumer
groups read some topics. Each partition's ``bytesInPerSec`` is within 10% of what its producer sent per
second, its ``readFanout`` is the number of groups reading it, and a partition whose log start offset
moves during the window (DeleteRecords, what retention does to the offsets; the main rig's brokers check
retention every 5 minutes, Kafka's default, too seldom for a test) still gets its rate, not a negative or
inflated one. Real retention deleting segments during a window: test_tiered_storage.py, whose cluster
checks retention every second."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.integration.conftest import create_topics_everywhere

from kafka_placement.cli._io import read_snapshot_arg
from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import KafkaGateway
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.traffic_rates import Traffic, TrafficState, estimates, fold

if TYPE_CHECKING:
    from conftest import KafkaRig, TopicFactory

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(300)]

CLI = Path(sys.executable).parent / "kafka-placement"
RECORD = 4000  # value bytes; a record's own overhead on disk (~70 bytes with its batch) is under 2%
WINDOW_S = 20
HOT = {0: 80_000, 1: 40_000, 2: 8_000, 3: 8_000, 4: 8_000, 5: 0}  # partition -> value bytes per second
OTHER = {0: 8_000, 1: 8_000}
RETAINED = {0: 40_000}


class PacedProducer:
    """A thread that keeps every (topic, partition) at its rate: every 50 ms it sends the records that
    bring the partition's bytes sent up to rate x time since start."""

    def __init__(self, servers: str, rates: dict[tuple[str, int], int]) -> None:
        from confluent_kafka import Producer

        self.rates = rates
        self.client = Producer({"bootstrap.servers": servers, "acks": "all", "linger.ms": 10})
        self.stop = threading.Event()
        self.failed: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _delivered(self, err: Any, _msg: Any) -> None:
        if err is not None:
            self.failed.append(str(err))

    def _run(self) -> None:
        sent = dict.fromkeys(self.rates, 0)
        start = time.monotonic()
        value = b"v" * RECORD
        while not self.stop.is_set():
            elapsed = time.monotonic() - start
            for (topic, partition), rate in self.rates.items():
                while sent[(topic, partition)] + RECORD <= rate * elapsed:
                    self.client.produce(topic, value, partition=partition, on_delivery=self._delivered)
                    sent[(topic, partition)] += RECORD
            self.client.poll(0)
            time.sleep(0.05)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)
        self.client.flush(30)


class Reader:
    """A consumer group member reading ``topics`` from the beginning, committing every second."""

    def __init__(self, servers: str, group: str, topics: list[str]) -> None:
        from confluent_kafka import Consumer

        self.client = Consumer(
            {
                "bootstrap.servers": servers,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": True,
                "auto.commit.interval.ms": 1000,
            }
        )
        self.client.subscribe(topics)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            self.client.poll(0.2)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)
        self.client.close()


def test_snapshot_traffic_window_estimates_rates_and_fanout(
    kafka_rig: KafkaRig,
    kafka_admin: Any,
    new_topic: TopicFactory,
    kafka_wait: Callable[..., Any],
    tmp_path: Path,
) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    servers = kafka_rig.bootstrap_servers
    hot = new_topic([[1, 2], [2, 3], [3, 1], [1, 3], [2, 1], [3, 2]])
    other = new_topic([[1, 2], [2, 3]])
    retained = new_topic([[3, 1]], config={"segment.bytes": "1048576", "retention.bytes": "1048576"})
    rates = {
        **{(hot, p): r for p, r in HOT.items()},
        **{(other, p): r for p, r in OTHER.items()},
        **{(retained, p): r for p, r in RETAINED.items()},
    }
    reading = {"g-both": [hot, other], "g-hot": [hot]}
    groups = {f"{g}-{hot[-8:]}": topics for g, topics in reading.items()}
    producer = PacedProducer(servers, {k: r for k, r in rates.items() if r})
    readers = [Reader(servers, g, topics) for g, topics in groups.items()]
    try:

        def committed_everywhere() -> bool:  # every group committed on every partition it reads with data
            for g, topics in groups.items():
                f = kafka_admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)])[g]
                tps = f.result(timeout=10).topic_partitions
                have = {(tp.topic, tp.partition) for tp in tps if tp.offset > 0}
                if any(k not in have for k, r in rates.items() if r and k[0] in topics):
                    return False
            return True

        kafka_wait("both groups committing on every partition they read", committed_everywhere)
        out = tmp_path / "snapshot.json"
        cli = subprocess.Popen(
            [
                str(CLI),
                "snapshot",
                "--bootstrap-server",
                servers,
                "--traffic-window",
                str(WINDOW_S),
                "-o",
                str(out),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(WINDOW_S / 2)  # mid-window: move the retained partition's log start offset
        tp = TopicPartition(retained, 0)
        end = kafka_admin.list_offsets({tp: OffsetSpec.latest()})[tp].result(timeout=10).offset
        for f in kafka_admin.delete_records([TopicPartition(retained, 0, end - 5)]).values():
            assert f.result(timeout=10).low_watermark == end - 5
        _, stderr = cli.communicate(timeout=WINDOW_S + 120)
        assert cli.returncode == 0, stderr
        assert not producer.failed, producer.failed[:3]
    finally:
        producer.close()
        for r in readers:
            r.close()
        for f in kafka_admin.delete_consumer_groups(list(groups), request_timeout=30).values():
            f.result(timeout=30)

    snapshot = ClusterSnapshot.loads(out.read_text())
    assert f"with traffic over {WINDOW_S} s" in stderr
    measured = {}
    for topic, number in rates:
        p = snapshot.partition(topic, number)
        assert p is not None
        measured[(topic, number)] = (p.bytes_in_per_sec, p.read_fanout)
    for (topic, number), sent in rates.items():
        rate, fanout = measured[(topic, number)]
        assert rate is not None, f"{topic}-{number}: no rate in {measured}"
        if sent:
            assert abs(rate - sent) <= 0.10 * sent, f"{topic}-{number}: {rate:.0f} B/s, sent {sent} B/s"
        else:
            assert rate == 0, f"{topic}-{number}: no producer, yet {rate} B/s"
        expected = sum(1 for ts in groups.values() if topic in ts) if sent else 0
        assert fanout == expected, f"{topic}-{number}: fan-out {fanout}, {expected} groups read it"


def test_a_topic_recreated_under_its_name_has_no_rate_across_the_reset(
    kafka_rig: KafkaRig, kafka_admin: Any, kafka_wait: Callable[..., Any]
) -> None:
    """Deleted and created again between two looks: a new topic id (and offsets back at 0), so no rate
    and no fan-out for it until a look of the new topic follows, never a negative one."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    name = f"it-recreated-{uuid.uuid4().hex[:8]}"
    servers = kafka_rig.bootstrap_servers

    def create() -> bool:
        create_topics_everywhere(kafka_admin, [NewTopic(name, 1, replica_assignment=[[1, 2]])], kafka_rig)
        return True

    def produce(records: int) -> None:
        producer = Producer({"bootstrap.servers": servers, "acks": "all"})
        for _ in range(records):
            producer.produce(name, b"x" * 1000, partition=0)
        assert producer.flush(30) == 0

    def look(gateway: KafkaGateway, not_id: Any = None) -> Any:
        def seen() -> Any:
            _, lk = gateway.traffic_look()
            p = lk.partitions.get((name, 0))
            return (
                lk
                if p is not None and p.end_offset > 0 and (not_id is None or p.topic_id != not_id)
                else None
            )

        return kafka_wait(f"a look with {name}-0 holding records", seen)

    create()
    try:
        with KafkaGateway(ConnectionSettings.from_command_config(None, servers)) as gateway:
            produce(50)
            before = look(gateway)
            kafka_admin.delete_topics([name])[name].result(timeout=30)
            kafka_wait(f"{name} created again", create)  # refused while the deletion is under way
            produce(5)
            # the new topic's, not the old one's that a broker slower to apply the deletion still has
            after = look(gateway, not_id=before.partitions[(name, 0)].topic_id)
    finally:
        kafka_admin.delete_topics([name])[name].result(timeout=30)
    old, new = before.partitions[(name, 0)], after.partitions[(name, 0)]
    assert old.topic_id and new.topic_id and old.topic_id != new.topic_id
    assert new.end_offset < old.end_offset
    state = fold(fold(TrafficState(), before, 60), after, 60, min_interval_s=0)
    assert estimates(state, 60)[(name, 0)] == Traffic(None, None)


def cli(*args: str) -> str:
    done = subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=WINDOW_S + 300)
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout


def traffic_snapshot(servers: str, out: Path) -> ClusterSnapshot:
    """A traffic snapshot written to ``out`` (JSON, or a Parquet snapshot directory: ``.parquet``), read back
    as ``--snapshot`` reads it."""
    cli("snapshot", "--bootstrap-server", servers, "--traffic-window", str(WINDOW_S), "-o", str(out))
    return read_snapshot_arg(str(out))


def measured_plan(servers: str, work: Path) -> tuple[ClusterSnapshot, ClusterSnapshot]:
    """A traffic snapshot, the plan of ``work``/intents.yaml made from it (summary.json beside it), that
    plan executed, and a traffic snapshot taken afterwards: the snapshots before and after."""
    before = traffic_snapshot(servers, work / "before.json")
    cli(
        "plan", "--snapshot", str(work / "before.json"), "--intents", str(work / "intents.yaml"),
        "-o", str(work / "plan.json"), "--summary", str(work / "summary.json"),
    )  # fmt: skip
    cli(
        "execute", "--bootstrap-server", servers, "--plan", str(work / "plan.json"),
        "--state", str(work / "state.json"), "--wait", "--poll-seconds", "0.5",
    )  # fmt: skip
    return before, traffic_snapshot(servers, work / "after.parquet")  # (the rates through Parquet too)


def network_in(snapshot: ClusterSnapshot, brokers: list[int]) -> dict[int, float]:
    """Each broker's network in (planning/loads.py): the bytes in of every replica it holds."""
    out = dict.fromkeys(brokers, 0.0)
    for p in snapshot.partitions:
        for b in p.replicas:
            if b in out and p.bytes_in_per_sec:
                out[b] += p.bytes_in_per_sec
    return out


def test_a_network_in_balance_plan_moves_the_traffic_as_predicted(
    kafka_rig: KafkaRig, new_topic: TopicFactory, tmp_path: Path
) -> None:
    """Six partitions written at 30 KB/s each, all led by broker 1: a plan made from a traffic snapshot
    with ``balance.networkIn`` is executed; a second traffic snapshot, taken from the brokers afterwards,
    shows each broker's network in where the plan's summary predicted it and within the tolerance (3.0x
    the mean before)."""
    servers = kafka_rig.bootstrap_servers
    brokers = [node.id for node in kafka_rig.nodes]
    topic = new_topic([[1]] * 6)
    rates = {(topic, p): 30_000 for p in range(6)}
    tolerance = 0.2  # six equal partitions on three brokers: only two each meets it
    (tmp_path / "intents.yaml").write_text(
        "kind: PlacementPolicy\nmetadata: {name: net}\n"
        f"spec: {{topics: {{include: ['{topic}']}}, balance: {{brokers: false, logDirs: false, "
        f"leaders: false, networkIn: true, tolerance: {tolerance}}}}}\n"
    )

    producer = PacedProducer(servers, rates)
    try:
        before, after = measured_plan(servers, tmp_path)
        assert not producer.failed, producer.failed[:3]
    finally:
        producer.close()

    summary = json.loads((tmp_path / "summary.json").read_text())
    rows = summary["traffic"]["brokers"]
    predicted = {row["id"]: row["networkIn"][1] for row in rows if row["id"] in brokers}
    measured_before, measured = network_in(before, brokers), network_in(after, brokers)
    mean = sum(measured_before.values()) / len(brokers)
    assert max(measured_before.values()) / mean > 1 + tolerance, measured_before  # unbalanced before
    assert summary["balanceAfter"]["networkInMaxMean"] <= 1 + tolerance, summary["balanceAfter"]
    for b in brokers:  # every broker where the plan put it, within the rates' 10% measuring error
        assert abs(measured[b] - predicted[b]) <= 0.10 * 60_000, (b, measured, predicted)
    mean_after = sum(measured.values()) / len(brokers)
    assert max(measured.values()) / mean_after <= 1 + tolerance, measured
    placed = [p.replicas[0] for p in after.partitions if p.topic == topic]
    assert sorted(placed.count(b) for b in brokers) == [2] * len(brokers), placed


def test_a_network_out_balance_plan_moves_network_out_and_leader_bytes_in_as_predicted(
    kafka_rig: KafkaRig,
    kafka_admin: Any,
    new_topic: TopicFactory,
    kafka_wait: Callable[..., Any],
    tmp_path: Path,
) -> None:
    """Six RF-2 partitions written at 30 KB/s each, all led by broker 1, and one consumer group reading
    them: broker 1's network out is 6 x 30 KB/s x (1 follower + 1 group), the others' none. A plan made
    from a traffic snapshot with ``balance.networkOut`` (leaderships handed over: no data moves) is
    executed; a second traffic snapshot, taken afterwards, shows each broker's network out and leaders'
    bytes in where the plan's summary predicted them (the rates' 10% measuring error), and balanced."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    from kafka_placement.planning.loads import broker_loads

    servers = kafka_rig.bootstrap_servers
    brokers = [node.id for node in kafka_rig.nodes]
    topic = new_topic([[1, 2], [1, 3]] * 3)
    rates = {(topic, p): 30_000 for p in range(6)}
    tolerance = 0.2
    (tmp_path / "intents.yaml").write_text(
        "kind: PlacementPolicy\nmetadata: {name: net}\n"
        f"spec: {{topics: {{include: ['{topic}']}}, balance: {{brokers: false, logDirs: false, "
        f"leaders: false, networkOut: true, tolerance: {tolerance}}}}}\n"
    )

    group = f"g-out-{topic[-8:]}"
    producer = PacedProducer(servers, rates)
    reader = Reader(servers, group, [topic])
    try:

        def committing() -> bool:  # the group committed on every partition: it reads them all
            f = kafka_admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
            tps = f.result(timeout=10).topic_partitions
            return {tp.partition for tp in tps if tp.offset > 0} == set(range(6))

        kafka_wait("the group committing on every partition", committing)
        before, after = measured_plan(servers, tmp_path)
        assert not producer.failed, producer.failed[:3]
    finally:
        producer.close()
        reader.close()
        for f in kafka_admin.delete_consumer_groups([group], request_timeout=30).values():
            f.result(timeout=30)

    summary = json.loads((tmp_path / "summary.json").read_text())
    assert all(p.read_fanout == 1 for p in before.partitions if p.topic == topic), before.partitions
    assert summary["balanceBefore"]["networkOutMaxMean"] > 1 + tolerance  # all of it on broker 1
    assert summary["balanceAfter"]["networkOutMaxMean"] <= 1 + tolerance, summary["balanceAfter"]
    assert summary["bytesToMove"] == 0  # leaderships handed over, no replica copied
    rows = {row["id"]: row for row in summary["traffic"]["brokers"]}
    loads = broker_loads(after)
    led: dict[int, float] = dict.fromkeys(brokers, 0.0)
    for p in after.partitions:
        if p.topic == topic:
            assert p.read_fanout == 1 and p.leader is not None and p.bytes_in_per_sec is not None, p
            led[p.leader] += p.bytes_in_per_sec
    for b in brokers:  # measured on the brokers afterwards, where the plan put it
        out, lead = rows[b]["networkOut"][1], rows[b]["leaderBytesIn"][1]
        assert abs(loads[b].network_out - out) <= 0.10 * 360_000, (b, loads[b], rows[b])
        assert abs(led[b] - lead) <= 0.10 * 180_000, (b, led, rows[b])
    outs = [loads[b].network_out for b in brokers]
    assert max(outs) / (sum(outs) / len(outs)) <= 1 + tolerance + 0.1, outs  # (+ the measuring error)


def test_offsets_are_read_right_after_an_election_by_the_same_client(
    kafka_rig: KafkaRig, new_topic: TopicFactory, kafka_wait: Callable[..., Any]
) -> None:
    """A look's ListOffsets right after leaders moved, by a client that read the partitions before (the
    operator's sampler keeps its gateway): every partition's offsets are read, none left out. Kafka
    answers such a read for a while with OFFSET_NOT_AVAILABLE or UNKNOWN_LEADER_EPOCH (a new leader), and
    librdkafka's admin client, holding the old leader epoch, got FENCED_LEADER_EPOCH for 20 s on end
    until its metadata was read again; each left the partition out of the look, and a snapshot taken
    right after an execution lacked the rates of the partitions it had moved leaders of."""
    from confluent_kafka.admin import AdminClient

    from kafka_placement.kafka import traffic_reads

    servers = kafka_rig.bootstrap_servers
    topic = new_topic([[1, 3]] * 6)
    keys = [(topic, p) for p in range(6)]
    admin = AdminClient({"bootstrap.servers": servers})

    def call(what: str, fn: Callable[[], Any], attempts: int | None = None, needs: str | None = None) -> Any:
        return fn()  # no retry of the whole read: what is asked again is the module's own

    def offsets() -> dict[tuple[str, int], tuple[int, int]]:
        return traffic_reads.list_offsets(lambda: admin, call, keys, 10.0)

    producer = PacedProducer(servers, dict.fromkeys(keys, 20_000))
    try:
        with KafkaGateway(ConnectionSettings(bootstrap_servers=servers)) as gateway:

            def reordered(order: tuple[int, ...]) -> bool:
                return all(p.replicas == order for p in gateway.partition_states() if p.topic == topic)

            last = offsets()
            assert set(last) == set(keys), last
            for target in ([3, 1], [1, 3], [3, 1]):
                time.sleep(1.0)  # some records written under the leader the client knows
                assert gateway.alter_reassignments(dict.fromkeys(keys, target)) == {}
                kafka_wait("the replicas reordered", lambda t=tuple(target): reordered(t))
                assert gateway.elect_preferred_leaders(keys) == {}
                now = offsets()  # at once, by the same client
                assert set(now) == set(keys), (target, sorted(set(keys) - set(now)))
                for k in keys:  # offsets only go forward
                    assert now[k][0] == last[k][0] == 0 and now[k][1] >= last[k][1], (k, last[k], now[k])
                last = now
        assert not producer.failed, producer.failed[:3]
    finally:
        producer.close()
