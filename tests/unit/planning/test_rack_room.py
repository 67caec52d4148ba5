"""``planning/rack_room.py``: the least each rack unit holds of a partition under the rule, proven against the
rule itself on every spread of small trees, and the refusal it gives at once where a unit's volumes cannot
hold what every plan must put there (and not where they just can)."""

from __future__ import annotations

import contextlib
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.planning.test_headroom import sized_draw

from kafka_placement.model.errors import DiskHeadroomError, InfeasibleError
from kafka_placement.model.intents import Intents, RackAwareness
from kafka_placement.model.snapshot import Broker, ClusterSnapshot, LogDir, PartitionState
from kafka_placement.planning import rack_room
from kafka_placement.planning.context import PlanningContext
from kafka_placement.planning.optimizer import compute_plan
from kafka_placement.planning.topology import RackTree

GB = 10**9
POLICY = (
    "kind: PlacementPolicy\nspec:\n  topics: {include: ['*']}\n  rackAwareness: {separator: /, levels: 2}\n"
)
RACKS = st.sampled_from(["/a/x", "/a/y", "/b/x", "/b/y", "/c/x", "/a", None])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(RACKS, min_size=2, max_size=8),
    st.integers(1, 4),
    st.integers(1, 2),
    st.data(),
)
def test_every_spread_the_rule_accepts_holds_at_least_the_least_counts(
    racks: list[str | None], rf: int, levels: int, data: st.DataObject
) -> None:
    """Every set of ``rf`` brokers that ``RackTree.violation`` accepts (receivers or not: a replica may stay
    on a broker that may not receive) holds in each unit at least what ``least_counts`` says: the bound
    the refusal rests on is never above what a valid placement holds."""
    brokers = list(range(1, len(racks) + 1))
    receivers = data.draw(st.sets(st.sampled_from(brokers)))
    tree = RackTree.of(dict(zip(brokers, racks, strict=True)), RackAwareness("/", levels), receivers)
    least = rack_room.least_counts(tree, rf)
    assert least[()] == rf
    for chosen in itertools.combinations(brokers, min(rf, len(brokers))):
        if tree.violation(chosen) is not None:
            continue
        held = tree.counts(chosen)
        for unit, n in least.items():
            assert held.get(unit, 0) >= n or len(chosen) < rf, (chosen, unit, n, held)


def test_the_least_counts_of_three_data_centres_of_two_racks() -> None:
    racks = {b: f"/dc{(b - 1) % 3 + 1}/r{(b - 1) // 3 + 1}" for b in range(1, 7)}
    tree = RackTree.of(racks, RackAwareness("/", 2), racks)
    assert rack_room.least_counts(tree, 3) == {(): 3, ("dc1",): 1, ("dc2",): 1, ("dc3",): 1}
    six = rack_room.least_counts(tree, 6)
    assert six[("dc2",)] == 2 and six[("dc2", "r1")] == 1
    small = RackTree.of(racks, RackAwareness("/", 2), [1, 2, 3, 4, 5])  # dc3 has one receiver, 6 no more
    assert rack_room.least_counts(small, 6)[("dc3",)] == 1
    rackless = RackTree.of({**racks, 7: None}, RackAwareness("/", 2), racks)  # a unit of its own: a fourth
    assert rack_room.least_counts(rackless, 3) == {(): 3}  # data centre, and three replicas bound none


def six_brokers(dc3_volume: int) -> tuple[ClusterSnapshot, Intents]:
    """Twelve partitions of 10 GB, every one with two replicas in dc1 and one in dc2 (a 2-level rack rule
    asks one per data centre): each must put a replica in dc3, whose two brokers have one ``dc3_volume``
    each, empty; the others 1 TB."""
    racks = {1: "/dc1/r1", 2: "/dc1/r2", 3: "/dc2/r1", 4: "/dc2/r2", 5: "/dc3/r1", 6: "/dc3/r2"}
    brokers = tuple(
        Broker(
            b, rack, (LogDir("/d0", dc3_volume if b > 4 else 1000 * GB, dc3_volume if b > 4 else 900 * GB),)
        )
        for b, rack in racks.items()
    )
    parts = tuple(
        PartitionState(f"t{i % 3}", i, (1, 2, 3), ("/d0", "/d0", "/d0"), 1, (1, 2, 3), 10 * GB)
        for i in range(12)
    )
    return ClusterSnapshot(brokers, parts), Intents.loads(POLICY).with_max_disk_share(0.85)


def test_a_unit_short_of_room_is_refused_at_once_naming_it() -> None:
    """dc3 must take 120 GB; its two volumes of 70 GB may hold 2 x 59.5 GB within 85%: refused before any
    search, naming the unit, its brokers and both figures."""
    snap, intents = six_brokers(70 * GB)
    ctx = PlanningContext.of(snap, intents)
    short = rack_room.shortfall(ctx)
    assert short is not None and (short.unit, short.brokers) == ("dc3", (5, 6))
    assert (short.needed, short.most, short.partitions) == (120 * GB, 119 * GB, 12)
    with pytest.raises(DiskHeadroomError) as err:
        compute_plan(snap, intents)
    message = err.value.message
    assert "the brokers of dc3 (5, 6) must hold at least 120000000000 bytes" in message
    assert "may hold at most 119000000000 bytes" in message and "maxDiskShare 0.85" in message


