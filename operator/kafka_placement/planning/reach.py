"""Whether broker balance can be met at all: a cheap proof that no plan reaches the threshold.

Broker balance asks every broker that keeps data to hold at most its limit, ``(1 + tolerance) x mean``
bytes, or its share by disk capacity where brokers' disks differ (planning/shares.py).
Two facts make that impossible whatever the planner does, and the summary reports them as
"balance unreachable" (so an unmet goal is not read as the planner's failure), and the lower bound
then leaves the balance terms out (no plan meets them, so they bound nothing):

- a partition larger than the largest limit: whichever broker holds it is above its own;
- the rack spread: a maximal spread puts at least ``floor`` replicas of every partition in each
  top-level unit (water-filling the replication factor over the units' broker counts), so a unit
  whose brokers must hold more than the sum of their limits leaves one of them above its own (e.g.
  three data centres, one with fewer brokers: it holds a third of the bytes all the same).

Sound, not complete: when neither applies, balance may still be unreachable. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..model.intents import Intents, PlacementPolicy
from ..model.snapshot import PartitionState
from . import shares
from .topology import RackTree, Unit


@dataclass(slots=True)
class Reach:
    """What the proof needs from the partitions, summed one partition at a time and mergeable (the
    Spark engine sums it in its tasks): total bytes after the plan, the largest partition, and per
    policy and top-level unit the bytes a maximal spread must put there."""

    total: int = 0
    largest: tuple[int, str, int] | None = None  # (size, topic, partition); ties: the first by name
    need: dict[tuple[str, Unit], int] = field(default_factory=dict)
    _floors: dict[tuple[str, int], dict[Unit, int]] = field(default_factory=dict)

    def add(self, p: PartitionState, policy: PlacementPolicy | None, rf: int, tree: RackTree | None) -> None:
        """Count partition ``p`` (replication factor ``rf`` after the plan, its policy's rack tree)."""
        size = p.size_bytes
        self.total += rf * size
        candidate = (size, p.topic, p.partition)
        if self.largest is None or _beats(candidate, self.largest):
            self.largest = candidate
        if tree is None or policy is None:
            return
        key = (policy.name, rf)
        floors = self._floors.get(key)
        if floors is None:
            floors = self._floors[key] = _floors(tree, rf)
        need = self.need
        for unit, n in floors.items():
            need[(policy.name, unit)] = need.get((policy.name, unit), 0) + n * size

    def merge(self, other: Reach) -> None:
        self.total += other.total
        if other.largest is not None and (self.largest is None or _beats(other.largest, self.largest)):
            self.largest = other.largest
        for k, v in other.need.items():
            self.need[k] = self.need.get(k, 0) + v

    def why(
        self,
        intents: Intents,
        active: tuple[int, ...],
        trees: dict[str, RackTree],
        capacity: Mapping[int, int] | None = None,
    ) -> str | None:
        """Why no plan can meet the broker-balance limits (None when this cannot be shown); ``capacity``:
        the brokers' disk capacities (``Eligibility.capacity``), where balance compares shares of them."""
        policies = [q for q in intents.policies if q.balance.brokers]
        if not policies or not active:
            return None
        tol = min(q.balance.tolerance for q in policies)
        limits = shares.limits(capacity or {}, active, self.total, tol)
        by_share = shares.capacities(capacity or {}, active) is not None
        top = max(limits.values())  # (the one threshold when limits are even)
        if self.largest is not None and self.largest[0] > top:
            size, topic, number = self.largest
            what = "the largest broker's limit" if by_share else "the threshold"
            why = " (its share of the bytes by disk capacity)" if by_share else ""
            return f"partition {topic}-{number} ({size} bytes) is larger than {what} {int(top)} bytes{why}"
        for (name, unit), nbytes in sorted(self.need.items()):
            tree = trees[name]
            if not by_share:
                members = tree.capacity.get(unit, 0)
                if members and nbytes / members > top:
                    return (
                        f"the rack spread puts at least {int(nbytes)} bytes in unit {'/'.join(unit)} of "
                        f"{members} broker(s): {int(nbytes / members)} each on average, above the threshold "
                        f"{int(top)} bytes"
                    )
                continue
            inside = [b for b in active if tree.path.get(b, ())[: len(unit)] == unit]  # (sound: all of them)
            room = sum(limits[b] for b in inside)
            if inside and nbytes > room:
                return (
                    f"the rack spread puts at least {int(nbytes)} bytes in unit {'/'.join(unit)}, whose "
                    f"{len(inside)} broker(s) may hold {int(room)} bytes by their shares of disk capacity"
                )
        return None


def _beats(a: tuple[int, str, int], b: tuple[int, str, int]) -> bool:
    """``a`` is the larger partition: more bytes, or as many and first by (topic, number)."""
    return a[0] > b[0] or (a[0] == b[0] and a[1:] < b[1:])


def _floors(tree: RackTree, rf: int) -> dict[Unit, int]:
    """The fewest replicas a maximal spread of ``rf`` replicas puts in each top-level unit."""
    units = tree.children.get((), ())
    caps = {u: tree.capacity.get(u, 0) for u in units}
    level = 0
    while sum(min(c, level + 1) for c in caps.values()) <= rf and level < rf:
        level += 1
    return {u: min(c, level) for u, c in caps.items()}
