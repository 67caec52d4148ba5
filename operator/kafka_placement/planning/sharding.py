"""Sharded planning: the planner's own goals, split so the expensive hard phase runs in parallel.

This is the pure core of the Spark engine (and runs without Spark too, which the parity tests use):

1. partitions are hashed into shards (``shard_of``); every shard sees every broker, with each dir's
   free bytes divided among the shards (``shard_brokers``: per-shard capacity budgets, so shards
   running in parallel can never overfill a dir together);
2. each shard runs the hard ``ReplicaPlacementGoal`` on its partitions (``plan_shard``);
3. ``merge_and_balance`` applies every shard's result to one global assignment, re-runs the hard goal
   as a reconciliation pass (a no-op unless a shard's view missed something), then runs the balance
   goals globally, so balance is judged on whole-cluster loads exactly as the local engine does.

Hard constraints are per partition, so the sharded result meets every one of them; the shards' choices
of destination brokers are made on shard-local loads, which the global balance pass then evens out.
Pure: no I/O.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from ..model.errors import InfeasibleError
from ..model.intents import Intents
from ..model.plan import Plan
from ..model.snapshot import ClusterSnapshot, PartitionState
from .context import PlanningContext
from .goals import BrokerBalanceGoal, DirBalanceGoal, LeaderBalanceGoal, ReplicaPlacementGoal
from .optimizer import diff, run_goals

Row = tuple[str, int, tuple[int, ...], tuple[str | None, ...]]  # topic, partition, replicas, dirs
ShardResult = tuple[list[Row], str | None]  # changed partitions, or the infeasibility that stopped it


def shard_of(topic: str, partition: int, shards: int) -> int:
    """A stable shard number (the same in every process, unlike ``hash``)."""
    return zlib.crc32(f"{topic}\0{partition}".encode()) % shards


def shard_brokers(snapshot: ClusterSnapshot, shards: int) -> ClusterSnapshot:
    """The brokers with each dir's free bytes split evenly among ``shards`` (no partitions)."""
    brokers = tuple(
        replace(b, log_dirs=tuple(replace(d, usable_bytes=d.usable_bytes // shards) for d in b.log_dirs))
        for b in snapshot.brokers
    )
    return ClusterSnapshot(brokers, (), snapshot.cluster_id)


def plan_shard(
    brokers: ClusterSnapshot, partitions: Sequence[PartitionState], intents: Intents
) -> ShardResult:
    """Run the hard goal on one shard; the changed partitions, or the reason it is infeasible."""
    sub = ClusterSnapshot(brokers.brokers, tuple(partitions), brokers.cluster_id)
    ctx = PlanningContext.of(sub, intents)
    try:
        ReplicaPlacementGoal().optimize(ctx)
    except InfeasibleError as e:
        return [], f"{e.partition}\0{e.rule}\0{e.detail}"
    a = ctx.assignment
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


def merge_and_balance(snapshot: ClusterSnapshot, intents: Intents, rows: Iterable[Row]) -> Plan:
    """Apply the shards' hard-phase results globally, reconcile, then balance on global loads."""
    ctx = PlanningContext.of(snapshot, intents)
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
    return diff(snapshot, ctx)


def sharded_optimize(
    snapshot: ClusterSnapshot,
    intents: Intents,
    shards: int,
    run_shards: Callable[[ClusterSnapshot, dict[int, list[PartitionState]], Intents], list[ShardResult]]
    | None = None,
) -> Plan:
    """The whole sharded pipeline; ``run_shards`` maps shards to results (default: one after another)."""
    groups: dict[int, list[PartitionState]] = {}
    for p in snapshot.partitions:
        groups.setdefault(shard_of(p.topic, p.partition, shards), []).append(p)
    brokers = shard_brokers(snapshot, shards)
    if run_shards is None:
        results = [plan_shard(brokers, parts, intents) for _, parts in sorted(groups.items())]
    else:
        results = run_shards(brokers, groups, intents)
    raise_if_infeasible(err for _, err in results)
    return merge_and_balance(snapshot, intents, (row for rows, _ in results for row in rows))


def rows_to_records(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """Rows as plain records (for DataFrames); a ``None`` dir becomes ``""``."""
    return [
        {"topic": t, "partition": n, "replicas": list(r), "dirs": ["" if d is None else d for d in ds]}
        for t, n, r, ds in rows
    ]
