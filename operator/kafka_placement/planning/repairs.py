"""Why the hard goal must change a partition: one rule set for every engine.

``repair_reasons`` is what ``ReplicaPlacementGoal`` repairs (``needs_repair``), what the sharded planner
sends to its shards, what the Spark engine's analysis selects in its tasks, and what the exact program
takes as its movable partitions: it depends only on the partition, the brokers and the intents, never on
other partitions. ``broken`` is the same rules without the exceptions (a lost partition, one that waits:
``waiting.py``), for the summary's tally of what waits. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import waiting
from .state import Eligibility
from .topology import RackTree

REPAIR_REASONS = ("decommissioned", "drained", "cordonedEmpty", "replicationFactor", "rackSpread")


def repair_reasons(
    e: Eligibility,
    replicas: Sequence[int],
    dirs: Sequence[str | None],
    size: int,
    rf: int,
    tree: RackTree | None,
    leader: int | None = None,
    isr: Sequence[int] | None = None,
) -> tuple[str, ...]:
    """Why the hard goal must change a partition (each of ``REPAIR_REASONS`` that applies; empty: it
    leaves the partition alone): a replica on a decommissioned broker, on a drained dir, a
    replica of at most ``reactive_max_bytes`` (0: empty) on a cordoned dir in
    reactive-cordon mode (``Eligibility.may_keep``), a replica count other
    than the target ``rf``, or a rack spread ``tree`` finds broken. Never a partition whose every replica
    is lost (``Eligibility.lost``): a move could copy from nothing; nor one that waits (``waiting.py``: no
    in-sync replica left, its ``leader`` and ``isr`` given, or too few brokers to hold it while a replica
    is on a dead broker): it is left as it is, and the summary's ``waiting`` names it."""
    if e.lost(replicas, dirs):
        return ()  # its data is gone (every replica on a dead broker or failed dir): nothing to copy
    found = broken(e, replicas, dirs, size, rf, tree)
    if found and waiting.reason(e, replicas, rf, leader, isr) is not None:
        return ()
    return found


def broken(
    e: Eligibility,
    replicas: Sequence[int],
    dirs: Sequence[str | None],
    size: int,
    rf: int,
    tree: RackTree | None,
) -> tuple[str, ...]:
    """The rules of ``REPAIR_REASONS`` a partition breaks, whether or not a plan can repair it."""
    pairs = list(zip(replicas, dirs, strict=True))
    gone = e.reactive_moves(size)
    found = (
        any(b in e.decommissioned for b in replicas),
        any(d is not None and (b, d) in e.drained for b, d in pairs),
        gone and any(d is not None and (b, d) in e.cordoned and (b, d) not in e.drained for b, d in pairs),
        len(replicas) != rf,
        tree is not None and tree.violation(replicas) is not None,
    )
    return tuple(r for r, yes in zip(REPAIR_REASONS, found, strict=True) if yes)


__all__ = ["REPAIR_REASONS", "broken", "repair_reasons"]
