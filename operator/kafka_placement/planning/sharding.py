"""Sharded planning: the planner's own goals, split so the expensive hard phase runs in parallel.

This is the pure core of the Spark engine (and runs without Spark too, which the parity tests use):

1. partitions are hashed into shards (``shard_of``); every shard gets the same ``ShardView``: every
   broker, with each dir's free bytes divided among the shards (per-shard capacity budgets, so shards
   running in parallel can never overfill a dir together), and the whole cluster's loads divided by
   the number of shards;
2. each shard runs the hard ``ReplicaPlacementGoal`` on its partitions (``plan_shard``), starting
   from those scaled cluster loads rather than its own partitions' loads: a shard holds a random
   1/n of the replicas, whose per-broker sums are noisy (a few dozen replicas per broker at 1000
   brokers), while the cluster's scaled loads are what every shard's additions will land on;
3. ``merge_and_balance`` applies every shard's result to one global assignment, re-runs the hard goal
   as a reconciliation pass (a no-op unless a shard's view missed something), then runs the balance
   goals globally, so balance is judged on whole-cluster loads exactly as the local engine does.

Hard constraints are per partition, so the sharded result meets every one of them; the global balance
pass evens out what the shards' parallel choices of destination brokers left uneven.
Pure: no I/O.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..model.errors import InfeasibleError
from ..model.intents import Intents
from ..model.plan import Plan
from ..model.snapshot import ClusterSnapshot, PartitionState
from .context import PlanningContext
from .goals import BrokerBalanceGoal, DirBalanceGoal, LeaderBalanceGoal, ReplicaPlacementGoal
from .optimizer import diff, run_goals
from .state import Assignment, DirKey

Row = tuple[str, int, tuple[int, ...], tuple[str | None, ...]]  # topic, partition, replicas, dirs
ShardResult = tuple[list[Row], str | None]  # changed partitions, or the infeasibility that stopped it


def shard_of(topic: str, partition: int, shards: int) -> int:
    """A stable shard number (the same in every process, unlike ``hash``)."""
    return zlib.crc32(f"{topic}\0{partition}".encode()) % shards


@dataclass(frozen=True, slots=True)
class ShardView:
    """What every shard starts from: the brokers with per-shard dir budgets, and scaled cluster loads."""

    brokers: ClusterSnapshot  # no partitions; each dir's free bytes divided among the shards
    broker_bytes: dict[int, int]
    broker_replicas: dict[int, int]
    dir_bytes: dict[DirKey, int]
    dir_replicas: dict[DirKey, int]

    @staticmethod
    def of(snapshot: ClusterSnapshot, loads: Assignment, shards: int) -> ShardView:
        brokers = tuple(
            replace(b, log_dirs=tuple(replace(d, usable_bytes=d.usable_bytes // shards) for d in b.log_dirs))
            for b in snapshot.brokers
        )
        return ShardView(
            ClusterSnapshot(brokers, (), snapshot.cluster_id),
            {b: v // shards for b, v in loads.broker_bytes.items()},
            {b: v // shards for b, v in loads.broker_replicas.items()},
            {d: v // shards for d, v in loads.dir_bytes.items()},
            {d: v // shards for d, v in loads.dir_replicas.items()},
        )


def plan_shard(
    view: ShardView, partitions: Sequence[PartitionState], intents: Intents, shard: int
) -> ShardResult:
    """Run the hard goal on shard number ``shard``; its changed partitions, or why it is infeasible."""
    sub = ClusterSnapshot(view.brokers.brokers, tuple(partitions), view.brokers.cluster_id)
    ctx = PlanningContext.of(sub, intents)
    a = ctx.assignment
    # Rank destinations on the cluster's loads (scaled to one shard), not on this shard's own.
    a.broker_bytes.update(view.broker_bytes)
    a.broker_replicas.update(view.broker_replicas)
    a.dir_bytes.update(view.dir_bytes)
    a.dir_replicas.update(view.dir_replicas)
    try:
        ReplicaPlacementGoal(salt=shard + 1).optimize(ctx)
    except InfeasibleError as e:
        return [], f"{e.partition}\0{e.rule}\0{e.detail}"
    rows: list[Row] = []
    for p in sub.partitions:
        reps, dirs = tuple(a.replicas[p.key]), tuple(a.dirs[p.key])
        if reps != p.replicas or dirs != p.log_dirs:
            rows.append((p.topic, p.partition, reps, dirs))
    return rows, None


def raise_if_infeasible(errors: Iterable[str | None]) -> None:
    found = sorted(e for e in errors if e)
    if found:
        partition, rule, detail = found[0].split("\0", 2)
        more = f" (and other shards found {len(found) - 1} more)" if len(found) > 1 else ""
        raise InfeasibleError(detail + more, rule, partition)


def merge_and_balance(ctx: PlanningContext, rows: Iterable[Row]) -> Plan:
    """Apply the shards' hard-phase results to the global ``ctx``, reconcile, then balance globally."""
    a = ctx.assignment
    for topic, number, reps, dirs in rows:
        key = (topic, number)
        before = set(a.replicas[key])
        policy = a.policy(key)
        added = sum(1 for b in reps if b not in before)
        if policy is not None and added:
            ctx.charge(policy, a.size[key] * added)
        a.set_placement(key, list(reps), list(dirs))
    run_goals(ctx, [ReplicaPlacementGoal()])  # reconciliation: fixes only what a shard could not see
    run_goals(ctx, [BrokerBalanceGoal(), DirBalanceGoal(), LeaderBalanceGoal()])
    return diff(ctx.snapshot, ctx)


def sharded_optimize(
    snapshot: ClusterSnapshot,
    intents: Intents,
    shards: int,
    run_shards: Callable[[ShardView, dict[int, list[PartitionState]], Intents], list[ShardResult]]
    | None = None,
) -> Plan:
    """The whole sharded pipeline; ``run_shards`` maps shards to results (default: one after another)."""
    groups: dict[int, list[PartitionState]] = {}
    for p in snapshot.partitions:
        groups.setdefault(shard_of(p.topic, p.partition, shards), []).append(p)
    ctx = PlanningContext.of(snapshot, intents)
    view = ShardView.of(snapshot, ctx.assignment, shards)
    if run_shards is None:
        results = [plan_shard(view, parts, intents, shard) for shard, parts in sorted(groups.items())]
    else:
        results = run_shards(view, groups, intents)
    raise_if_infeasible(err for _, err in results)
    return merge_and_balance(ctx, (row for rows, _ in results for row in rows))


def rows_to_records(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """Rows as plain records (for DataFrames); a ``None`` dir becomes ``""``."""
    return [
        {"topic": t, "partition": n, "replicas": list(r), "dirs": ["" if d is None else d for d in ds]}
        for t, n, r, ds in rows
    ]
