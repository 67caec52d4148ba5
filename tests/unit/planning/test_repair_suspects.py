"""``repairs.suspects``, the hard goal's first pass: every partition the full rules would repair is kept.

The hard goal asks ``needs_repair`` only of the partitions ``suspects`` keeps, so a partition it left out
would stay broken; over the property test's random clusters and intents (decommissions, cordons with and
without drain, rack spread at one and two levels, replication factors), also in reactive-cordon mode, the
suspects hold every partition ``needs_repair`` selects, and a plan of a cluster with nothing to repair
asks none. The summary's tally skips the bound's and the violations' sums for the others: its metrics
are those of a tally that screens nothing out."""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.unit.planning.test_planner_properties import cases

from kafka_placement.model.errors import InfeasibleError
from kafka_placement.model.intents import Intents
from kafka_placement.model.plan import Plan
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.context import PlanningContext
from kafka_placement.planning.goals.replica_placement import ReplicaPlacementGoal, needs_repair
from kafka_placement.planning.optimizer import optimize
from kafka_placement.planning.plan_quality import Scope, tally
from kafka_placement.planning.repairs import Screen


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.booleans(), st.integers(0, 1000))
def test_the_suspects_hold_every_partition_the_rules_repair(
    case: tuple[ClusterSnapshot, Intents], reactive: bool, max_bytes: int
) -> None:
    snap, intents = case
    if reactive:
        intents = intents.with_reactive_cordon(True, max_bytes)
    ctx = PlanningContext.of(snap, intents)
    repaired = {p.key for p in snap.partitions if needs_repair(ctx, p.key)}
    found = ReplicaPlacementGoal._suspects(ctx)
    assert repaired <= found, sorted(repaired - found)


def test_a_spread_cluster_with_nothing_to_repair_has_no_suspect() -> None:
    racks = ["/dc1/r1", "/dc2/r1", "/dc3/r1"]
    snap = ClusterSnapshot.from_json(
        {
            "version": 1,
            "brokers": [{"id": b, "rack": racks[b % 3], "logDirs": [{"path": "/d0"}]} for b in range(6)],
            "partitions": [
                {
                    "topic": "t",
                    "partition": i,
                    "replicas": [i % 3, 3 + (i + 1) % 3, (i + 2) % 3],
                    "logDirs": ["/d0"] * 3,
                    "sizeBytes": 10,
                }
                for i in range(12)
            ],
        }
    )
    spread = Intents.from_documents(
        [
            {
                "kind": "PlacementPolicy",
                "spec": {
                    "topics": {"include": ["*"]},
                    "replicationFactor": 3,
                    "rackAwareness": {"separator": "/", "levels": 1},
                },
            }
        ]
    )
    ctx = PlanningContext.of(snap, spread)
    assert not any(needs_repair(ctx, p.key) for p in snap.partitions)
    assert ReplicaPlacementGoal._suspects(ctx) == set()
    # one replica moved into another's rack: that partition, and only it, is a suspect
    broken = snap.to_json()
    broken["partitions"][0]["replicas"] = [0, 3, 1]  # brokers 0 and 3 share /dc1/r1
    broken["partitions"][0]["isr"] = [0, 3, 1]
    ctx = PlanningContext.of(ClusterSnapshot.from_json(broken), spread)
    assert ReplicaPlacementGoal._suspects(ctx) == {("t", 0)}
    assert needs_repair(ctx, ("t", 0))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.booleans())
def test_the_tally_of_a_screened_scope_is_the_tally_of_every_partition(
    case: tuple[ClusterSnapshot, Intents], planned: bool
) -> None:
    snap, intents = case
    plan = Plan.of([])
    if planned:
        with contextlib.suppress(InfeasibleError):
            plan = optimize(snap, intents)
    scope = Scope.of(snap, intents)
    everything = Scope(scope.intents, scope.elig, scope.trees, Screen(frozenset(snap.broker_ids)))
    screened = tally(snap, plan, scope).evaluation(scope, plan.plan_id)
    full = tally(snap, plan, everything).evaluation(everything, plan.plan_id)
    assert screened == full