def test_a_unit_with_just_enough_room_is_planned() -> None:
    """71 GB volumes: 2 x 60.35 GB within 85% for 120 GB. The unit is not short, and the plan puts six
    partitions' replicas on each dc3 broker, every dir within the limit."""
    snap, intents = six_brokers(71 * GB)
    assert rack_room.shortfall(PlanningContext.of(snap, intents)) is None
    s = compute_plan(snap, intents).summary.to_json()
    assert s["hardViolationsAfter"] == 0 and s["violationsAfter"]["capacity"] == 0


def test_no_unit_is_checked_where_a_dir_is_of_unknown_size() -> None:
    snap, intents = six_brokers(70 * GB)
    unknown = tuple(
        Broker(b.id, b.rack, (LogDir("/d0", 0, 0),)) if b.id == 6 else b for b in snap.brokers
    )  # broker 6's volume size unknown: no limit there, dc3 may hold anything
    ctx = PlanningContext.of(ClusterSnapshot(unknown, snap.partitions), intents)
    assert rack_room.shortfall(ctx) is None


def test_a_cluster_short_of_room_for_every_replica_is_refused_naming_both_figures() -> None:
    """Broker 4 leaves; 14 partitions of RF 2 need 280 GB on brokers 1-3, whose volumes may hold 3 x 85 GB
    within the limit: the cluster falls short, no rack rule involved."""
    brokers = tuple(Broker(b, None, (LogDir("/d0", (200 if b == 4 else 100) * GB, 0),)) for b in (1, 2, 3, 4))
    parts = tuple(
        PartitionState("t", i, (4, 1 + i % 3), ("/d0", "/d0"), 4, (4, 1 + i % 3), 10 * GB) for i in range(14)
    )
    held = {b: sum(10 * GB for p in parts if b in p.replicas) for b in (1, 2, 3, 4)}
    brokers = tuple(
        Broker(b.id, None, (LogDir("/d0", d.total_bytes, d.total_bytes - held[b.id]),))
        for b in brokers
        for d in b.log_dirs
    )
    snap, intents = (
        ClusterSnapshot(brokers, parts),
        Intents.loads("kind: BrokerDecommission\nspec: {brokers: [4]}\n"),
    )
    short = rack_room.shortfall(PlanningContext.of(snap, intents))
    assert short is not None and (short.unit, short.needed, short.most) == ("", 280 * GB, 255 * GB)
    with pytest.raises(DiskHeadroomError) as err:
        compute_plan(snap, intents)
    assert err.value.message.endswith(
        "the cluster's 4 brokers must hold 280000000000 bytes of replicas (every replica of 14 partitions), "
        "and their volumes may hold at most 255000000000 bytes within the limit"
    ), err.value.message


def test_a_refusal_names_a_dozen_brokers_at_most() -> None:
    short = rack_room.Shortfall("dc1", tuple(range(1, 31)), 2, 1, 3, ("t", 0))
    assert "(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 and 18 more)" in short.detail


def test_a_unit_of_the_same_brokers_as_its_parent_counts_each_partition_once() -> None:
    """One data centre of one rack: the cluster, dc1 and dc1/r1 hold the same brokers, and each must hold
    every replica; three needs of 90% of what the volumes may hold each, not one of 270%."""
    brokers = tuple(Broker(b, "/dc1/r1", (LogDir("/d0", 100 * GB, 100 * GB - 40 * GB),)) for b in (1, 2, 3))
    parts = tuple(
        PartitionState("t", i, (1 + i % 3, 1 + (i + 1) % 3), ("/d0", "/d0"), None, (), 10 * GB)
        for i in range(6)
    )
    ctx = PlanningContext.of(ClusterSnapshot(brokers, parts), Intents.loads(POLICY).with_max_disk_share(0.5))
    assert rack_room.most_per_broker(ctx, {}) == {1: 50 * GB, 2: 50 * GB, 3: 50 * GB}  # 40 held + 10 room
    assert rack_room.shortfall(ctx) is None  # 120 GB of replicas, 150 GB may be held


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(("decommission", "drain", "rack-repair", "all")),
    st.integers(1, 10_000),
    st.integers(6, 9),
    st.integers(24, 48),
    st.floats(0.5, 1.0),
    st.sampled_from((0.6, 0.85, 0.95)),
)
def test_what_the_check_refuses_the_planner_without_it_refuses_too(
    name: str, seed: int, brokers: int, partitions: int, factor: float, share: float
) -> None:
    """Small generator clusters on volumes the limit binds: wherever the check finds a unit short of room,
    the planner's searches without it find no plan either (a plan there would be a false refusal)."""
    snap, intents = sized_draw(name, seed, factor, share, brokers=brokers, partitions=partitions)
    real, fired = rack_room.shortfall, []

    def recorded(ctx: PlanningContext) -> rack_room.Shortfall | None:
        fired.append(real(ctx))
        return fired[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rack_room, "shortfall", recorded)
        with contextlib.suppress(InfeasibleError):
            compute_plan(snap, intents)
        if not any(fired):
            return
        patch.setattr(rack_room, "shortfall", lambda _: None)
        with pytest.raises(InfeasibleError):  # (the disk headroom's, or another rule's met first)
            compute_plan(snap, intents)
