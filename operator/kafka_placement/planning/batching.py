"""Order a plan's partition changes into execution batches.

Each batch involves at most ``max_per_broker`` partition changes per broker (a broker is involved when
it gains or loses a replica or a dir) and at most ``max_per_batch`` in all. Freeing changes go first
(they empty a decommissioned broker or a drained dir), then the rest; within each group small partitions
first, so a batch finishes quickly and progress is visible early. Leader-only reorders involve no broker
and fill the first batch. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from ..model.plan import ANY_DIR, PartitionTarget, Plan
from ..model.snapshot import ClusterSnapshot, PartitionState
from .state import Eligibility

MAX_PER_BROKER = 5  # the default per-broker limit of a batch (the CLI's --max-moves-per-broker)


class Change(NamedTuple):
    """One partition of the plan, with what executing it involves (a tuple: a plan of a million
    partitions makes as many)."""

    name: str
    size_bytes: int
    brokers: frozenset[int]
    freeing: bool


def change_of(p: PartitionState, t: PartitionTarget, elig: Eligibility) -> Change:
    """What moving partition ``p`` to ``t`` involves."""
    old = dict(zip(p.replicas, p.log_dirs, strict=True))
    involved: set[int] = set(p.replicas).symmetric_difference(t.replicas)
    for b, d in zip(t.replicas, t.log_dirs, strict=True):
        was = old.get(b)  # (None: not there, or on an unknown dir)
        if was is not None and d != ANY_DIR and d != was:
            involved.add(b)
    decommissioned, drained = elig.decommissioned, elig.drained
    freeing = (bool(decommissioned) or bool(drained)) and any(
        b in decommissioned or (d is not None and (b, d) in drained)
        for b, d in zip(p.replicas, p.log_dirs, strict=True)
        if b in involved
    )
    return Change(t.name, p.copy_bytes, frozenset(involved), freeing)


def changes(snapshot: ClusterSnapshot, plan: Plan, elig: Eligibility) -> list[Change]:
    out: list[Change] = []
    for t in plan.partitions:
        p = snapshot.partition(t.topic, t.partition)
        if p is not None:
            out.append(change_of(p, t, elig))
    return out


def batches(
    snapshot: ClusterSnapshot,
    plan: Plan,
    elig: Eligibility,
    max_per_broker: int = MAX_PER_BROKER,
    max_per_batch: int = 0,
) -> list[list[str]]:
    """Partition names per batch, in execution order."""
    return order(changes(snapshot, plan, elig), max_per_broker, max_per_batch)


def order(
    found: Iterable[Change], max_per_broker: int = MAX_PER_BROKER, max_per_batch: int = 0
) -> list[list[str]]:
    """The changes' partition names per batch, in execution order (whatever order they come in).

    First fit: in the order above, each change goes to the first batch where none of its brokers has
    ``max_per_broker`` changes yet (and that holds fewer than ``max_per_batch``). Each broker keeps
    links past the batches where it is full (followed with path halving), so finding that batch costs
    a few jumps, not a scan of every batch: at 358k changes and 962 batches the search took seconds,
    and minutes with one change per broker per batch (docs/benchmarks.md)."""
    if max_per_broker < 1:
        raise ValueError("max_per_broker must be >= 1")
    ordered = sorted(found, key=lambda c: (not c.freeing, c.size_bytes, c.name))
    result: list[list[str]] = []
    counts: dict[int, dict[int, int]] = {}  # broker -> batch -> its changes there
    full: dict[int, dict[int, int]] = {}  # broker -> a batch where it is full -> a later batch to try
    first: dict[int, int] = {}  # broker -> the first batch where it is not full
    closed: dict[int, int] = {}  # batches holding max_per_batch changes, linked the same way
    for c in ordered:
        brokers = c.brokers
        for b in brokers:
            if b not in first:
                first[b], counts[b], full[b] = 0, {}, {}
        i = _open_from(closed, max((first[b] for b in brokers), default=0))
        searching = True
        while searching:  # i only grows: stop when no broker (nor the batch's size) sends it further
            searching = False
            for b in brokers:
                j = _open_from(full[b], i)
                if j != i:
                    i, searching = _open_from(closed, j), True
        if i == len(result):
            result.append([])
        batch = result[i]
        batch.append(c.name)
        if max_per_batch and len(batch) >= max_per_batch:
            closed[i] = i + 1
        for b in brokers:
            n = counts[b][i] = counts[b].get(i, 0) + 1
            if n >= max_per_broker:
                full[b][i] = i + 1
                if first[b] == i:
                    first[b] = _open_from(full[b], i)
    return result


def _open_from(full: dict[int, int], i: int) -> int:
    """The first batch from ``i`` on that is not in ``full`` (whose links it shortens as it goes)."""
    while i in full:
        nxt = full[i]
        if nxt in full:
            full[i] = full[nxt]
        i = nxt
    return i
