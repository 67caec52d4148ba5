"""Whether broker balance can be met at all: a cheap proof that no plan reaches the threshold.

Broker balance asks every broker that keeps data to hold at most ``(1 + tolerance) x mean`` bytes.
Two facts make that impossible whatever the planner does, and the summary reports them as
"balance unreachable" (so an unmet goal is not read as the planner's failure), and the lower bound
then leaves the balance terms out (no plan meets them, so they bound nothing):

- a partition larger than the threshold: whichever broker holds it is above it;
- the rack spread: a maximal spread puts at least ``floor`` replicas of every partition in each
  top-level unit (water-filling the replication factor over the units' broker counts), so a unit
  whose brokers must hold more than the threshold on average leaves one of them above it (e.g.
  three data centres, one with fewer brokers: it holds a third of the bytes all the same).

Sound, not complete: when neither applies, balance may still be unreachable. Pure: no I/O.
"""

from __future__ import annotations

from ..model.intents import Intents, PlacementPolicy
from ..model.snapshot import ClusterSnapshot
from .topology import RackTree, Unit


def balance_unreachable(
    snapshot: ClusterSnapshot, intents: Intents, active: tuple[int, ...], trees: dict[str, RackTree]
) -> str | None:
    """Why no plan can meet the broker-balance threshold (None when this cannot be shown)."""
    policies = [q for q in intents.policies if q.balance.brokers]
    if not policies or not active:
        return None
    tol = min(q.balance.tolerance for q in policies)
    total = 0
    largest = None
    need: dict[tuple[str, Unit], float] = {}
    floors: dict[tuple[str, int], dict[Unit, int]] = {}
    by_topic: dict[str, PlacementPolicy | None] = {}
    for p in snapshot.partitions:  # one pass; the policy looked up once per topic
        if p.topic not in by_topic:
            by_topic[p.topic] = intents.policy_for(p.topic)
        policy = by_topic[p.topic]
        rf = (
            policy.replication_factor if policy is not None and policy.replication_factor else len(p.replicas)
        )
        total += rf * p.size_bytes
        if largest is None or p.size_bytes > largest.size_bytes:
            largest = p
        tree = trees.get(policy.name) if policy is not None else None
        if tree is None or policy is None:
            continue
        key = (policy.name, rf)
        if key not in floors:
            floors[key] = _floors(tree, rf)
        for unit, n in floors[key].items():
            need[(policy.name, unit)] = need.get((policy.name, unit), 0.0) + n * p.size_bytes
    threshold = (1 + tol) * total / len(active)
    if largest is not None and largest.size_bytes > threshold:
        return (
            f"partition {largest.name} ({largest.size_bytes} bytes) is larger than the threshold "
            f"{int(threshold)} bytes"
        )
    for (name, unit), nbytes in sorted(need.items()):
        members = trees[name].capacity.get(unit, 0)
        if members and nbytes / members > threshold:
            return (
                f"the rack spread puts at least {int(nbytes)} bytes in unit {'/'.join(unit)} of "
                f"{members} broker(s): {int(nbytes / members)} each on average, above the threshold "
                f"{int(threshold)} bytes"
            )
    return None


def _floors(tree: RackTree, rf: int) -> dict[Unit, int]:
    """The fewest replicas a maximal spread of ``rf`` replicas puts in each top-level unit."""
    units = tree.children.get((), ())
    caps = {u: tree.capacity.get(u, 0) for u in units}
    level = 0
    while sum(min(c, level + 1) for c in caps.values()) <= rf and level < rf:
        level += 1
    return {u: min(c, level) for u, c in caps.items()}
