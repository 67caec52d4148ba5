"""Order a plan's partition changes into execution batches.

Each batch involves at most ``max_per_broker`` partition changes per broker (a broker is involved when
it gains or loses a replica or a dir) and at most ``max_per_batch`` in all. Freeing changes go first
(they empty a decommissioned broker or a drained dir), then the rest; within each group small partitions
first, so a batch finishes quickly and progress is visible early. Leader-only reorders involve no broker
and fill the first batch. Pure: no I/O.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import NamedTuple

from ..model.plan import ANY_DIR, BATCH_MAX_PER_BROKER, PartitionTarget, Plan
from ..model.snapshot import ClusterSnapshot, PartitionState
from .state import Eligibility

# the default per-broker limit of a batch (the CLI's --max-moves-per-broker: one source, model/plan.py)
MAX_PER_BROKER = BATCH_MAX_PER_BROKER


class Change(NamedTuple):
    """One partition of the plan, with what executing it involves (a tuple: a plan of a million
    partitions makes as many)."""

    name: str
    size_bytes: int
    brokers: frozenset[int]
    freeing: bool
    moved: int = 0  # the bytes it copies (``plan_quality.count_move``'s ``bytesToMove``)


def change_of(p: PartitionState, t: PartitionTarget, elig: Eligibility) -> Change:
    """What moving partition ``p`` to ``t`` involves: the brokers gaining or losing a replica, and those
    whose replica changes dir (``t`` naming another dir than the one the snapshot knows)."""
    reps, dirs, t_reps, t_dirs = p.replicas, p.log_dirs, t.replicas, t.log_dirs
    copy = p.copy_bytes
    involved = frozenset(reps).symmetric_difference(t_reps)
    # each new replica copies the local bytes: |new| - |gone| = |t| - |p|, |new| + |gone| = |involved|
    moved = copy * ((len(involved) + len(t_reps) - len(reps)) // 2)
    if t_dirs.count(ANY_DIR) != len(t_dirs):  # a dir named: a move between the broker's dirs?
        old = dict(zip(reps, dirs, strict=True))
        between = [
            b for b, d in zip(t_reps, t_dirs, strict=True) if d != ANY_DIR and old.get(b) not in (None, d)
        ]
        if between:  # (old.get: None when not there, or on an unknown dir)
            involved = involved.union(between)
            moved += p.size_bytes * len(between)  # (the whole local log)
    decommissioned, drained = elig.decommissioned, elig.drained
    freeing = (bool(decommissioned) or bool(drained)) and any(
        b in decommissioned or (d is not None and (b, d) in drained)
        for b, d in zip(reps, dirs, strict=True)
        if b in involved
    )
    return Change(f"{t.topic}-{t.partition}", copy, involved, freeing, moved)


def changes(snapshot: ClusterSnapshot, plan: Plan, elig: Eligibility) -> list[Change]:
    """The plan's entries as changes (those of partitions the snapshot has), in the plan's order."""
    partition = snapshot.partition
    return [
        change_of(p, t, elig) for t in plan.partitions if (p := partition(t.topic, t.partition)) is not None
    ]


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
    ordered = _ranked(found)
    result: list[list[str]] = []
    counts: dict[int, dict[int, int]] = {}  # broker -> batch -> its changes there
    full: dict[int, dict[int, int]] = {}  # broker -> a batch where it is full -> a later batch to try
    first: dict[int, int] = {}  # broker -> the first batch where it is not full
    closed: dict[int, int] = {}  # batches holding max_per_batch changes, linked the same way
    for c in ordered:
        brokers = c.brokers
        i = 0
        for b in brokers:
            f = first.get(b)
            if f is None:
                first[b], counts[b], full[b] = 0, {}, {}
            elif f > i:
                i = f
        if i in closed:
            i = _open_from(closed, i)
        searching = True
        while searching:  # i only grows: stop when no broker (nor the batch's size) sends it further
            searching = False
            for b in brokers:
                links = full[b]
                if i in links:
                    i, searching = _open_from(closed, _open_from(links, i)), True
        if i == len(result):
            result.append([])
        batch = result[i]
        batch.append(c.name)
        if max_per_batch and len(batch) >= max_per_batch:
            closed[i] = i + 1
        for b in brokers:
            held = counts[b]
            n = held[i] = held.get(i, 0) + 1
            if n >= max_per_broker:
                links = full[b]
                links[i] = i + 1
                if first[b] == i:
                    first[b] = _open_from(links, i)
    return result


def _ranked(found: Iterable[Change]) -> list[Change]:
    """The changes in the order they are placed: freeing ones first, then by size, then by name. (Two
    stable sorts on single keys, by name then by size, within each group: at 333k changes a third of
    the time of one sort on tuples.)"""
    every = found if isinstance(found, list) else list(found)
    freeing = [c for c in every if c.freeing]
    rest = [c for c in every if not c.freeing] if freeing else list(every)
    for group in (freeing, rest):
        group.sort(key=_NAME)
        group.sort(key=_SIZE)
    return freeing + rest


_NAME = operator.itemgetter(0)  # Change.name
_SIZE = operator.itemgetter(1)  # Change.size_bytes


def _open_from(full: dict[int, int], i: int) -> int:
    """The first batch from ``i`` on that is not in ``full`` (whose links it shortens as it goes)."""
    while i in full:
        nxt = full[i]
        if nxt in full:
            full[i] = full[nxt]
        i = nxt
    return i
