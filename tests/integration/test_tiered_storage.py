"""What a move of a tiered partition (KIP-405) really copies, measured on Kafka: the rig's ``tiered``
cluster (``kafka_rig.py up --name tiered``: two nodes, remote storage on Kafka's own LocalTieredStorage,
up for this test only) holds a topic with remote storage and a 1 MiB local retention, most of it tiered,
and a plain topic of the same total size. Each one's partition moves to the other broker through
``kafka-placement execute``; the plan's predicted bytes (``evaluate``: networkBytes) are compared with the
bytes the new replica's broker received.

The bytes received are the new replica's local log size (DescribeLogDirs) right after the move: the rig
exposes no JMX (``ReplicationBytesInPerSec`` is broker-wide anyway), and a new replica starts empty and
grows only by what it fetches from the leader (producers stopped; local retention only deletes segments
that are already tiered, and the leader's local log is already within it). The tiered one copies about
its local bytes (within 10% of the plan), far less than its total; the plain one copies its total. Then,
with ``follower.fetch.last.tiered.offset.enable`` (KIP-1023) turned on, the snapshot says so and gives the
tiered partition its ``untieredBytes`` (ListOffsets: the log end minus the last tiered offset, in bytes),
and moving it back copies only what is not tiered yet: the plan predicts that, within 10%, far below the
local size. Every record reads back afterwards, the tiered ones from the remote storage.

The same cluster checks retention every second, so a second test takes a traffic window across segments
that retention deletes (the sampler's rate stays the rate sent).

Cost: about 70 s on an idle machine (two JVMs start and stop, about 20 s of it; 16 MB written, 9 MB
copied; then 8 MB written at 200 KB/s).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.integration.conftest import create_topics_everywhere, wait_for

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(300)]

RIG_CLI = Path(__file__).resolve().parents[1] / "rig" / "kafka_rig.py"
CLI = Path(sys.executable).parent / "kafka-placement"
NAME = "tiered"
RECORDS = 8000
RECORD_BYTES = 1000
MIB = 1 << 20
FETCH_LAST_TIERED = "follower.fetch.last.tiered.offset.enable"
TIERED = {
    "remote.storage.enable": "true",
    "local.retention.bytes": str(MIB),
    "segment.bytes": str(MIB),  # Kafka's smallest: segments roll, tier and go locally within seconds
    "retention.bytes": "-1",
}


def rig(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(RIG_CLI), *args, "--name", NAME], capture_output=True, text=True, timeout=timeout
    )


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr + done.stdout
    return done


@pytest.fixture(scope="module")
def tiered() -> Iterator[str]:
    """The tiered cluster's bootstrap servers, up for this module only."""
    up = rig("up")
    try:
        assert up.returncode == 0, up.stderr + up.stdout
        status = rig("status", "--json")
        assert status.returncode == 0, status.stderr + status.stdout
        yield str(json.loads(status.stdout)["bootstrapServers"])
    finally:
        down = rig("down")
        assert down.returncode == 0, down.stderr + down.stdout


def snapshot(servers: str, out: Path) -> dict[str, Any]:
    cli("snapshot", "--bootstrap-server", servers, "-o", str(out))
    return dict(json.loads(out.read_text()))


def sizes(snap: dict[str, Any]) -> dict[str, tuple[list[int], int]]:
    return {p["topic"]: (p["replicas"], p["sizeBytes"]) for p in snap["partitions"] if p["partition"] == 0}


def untiered(snap: dict[str, Any]) -> dict[str, int | None]:
    """Each topic's partition 0's ``untieredBytes`` (KIP-1023 on; None: absent)."""
    return {p["topic"]: p.get("untieredBytes") for p in snap["partitions"] if p["partition"] == 0}


