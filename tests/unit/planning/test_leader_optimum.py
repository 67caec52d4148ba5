"""The leader goal against the exact optimum of what reorders alone can reach.

The goal plans on the broker graph (one edge per leader and follower, its capacity the partitions it
could carry) in up to three rounds. The oracle here is exact: a max flow on the partition graph (source
-> broker by its excess, broker -> each partition it leads, partition -> each other replica that may lead
it, broker -> sink by its room; every partition carries at most one hand-over), so its lowest feasible
ceiling is the lowest maximum any set of reorders reaches. On random clusters where followers fall out of
sync and some brokers hold few replicas (the limit is often out of reach), the goal must end at the
limit or at that exact ceiling. It is not exact in general: one of 1,200 such random clusters (seeds
300-1499, not tested here) ended one leadership above it.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_flow
from tests.unit.builders import intents, snapshot

from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.context import PlanningContext
from kafka_placement.planning.goals.leader_balance import LeaderBalanceGoal, _Handovers

LEADERS = "kind: PlacementPolicy\nspec: {balance: {leaders: true}}\n"


def _cluster(seed: int) -> PlanningContext:
    rng = random.Random(seed)
    count = rng.randrange(4, 14)
    brokers: dict[int, str | None] = {b: f"/r{b % 3}" for b in range(1, count + 1)}
    weights = [rng.choice([1, 1, 1, 0.2, 5]) for _ in brokers]  # some brokers hold few replicas
    parts = []
    for i in range(rng.randrange(50, 400)):
        rf = min(count, rng.choice([2, 3, 3, 4]))
        reps: list[int] = []
        while len(reps) < rf:
            b = rng.choices(sorted(brokers), weights)[0]
            if b not in reps:
                reps.append(b)
        parts.append((f"t{i % 5}", i, reps, [rng.randrange(2) for _ in reps], rng.randrange(1, 100)))
    snap = snapshot(brokers, parts)
    lagging = tuple(  # a follower out of sync may not become leader
        replace(p, isr=tuple(b for b in p.replicas if b == p.replicas[0] or rng.random() > 0.2))
        for p in snap.partitions
    )
    return PlanningContext.of(ClusterSnapshot(snap.brokers, lagging, snap.cluster_id), intents(LEADERS))


def _exact_lowest_ceiling(ctx: PlanningContext) -> int:
    a, active = ctx.assignment, ctx.eligibility.active_brokers
    may = _Handovers.of(ctx, active).may_lead()
    node = {b: i for i, b in enumerate(active)}
    keys = [k for k in may if a.replicas[k][0] in node]
    n, m = len(active), len(keys)
    rows: list[int] = []
    cols: list[int] = []
    for j, key in enumerate(keys):
        leader = a.replicas[key][0]
        rows.append(node[leader])
        cols.append(n + j)
        for f in may[key]:
            if f != leader:
                rows.append(n + j)
                cols.append(node[f])
    source, sink = n + m, n + m + 1
    load = np.array([a.broker_leaders[b] for b in active], np.int64)
    r = np.array(rows + [source] * n + list(range(n)), np.int32)
    c = np.array(cols + list(range(n)) + [sink] * n, np.int32)

    def reachable(ceiling: int) -> bool:
        excess, room = np.maximum(load - ceiling, 0), np.maximum(ceiling - load, 0)
        caps = np.concatenate([np.ones(len(rows), np.int64), excess, room]).astype(np.int32)
        graph = csr_array((caps, (r, c)), shape=(n + m + 2, n + m + 2))
        return bool(maximum_flow(graph, source, sink).flow_value == int(excess.sum()))

    ceiling = int(load.max())
    while ceiling > 0 and reachable(ceiling - 1):
        ceiling -= 1
    return ceiling


def test_the_leader_goal_ends_at_the_limit_or_the_lowest_ceiling_reorders_can_reach() -> None:
    out_of_reach = 0
    for seed in range(100):
        ctx = _cluster(seed)
        a, active = ctx.assignment, ctx.eligibility.active_brokers
        exact = _exact_lowest_ceiling(ctx)
        mean = sum(a.broker_leaders[b] for b in active) / len(active)
        limit = max(math.ceil(mean), math.floor(1.05 * mean))  # the policy's default tolerance
        bytes_before = dict(a.broker_bytes)
        LeaderBalanceGoal().optimize(ctx)
        got = max(a.broker_leaders[b] for b in active)
        assert got <= max(limit, exact), f"seed {seed}: the goal ends at {got}, reorders reach {exact}"
        assert got >= exact  # the oracle is a bound: no reorders go below it
        assert a.broker_bytes == bytes_before  # reorders only
        out_of_reach += exact > limit
    assert out_of_reach >= 50  # most of these clusters cannot reach the limit: the ceiling is what counts
