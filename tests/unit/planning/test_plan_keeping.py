"""The rule that keeps a plan (and its id) while the rates drift (planning/plan_keeping.py): a plan made
from one sampler look is kept across the next looks whose rates drift within the bound, and planned again
once a broker's network load moves beyond it, the placement or the intents change, or rates appear where
the plan had none; sizes alone never plan again."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from tests.unit.builders import intents, snapshot

from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.model.traffic_looks import PartitionLook, TrafficLook
from kafka_placement.planning.optimizer import compute_plan
from kafka_placement.planning.plan_keeping import (
    DEFAULT_TOLERANCE,
    DRIFT_SHARE,
    KeptPlan,
    TrafficLoads,
    drifted,
    inputs_key,
    loads_of,
    tolerance_of,
)
from kafka_placement.planning.traffic_rates import TrafficState, estimates, fold, with_traffic

POLICY = "kind: PlacementPolicy\nmetadata: {name: net}\nspec: {balance: {networkIn: true, tolerance: 0.2}}\n"
WINDOW = 60.0
PARTS = 12


def cluster() -> ClusterSnapshot:
    """Six brokers; twelve RF-2 partitions spread evenly by count, the six hot ones all on broker 1."""
    layout = [("t", i, [1 if i < 6 else 2 + i % 5, 2 + (i + 1) % 5], [0, 1], 1000) for i in range(PARTS)]
    return snapshot(dict.fromkeys(range(1, 7)), layout)


def look(at: float, ends: dict[int, int]) -> TrafficLook:
    """A look at the partitions: end offset ``ends[i]``, one byte per offset."""
    return TrafficLook(at, {("t", i): PartitionLook(0, e, e) for i, e in ends.items()})


def sampled(rates: list[dict[int, float]]) -> list[ClusterSnapshot]:
    """The cluster with the estimates after each look (every 10 s, partition i at ``rates[k][i]`` B/s
    between look k and k+1): what the reconcile plans from after each of the sampler's looks."""
    snap, state, ends = cluster(), TrafficState(), dict.fromkeys(range(PARTS), 0)
    state = fold(state, look(0.0, ends), WINDOW)
    out = []
    for k, step in enumerate(rates):
        ends = {i: ends[i] + int(step[i] * 10) for i in range(PARTS)}
        state = fold(state, look(10.0 * (k + 1), ends), WINDOW)
        out.append(with_traffic(snap, estimates(state, WINDOW)))
    return out


def skewed(scale_hot: float = 1.0, scale_cold: float = 1.0) -> dict[int, float]:
    return {i: (30_000.0 * scale_hot if i < 6 else 5_000.0 * scale_cold) for i in range(PARTS)}


def kept_plan(snap: ClusterSnapshot, text: str = POLICY) -> KeptPlan:
    result = compute_plan(snap, intents(text))
    assert not result.plan.empty
    key = inputs_key(snap, text)
    return KeptPlan(
        result.plan, result.summary, key, loads_of(snap, result.plan), tolerance_of(intents(text))
    )


def jittered(seed: int, amplitude: float = 0.05) -> dict[int, float]:
    """``skewed()`` with each partition's rate moved by up to +-``amplitude``, at random."""
    rng = random.Random(seed)
    return {i: r * (1 + amplitude * (2 * rng.random() - 1)) for i, r in skewed().items()}


def test_a_plan_is_kept_across_two_looks_whose_rates_drift_within_the_bound() -> None:
    first, second, third = sampled([skewed(), jittered(1), jittered(2)])
    kept = kept_plan(first)
    for later in (second, third):
        assert kept.keep(inputs_key(later, POLICY), loads_of(later, kept.plan)) is None
    # planning again after each look would have asked for approval three times: three different plans
    ids = [compute_plan(s, intents(POLICY)).plan.plan_id for s in (first, second, third)]
    assert len(set(ids)) == 3 and ids[0] == kept.plan.plan_id, ids


