"""Quality of a plan, measured against the snapshot: movement, lower bound, balance, violations.

``apply_plan`` replays a plan on a snapshot (what Kafka would hold afterwards); ``evaluate`` compares
before and after. The **lower bound** of bytes that must move, per scenario (each term is a byte count
no plan meeting every hard rule and every requested balance goal can avoid copying; a plan that leaves
a balance goal unmet, e.g. because of its move budget, may move less). A copy costs the partition's
``copy_bytes``, its local size: for a topic with remote storage (KIP-405) the bytes its leader still holds
locally, not the tiered ones, and with KIP-1023 only the bytes not tiered yet (model/snapshot.py); disk
balance counts local bytes, what a disk holds (its excess terms count each disk byte at the fewest copy
bytes per disk byte of any partition: 1 unless KIP-1023 makes a copy cheaper than its disk bytes):

- ``forced``: for each partition, ``rf_target - (replicas that may stay where they are)`` copies of its
  size, where a replica may stay unless its broker is decommissioned or its dir drained; this covers
  decommission, drain and replication-factor growth.
- ``rackRepair``: for partitions breaking their policy's rack spread, the replicas that must move
  even when as many as possible are kept (the spread allocation keeps the most, level by level).
- ``brokerExcess``: bytes above ``(1 + tolerance) * mean`` on each broker that keeps data, summed
  (each such byte must leave its broker), when a policy asks for broker balance.
- ``dirExcess``: the same per dir within each broker, against an upper bound of the broker's final load:
  its broker-balance limit when broker balance is asked and reachable (a balanced plan ends every broker
  at or under it), else its load plus every copy the rules force (they may all land on it; none where
  the tolerance lets one byte brought to a broker raise its fuller dirs' thresholds by a byte or more)
  (bytes a lower replication factor may drop from a dir count as leaving it without a copy).
- ``networkIn`` (a snapshot with rates, ``traffic_quality.traffic``; folded in by
  ``optimizer.summarize``): a broker above its network in threshold or limit by E bytes/s must lose
  replicas carrying E; the fractional knapsack of its replicas by bytes per byte/s bounds the bytes that
  takes.

Decommission and RF-growth copies never leave a broker that keeps data. Every other copy leaves one,
and broker ``b`` must lose at least ``max(brokerExcess_b, dirExcess_b, drained_b)`` bytes (one byte may
serve all three), so ``lowerBoundBytes = decommission + rfGrowth + max(drain + rackRepair + uncovered,
sum_b max(brokerExcess_b, dirExcess_b, drained_b))``, where ``uncovered`` is what drain and rack-repair
copies cannot take, per broker the larger of: its broker excess less its drained replicas and its
replicas of partitions breaking the spread; and each of its dirs' excess less that dir's replicas of
such partitions (a repair's copy that leaves the broker's emptier dir does not even out its fuller one;
what a dir still holds above its threshold leaves by a copy of its own, to another broker or dir). The
same value as the linear program that picks, per partition breaking the spread, which replicas leave
(checked at 100k partitions on 1,000 brokers; tests/bench/run_generalise.py's ``dir-balance`` family
checks it against the exact optimum). When broker balance is provably unreachable (``reach.py``) its
terms are left out: no plan meets it, and the bound must not exceed the optimum of the rules alone.

Every metric is a sum over partitions finished from a few totals per broker and dir, so all of them are
computed in **one pass** that adds each partition (before, after) to a ``Tally``; tallies of disjoint
sets of partitions ``merge``, and ``Tally.evaluation`` finishes the metrics from the merged totals. The
local engine tallies the whole snapshot in one go; the Spark engine's tasks tally the snapshot without
the plan (``spark.analysis``), then only the plan's entries (``Tally.shift``, ``spark.tally``), and the
driver merges their tallies: the same code, so the same summary. The same shift sums what the plan's
entries copy per broker and topic (``flows.py``), which the report (``report.py``) reads from the
planner's tally instead of passing over the plan again. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..model.intent_status import WaitingStatus
from ..model.intents import Intents, PlacementPolicy, validate_against
from ..model.plan import ANY_DIR, PartitionTarget, Plan
from ..model.snapshot import ClusterSnapshot, PartitionState
from ..model.spec_fields import parse_object
from . import shares, waiting
from .flows import Flows
from .plan_summary import Metrics
from .reach import Reach
from .repairs import Screen, broken
from .spread import FollowerRoom, spread_of, targets
from .state import DirKey, Eligibility
from .summary_parts import (
    FollowerSpread,
    LoadBalance,
    LowerBound,
    RuleViolations,
    Spread,
)
from .topology import RackTree
from .waiting import Waiting

MOVEMENT = (
    "partitionsChanged",
    "replicaMoves",
    "intraBrokerMoves",
    "leaderChanges",
    "networkBytes",
    "intraBrokerBytes",
    "bytesToMove",
)
VIOLATIONS = ("decommissioned", "drained", "cordoned", "replicationFactor", "rackSpread", "capacity")


def apply_plan(snapshot: ClusterSnapshot, plan: Plan, source: str | None = None) -> ClusterSnapshot:
    """The snapshot after every move of ``plan`` completed and preferred leaders were elected."""
    plan.check_against(snapshot, source)
    targets = plan.by_key()
    parts = [p if (t := targets.get(p.key)) is None else after_move(p, t) for p in snapshot.partitions]
    return replace(snapshot, partitions=tuple(parts))


def after_move(p: PartitionState, t: PartitionTarget) -> PartitionState:
    """Partition ``p`` once moved to ``t`` (``any`` dir: the dir it had on that broker, else unknown)."""
    old = dict(zip(p.replicas, p.log_dirs, strict=True))
    dirs = tuple((old.get(b) if d == ANY_DIR else d) for b, d in zip(t.replicas, t.log_dirs, strict=True))
    return PartitionState(
        p.topic,
        p.partition,
        t.replicas,
        dirs,
        t.replicas[0],
        t.replicas,
        p.size_bytes,
        p.bytes_in_per_sec,
        p.read_fanout,
    )


@dataclass(slots=True)
class Scope:
    """What partitions are measured against: the brokers' rules, the intents and their rack trees
    (no partitions: the Spark engine sends it to every task)."""

    intents: Intents | None  # None: no intent-dependent metric
    elig: Eligibility
    trees: dict[str, RackTree]
    screen: Screen  # which partitions may break a hard rule (the others add nothing to the bound)
    _policies: dict[str, tuple[PlacementPolicy | None, RackTree | None]] = field(default_factory=dict)

    @staticmethod
    def of(snapshot: ClusterSnapshot, intents: Intents | None) -> Scope:
        elig = Eligibility.of(snapshot, intents if intents is not None else Intents())
        receivers = [b for b in elig.dirs if elig.may_receive(b)]
        trees = {
            p.name: RackTree.of(elig.racks, p.rack_awareness, receivers)
            for p in (intents.policies if intents is not None else ())
            if p.rack_awareness is not None
        }
        return Scope(intents, elig, trees, Screen.of(elig))

    @property
    def active(self) -> tuple[int, ...]:
        return self.elig.active_brokers

    def policy(self, topic: str) -> tuple[PlacementPolicy | None, RackTree | None]:
        """The topic's policy and its rack tree (looked up once per topic)."""
        found = self._policies.get(topic)
        if found is None:
            policy = self.intents.policy_for(topic) if self.intents is not None else None
            tree = self.trees.get(policy.name) if policy is not None else None
            found = self._policies[topic] = (policy, tree)
        return found

    def rf(self, p: PartitionState) -> int:
        """The partition's replication factor after the plan (its policy's, else its own)."""
        policy = self.policy(p.topic)[0]
        return (
            policy.replication_factor if policy is not None and policy.replication_factor else len(p.replicas)
        )


