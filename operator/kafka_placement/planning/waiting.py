"""Partitions no plan can act on now, and why: they wait, which is a state, not a failure.

A partition the hard goal would change (``replica_placement.repair_reasons``) is left as it is when the
change cannot be made by copying from a live replica, in two cases that arise after a broker dies:

- ``NoInSyncReplica``: the partition has no leader, a replica of it is on a dead broker, and none of its
  live replicas is in its ISR (its leader died while its followers were out of sync). A reassignment
  needs a leader to copy from, so a move would never finish; the operator never elects an unclean
  leader on its own (that can lose acknowledged records). Once the user elects one (docs/operations.md
  gives the command and its trade-off), the partition has a leader again and is planned as usual.
- ``WaitingForCapacity``: a replica of it is on a dead broker, and fewer brokers than its replication
  factor may hold it (those of its replicas that may stay, and the live brokers that may receive one):
  e.g. an RF-3 topic on a 3-broker cluster one of whose brokers died. It keeps its replica on the dead
  broker until a broker returns or is added.

Anything else a plan cannot meet stays infeasible (a user asking to decommission a live broker on a
3-broker cluster with RF-3 topics is told so). Both checks depend only on the partition, the brokers and
the intents (never on other partitions), so the sharded and Spark planners select the same partitions
(``repair_reasons`` applies them); ``Waiting`` tallies what waits for the plan's summary (``waiting``).
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .state import Eligibility

NO_IN_SYNC_REPLICA = "NoInSyncReplica"
WAITING_FOR_CAPACITY = "WaitingForCapacity"
REASONS = (NO_IN_SYNC_REPLICA, WAITING_FOR_CAPACITY)
SHOWN = 10  # partitions named per reason in a summary (the counts are exact)


def no_in_sync_replica(
    dead: Collection[int], replicas: Sequence[int], leader: int | None, isr: Sequence[int] | None
) -> bool:
    """No leader, a replica on a ``dead`` broker, and no live replica in the ISR (``isr`` None: not
    known). Self-healing names these partitions by the same rule (reconcile/healing.py)."""
    if leader is not None or isr is None or not dead:
        return False
    if not any(b in dead for b in replicas):
        return False
    return not any(b in isr and b not in dead for b in replicas)


def holders(e: Eligibility, replicas: Sequence[int]) -> int:
    """How many brokers may hold a replica of a partition now on ``replicas``: those of its replicas that
    may stay on their broker (a dead broker's too, while no decommission retires it) and the live
    brokers that may receive a new one."""
    staying = {b for b in replicas if b not in e.decommissioned and e.broker_may_keep(b)}
    receiving = {b for b in e.dirs if b not in e.dead and e.may_receive(b)}
    return len(staying | receiving)


def reason(
    e: Eligibility,
    replicas: Sequence[int],
    rf: int,
    leader: int | None = None,
    isr: Sequence[int] | None = None,
) -> str | None:
    """Why a partition the hard goal would change waits instead (module docstring), or None."""
    if not e.dead or not any(b in e.dead for b in replicas):
        return None
    if no_in_sync_replica(e.dead, replicas, leader, isr):
        return NO_IN_SYNC_REPLICA
    if holders(e, replicas) < rf:
        return WAITING_FOR_CAPACITY
    return None


@dataclass(slots=True)
class Waiting:
    """What waits, per reason: how many partitions, the first ones by name (with their dead and their
    out-of-sync live replicas), the dead brokers they wait on, and for capacity the largest replication
    factor and the fewest brokers available. Mergeable (the Spark engine tallies slices apart)."""

    counts: dict[str, int] = field(default_factory=dict)
    first: dict[str, list[tuple[str, tuple[int, ...], tuple[int, ...]]]] = field(default_factory=dict)
    brokers: dict[str, set[int]] = field(default_factory=dict)
    rf: int = 0
    available: int | None = None

    def add(self, e: Eligibility, name: str, replicas: Sequence[int], why: str, rf: int) -> None:
        self.counts[why] = self.counts.get(why, 0) + 1
        dead = tuple(b for b in replicas if b in e.dead)
        live = tuple(b for b in replicas if b not in e.dead)
        shown = self.first.setdefault(why, [])
        shown.append((name, dead, live))
        if len(shown) > 4 * SHOWN:  # keep the first by name, bounded
            shown.sort()
            del shown[SHOWN:]
        self.brokers.setdefault(why, set()).update(dead)
        if why == WAITING_FOR_CAPACITY:
            self.rf = max(self.rf, rf)
            n = holders(e, replicas)
            self.available = n if self.available is None else min(self.available, n)

    def merge(self, other: Waiting) -> None:
        for why, n in other.counts.items():
            self.counts[why] = self.counts.get(why, 0) + n
            mine = self.first.setdefault(why, [])
            mine.extend(other.first.get(why, ()))
            mine.sort()
            del mine[SHOWN:]
            self.brokers.setdefault(why, set()).update(other.brokers.get(why, ()))
        self.rf = max(self.rf, other.rf)
        if other.available is not None:
            self.available = (
                other.available if self.available is None else min(self.available, other.available)
            )

    def to_json(self) -> dict[str, Any]:
        """The summary's ``waiting`` (empty when nothing waits)."""
        out: dict[str, Any] = {}
        for why in REASONS:
            n = self.counts.get(why, 0)
            if not n:
                continue
            shown = sorted(self.first.get(why, ()))[:SHOWN]
            entry: dict[str, Any] = {"partitions": n, "brokers": sorted(self.brokers.get(why, ()))}
            if why == NO_IN_SYNC_REPLICA:
                entry["first"] = [
                    {"partition": p, "dead": list(d), "outOfSync": list(o)} for p, d, o in shown
                ]
            else:
                entry["first"] = [p for p, _, _ in shown]
                entry["replicationFactor"] = self.rf
                entry["brokersAvailable"] = self.available or 0
                entry["brokersNeeded"] = max(0, self.rf - (self.available or 0))
            out[why] = entry
        return out


def text(waiting: Mapping[str, Any], brokers: Sequence[int] | None = None) -> str:
    """One sentence per reason of a summary's ``waiting`` (those waiting on ``brokers`` when given)."""
    parts: list[str] = []
    for why in REASONS:
        entry = waiting.get(why)
        if not entry or (brokers is not None and not set(entry.get("brokers", ())) & set(brokers)):
            continue
        n = entry.get("partitions", 0)
        if why == NO_IN_SYNC_REPLICA:
            named = ", ".join(
                f"{f['partition']} (out of sync: {','.join(map(str, f['outOfSync'])) or 'none'})"
                for f in entry.get("first", ())
            )
            more = f" and {n - len(entry.get('first', ()))} more" if n > len(entry.get("first", ())) else ""
            parts.append(
                f"{n} partitions have no in-sync replica left (their leader died while the others were out "
                f"of sync): {named}{more}; they need a leader before any copy can be made — the operator "
                "never elects an unclean one (see docs/operations.md, 'No in-sync replica')"
            )
        else:
            parts.append(
                f"{n} partitions of replication factor up to {entry.get('replicationFactor')} keep a replica "
                f"on a dead broker: only {entry.get('brokersAvailable')} brokers may hold them, "
                f"{entry.get('brokersNeeded')} more needed (a broker back or added)"
            )
    return "; ".join(parts)


__all__ = [
    "NO_IN_SYNC_REPLICA",
    "REASONS",
    "WAITING_FOR_CAPACITY",
    "Waiting",
    "holders",
    "no_in_sync_replica",
    "reason",
    "text",
]
