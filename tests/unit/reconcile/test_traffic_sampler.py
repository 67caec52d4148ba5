"""The traffic sampler's pure parts: status.traffic's per-broker sums and its bound, the progress
document, and the size of the stored state per partition (which decides how many ConfigMaps it takes)."""

from __future__ import annotations

import gzip
import json
import random

import pytest
from tests.unit.builders import snapshot

from kafka_placement.model.capacity import BrokerCapacity, Capacity, CapacitySpec
from kafka_placement.model.errors import BadInputError
from kafka_placement.model.traffic_looks import PartitionLook
from kafka_placement.planning.traffic_rates import PartitionTraffic, Traffic, TrafficState
from kafka_placement.planning.traffic_state import state_from_json, state_to_json
from kafka_placement.reconcile.record_store import CHUNK
from kafka_placement.reconcile.traffic_sampler import (
    MAX_BROKERS,
    STATE_GZ_BYTES_PER_PARTITION,
    progress_doc,
    read_progress,
    traffic_status,
)


def test_status_sums_every_replica_and_the_leaders_apart_and_skips_unknown_rates() -> None:
    snap = snapshot(
        {1: None, 2: None, 3: None, 4: None},
        [("t", 0, [1, 2], [0, 0], 0), ("t", 1, [2, 3], [0, 0], 0), ("t", 2, [3, 1], [0, 0], 0)],
    )
    traffic = {
        ("t", 0): Traffic(1000.4, 1),
        ("t", 1): Traffic(250.0, 0),
        ("t", 2): Traffic(None, None),  # unknown: counted nowhere, never as zero traffic
    }
    status = traffic_status(snap, traffic, at=1_700_000_000.0, window_s=300, looks=7)
    assert status["sampledAt"] == "2023-11-14T22:13:20Z"
    assert (status["windowSeconds"], status["looks"], status["partitionsMeasured"]) == (300, 7, 2)
    assert "groupsRead" not in status  # not given: not claimed
    # the groups the look read: 0 says the principal may describe none (fan-out counts no reader)
    assert traffic_status(snap, traffic, 0.0, 300, 7, groups_read=0)["groupsRead"] == 0
    by_id = {b["id"]: b for b in status["brokers"]}
    # network out: bytes in x (followers + fan-out) of the partitions led: 1000.4 x (1 + 1), 250 x 1
    common = {"diskBytes": 0}
    assert by_id[1] == {
        "id": 1, "bytesInPerSec": 1000, "leaderBytesInPerSec": 1000, "networkOutBytesPerSec": 2001,
        "replicasMeasured": 1, **common,
    }  # fmt: skip
    assert by_id[2] == {
        "id": 2, "bytesInPerSec": 1250, "leaderBytesInPerSec": 250, "networkOutBytesPerSec": 250,
        "replicasMeasured": 2, **common,
    }  # fmt: skip
    assert by_id[3] == {
        "id": 3, "bytesInPerSec": 250, "leaderBytesInPerSec": 0, "networkOutBytesPerSec": 0,
        "replicasMeasured": 1, **common,
    }  # fmt: skip
    assert by_id[4] == {
        "id": 4, "bytesInPerSec": 0, "leaderBytesInPerSec": 0, "networkOutBytesPerSec": 0,
        "replicasMeasured": 0, **common,
    }  # fmt: skip
    assert status["brokersOmitted"] == 0
    assert status["samplesSkipped"] == {}
    assert status["networkCapacityGoal"] == "off: spec.capacity is not set"
    skipped = {"recreated": 2, "clockBack": 1}
    assert traffic_status(snap, traffic, 0.0, 300, 7, skipped=skipped)["samplesSkipped"] == {
        "clockBack": 1,
        "recreated": 2,
    }


def test_status_says_whether_the_network_capacity_goal_is_on_and_why_not() -> None:
    snap = snapshot({1: None, 2: None}, [("t", 0, [1, 2], [0, 0], 10)])
    known, unknown = {("t", 0): Traffic(5.0, 0)}, {("t", 0): Traffic(None, None)}
    disk_only = CapacitySpec(default=Capacity(disk=100))
    network = CapacitySpec(default=Capacity(network_in=1000))
    goal = "networkCapacityGoal"
    assert traffic_status(snap, known, 0.0, 300, 2, disk_only)[goal] == (
        "off: spec.capacity declares no networkIn or networkOut"
    )
    assert traffic_status(snap, unknown, 0.0, 300, 1, network)[goal] == (
        "off: no partition has a measured rate yet"
    )
    on = traffic_status(snap, known, 0.0, 300, 2, network)[goal]
    assert on == "on: no broker planned above 0.8 of its declared network capacity"
    wrong = CapacitySpec(brokers=(BrokerCapacity(id=9, network_in=5),))
    assert traffic_status(snap, known, 0.0, 300, 2, wrong)[goal].startswith(
        "off: spec.capacity names a broker"
    )