@dataclass(slots=True)
class Loads:
    """Bytes, replicas and preferred leaders per broker, bytes and replicas per dir (every broker and
    dir seen)."""

    bytes: dict[int, int] = field(default_factory=dict)
    replicas: dict[int, int] = field(default_factory=dict)
    leaders: dict[int, int] = field(default_factory=dict)
    dir_bytes: dict[DirKey, int] = field(default_factory=dict)
    dir_replicas: dict[DirKey, int] = field(default_factory=dict)

    def add(self, p: PartitionState, sign: int = 1) -> None:
        """Count partition ``p`` in (``sign`` -1: out of) these loads."""
        size, on, n, db, dn = (
            p.size_bytes * sign,
            self.bytes,
            self.replicas,
            self.dir_bytes,
            self.dir_replicas,
        )
        lead = p.replicas[0]
        self.leaders[lead] = self.leaders.get(lead, 0) + sign
        for b, d in zip(p.replicas, p.log_dirs, strict=True):
            on[b] = on.get(b, 0) + size
            n[b] = n.get(b, 0) + sign
            if d is not None:
                db[(b, d)] = db.get((b, d), 0) + size
                dn[(b, d)] = dn.get((b, d), 0) + sign

    def merge(self, other: Loads) -> None:
        add_into(self.bytes, other.bytes)
        add_into(self.replicas, other.replicas)
        add_into(self.leaders, other.leaders)
        add_into(self.dir_bytes, other.dir_bytes)
        add_into(self.dir_replicas, other.dir_replicas)

    def balance(self, brokers: Sequence[int], elig: Eligibility) -> LoadBalance:
        """max/mean of bytes, replicas and preferred leaders over ``brokers``; dirs (those not
        drained): the worst broker's."""
        bb = [self.bytes.get(b, 0) for b in brokers]
        dir_ratios = []
        for b in brokers:
            paths = [d for d in elig.dirs.get(b, ()) if (b, d) not in elig.drained]
            held = [self.dir_bytes.get((b, d), 0) for d in paths]
            sizes = elig.sizes.get(b)  # volumes of different sizes: shares of the volumes
            r = max_over_mean(held) if sizes is None else _share_ratio(held, [sizes[d] for d in paths])
            if r is not None:
                dir_ratios.append(r)
        return LoadBalance(
            shares.max_mean(elig.capacity, brokers, self.bytes),
            max(bb, default=0),
            round(sum(bb) / len(bb), 1) if bb else 0,
            max_over_mean([self.replicas.get(b, 0) for b in brokers]),
            max_over_mean([self.leaders.get(b, 0) for b in brokers]),
            max(dir_ratios, default=None),
        )


