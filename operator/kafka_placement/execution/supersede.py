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
"""

from __future__ import annotations

from dataclasses import replace

from ..model.plan import ANY_DIR, PartitionTarget, Plan
from ..model.snapshot import ClusterSnapshot
from .record import Execution


def running_targets(ex: Execution) -> dict[tuple[str, int], PartitionTarget]:
    """The targets of the moves ``ex`` has in flight, by partition."""
    targets = ex.plan.targets
    return {targets[i].key: targets[i] for i in ex.active()}


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
    return ClusterSnapshot(snap.brokers, tuple(parts), snap.cluster_id)


def keeping_in_flight(plan: Plan, running: dict[tuple[str, int], PartitionTarget]) -> Plan:
    """``plan`` whose partitions in flight keep their running move's target."""
    if not running:
        return plan
    kept = [t for t in plan.partitions if t.key not in running]
    return Plan.of([*kept, *running.values()])
