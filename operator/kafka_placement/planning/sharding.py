"""Sharded planning: the planner's own goals, split so the expensive hard phase runs in parallel.

This is the pure core of the Spark engine (and runs without Spark too, which the parity tests use):

1. only partitions the hard goal must change (``needs_repair``: a replica that may not stay, a wrong
   replication factor, a broken rack spread) go to the shards; every other partition is left exactly
   as it is by the hard goal, wherever it runs. They are hashed into shards (``shard_of``);
2. every shard gets the same ``ShardView``: every broker, with each dir's free bytes divided among the
   shards (per-shard capacity budgets, so shards running in parallel can never overfill a dir
   together), and the whole cluster's loads divided by the number of shards;
3. each shard runs the hard ``ReplicaPlacementGoal`` on its partitions (``plan_shard``), starting
   from those scaled cluster loads rather than its own partitions' loads: a shard holds a random
   1/n of the replicas, whose per-broker sums are noisy (a few dozen replicas per broker at 1000
   brokers), while the cluster's scaled loads are what every shard's additions will land on;
4. ``merge_and_balance`` applies every shard's result to one global assignment (its changed partitions,
   and the loads per broker and dir the shard's assignment says they change, added once instead of per
   replica), then runs the balance goals globally, so balance is judged on whole-cluster loads exactly as
   the local engine does. When the selection may have missed a partition it first re-runs the hard goal
   over every partition (a reconciliation); when the selection is known to be exact there is nothing to
   reconcile: ``needs_repair`` of a partition depends on that partition alone, so a partition outside the
   selection needs no repair before or after the shards, and one a shard returned is repaired (the
   in-process pipeline selects with ``needs_repair`` itself; the Spark engine's summary tally checks that
   no partition breaks a hard rule after the plan, and otherwise merges again reconciling every
   partition).

The Spark engine computes steps 1 and 2's inputs (the partitions to repair, with ``repair_reasons``,
and the cluster's loads) and runs step 3 in Spark tasks; ``sharded_optimize`` is the same pipeline in
one process.
Pure: no I/O.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..model.errors import InfeasibleError, infeasible
from ..model.intents import Intents, PlacementPolicy
from ..model.plan import Plan
from ..model.snapshot import ClusterSnapshot, PartitionState
from .context import PlanningContext
from .goals import ReplicaPlacementGoal, balance_goals
from .goals.replica_placement import needs_repair
from .optimizer import diff, run_goals
from .state import ClusterLoads, DirKey, Eligibility

Row = tuple[str, int, tuple[int, ...], tuple[str | None, ...]]  # topic, partition, replicas, dirs
# changed partitions and what they change in the loads, or the infeasibility that stopped the shard
ShardResult = tuple[list[Row], ClusterLoads, str | None]


ONE_SHARD_MAX_REPAIRS = 1000  # up to here the hard goal takes well under a second: not worth a split


def auto_shards(repairs: int, cores: int) -> int:
    """How many shards the Spark engine uses when none is configured: one while the repair is small (one
    shard plans exactly what the local engine plans: its view is the whole cluster's loads, and
    ``merge_and_balance`` is the local engine's balance), else four per core, so that uneven shards still
    keep every core busy (three shards on two cores took 1.5x as long in their phase as eight:
    docs/benchmarks.md)."""
    return 1 if repairs <= ONE_SHARD_MAX_REPAIRS else max(2, 4 * cores)


def shard_of(topic: str, partition: int, shards: int) -> int:
    """A stable shard number (the same in every process, unlike ``hash``)."""
    return zlib.crc32(f"{topic}\0{partition}".encode()) % shards


class LoadSource(Protocol):
    """Bytes and replicas per broker and per dir (an ``Assignment``, or the Spark engine's aggregate)."""

    @property
    def broker_bytes(self) -> Mapping[int, int]: ...
    @property
    def broker_replicas(self) -> Mapping[int, int]: ...
    @property
    def dir_bytes(self) -> Mapping[DirKey, int]: ...
    @property
    def dir_replicas(self) -> Mapping[DirKey, int]: ...


@dataclass(frozen=True, slots=True)
class ShardView:
    """What every shard starts from: the brokers with per-shard dir budgets, and scaled cluster loads."""

    brokers: ClusterSnapshot  # no partitions
    broker_bytes: dict[int, int]
    broker_replicas: dict[int, int]
    dir_bytes: dict[DirKey, int]
    dir_replicas: dict[DirKey, int]
    # each dir's volume and each volume's room under the disk headroom limit (the whole cluster's:
    # ``headroom``), divided among the shards: what a shard's assignment starts from (``Assignment.free``)
    vol: dict[DirKey, DirKey]
    free: dict[DirKey, int]

    @staticmethod
    def of(snapshot: ClusterSnapshot, loads: LoadSource, shards: int, elig: Eligibility) -> ShardView:
        """The view of ``snapshot`` (its ``loads`` and rules ``elig``) for each of ``shards`` shards."""
        rooms = elig.rooms(loads.dir_bytes)
        return ShardView(
            ClusterSnapshot(snapshot.brokers, (), snapshot.cluster_id),
            {b: v // shards for b, v in loads.broker_bytes.items()},
            {b: v // shards for b, v in loads.broker_replicas.items()},
            {d: v // shards for d, v in loads.dir_bytes.items()},
            {d: v // shards for d, v in loads.dir_replicas.items()},
            elig.volume,
            {v: r // shards if r > 0 else r for v, r in rooms.items()},
        )


def plan_shard(
    view: ShardView, partitions: Sequence[PartitionState], intents: Intents, shard: int
) -> ShardResult:
    """Run the hard goal on shard number ``shard``: its changed partitions and what they change in the
    bytes and replicas per broker and dir (the shard's assignment keeps those loads exact as it goes),
    or why it is infeasible."""
    sub = ClusterSnapshot(view.brokers.brokers, tuple(partitions), view.brokers.cluster_id)
    ctx = PlanningContext.of(sub, intents)
    # every partition a shard is sent is one ``needs_repair`` selected (``plan_shards``, the Spark
    # analysis): the goal need not ask it again of each (3 s of the shards' CPU at a million partitions)
    ctx.repairs = frozenset(p.key for p in partitions)
    a = ctx.assignment
    # Rank destinations on the cluster's loads (scaled to one shard), not on this shard's own.
    a.broker_bytes.update(view.broker_bytes)
    a.broker_replicas.update(view.broker_replicas)
    a.dir_bytes.update(view.dir_bytes)
    a.dir_replicas.update(view.dir_replicas)
    a.vol, a.free, a.room0 = view.vol, dict(view.free), dict(view.free)
    before = ClusterLoads.copy_of(a)
    try:
        ReplicaPlacementGoal(salt=shard + 1).optimize(ctx)
    except InfeasibleError as e:
        return [], ClusterLoads.none(), f"{e.partition}\0{e.rule}\0{e.detail}"
    rows: list[Row] = []
    for p in sub.partitions:
        reps, dirs = tuple(a.replicas[p.key]), tuple(a.dirs[p.key])
        if reps != p.replicas or dirs != p.log_dirs:
            rows.append((p.topic, p.partition, reps, dirs))
    return rows, ClusterLoads.change(before, ClusterLoads.copy_of(a)), None


def raise_if_infeasible(errors: Iterable[str | None]) -> None:
    found = sorted(e for e in errors if e)
    if found:
        partition, rule, detail = found[0].split("\0", 2)
        more = f" (and other shards found {len(found) - 1} more)" if len(found) > 1 else ""
        raise infeasible(detail + more, rule, partition)


def merge_and_balance(
    ctx: PlanningContext, rows: Iterable[Row], change: ClusterLoads, *, exact_selection: bool = False
) -> Plan:
    """Apply the shards' hard-phase results (their changed partitions, and ``change``, the sum of what
    each shard reported they change in the loads) to the global ``ctx`` (reconciled when the selection
    may have missed a partition), then balance globally.

    ``exact_selection``: the shards were sent exactly the partitions ``needs_repair`` selects, so no
    partition needs reconciling; otherwise the hard goal runs over every partition first."""
    a = ctx.assignment
    placements = []
    # per policy: the partitions that gain a replica and their bytes, charged once per policy
    charged: dict[str, tuple[PlacementPolicy, list[int]]] = {}
    policy_of, replicas_of, size_of = a.topic_policy, a.replicas, a.size
    for topic, number, reps, dirs in rows:
        key = (topic, number)
        policy = policy_of.get(topic)
        if policy is not None:
            added = len(set(reps).difference(replicas_of[key]))
            if added:
                spent = charged.setdefault(policy.name, (policy, [0, 0]))[1]
                spent[0] += 1
                spent[1] += size_of[key] * added
        placements.append((key, reps, dirs))
    for policy, (moves, size) in charged.values():  # (distinct partitions: charged before any is set)
        ctx.charge(policy, size, moves=moves)
    a.set_placements(placements, change)
    if exact_selection:
        # Nothing to reconcile: a shard's partitions left it repaired (or it reported them infeasible),
        # and ``needs_repair`` answers the same in the shard as here (same intents, brokers and dirs;
        # it depends on the partition alone). The goal still binds every later move (``ctx.done``).
        ctx.done.append(ReplicaPlacementGoal())
    else:  # the selection may have missed a partition: the hard goal over every partition
        run_goals(ctx, [ReplicaPlacementGoal()])
    run_goals(ctx, balance_goals())  # the network goals too: the global ``ctx`` keeps the traffic loads
    return diff(ctx.snapshot, ctx)


def plan_shards(ctx: PlanningContext, shards: int) -> list[ShardResult]:
    """Every shard's result, shard after shard in this process, for the partitions of ``ctx``'s snapshot
    that ``needs_repair`` selects (``ctx`` is left as it is)."""
    groups: dict[int, list[PartitionState]] = {}
    for p in ctx.snapshot.partitions:
        if needs_repair(ctx, p.key):
            groups.setdefault(shard_of(p.topic, p.partition, shards), []).append(p)
    view = ShardView.of(ctx.snapshot, ctx.assignment, shards, ctx.eligibility)
    return [plan_shard(view, parts, ctx.intents, shard) for shard, parts in sorted(groups.items())]


def sharded_optimize(
    snapshot: ClusterSnapshot, intents: Intents, shards: int, *, reconcile_all: bool = False
) -> Plan:
    """The whole sharded pipeline in this process, shard after shard (the Spark engine's reference).
    ``reconcile_all``: reconcile every partition, not only the shards' results (what the Spark engine
    does when its check finds a rule broken)."""
    ctx = PlanningContext.of(snapshot, intents)
    results = plan_shards(ctx, shards)
    raise_if_infeasible(err for _, _, err in results)
    changed = (row for rows, _, _ in results for row in rows)
    change = ClusterLoads.none()
    for _, part, _ in results:
        change.add(part)
    return merge_and_balance(ctx, changed, change, exact_selection=not reconcile_all)  # by needs_repair
