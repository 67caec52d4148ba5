"""Order a plan's partition changes into execution batches.

Each batch involves at most ``max_per_broker`` partition changes per broker (a broker is involved when
it gains or loses a replica or a dir) and at most ``max_per_batch`` in all. Freeing changes go first
(they empty a decommissioned broker or a drained dir), then the rest; within each group small partitions
first, so a batch finishes quickly and progress is visible early. Leader-only reorders involve no broker
and fill the first batch. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..model.plan import ANY_DIR, PartitionTarget, Plan
from ..model.snapshot import ClusterSnapshot, PartitionState
from .state import Eligibility


@dataclass(frozen=True, slots=True)
class Change:
    """One partition of the plan, with what executing it involves."""

    name: str
    size_bytes: int
    brokers: frozenset[int]
    freeing: bool


def change_of(p: PartitionState, t: PartitionTarget, elig: Eligibility) -> Change:
    """What moving partition ``p`` to ``t`` involves."""
    old = dict(zip(p.replicas, p.log_dirs, strict=True))
    involved: set[int] = set(p.replicas) ^ set(t.replicas)
    for b, d in zip(t.replicas, t.log_dirs, strict=True):
        if b in old and d != ANY_DIR and old[b] is not None and d != old[b]:
            involved.add(b)
    freeing = any(
        b in elig.decommissioned or (d is not None and (b, d) in elig.drained)
        for b, d in zip(p.replicas, p.log_dirs, strict=True)
        if b in involved
    )
    return Change(t.name, p.size_bytes, frozenset(involved), freeing)


def changes(snapshot: ClusterSnapshot, plan: Plan, elig: Eligibility) -> list[Change]:
    out: list[Change] = []
    for t in plan.partitions:
        p = snapshot.partition(t.topic, t.partition)
        if p is not None:
            out.append(change_of(p, t, elig))
    return out


def batches(
    snapshot: ClusterSnapshot, plan: Plan, elig: Eligibility, max_per_broker: int = 5, max_per_batch: int = 0
) -> list[list[str]]:
    """Partition names per batch, in execution order."""
    return order(changes(snapshot, plan, elig), max_per_broker, max_per_batch)


def order(found: Iterable[Change], max_per_broker: int = 5, max_per_batch: int = 0) -> list[list[str]]:
    """The changes' partition names per batch, in execution order (whatever order they come in)."""
    if max_per_broker < 1:
        raise ValueError("max_per_broker must be >= 1")
    ordered = sorted(found, key=lambda c: (not c.freeing, c.size_bytes, c.name))
    result: list[list[str]] = []
    per_broker: list[dict[int, int]] = []
    first_open: dict[int, int] = {}
    for c in ordered:
        i = max((first_open.get(b, 0) for b in c.brokers), default=0)
        while True:
            if i == len(result):
                result.append([])
                per_broker.append({})
            load = per_broker[i]
            full = max_per_batch and len(result[i]) >= max_per_batch
            if not full and all(load.get(b, 0) < max_per_broker for b in c.brokers):
                break
            i += 1
        result[i].append(c.name)
        for b in c.brokers:
            per_broker[i][b] = per_broker[i].get(b, 0) + 1
            if per_broker[i][b] >= max_per_broker:
                j = first_open.get(b, 0)
                while j < len(per_broker) and per_broker[j].get(b, 0) >= max_per_broker:
                    j += 1
                first_open[b] = j
    return result