def test_rates_drifting_beyond_the_bound_plan_again_naming_the_broker() -> None:
    first, moved = sampled([skewed(), skewed(1.0, 4.0)])
    kept = kept_plan(first)
    why = kept.keep(inputs_key(moved, POLICY), loads_of(moved, kept.plan))
    assert why is not None and "network" in why and "broker" in why, why


def test_the_bound_is_a_share_of_the_tolerance_times_the_mean() -> None:
    snap = sampled([skewed()])[0]
    planned = loads_of(snap)
    mean = planned.mean("in")
    assert mean > 0
    bound = DRIFT_SHARE * 0.2 * mean

    def nudged(by: float) -> TrafficLoads:
        before = {m: dict(v) for m, v in planned.before.items()}
        before["in"][3] += by
        return TrafficLoads(before, before, planned.brokers)

    assert drifted(planned, nudged(0.99 * bound), 0.2) is None
    assert drifted(planned, nudged(1.01 * bound), 0.2) is not None
    assert drifted(planned, nudged(1.01 * bound), 0.4) is None  # a looser tolerance, a looser bound


def test_a_changed_placement_or_intent_is_never_kept_but_approval_fields_do_not_count() -> None:
    snap = sampled([skewed()])[0]
    kept = kept_plan(snap)
    moved = snap.partitions[0]
    other = ClusterSnapshot(
        snap.brokers, (replace(moved, replicas=(3, 4), leader=3), *snap.partitions[1:]), snap.cluster_id
    )
    assert kept.keep(inputs_key(other, POLICY), loads_of(other, kept.plan)) is not None
    looser = POLICY.replace("0.2", "0.3")
    assert kept.keep(inputs_key(snap, looser), loads_of(snap, kept.plan)) is not None
    assert inputs_key(snap, POLICY, "engine: local") != inputs_key(snap, POLICY, "engine: spark")


def test_rates_appearing_where_the_plan_had_none_are_drift() -> None:
    bare = cluster()
    text = "kind: PlacementPolicy\nspec: {balance: {brokers: true, tolerance: 0.2}}\n"
    result = compute_plan(bare, intents(text))
    kept = KeptPlan(result.plan, result.summary, inputs_key(bare, text), loads_of(bare, result.plan), 0.2)
    rated = sampled([skewed()])[0]
    assert kept.keep(inputs_key(rated, text), loads_of(rated, kept.plan)) is not None
    # no estimate in memory yet (sampling on, right after a restart): no evidence of drift, the key decides
    assert kept.keep(inputs_key(bare, text), loads_of(bare, kept.plan), rates_known=False) is None


def test_sizes_alone_never_plan_again() -> None:
    snap = sampled([skewed()])[0]
    kept = kept_plan(snap)
    grown = ClusterSnapshot(
        snap.brokers,
        tuple(replace(p, size_bytes=p.size_bytes * 50) for p in snap.partitions),
        snap.cluster_id,
    )
    assert kept.keep(inputs_key(grown, POLICY), loads_of(grown, kept.plan)) is None


def test_tolerance_is_the_smallest_enforced_policys_and_loads_round_trip() -> None:
    two = POLICY + "---\nkind: PlacementPolicy\nspec: {balance: {leaders: true, tolerance: 0.1}}\n"
    assert tolerance_of(intents(two)) == pytest.approx(0.1)
    advise = (
        POLICY
        + "---\nkind: PlacementPolicy\nspec: {mode: Advise, balance: {leaders: true, tolerance: 0.01}}\n"
    )
    assert tolerance_of(intents(advise)) == pytest.approx(0.2)
    assert tolerance_of(intents("kind: BrokerDecommission\nspec: {brokers: [1]}\n")) == DEFAULT_TOLERANCE
    snap = sampled([skewed()])[0]
    loads = loads_of(snap, kept_plan(snap).plan)
    back = TrafficLoads.from_json(loads.to_json())
    assert back.brokers == loads.brokers
    assert drifted(loads, back, 0.01) is None
    assert back.before["in"][1] == pytest.approx(loads.before["in"][1], abs=0.1)