def produce(servers: str, topics: list[str]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": servers, "acks": "all", "linger.ms": 20})
    filler = b"x" * (RECORD_BYTES - 8)
    for i in range(RECORDS):
        for topic in topics:
            producer.produce(topic, i.to_bytes(8, "big") + filler)
        if i % 500 == 499:
            producer.poll(0)
    assert producer.flush(60) == 0


def read_back(servers: str, topic: str) -> set[int]:
    """The sequence numbers of every record of partition 0, read from offset 0."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": servers, "group.id": f"read-{topic}", "enable.auto.commit": False}
    )
    seen: set[int] = set()
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 60
        while len(seen) < RECORDS and time.monotonic() < deadline:
            for m in consumer.consume(500, timeout=1.0):
                assert m.error() is None, m.error()
                value = m.value()
                assert value is not None and len(value) == RECORD_BYTES
                seen.add(int.from_bytes(value[:8], "big"))
    finally:
        consumer.close()
    return seen


def move(servers: str, tmp_path: Path, before: dict[str, Any], topic: str, to: int) -> tuple[int, int]:
    """Partition 0 of ``topic`` moved to broker ``to`` by ``kafka-placement execute``: (the bytes the plan
    predicts, from the snapshot ``before``; the bytes the new replica holds right after the move)."""
    plan = tmp_path / f"plan-{topic}-{to}.json"
    target = {"topic": topic, "partition": 0, "replicas": [to], "log_dirs": ["any"]}
    plan.write_text(json.dumps({"version": 1, "partitions": [target]}))
    snap = tmp_path / f"before-{topic}-{to}.json"
    snap.write_text(json.dumps(before))
    evaluated = json.loads(cli("evaluate", "--snapshot", str(snap), "--plan", str(plan)).stdout)
    predicted = int(evaluated["networkBytes"])
    copies = untiered(before)[topic]  # (KIP-1023 on: what is not tiered yet; else the local size)
    expected = copies if copies is not None else sizes(before)[topic][1]
    assert predicted == evaluated["bytesToMove"] == expected
    done = cli(
        "execute", "--bootstrap-server", servers, "--plan", str(plan),
        "--state", str(tmp_path / f"state-{topic}-{to}.json"), "--wait", "--poll-seconds", "0.5",
    )  # fmt: skip
    assert "[Completed]" in done.stdout, done.stdout
    replicas, received = sizes(snapshot(servers, tmp_path / f"after-{topic}-{to}.json"))[topic]
    assert replicas == [to]
    return predicted, received


def test_a_tiered_partition_move_copies_its_local_bytes_a_plain_one_its_total(
    tiered: str, tmp_path: Path
) -> None:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

    admin = AdminClient({"bootstrap.servers": tiered})
    topics = [
        NewTopic("tiered", 1, replica_assignment=[[1]], config=TIERED),
        NewTopic("plain", 1, replica_assignment=[[1]], config={"segment.bytes": str(MIB)}),
    ]
    create_topics_everywhere(admin, topics, tiered)
    produce(tiered, ["tiered", "plain"])

    # bounded wait until the tiered partition's local log reached its end state: every rolled segment
    # tiered, and local retention deleted the oldest while the rest still held local.retention.bytes. That
    # leaves one rolled segment (about 1 MiB) and the active one (less than 1 MiB, by how the producer's
    # batches fell): 1 to 2 MiB, so the end state is told by the size no longer changing for 5 looks 1 s
    # apart (tiering runs every 0.5 s, retention every 1 s), not by a size. Stopping earlier let retention
    # shrink the log between the snapshot and the move (a copy of 1.08 MB against a prediction of 3.08 MB,
    # seen once in CI); a bound of 1.5 MiB failed once on a log at its end state of 1.84 MB
    deadline = time.monotonic() + 120
    seen: list[int] = []
    while True:
        before = snapshot(tiered, tmp_path / "before.json")
        local, total = sizes(before)["tiered"][1], sizes(before)["plain"][1]
        seen.append(local)
        if (
            len(seen) >= 5 and len(set(seen[-5:])) == 1 and local <= 2.1 * MIB
        ) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert total >= RECORDS * RECORD_BYTES and local <= 2.1 * MIB, (local, total, seen[-5:])
    storage = {t["topic"]: t for t in before["topics"]}
    assert storage["tiered"]["remoteStorageEnable"] is True
    assert storage["tiered"]["localRetentionBytes"] == MIB
    assert storage["plain"]["remoteStorageEnable"] is False
    assert before["followerFetchLastTieredOffset"] is False  # Kafka's default: from the local log start

    for topic in ("tiered", "plain"):
        predicted, received = move(tiered, tmp_path, before, topic, 2)
        assert abs(received - predicted) <= 0.1 * predicted, (topic, received, predicted)
        if topic == "tiered":  # far less than the total: the tiered segments were not copied
            assert received < 0.5 * total, (received, total)
        else:
            assert received >= RECORDS * RECORD_BYTES, received

    # KIP-1023 (a dynamic broker config): a new follower starts after the last tiered offset, so it copies
    # less than the local bytes (the leader's local log keeps at least one tiered segment: local retention
    # keeps 1 MiB, the active segment holds less); the snapshot reads that tail (untieredBytes) and the
    # plan predicts it
    for broker in ("1", "2"):
        kip1023 = ConfigEntry(FETCH_LAST_TIERED, "true", incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource("broker", broker, incremental_configs=[kip1023])
        for f in admin.incremental_alter_configs([resource]).values():
            f.result(30)
    for broker in ("1", "2"):  # the controller answered; each broker applies it from the metadata log after

        def applied(broker: str = broker) -> bool:
            described = ConfigResource("broker", broker)
            entries = admin.describe_configs([described])[described].result(30)
            return bool(entries[FETCH_LAST_TIERED].value == "true")

        wait_for(f"{FETCH_LAST_TIERED} on broker {broker}", applied)
    again = snapshot(tiered, tmp_path / "again.json")
    assert again["followerFetchLastTieredOffset"] is True
    tail = untiered(again)
    assert tail["plain"] is None and tail["tiered"] is not None, tail  # read for remote topics only
    predicted, received = move(tiered, tmp_path, again, "tiered", 1)
    local = sizes(again)["tiered"][1]
    # the tail is the active segment, the local log that plus at least one tiered segment (rolled at about
    # segment.bytes, 1 MiB): at least half a MiB less than local, whatever size the active segment reached
    # ("< half of local" failed on 2026-12-02 with an active segment of 1,041,317 of 2,041,224 bytes)
    assert predicted == tail["tiered"] < local - MIB // 2, (predicted, local)
    assert abs(received - predicted) <= 0.1 * predicted, (received, predicted)

    for topic in ("tiered", "plain"):
        assert read_back(tiered, topic) == set(range(RECORDS)), topic


def test_a_traffic_window_across_segments_retention_deletes_gives_the_rate_sent(
    tiered: str, tmp_path: Path
) -> None:
    """Real retention (issue 41: DeleteRecords only moves the start offset, the main rig checks retention
    every 5 min): a plain topic with 1 MiB segments and 2 MiB retention, written at 200 KB/s on this
    cluster (retention checked every second), loses its oldest segment about every 5 s. A 20 s traffic
    window across those deletions gives the rate sent (within 10%), never a negative or inflated one."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
    from tests.integration.test_traffic import PacedProducer

    admin = AdminClient({"bootstrap.servers": tiered})
    config = {"segment.bytes": str(MIB), "retention.bytes": str(2 * MIB)}
    create_topics_everywhere(
        admin, [NewTopic("retained", 1, replica_assignment=[[1, 2]], config=config)], tiered
    )
    tp = TopicPartition("retained", 0)

    def log_start() -> int:
        return int(admin.list_offsets({tp: OffsetSpec.earliest()})[tp].result(timeout=10).offset)

    rate = 200_000
    producer = PacedProducer(tiered, {("retained", 0): rate})
    try:
        deadline = time.monotonic() + 90
        while log_start() == 0:  # past the retention: segments are being deleted
            assert time.monotonic() < deadline, "retention deleted no segment in 90 s"
            time.sleep(1)
        first = log_start()
        out = tmp_path / "traffic.json"
        cli("snapshot", "--bootstrap-server", tiered, "--traffic-window", "20", "-o", str(out))
        moved = log_start() - first
        assert not producer.failed, producer.failed[:3]
    finally:
        producer.close()
    assert moved > 0, "no segment deleted during the window"
    p = next(p for p in json.loads(out.read_text())["partitions"] if p["topic"] == "retained")
    assert abs(p["bytesInPerSec"] - rate) <= 0.10 * rate, (p["bytesInPerSec"], rate, moved)