def test_status_shows_each_brokers_capacity_and_utilisation_or_why_not() -> None:
    snap = snapshot(
        {1: None, 2: None, 3: None},
        [("t", 0, [1, 2], [0, 0], 4000), ("t", 1, [2, 3], [0, 0], 1000)],
    )
    traffic = {("t", 0): Traffic(1000.0, 2), ("t", 1): Traffic(500.0, 0)}
    capacity = CapacitySpec(
        default=Capacity(network_in=10_000, network_out=6000),
        brokers=(BrokerCapacity(id=2, network_in=2000, disk=10_000),),
    )
    by_id = {b["id"]: b for b in traffic_status(snap, traffic, 0.0, 300, 2, capacity)["brokers"]}
    # broker 1: in 1000 of 10,000; out 1000 x (1 follower + 2 groups) = 3000 of 6000; disk unknown
    assert by_id[1]["capacity"] == {"networkIn": 10_000, "networkOut": 6000}
    assert by_id[1]["utilisation"] == {"networkIn": 0.1, "networkOut": 0.5}
    # broker 2 (override over the default): in 1500 of 2000; out 500 x 1 of 6000; disk 5000 of 10,000
    assert by_id[2]["capacity"] == {"networkIn": 2000, "networkOut": 6000, "disk": 10_000}
    assert by_id[2]["utilisation"] == {"networkIn": 0.75, "networkOut": 0.083, "disk": 0.5}
    assert by_id[2]["diskBytes"] == 5000
    unknown = CapacitySpec(brokers=(BrokerCapacity(id=9, disk=1),))
    status = traffic_status(snap, traffic, 0.0, 300, 2, unknown)
    assert status["capacityError"] == (
        "spec.capacity.brokers[0].id: broker 9 is not a broker of the cluster (brokers: 1, 2, 3)"
    )
    assert all("capacity" not in b and "utilisation" not in b for b in status["brokers"])


def test_status_of_a_thousand_brokers_is_small_and_more_than_the_bound_are_counted_not_listed() -> None:
    many = MAX_BROKERS + 500
    parts = [("t", i, [i, (i + 1) % many, (i + 2) % many], [0, 0, 0], 0) for i in range(many)]
    snap = snapshot(dict.fromkeys(range(many)), parts, dirs=1)
    traffic = {("t", i): Traffic(123_456_789.0, 3) for i in range(many)}
    status = traffic_status(snap, traffic, 0.0, 300, 1)
    assert len(status["brokers"]) == MAX_BROKERS and status["brokersOmitted"] == 500
    per_broker = len(json.dumps(status)) / MAX_BROKERS
    assert per_broker < 180  # so 1000 brokers are ~180 KB of the 1.5 MiB an object may have
    assert 1000 * per_broker < 256 * 1024
    full = Capacity(network_in=10**9, network_out=10**9, disk=10**13)
    with_capacity = traffic_status(snap, traffic, 0.0, 300, 1, CapacitySpec(default=full))
    per_broker = len(json.dumps(with_capacity)) / MAX_BROKERS
    assert per_broker < 360  # with capacity and utilisation: 2000 brokers within 720 KB
    assert MAX_BROKERS * per_broker < 720 * 1024


def test_the_progress_document_round_trips_and_a_bad_one_is_bad_input() -> None:
    assert read_progress(progress_doc(12, 1.5, "state-12"), "cm") == (12, 1.5, "state-12")
    older = b'{"version": 1, "looks": 3, "at": 2.0, "windowSeconds": 300, "blob": "state-3"}'
    assert read_progress(older, "cm") == (3, 2.0, "state-3")  # an older release's, window and all
    for bad in (b"{", b"[]", b'{"version": 2, "looks": 1, "at": 0, "blob": "x"}', b'{"looks": 1}'):
        with pytest.raises(BadInputError):
            read_progress(bad, "cm")


def _state(partitions: int, seed: int = 7) -> TrafficState:
    """A state like a busy cluster's: large offsets and sizes, a rate on every partition, a topic id per
    topic of 50 partitions, two groups committing on one partition in four."""
    rng = random.Random(seed)
    out: dict[tuple[str, int], PartitionTraffic] = {}
    for i in range(partitions):
        topic, n = f"events-{i // 50:05d}.orders", i % 50
        start = rng.randrange(10**9)
        end = start + rng.randrange(10**8)
        look = PartitionLook(start, end, rng.randrange(10**12), f"{i // 50:022d}")
        groups = {"billing": end - 5, "audit-service": end - 900} if i % 4 == 0 else {}
        advanced = dict.fromkeys(groups, 1_700_000_000.25)
        out[(topic, n)] = PartitionTraffic(1_700_000_000.25, look, rng.uniform(0, 5e6), groups, advanced)
    return TrafficState(out, frozenset({"billing", "audit-service"}))


def test_the_stored_state_per_partition_is_measured_and_the_blob_chunking_covers_any_count() -> None:
    """What the module docstring and docs/architecture.md say: bytes of gzip per partition of the
    columnar state; a ConfigMap (CHUNK) holds ~25,000 partitions, more are chunked over several."""
    state = _state(20_000)
    data = json.dumps(state_to_json(state), separators=(",", ":")).encode()
    gz = len(gzip.compress(data, compresslevel=6, mtime=0))
    per_partition = gz / 20_000
    assert per_partition <= STATE_GZ_BYTES_PER_PARTITION
    assert CHUNK / STATE_GZ_BYTES_PER_PARTITION > 20_000
    assert state_from_json(json.loads(data)) == state