@dataclass(slots=True)
class Bound:
    """The lower bound's sums over partitions (module docstring), finished by ``total``."""

    decommission: int = 0
    drain: int = 0
    growth: int = 0
    rack: int = 0
    # per (broker, dir): bytes of partitions breaking spread (a dir None where the snapshot has none)
    rack_on: dict[tuple[int, str | None], int] = field(default_factory=dict)
    dropped: dict[int, int] = field(default_factory=dict)  # per broker: bytes a lower RF may drop
    dropped_dirs: dict[DirKey, int] = field(default_factory=dict)  # the same per dir
    drained_on: dict[int, int] = field(default_factory=dict)  # per broker: bytes on drained dirs
    # the fewest copy bytes per disk byte of any partition (KIP-1023 copies less than a disk holds): the
    # balance terms, disk bytes that must leave, cost at least this many copy bytes each
    cheapest: float = 1.0
    _musts: dict[tuple[object, ...], int | None] = field(default_factory=dict)

    def add(self, p: PartitionState, scope: Scope, rf: int, tree: RackTree | None) -> None:
        """Partition ``p``, of replication factor ``rf`` after the plan and its policy's rack ``tree``."""
        elig = scope.elig
        if elig.lost(p.replicas, p.log_dirs):
            return  # no copy left: no plan can move it (replica_placement.repair_reasons)
        size = p.copy_bytes  # what each copy costs (the local size, or less under KIP-1023)
        if size < p.size_bytes:
            self.cheapest = min(self.cheapest, size / p.size_bytes)
        kept = [(b, d) for b, d in zip(p.replicas, p.log_dirs, strict=True) if elig.may_keep(b, d, size)]
        stay = [b for b, _ in kept]
        on_decom = sum(1 for b in p.replicas if b in elig.decommissioned)
        on_drain = len(p.replicas) - len(stay) - on_decom
        copies = max(0, rf - len(stay))
        d_copies = min(on_decom, copies)
        dr_copies = min(on_drain, copies - d_copies)
        self.decommission += d_copies * size
        self.drain += dr_copies * size
        self.growth += (copies - d_copies - dr_copies) * size
        if tree is not None and len(stay) >= 1 and tree.violation(stay[:rf]) is not None:
            must = rack_must_move(tree, rf, stay, self._musts)
            if must is not None:
                self.rack += max(0, must - copies) * size
                for at in kept:
                    self.rack_on[at] = self.rack_on.get(at, 0) + size
        if rf < len(p.replicas):  # replicas a lower RF drops leave their broker without a copy...
            disk = p.size_bytes  # (disk bytes: they are taken off the disk loads)
            for b, d in zip(p.replicas, p.log_dirs, strict=True):
                self.dropped[b] = self.dropped.get(b, 0) + disk
                if d is not None:
                    self.dropped_dirs[(b, d)] = self.dropped_dirs.get((b, d), 0) + disk
            return  # ... and it may simply drop the drained one
        for b, d in zip(p.replicas, p.log_dirs, strict=True):
            if d is not None and (b, d) in elig.drained:
                self.drained_on[b] = self.drained_on.get(b, 0) + size

    def merge(self, other: Bound) -> None:
        self.decommission += other.decommission
        self.drain += other.drain
        self.growth += other.growth
        self.rack += other.rack
        self.cheapest = min(self.cheapest, other.cheapest)
        add_into(self.rack_on, other.rack_on)
        add_into(self.dropped, other.dropped)
        add_into(self.dropped_dirs, other.dropped_dirs)
        add_into(self.drained_on, other.drained_on)

    def total(self, scope: Scope, before: Loads, reach: Reach, unreachable: str | None) -> LowerBound:
        """The bytes any valid plan must copy (``total``), term by term."""
        intents, elig, active = scope.intents or Intents(), scope.elig, scope.active
        decom, drain, growth, rack = self.decommission, self.drain, self.growth, self.rack
        broker_excess: dict[int, float] = dict.fromkeys(active, 0.0)
        dir_excess: dict[int, float] = dict.fromkeys(active, 0.0)
        policies = [q for q in intents.policies if q.balance.brokers]
        raw_loads = {b: before.bytes.get(b, 0) for b in active}
        loads = {b: raw_loads[b] - self.dropped.get(b, 0) for b in active}
        blimit: dict[int, float] = dict.fromkeys(active, 0.0)
        if policies and active and unreachable is None:
            tol = min(q.balance.tolerance for q in policies)
            blimit = shares.limits(elig.capacity, active, reach.total, tol)
            broker_excess = {b: max(0.0, loads[b] - blimit[b]) for b in active}
        dir_policies = [q for q in intents.policies if q.balance.log_dirs]
        hot: dict[int, dict[str, float]] = {}  # per broker: each dir's excess over its threshold
        if dir_policies:
            tol = min(q.balance.tolerance for q in dir_policies)
            balanced = bool(policies) and unreachable is None
            for b in active:
                paths = [d for d in elig.dirs[b] if (b, d) not in elig.drained and (b, d) not in elig.offline]
                if len(paths) < 2:
                    continue
                # An upper bound of the broker's final load, for the dirs' thresholds: its limit when
                # broker balance is asked and reachable (a balanced plan ends every broker at or under
                # it); otherwise everything forced to move could land on it, and more bytes brought to
                # it raise its threshold, which only pays when a byte brought raises the thresholds of
                # its dirs above the mean by a byte or more: then no dir excess is certain.
                if balanced:
                    upper = blimit[b]
                elif (1 + tol) * (len(paths) - 1) < len(paths):
                    upper = raw_loads[b] + decom + growth + drain + rack
                else:
                    continue
                sizes = elig.sizes.get(b)  # volumes of different sizes: each dir's share of the load
                dthreshold = {
                    d: (1 + tol) * upper / len(paths)
                    if sizes is None
                    else (1 + tol) * upper * sizes[d] / sum(sizes[x] for x in paths)
                    for d in paths
                }
                dropped = self.dropped_dirs  # (a replica a lower RF drops leaves its dir without a copy)
                after = {d: before.dir_bytes.get((b, d), 0) - dropped.get((b, d), 0) for d in paths}
                over = {d: after[d] - dthreshold[d] for d in paths if after[d] > dthreshold[d]}
                hot[b] = over
                dir_excess[b] = sum(over.values())
        drained_on = {b: self.drained_on.get(b, 0) for b in active}
        repairs_on: dict[int, int] = {}  # per broker: bytes of its replicas of partitions breaking spread
        for (b, _), held in self.rack_on.items():
            repairs_on[b] = repairs_on.get(b, 0) + held
        # Bytes leaving each broker that keeps data: at least its broker excess, its dirs' excess and
        # its drained dirs (the same bytes may serve all three); rack repairs may also be those bytes.
        # Counted as copies: the excesses are disk bytes, each costing at least ``cheapest`` copy bytes
        # (1 unless KIP-1023 makes copies cheaper than the disk bytes they free)
        r = self.cheapest
        leave = {b: max(r * broker_excess[b], r * dir_excess[b], drained_on[b]) for b in active}
        leaving = int(sum(leave.values()))
        # Drain and rack-repair copies can serve a broker's leaving bytes only up to what they can take
        # from it (its drained replicas, its replicas of partitions breaking the spread), and a dir's
        # excess only up to what they can take from that dir (a repair's copy leaving the broker's
        # other dir does not even its dirs); the rest leaves by moves (or local copies) of their own:
        # per broker the larger of what its dirs and what the broker still must lose.
        uncovered = 0.0
        for b in active:
            dirs_left = sum(max(0.0, r * x - self.rack_on.get((b, d), 0)) for d, x in hot.get(b, {}).items())
            broker_left = r * broker_excess[b] - drained_on[b] - repairs_on.get(b, 0)
            uncovered += max(dirs_left, broker_left, 0.0)
        return LowerBound(
            total=decom + growth + max(drain + rack + int(uncovered), leaving),
            decommission=decom,
            rf_growth=growth,
            drain=drain,
            rack_repair=rack,
            broker_excess=int(sum(broker_excess.values())),
            dir_excess=int(sum(dir_excess.values())),
            leaving_brokers=leaving,
            uncovered_by_repairs=int(uncovered),
            balance_unreachable=0 if unreachable is None else 1,
        )


