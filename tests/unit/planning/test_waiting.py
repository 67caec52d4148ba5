"""Partitions that wait instead of failing a plan (planning/waiting.py): no in-sync replica left, or too
few brokers to hold them while a replica is on a dead broker. Every engine leaves them alone (in-process,
sharded, the exact program's selection) and the summary names them."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.builders import intents, snapshot

from kafka_placement.model.errors import InfeasibleError
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning import waiting
from kafka_placement.planning.goals.replica_placement import unmet
from kafka_placement.planning.optimizer import compute_plan
from kafka_placement.planning.sharding import sharded_optimize

RETIRE_3 = "kind: BrokerDecommission\nspec: {brokers: [3]}\n"
BALANCE = "kind: PlacementPolicy\nspec: {balance: {brokers: true, tolerance: 0.05}}\n"


def with_dead(
    doc: dict[str, Any], dead: int, no_leader: dict[str, list[int]] | None = None
) -> ClusterSnapshot:
    """The snapshot with broker ``dead`` crashed (no rack, no dirs), out of every ISR; the partitions of
    ``no_leader`` (name -> ISR) have no leader and that ISR."""
    doc["brokers"] = [b for b in doc["brokers"] if b["id"] != dead] + [
        {"id": dead, "rack": None, "alive": False, "logDirs": []}
    ]
    for p in doc["partitions"]:
        p["logDirs"] = [None if b == dead else d for b, d in zip(p["replicas"], p["logDirs"], strict=True)]
        p["isr"] = [b for b in p["replicas"] if b != dead]
        p["leader"] = p["isr"][0] if p["isr"] else None
        name = f"{p['topic']}-{p['partition']}"
        if no_leader and name in no_leader:
            p["leader"], p["isr"] = None, no_leader[name]
    return ClusterSnapshot.from_json(doc)


def three_brokers() -> ClusterSnapshot:
    """Brokers 1-3, broker 3 dead: RF-2 partitions (t2) and RF-3 ones (t3), each with a replica on 3."""
    parts = [("t2", n, [3, 1 + n % 2], [0, n % 2], 100) for n in range(4)]
    parts += [("t3", n, [1, 2, 3], [n % 2, 0, 0], 50) for n in range(3)]
    return with_dead(snapshot({1: "a", 2: "b", 3: "c"}, parts).to_json(), 3)


def test_rf3_on_three_brokers_one_dead_waits_for_capacity_and_the_rest_is_healed() -> None:
    """The heal of broker 3 moves the RF-2 partitions' replicas to the live brokers and leaves the RF-3
    ones as they are (two live brokers cannot hold three replicas): WaitingForCapacity in the summary,
    with how many, what RF and how many brokers they need; never Infeasible for the whole plan."""
    snap = three_brokers()
    result = compute_plan(snap, intents(RETIRE_3))
    moved = {t.name for t in result.plan.partitions}
    assert moved == {f"t2-{n}" for n in range(4)}
    assert all(3 not in t.replicas and len(t.replicas) == 2 for t in result.plan.partitions)
    waits = result.summary.to_json()["waiting"]
    assert set(waits) == {waiting.WAITING_FOR_CAPACITY}
    entry = waits[waiting.WAITING_FOR_CAPACITY]
    assert entry == {
        "partitions": 3,
        "brokers": [3],
        "first": ["t3-0", "t3-1", "t3-2"],
        "replicationFactor": 3,
        "brokersAvailable": 2,
        "brokersNeeded": 1,
    }
    assert unmet(snap, intents(RETIRE_3)) == [f"t2-{n}" for n in range(4)]  # the waiting ones are not unmet
    text = waiting.text(waits, [3])
    assert "3 partitions of replication factor up to 3" in text and "1 more needed" in text
    assert waiting.text(waits, [7]) == ""  # about broker 3 only


def test_the_sharded_planner_leaves_the_same_partitions_waiting() -> None:
    snap = three_brokers()
    local = compute_plan(snap, intents(RETIRE_3))
    sharded = compute_plan(snap, intents(RETIRE_3), optimizer=lambda s, i: sharded_optimize(s, i, 3))
    assert {t.name for t in sharded.plan.partitions} == {t.name for t in local.plan.partitions}
    assert sharded.summary.to_json()["waiting"] == local.summary.to_json()["waiting"]


def test_decommissioning_a_live_broker_that_too_few_brokers_can_replace_is_still_infeasible() -> None:
    """Only a dead broker's replicas wait: asking to retire a live broker on a 3-broker cluster with RF-3
    topics is a request that cannot be met, and the user is told so."""
    parts = [("t3", n, [1, 2, 3], [0, 0, 0], 50) for n in range(3)]
    snap = snapshot({1: "a", 2: "b", 3: "c"}, parts)
    with pytest.raises(InfeasibleError, match="replication factor 3 needs 3 brokers"):
        compute_plan(snap, intents(RETIRE_3))


def test_a_partition_with_no_in_sync_replica_is_never_moved_and_is_named() -> None:
    """t-0's leader, broker 3, died while broker 1 was out of sync: no leader, no live replica in the ISR.
    A reassignment could never finish (nothing to copy from): the heal moves every other replica of broker
    3 and names t-0 with its out-of-sync replica; a balance policy does not move it either."""
    parts = [("t", n, [3, 1 + n % 2], [0, 0], 100) for n in range(6)] + [("u", 0, [1, 2], [0, 0], 900)]
    snap = with_dead(snapshot({1: "a", 2: "b", 3: "c", 4: "d"}, parts).to_json(), 3, {"t-0": [3]})
    for wanted in (RETIRE_3, RETIRE_3 + "---\n" + BALANCE):
        result = compute_plan(snap, intents(wanted))
        assert "t-0" not in {t.name for t in result.plan.partitions}
        assert {f"t-{n}" for n in range(1, 6)} <= {t.name for t in result.plan.partitions}
        entry = result.summary.to_json()["waiting"][waiting.NO_IN_SYNC_REPLICA]
        assert entry == {
            "partitions": 1,
            "brokers": [3],
            "first": [{"partition": "t-0", "dead": [3], "outOfSync": [1]}],
        }
    text = waiting.text(result.summary.to_json()["waiting"], [3])
    assert "t-0 (out of sync: 1)" in text and "never elects an unclean one" in text
    # once a leader is elected (unclean, by the user), it is planned as usual
    doc = snap.to_json()
    doc["partitions"][0] |= {"leader": 1, "isr": [1]}
    after = compute_plan(ClusterSnapshot.from_json(doc), intents(RETIRE_3))
    assert "t-0" in {t.name for t in after.plan.partitions} and "waiting" not in after.summary.to_json()


def test_without_a_dead_broker_nothing_waits_even_with_no_leader_read() -> None:
    """A snapshot without leaders (a hand-written one) or without a dead broker has nothing waiting."""
    parts = [("t", n, [1, 2], [0, 0], 100) for n in range(4)]
    doc = snapshot({1: "a", 2: "b", 3: "c"}, parts).to_json()
    for p in doc["partitions"]:
        p["leader"], p["isr"] = None, []
    result = compute_plan(
        ClusterSnapshot.from_json(doc), intents("kind: BrokerDecommission\nspec: {brokers: [2]}\n")
    )
    assert len(result.plan.partitions) == 4 and "waiting" not in result.summary.to_json()


def test_the_summarys_waiting_is_what_the_crd_schema_of_status_plan_waiting_declares() -> None:
    """The API server prunes what the schema does not declare: every key ``Waiting.to_json`` writes (both
    reasons) must be in ``status.plan.waiting``'s schema, with the same item shapes."""
    from kafka_placement.model.crd_schema import crd_documents

    (doc,) = [d for d in crd_documents() if d["spec"]["names"]["kind"] == "BrokerDecommission"]
    root = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema = root["properties"]["status"]["properties"]["plan"]["properties"]["waiting"]
    parts = [("t", 0, [3, 1], [0, 0], 10), ("t3", 0, [1, 2, 3], [0, 0, 0], 10)]
    snap = with_dead(snapshot({1: "a", 2: "b", 3: "c"}, parts).to_json(), 3, {"t-0": [3]})
    waits = compute_plan(snap, intents(RETIRE_3)).summary.to_json()["waiting"]
    assert set(waits) == set(waiting.REASONS) == set(schema["properties"])

    def check(value: Any, s: dict[str, Any], at: str) -> None:
        kind = s["type"]
        if kind == "object":
            assert isinstance(value, dict) and set(value) <= set(s["properties"]), (at, value)
            for k, v in value.items():
                check(v, s["properties"][k], f"{at}.{k}")
        elif kind == "array":
            assert isinstance(value, list) and len(value) <= s.get("maxItems", 10**9), at
            for i, v in enumerate(value):
                check(v, s["items"], f"{at}[{i}]")
        else:
            assert isinstance(value, {"integer": int, "string": str}[kind]), (at, value)

    check(waits, schema, "waiting")
