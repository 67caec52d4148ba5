"""A broker whose every log dir is cordoned, in Kafka's own terms: Kafka (4.4, and 4.3 after 4.3.1:
KAFKA-20832) refuses any reassignment whose target names it, a move or a reorder, even one that keeps its
replica. The planner assumes it wherever cordons are native (``Eligibility.pins``): a partition that must
change moves that replica off too, and no optional goal changes such a partition. Below Kafka 4.3
(reactive cordons) Kafka knows no cordon, and the replica stays."""

from __future__ import annotations

import pytest
from tests.unit.builders import intents, snapshot

from kafka_placement.model.errors import InfeasibleError
from kafka_placement.model.intents import Intents
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.optimizer import compute_plan
from kafka_placement.planning.plan_quality import apply_plan
from kafka_placement.planning.sharding import sharded_optimize
from kafka_placement.planning.state import Eligibility

CORDON_3 = "kind: LogDirCordon\nspec: {broker: 3, logDirs: ['*'], drain: false}\n"
DECOMMISSION_2 = "---\nkind: BrokerDecommission\nspec: {brokers: [2]}\n"
BALANCE = (
    "---\nkind: PlacementPolicy\nspec: {topics: {include: ['*']}, "
    "balance: {brokers: true, leaders: true, tolerance: 0.0}}\n"
)


def _cluster() -> ClusterSnapshot:
    """Six brokers; broker 3 holds replicas of many partitions (several led by it), 2 some of them."""
    parts = [
        ("t", 0, [2, 3], [0, 1], 100),
        ("t", 1, [3, 2], [0, 0], 90),
        ("t", 2, [3, 1], [1, 0], 80),
        ("t", 3, [1, 3], [0, 0], 70),
        ("t", 4, [3, 4], [0, 1], 60),
        ("t", 5, [3, 5], [1, 1], 50),
        ("u", 0, [3, 1, 2], [0, 0, 0], 40),
        ("u", 1, [4, 5, 6], [0, 0, 0], 30),
    ]
    return snapshot({b: None for b in range(1, 7)}, parts)


Targets = dict[tuple[str, int], tuple[int, ...]]


def _refused(
    snap: ClusterSnapshot, wanted: Intents, targets: Targets
) -> list[tuple[tuple[str, int], tuple[int, ...]]]:
    """The targets Kafka would refuse (a changed partition naming a wholly cordoned broker)."""
    e = Eligibility.of(snap, wanted)
    out = []
    for key, replicas in targets.items():
        before = snap.partition(*key)
        assert before is not None
        if e.pins(before.replicas, replicas):
            out.append((key, replicas))
    return out


@pytest.mark.parametrize("engine", ["local", "sharded"])
def test_a_decommission_moves_a_replica_off_a_wholly_cordoned_broker_it_would_have_kept(engine: str) -> None:
    snap, wanted = _cluster(), intents(CORDON_3 + DECOMMISSION_2 + BALANCE)
    assert Eligibility.of(snap, wanted).pinned == {3}
    optimizer = (lambda s, i: sharded_optimize(s, i, 3)) if engine == "sharded" else None
    result = compute_plan(snap, wanted, optimizer=optimizer)
    targets = {t.key: t.replicas for t in result.plan.partitions}
    # every partition with broker 2 changes, and none of them keeps broker 3 (Kafka would refuse it)
    for key in [("t", 0), ("t", 1), ("u", 0)]:
        assert 2 not in targets[key] and 3 not in targets[key], (key, targets[key])
    # the others on broker 3 are left as they are: balance may neither move nor reorder them
    for key in [("t", 2), ("t", 3), ("t", 4), ("t", 5)]:
        assert key not in targets, (key, targets.get(key))
    assert _refused(snap, wanted, targets) == []
    assert result.summary.hard_violations_after == 0
    after = apply_plan(snap, result.plan)
    assert all(2 not in p.replicas for p in after.partitions)


def test_below_kafka_4_3_the_cordon_is_reactive_and_the_replica_stays() -> None:
    """Kafka knows no cordon there: the decommission moves broker 2's replicas alone."""
    snap = _cluster()
    wanted = intents(CORDON_3 + DECOMMISSION_2).with_reactive_cordon(True)
    assert Eligibility.of(snap, wanted).pinned == frozenset()
    targets = {t.key: t.replicas for t in compute_plan(snap, wanted).plan.partitions}
    assert 3 in targets[("t", 0)] and 3 in targets[("t", 1)] and 3 in targets[("u", 0)]
    assert result_bytes(snap, wanted) == 100 + 90 + 40  # broker 2's replicas, nothing more


