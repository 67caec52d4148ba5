"""Superseding a running execution: the new plan keeps its moves in flight (docs/architecture.md).

When an intent more urgent than a running execution's arrives (a heal, a higher priority), every intent is
planned again and the new plan replaces the running one's moves not yet submitted, while the moves in
flight go on: never reverted, never sent twice (``Execution.adopt`` takes them over in the new record).
Two pure steps around the planner make that plan:

- ``as_if_done``: the snapshot the planner sees, with every partition in flight already at its move's
  target (in sync, led by the target's first replica), so the new plan builds on where they will be;
- ``keeping_in_flight``: the planner's plan without entries for those partitions, plus each running
  move's own target, so the new record tracks them to the end. A partition in flight that the new
  intents want elsewhere is moved once its move is done: when the new plan completes, the intents' rules
  are checked on a fresh read before any of them is reported Completed, and what is left is planned next.

A move in flight whose target names a broker that is no longer alive can never finish (Kafka waits for the
dead broker to join the ISR): it is *stranded*. Keeping it would stall the new plan until the broker comes
back, which is what a heal of that broker is there to avoid. ``in_flight`` tells stranded moves apart; the
planner sees their partitions where the moves started (the superseded execution's baseline: the data
is there, in sync), and the new plan gives each a new target: the planner's, else its starting placement
when every broker of it is alive. The executor first reverts the stranded reassignment (a KIP-455 cancel,
``executor._revert_stranded``: submitted over, Kafka would keep waiting for the dead broker;
``Execution.adopt`` lists them in ``retarget``), then moves the partition to that target: a new move, not
a second submission of the old one. A stranded move with nowhere better to go keeps its target (the
execution then pauses until the broker is back, as any execution whose broker died).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..model.plan import ANY_DIR, PartitionTarget, Plan
from ..model.snapshot import Broker, ClusterSnapshot
from .record import Execution, Original

Key = tuple[str, int]


@dataclass(frozen=True)
class Stranded:
    """A move in flight that cannot finish: its target and where its partition was when it started."""

    running: PartitionTarget
    origin: Original


@dataclass(frozen=True)
class FlightSplit:
    """The running execution's moves in flight as a new plan treats them."""

    kept: dict[Key, PartitionTarget]  # every broker of the target alive: the move goes on
    stranded: dict[Key, Stranded]  # the target names a broker not alive: re-planned from its origin


def in_flight(ex: Execution, snap: ClusterSnapshot) -> FlightSplit:
    """``ex``'s moves in flight, split by whether every broker of their target is alive in ``snap``."""
    alive = {b.id for b in snap.brokers if b.alive}
    kept: dict[Key, PartitionTarget] = {}
    stranded: dict[Key, Stranded] = {}
    targets = ex.plan.targets
    for i in ex.active():
        t = targets[i]
        origin = None if set(t.replicas) <= alive else _origin(ex, i)
        if origin is None:
            kept[t.key] = t
        else:
            stranded[t.key] = Stranded(t, origin)
    return FlightSplit(kept, stranded)


def _origin(ex: Execution, i: int) -> Original | None:
    """Where move ``i`` started: the baseline, or before validation the superseded plan's (None: unknown,
    then the move is kept as it is)."""
    if ex.plan.baseline is not None:
        return ex.plan.original(i)
    a = ex.doc.adopted.get(i)
    return Original(tuple(a.replicas), tuple(a.log_dirs), a.size) if a is not None else None


def planning_view(snap: ClusterSnapshot, flight: FlightSplit) -> ClusterSnapshot:
    """The snapshot the new plan is computed on: kept moves as if done, stranded ones where they started
    (the replicas of their origin still in sync stay in sync; their leader, if it is one of them)."""
    seen = as_if_done(snap, flight.kept)
    if not flight.stranded:
        return seen
    parts = []
    for p in seen.partitions:
        s = flight.stranded.get(p.key)
        if s is None:
            parts.append(p)
            continue
        o = s.origin
        isr = tuple(b for b in p.isr if b in o.replicas)
        leader = p.leader if p.leader in o.replicas else (isr[0] if isr else None)
        parts.append(replace(p, replicas=o.replicas, log_dirs=o.log_dirs, isr=isr, leader=leader))
    # an origin may name a broker the snapshot no longer lists (a heal's stranded move off a dead broker
    # whose replicas Kafka had already dropped): listed as not alive, so its replicas count as lost, with
    # no dir (as the snapshot has the replicas of every broker not alive)
    known = {b.id for b in seen.brokers}
    gone = sorted({b for p in parts for b in p.replicas} - known)
    if not gone:
        return replace(seen, partitions=tuple(parts))
    dead = {b.id for b in seen.brokers if not b.alive} | set(gone)
    parts = [
        replace(
            p, log_dirs=tuple(None if b in dead else d for b, d in zip(p.replicas, p.log_dirs, strict=True))
        )
        if dead & set(p.replicas)
        else p
        for p in parts
    ]
    brokers = (*seen.brokers, *(Broker(b, None, (), alive=False) for b in gone))
    return replace(seen, partitions=tuple(parts), brokers=tuple(sorted(brokers, key=lambda b: b.id)))


def keeping_flight(plan: Plan, flight: FlightSplit, snap: ClusterSnapshot) -> Plan:
    """``plan`` keeping the kept moves' targets; a stranded move takes the plan's target for its partition,
    else its origin when every broker of that is alive in ``snap``, else keeps its own."""
    alive = {b.id for b in snap.brokers if b.alive}
    merged = keeping_in_flight(plan, flight.kept)
    planned = {t.key for t in merged.partitions}
    extra = []
    for key, s in flight.stranded.items():
        if key in planned:
            continue
        o = s.origin.replicas
        back = PartitionTarget(key[0], key[1], o, (ANY_DIR,) * len(o))
        extra.append(back if set(o) <= alive else s.running)
    return Plan.of([*merged.partitions, *extra]) if extra else merged


def as_if_done(snap: ClusterSnapshot, running: dict[tuple[str, int], PartitionTarget]) -> ClusterSnapshot:
    """``snap`` with each partition of ``running`` at its target (dirs named by the target, else the
    current dir of a replica that stays, else unknown)."""
    if not running:
        return snap
    parts = []
    for p in snap.partitions:
        t = running.get(p.key)
        if t is None:
            parts.append(p)
            continue
        now = dict(zip(p.replicas, p.log_dirs, strict=True))
        dirs = tuple(d if d != ANY_DIR else now.get(b) for b, d in zip(t.replicas, t.log_dirs, strict=True))
        parts.append(replace(p, replicas=t.replicas, log_dirs=dirs, leader=t.replicas[0], isr=t.replicas))
    return replace(snap, partitions=tuple(parts))


def keeping_in_flight(plan: Plan, running: dict[tuple[str, int], PartitionTarget]) -> Plan:
    """``plan`` whose partitions in flight keep their running move's target."""
    if not running:
        return plan
    kept = [t for t in plan.partitions if t.key not in running]
    return Plan.of([*kept, *running.values()])