@dataclass(slots=True)
class Violations:
    """Hard-rule violations of a placement against the snapshot it came from: counts per rule, and
    per dir the bytes arriving minus the bytes leaving (``capacity`` is finished from those)."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(VIOLATIONS, 0))
    used: dict[DirKey, int] = field(default_factory=dict)

    def add(self, prior: PartitionState | None, p: PartitionState, scope: Scope, sign: int = 1) -> None:
        """Partition ``p`` as placed now, that was ``prior`` in the snapshot (None: not there);
        ``sign`` -1 takes it out again. ``cordoned`` counts replicas newly placed on cordoned dirs."""
        elig, out, used = scope.elig, self.counts, self.used
        size = p.size_bytes * sign
        had = dict(zip(prior.replicas, prior.log_dirs, strict=True)) if prior is not None else {}
        for b, d in zip(p.replicas, p.log_dirs, strict=True):
            if b in elig.decommissioned:
                out["decommissioned"] += sign
            if d is None:
                continue
            if (b, d) in elig.drained:
                out["drained"] += sign
            if had.get(b, "") != d:
                if (b, d) in elig.cordoned:
                    out["cordoned"] += sign
                used[(b, d)] = used.get((b, d), 0) + size
        if p is not prior:
            now = dict(zip(p.replicas, p.log_dirs, strict=True))
            for b, d in had.items():  # bytes leaving a dir free its room (the planner's ``Assignment.free``)
                if d is not None and now.get(b, "") != d:
                    used[(b, d)] = used.get((b, d), 0) - size
        policy, tree = scope.policy(p.topic)
        if policy is not None and policy.replication_factor and len(p.replicas) != policy.replication_factor:
            out["replicationFactor"] += sign
        if tree is not None and tree.violation(p.replicas) is not None:
            out["rackSpread"] += sign

    def merge(self, other: Violations) -> None:
        add_into(self.counts, other.counts)
        add_into(self.used, other.used)

    def finish(self, elig: Eligibility, held: Mapping[DirKey, int]) -> dict[str, int]:
        """The counts, with ``capacity``: volumes (``headroom``) whose bytes arriving minus leaving exceed
        their room under the disk headroom limit, their dirs holding ``held`` bytes before the plan (a
        volume above the limit already: any net arrival)."""
        out = dict(self.counts)
        net: dict[DirKey, int] = {}
        for dk, incoming in self.used.items():
            v = elig.volume.get(dk)
            if v is not None:
                net[v] = net.get(v, 0) + incoming
        rooms = elig.rooms(held) if net else {}
        out["capacity"] = sum(1 for v, incoming in net.items() if incoming > max(rooms[v], 0))
        return out


@dataclass(slots=True)
class Tally:
    """Every metric's sums over a set of partitions: add partitions one at a time, merge tallies of
    disjoint sets, finish with ``evaluation`` (module docstring).

    What holds after the plan is kept as the change the plan makes (loads and violations after = before
    + change), so a partition the plan leaves costs nothing more than its state before, and the plan's
    part of a tally is separable: ``add(p, t) == add(p, None) + shift(p, t)``."""

    movement: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MOVEMENT, 0))
    before: Loads = field(default_factory=Loads)
    change: Loads = field(default_factory=Loads)  # after the plan minus before
    bound: Bound = field(default_factory=Bound)
    reach: Reach = field(default_factory=Reach)
    violations_before: Violations = field(default_factory=Violations)
    violations_change: Violations = field(default_factory=Violations)  # after the plan minus before
    # leader -> follower -> partitions, after the plan; under the leader itself: the partitions it leads
    peers: dict[int, dict[int, int]] = field(default_factory=dict)
    under_replicated: list[str] = field(default_factory=list)  # under-replicated partitions in the plan
    waiting: Waiting = field(default_factory=Waiting)  # partitions the hard rules would change that wait
    flows: Flows = field(default_factory=Flows)  # what the plan's entries copy (the report's: flows.py)

    def add(self, p: PartitionState, t: PartitionTarget | None, scope: Scope) -> None:
        """Partition ``p`` of the snapshot, with its plan entry ``t`` (None when the plan leaves it)."""
        self.before.add(p)
        self._pair(p, 1)
        if scope.intents is not None:
            policy, tree = scope.policy(p.topic)
            rf = scope.rf(p)
            self.reach.add(p, policy, rf, tree)
            if p.copy_bytes < p.size_bytes or scope.screen.suspect(p.replicas, rf, tree):
                self.bound.add(p, scope, rf, tree)  # (both add nothing for a partition breaking no rule)
                self.violations_before.add(p, p, scope)
            elig = scope.elig
            if (
                elig.dead
                and not elig.lost(p.replicas, p.log_dirs)
                and any(b in elig.dead for b in p.replicas)
            ):
                why = waiting.reason(elig, p.replicas, rf, p.leader, p.isr)
                if why is not None and broken(elig, p.replicas, p.log_dirs, p.size_bytes, rf, tree):
                    self.waiting.add(elig, p.name, p.replicas, why, rf)
        if t is not None:
            self.shift(p, t, scope)

    def shift(self, p: PartitionState, t: PartitionTarget, scope: Scope) -> None:
        """What plan entry ``t`` changes in a tally that holds partition ``p`` as the plan leaving it:
        ``add(p, t) - add(p, None)``. A tally of every partition without the plan, merged with one
        shift per plan entry, is the plan's tally (the Spark engine's: ``spark.tally``)."""
        q = after_move(p, t)
        self.change.add(p, -1)
        self.change.add(q)
        if p.under_replicated:
            self.under_replicated.append(p.name)
        count_move(self.movement, p, q)
        self.flows.add(p, q)
        self._pair(p, -1)
        self._pair(q, 1)
        if scope.intents is not None:
            self.violations_change.add(p, p, scope, -1)
            self.violations_change.add(p, q, scope)

    def _pair(self, p: PartitionState, sign: int) -> None:
        """Count (``sign`` -1: uncount) ``p``'s followers as its preferred leader's peers (and ``p`` as
        one partition it leads, under its own id)."""
        peers = self.peers.get(p.replicas[0])
        if peers is None:
            peers = self.peers[p.replicas[0]] = {}
        for b in p.replicas:
            peers[b] = peers.get(b, 0) + sign

    @property
    def after(self) -> Loads:
        """The loads after the plan."""
        out = Loads()
        out.merge(self.before)
        out.merge(self.change)
        return out

    @property
    def violations_after(self) -> Violations:
        """The hard-rule violations after the plan (``finish`` them for the counts)."""
        out = Violations()
        out.merge(self.violations_before)
        out.merge(self.violations_change)
        return out

    def merge(self, other: Tally) -> Tally:
        """Add ``other`` (a tally of other partitions) into this one; returns this one."""
        add_into(self.movement, other.movement)
        self.before.merge(other.before)
        self.change.merge(other.change)
        self.bound.merge(other.bound)
        self.reach.merge(other.reach)
        self.violations_before.merge(other.violations_before)
        self.violations_change.merge(other.violations_change)
        for b, followers in other.peers.items():
            add_into(self.peers.setdefault(b, {}), followers)
        self.under_replicated.extend(other.under_replicated)
        self.waiting.merge(other.waiting)
        self.flows.merge(other.flows)
        return self

    def evaluation(self, scope: Scope, plan_id: str) -> Metrics:
        """Every metric of the plan (intent-dependent ones are null without intents)."""
        active, moved = scope.active, self.movement
        bound: dict[str, Any] = {}
        if scope.intents is not None:
            why = self.reach.why(scope.intents, active, scope.trees, scope.elig.capacity)
            lb = self.bound.total(scope, self.before, self.reach, why)
            held = self.before.dir_bytes
            after = RuleViolations.from_json(self.violations_after.finish(scope.elig, held))
            waits = self.waiting.to_json()
            bound = {
                "broker_balance_unreachable": why,
                "lower_bound": lb,
                "bytes_over_lower_bound": round(moved["bytesToMove"] / lb.total, 4) if lb.total else None,
                "violations_before": RuleViolations.from_json(
                    self.violations_before.finish(scope.elig, held)
                ),
                "violations_after": after,
                # left as they are, not failed: no plan can act on them now (waiting.py)
                "waiting": parse_object(WaitingStatus, waits, "waiting") if waits else None,
            }
        followers = {b: {f: n for f, n in v.items() if f != b} for b in active if (v := self.peers.get(b))}
        counts = {b: spread_of(v) for b, v in followers.items()}
        spread = FollowerSpread(_spread([n for n in counts.values() if n]))
        asked = [q for q in scope.intents.policies if q.balance.failure_spread] if scope.intents else []
        if asked:
            rooms = [
                FollowerRoom(scope.trees.get(q.name), [b for b in active if scope.elig.may_receive(b)])
                for q in asked
            ]
            led = {b: self.peers[b].get(b, 0) for b in followers}
            goal = targets(followers, led, active, rooms)
            below = {b: t - counts[b] for b, t in goal.items() if counts[b] < t}
            spread = replace(spread, target=_spread(list(goal.values())))
            spread = replace(spread, brokers_below_target=len(below), followers_short=sum(below.values()))
            # A broker's spread rises by reorders (free) and by redirecting replicas the plan moves
            # anyway (no extra copy): no plan provably needs bytes for it, so the bound adds none.
            bound["lower_bound"] = replace(bound["lower_bound"], failure_spread=0)
        return Metrics(
            plan_id=plan_id,
            partitions_changed=moved["partitionsChanged"],
            replica_moves=moved["replicaMoves"],
            intra_broker_moves=moved["intraBrokerMoves"],
            leader_changes=moved["leaderChanges"],
            network_bytes=moved["networkBytes"],
            intra_broker_bytes=moved["intraBrokerBytes"],
            bytes_to_move=moved["bytesToMove"],
            lower_bound_bytes=bound["lower_bound"].total if bound else None,
            balance_before=self.before.balance(active, scope.elig),
            balance_after=self.after.balance(active, scope.elig),
            failure_spread=spread,
            **bound,
        )


def count_move(out: dict[str, int], p: PartitionState, q: PartitionState) -> None:
    """Add to the movement counters ``out`` what moving partition ``p`` to ``q`` copies (nothing when
    its replicas, their order and dirs stay): each new replica copies ``p.copy_bytes`` (local bytes only
    for a tiered topic; with KIP-1023 only those not tiered yet), a dir move within a broker the whole
    local log (``size_bytes``: the future replica copies its current one)."""
    if q.replicas == p.replicas and q.log_dirs == p.log_dirs:
        return
    out["partitionsChanged"] += 1
    old = dict(zip(p.replicas, p.log_dirs, strict=True))
    copy = p.copy_bytes
    for b, d in zip(q.replicas, q.log_dirs, strict=True):
        if b not in old:
            out["replicaMoves"] += 1
            out["networkBytes"] += copy
            out["bytesToMove"] += copy
        elif d is not None and old[b] is not None and d != old[b]:
            out["intraBrokerMoves"] += 1
            out["intraBrokerBytes"] += p.size_bytes
            out["bytesToMove"] += p.size_bytes
    if q.replicas[0] != p.replicas[0]:
        out["leaderChanges"] += 1


def movement(snapshot: ClusterSnapshot, plan: Plan) -> dict[str, int]:
    """What executing ``plan`` copies: network replica moves, intra-broker dir moves, reorders (a pass
    over the plan's entries only)."""
    plan.check_against(snapshot)
    out = dict.fromkeys(MOVEMENT, 0)
    for t in plan.partitions:
        p = snapshot.partition(t.topic, t.partition)
        if p is not None:
            count_move(out, p, after_move(p, t))
    return out


def tally(snapshot: ClusterSnapshot, plan: Plan, scope: Scope) -> Tally:
    """The tally of every partition of ``snapshot`` under ``plan`` (checked against the snapshot)."""
    plan.check_against(snapshot)
    targets = plan.by_key()
    return tally_of(((p, targets.get(p.key)) for p in snapshot.partitions), scope)


def shifted(
    base: Tally,
    snapshot: ClusterSnapshot,
    plan: Plan,
    scope: Scope,
    entries: Sequence[PartitionTarget] | None = None,
) -> Tally:
    """``base``, the tally of every partition of ``snapshot`` as no plan changes it (``tally_of`` with no
    entries), made the tally of ``plan`` by shifting in its entries only (checked against the snapshot):
    ``tally(snapshot, plan, scope)``'s sums. Only ``entries`` of the plan when given (the others' shifts
    are merged in by the caller). ``base`` is changed and returned."""
    plan.check_against(snapshot)
    for t in plan.partitions if entries is None else entries:
        p = snapshot.partition(t.topic, t.partition)
        assert p is not None  # (checked above)
        base.shift(p, t, scope)
    return base


def tally_of(pairs: Iterable[tuple[PartitionState, PartitionTarget | None]], scope: Scope) -> Tally:
    """The tally of these (partition, plan entry or None) pairs."""
    out = Tally()
    for p, t in pairs:
        out.add(p, t, scope)
    return out


def evaluate(snapshot: ClusterSnapshot, plan: Plan, intents: Intents | None = None) -> Metrics:
    """Every metric of ``plan`` on ``snapshot`` (intent-dependent ones are null without intents).

    The intents are checked against the snapshot as ``plan`` checks them (unknown brokers or dirs,
    overlapping policies: BadInputError naming the intents file and document)."""
    if intents is not None:
        validate_against(intents, snapshot)
    scope = Scope.of(snapshot, intents)
    return tally(snapshot, plan, scope).evaluation(scope, plan.plan_id)


def violations(before: ClusterSnapshot, after: ClusterSnapshot, intents: Intents) -> dict[str, int]:
    """Hard-rule violations in ``after`` (partitions of ``before``, placed anew)."""
    scope = Scope.of(before, intents)
    found, held = Violations(), Loads()
    for p in before.partitions:
        held.add(p)
    for p in after.partitions:
        found.add(before.partition(p.topic, p.partition), p, scope)
    return found.finish(scope.elig, held.dir_bytes)


def rack_must_move(
    tree: RackTree, rf: int, stay: Sequence[int], memo: dict[tuple[object, ...], int | None]
) -> int | None:
    """How many of ``rf`` replicas a maximal spread keeping the most of ``stay`` must place anew (None:
    too few brokers). With every broker usable and brokers ranked by id this depends only on ``rf`` and
    the (unit path, member?) of each of ``stay`` in id order (the allocation breaks ties between units
    by the rank of the replicas they keep), so it is computed once per such sequence. Not once per
    multiset: tied units served in another order can keep fewer, and the answer then depended on
    which partition came first, so tallies of the same partitions split otherwise differed."""
    key = (id(tree), rf, *((tree.path[b], b in tree.members) for b in sorted(stay)))
    if key not in memo:
        kept = tree.allocate(rf, stay, lambda b: True, lambda bs: [(b,) for b in bs])
        memo[key] = None if kept is None else rf - len(set(kept) & set(stay))
    return memo[key]


def max_over_mean(values: Sequence[float]) -> float | None:
    """max / mean of ``values``, rounded to 4 places (None: no value, or a mean of 0)."""
    if not values:
        return None
    mean = sum(values) / len(values)
    return round(max(values) / mean, 4) if mean > 0 else None


def _share_ratio(held: Sequence[int], sizes: Sequence[int]) -> float | None:
    """The largest share of its volume over the mean share (all the bytes over all the volumes)."""
    if not held:
        return None
    mean = sum(held) / sum(sizes)
    return round(max(h / s for h, s in zip(held, sizes, strict=True)) / mean, 4) if mean > 0 else None


def _spread(counts: Sequence[int]) -> Spread:
    """Over how many other brokers the followers of each leading broker's partitions spread."""
    if not counts:
        return Spread(0, 0.0)
    return Spread(min(counts), round(sum(counts) / len(counts), 2))


def add_into(mine: dict[Any, int], theirs: dict[Any, int]) -> None:
    """Add ``theirs`` into ``mine``, key by key."""
    for k, v in theirs.items():
        mine[k] = mine.get(k, 0) + v