def result_bytes(snap: ClusterSnapshot, wanted: Intents) -> int:
    return compute_plan(snap, wanted).summary.bytes_to_move


def test_one_cordoned_dir_of_two_pins_nothing() -> None:
    """Kafka refuses only a broker with no uncordoned dir; one cordoned dir leaves the broker usable."""
    snap = _cluster()
    wanted = intents(
        "kind: LogDirCordon\nspec: {broker: 3, logDirs: [/data/d0], drain: false}\n" + DECOMMISSION_2
    )
    assert Eligibility.of(snap, wanted).pinned == frozenset()
    targets = {t.key: t.replicas for t in compute_plan(snap, wanted).plan.partitions}
    assert 3 in targets[("t", 0)]  # kept: only broker 2's replica moves


def test_a_cordon_kafka_reports_pins_the_broker_too() -> None:
    """A dir cordoned in Kafka already (``cordoned.log.dirs`` read into the snapshot) counts as the
    intents' cordons do."""
    doc = _cluster().to_json()
    for d in doc["brokers"][2]["logDirs"]:
        d["cordoned"] = True
    snap = ClusterSnapshot.from_json(doc)
    wanted = intents(DECOMMISSION_2.removeprefix("---\n"))
    assert Eligibility.of(snap, wanted).pinned == {3}
    targets = {t.key: t.replicas for t in compute_plan(snap, wanted).plan.partitions}
    assert _refused(snap, wanted, targets) == [] and 3 not in targets[("t", 0)]


def test_leader_balance_does_not_reorder_a_partition_on_a_wholly_cordoned_broker() -> None:
    """Broker 3 leads four of six partitions; a leader balance would hand some over, but a reorder that
    names broker 3 is refused by Kafka like a move: those partitions keep their order."""
    parts = [("t", i, [3, 1 + i % 2], [0, 0], 10) for i in range(4)] + [
        ("t", 4, [1, 2], [0, 0], 10),
        ("t", 5, [2, 1], [0, 0], 10),
    ]
    snap = snapshot({1: None, 2: None, 3: None}, parts)
    leaders = "kind: PlacementPolicy\nspec: {topics: {include: ['*']}, balance: {leaders: true}}\n"
    free = compute_plan(snap, intents(leaders))
    assert any(t.replicas[0] != 3 for t in free.plan.partitions if t.key[1] < 4)  # it would reorder
    pinned = compute_plan(snap, intents(CORDON_3 + "---\n" + leaders))
    assert [t.key for t in pinned.plan.partitions if 3 in (snap.partition(*t.key) or t).replicas] == []


def test_exact_program_keeps_the_rule_on_a_small_cluster() -> None:
    """The exact program (small clusters: the fewest bytes) places a changed partition off such a broker:
    keeping broker 3's replica would copy less, and Kafka would refuse it."""
    parts = [("t", i, [3, 1 + i % 2], [0, 0], 50 + i) for i in range(6)] + [
        ("t", 6 + i, [2, 4], [0, 0], 30 + i) for i in range(4)
    ]
    snap = snapshot({b: None for b in range(1, 6)}, parts)
    wanted = intents(CORDON_3 + DECOMMISSION_2)
    result = compute_plan(snap, wanted)
    targets = {t.key: t.replicas for t in result.plan.partitions}
    assert _refused(snap, wanted, targets) == []
    assert all(2 not in r for r in targets.values()) and result.summary.hard_violations_after == 0


def test_no_broker_left_to_take_the_replica_says_why() -> None:
    """Three brokers, RF 2: decommissioning 2 leaves broker 1 and broker 3, which cannot stay in a
    changed partition; the refusal names both reasons."""
    snap = snapshot({1: None, 2: None, 3: None}, [("t", 0, [2, 3], [0, 0], 10)])
    with pytest.raises(InfeasibleError) as e:
        compute_plan(snap, intents(CORDON_3 + DECOMMISSION_2))
    assert e.value.exit_code == 3 and "broker(s) [3]" in e.value.message
    assert "refuses a reassignment naming a broker whose every log dir is cordoned" in e.value.message
