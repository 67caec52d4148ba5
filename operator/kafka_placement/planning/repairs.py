"""Why the hard goal must change a partition: one rule set for every engine.

``repair_reasons`` is what ``ReplicaPlacementGoal`` repairs (``needs_repair``), what the sharded planner
sends to its shards, what the Spark engine's analysis selects in its tasks, and what the exact program
takes as its movable partitions: it depends only on the partition, the brokers and the intents, never on
other partitions. ``broken`` is the same rules without the exceptions (a lost partition, one that waits:
``waiting.py``), for the summary's tally of what waits. ``Screen`` is a cheap first test that keeps
every partition ``broken`` may find (and a few more): a plan of a million partitions asks the full rules
of a third of them. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True, slots=True)
class Screen:
    """A cheap first test of whether ``broken`` may find a partition breaking a rule: every partition it
    finds is a suspect. Suspects: a replica on a broker that is decommissioned or has a drained dir (or
    a cordoned one in reactive-cordon mode: ``broken`` asks the replica's size and dir, the screen
    neither), a replica count other than the target RF, a broker the rack tree does not know, and a rack
    spread the tree finds broken (``RackTree.violation``, judged once per combination of places). The
    others break no rule: the hard goal leaves them alone and they add nothing to the lower bound or the
    violations (``plan_quality.Tally.add``)."""

    special: frozenset[int]

    @staticmethod
    def of(e: Eligibility) -> Screen:
        special = set(e.decommissioned)
        special.update(b for b, _ in e.drained)
        if e.reactive_cordon:
            special.update(b for b, _ in e.cordoned)
        return Screen(frozenset(special))

    def suspect(self, replicas: Sequence[int], rf: int | None, tree: RackTree | None) -> bool:
        """``rf``: the target replication factor (None: the partition keeps its count)."""
        if (rf is not None and len(replicas) != rf) or not self.special.isdisjoint(replicas):
            return True
        if tree is None:
            return False
        try:
            return tree.violation(replicas) is not None
        except KeyError:
            return True  # a broker without a place: let ``broken`` judge it


def suspects(
    e: Eligibility,
    replicas: Mapping[tuple[str, int], Sequence[int]],
    rule: Callable[[str], tuple[int | None, RackTree | None]],
) -> Iterable[tuple[str, int]]:
    """The partitions (keys of ``replicas``) the ``Screen`` keeps; ``rule(topic)`` is the topic's target
    RF (None: the partition keeps its count) and rack tree (None: no spread asked), asked once a topic."""
    screen = Screen.of(e)
    rules: dict[str, tuple[int | None, RackTree | None]] = {}
    for key, reps in replicas.items():
        found = rules.get(key[0])
        if found is None:
            found = rules[key[0]] = rule(key[0])
        if screen.suspect(reps, *found):
            yield key


__all__ = ["REPAIR_REASONS", "Screen", "broken", "repair_reasons", "suspects"]
