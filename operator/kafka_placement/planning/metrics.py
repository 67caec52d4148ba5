"""Quality of a plan, measured against the snapshot: movement, lower bound, balance, violations.

``apply_plan`` replays a plan on a snapshot (what Kafka would hold afterwards); ``evaluate`` compares
before and after. The **lower bound** of bytes that must move, per scenario (each term is a byte count
no plan meeting every hard rule and every requested balance goal can avoid copying; a plan that leaves
a balance goal unmet, e.g. because of its move budget, may move less):

- ``forced``: for each partition, ``rf_target - (replicas that may stay where they are)`` copies of its
  size, where a replica may stay unless its broker is decommissioned or its dir drained; this covers
  decommission, drain and replication-factor growth.
- ``rackRepair``: for partitions breaking their policy's rack spread, the replicas that must move
  even when as many as possible are kept (the spread allocation keeps the most, level by level).
- ``brokerExcess``: bytes above ``(1 + tolerance) * mean`` on each broker that keeps data, summed
  (each such byte must leave its broker), when a policy asks for broker balance.
- ``dirExcess``: the same per dir within each broker, against an upper bound of the broker's final load.

Decommission and RF-growth copies never leave a broker that keeps data. Every other copy leaves one,
and broker ``b`` must lose at least ``max(brokerExcess_b, dirExcess_b, drained_b)`` bytes (one byte may
serve all three), so ``lowerBoundBytes = decommission + rfGrowth + max(drain + rackRepair + uncovered,
sum_b max(brokerExcess_b, dirExcess_b, drained_b))``, where ``uncovered`` is what drain and rack-repair
copies cannot take from each broker (at most its drained replicas and its replicas of partitions
breaking the spread). When broker balance is provably unreachable (``reach.py``) its terms are left
out: no plan meets it, and the bound must not exceed the optimum of the rules alone. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..model.intents import Intents, validate_against
from ..model.plan import ANY_DIR, Plan
from ..model.snapshot import ClusterSnapshot, PartitionState
from .reach import balance_unreachable
from .state import Eligibility
from .topology import RackTree


def apply_plan(snapshot: ClusterSnapshot, plan: Plan, source: str | None = None) -> ClusterSnapshot:
    """The snapshot after every move of ``plan`` completed and preferred leaders were elected."""
    plan.check_against(snapshot, source)
    targets = plan.by_key()
    parts: list[PartitionState] = []
    for p in snapshot.partitions:
        target = targets.get(p.key)
        if target is None:
            parts.append(p)
            continue
        t = target
        old = dict(zip(p.replicas, p.log_dirs, strict=True))
        dirs = tuple((old.get(b) if d == ANY_DIR else d) for b, d in zip(t.replicas, t.log_dirs, strict=True))
        parts.append(
            PartitionState(p.topic, p.partition, t.replicas, dirs, t.replicas[0], t.replicas, p.size_bytes)
        )
    return ClusterSnapshot(snapshot.brokers, tuple(parts), snapshot.cluster_id)


def _ratio(values: Sequence[float]) -> float | None:
    if not values:
        return None
    mean = sum(values) / len(values)
    return round(max(values) / mean, 4) if mean > 0 else None


def balance(
    snapshot: ClusterSnapshot, brokers: Sequence[int], drained: Iterable[tuple[int, str]] = ()
) -> dict[str, Any]:
    """max/mean of bytes, replicas and preferred leaders over ``brokers``; dirs: the worst broker."""
    bb = dict.fromkeys(brokers, 0)
    br = dict.fromkeys(brokers, 0)
    bl = dict.fromkeys(brokers, 0)
    skip = set(drained)
    db: dict[tuple[int, str], int] = {}
    for b in brokers:
        broker = snapshot.broker(b)
        for path in broker.dir_paths if broker is not None else ():
            if (b, path) not in skip:
                db[(b, path)] = 0
    for p in snapshot.partitions:
        if p.replicas[0] in bl:
            bl[p.replicas[0]] += 1
        for b, d in zip(p.replicas, p.log_dirs, strict=True):
            if b in bb:
                bb[b] += p.size_bytes
                br[b] += 1
            if d is not None and (b, d) in db:
                db[(b, d)] += p.size_bytes
    dir_ratios = [r for b in brokers if (r := _ratio([v for (x, _), v in db.items() if x == b])) is not None]
    return {
        "brokerBytesMaxMean": _ratio(list(bb.values())),
        "brokerBytesMax": max(bb.values(), default=0),
        "brokerBytesMean": round(sum(bb.values()) / len(bb), 1) if bb else 0,
        "replicasMaxMean": _ratio(list(br.values())),
        "leadersMaxMean": _ratio(list(bl.values())),
        "dirBytesMaxMeanWorstBroker": max(dir_ratios, default=None),
    }


def movement(before: ClusterSnapshot, after: ClusterSnapshot) -> dict[str, int]:
    """What executing the change copies: network replica moves, intra-broker dir moves, reorders."""
    out = dict.fromkeys(
        (
            "partitionsChanged",
            "replicaMoves",
            "intraBrokerMoves",
            "leaderChanges",
            "networkBytes",
            "intraBrokerBytes",
            "bytesToMove",
        ),
        0,
    )
    for p in before.partitions:
        q = after.partition(p.topic, p.partition)
        if q is None or (q.replicas == p.replicas and q.log_dirs == p.log_dirs):
            continue
        out["partitionsChanged"] += 1
        old = dict(zip(p.replicas, p.log_dirs, strict=True))
        for b, d in zip(q.replicas, q.log_dirs, strict=True):
            if b not in old:
                out["replicaMoves"] += 1
                out["networkBytes"] += p.size_bytes
            elif d is not None and old[b] is not None and d != old[b]:
                out["intraBrokerMoves"] += 1
                out["intraBrokerBytes"] += p.size_bytes
        if q.replicas[0] != p.replicas[0]:
            out["leaderChanges"] += 1
    out["bytesToMove"] = out["networkBytes"] + out["intraBrokerBytes"]
    return out


def _trees(snapshot: ClusterSnapshot, intents: Intents, elig: Eligibility) -> dict[str, RackTree]:
    receivers = [b for b in elig.dirs if elig.may_receive(b)]
    return {
        p.name: RackTree.of(elig.racks, p.rack_awareness, receivers)
        for p in intents.policies
        if p.rack_awareness is not None
    }


def violations(before: ClusterSnapshot, after: ClusterSnapshot, intents: Intents) -> dict[str, int]:
    """Hard-rule violations in ``after``; ``cordoned`` counts replicas newly placed on cordoned dirs;
    ``capacity`` counts dirs whose bytes arriving minus bytes leaving exceed their usable bytes."""
    elig = Eligibility.of(before, intents)
    trees = _trees(before, intents, elig)
    out = dict.fromkeys(
        ("decommissioned", "drained", "cordoned", "replicationFactor", "rackSpread", "capacity"), 0
    )
    used: dict[tuple[int, str], int] = {}
    for p in after.partitions:
        prior = before.partition(p.topic, p.partition)
        had = dict(zip(prior.replicas, prior.log_dirs, strict=True)) if prior is not None else {}
        policy = intents.policy_for(p.topic)
        for b, d in zip(p.replicas, p.log_dirs, strict=True):
            if b in elig.decommissioned:
                out["decommissioned"] += 1
            if d is not None and (b, d) in elig.drained:
                out["drained"] += 1
            if d is not None and (b, d) in elig.cordoned and had.get(b, "") != d:
                out["cordoned"] += 1
            if d is not None and had.get(b, "") != d:
                used[(b, d)] = used.get((b, d), 0) + p.size_bytes
        now = dict(zip(p.replicas, p.log_dirs, strict=True))
        for b, d in had.items():  # bytes leaving a dir free its room (the planner's ``Assignment.free``)
            if d is not None and now.get(b, "") != d:
                used[(b, d)] = used.get((b, d), 0) - p.size_bytes
        if policy is not None and policy.replication_factor and len(p.replicas) != policy.replication_factor:
            out["replicationFactor"] += 1
        tree = trees.get(policy.name) if policy is not None else None
        if tree is not None and tree.violation(p.replicas) is not None:
            out["rackSpread"] += 1
    for dk, incoming in used.items():
        cap = elig.capacity.get(dk)
        if cap is not None and incoming > cap:
            out["capacity"] += 1
    return out


def lower_bound(snapshot: ClusterSnapshot, intents: Intents) -> dict[str, int]:
    """The bytes any valid plan must copy (module docstring); ``total`` is the bound."""
    elig = Eligibility.of(snapshot, intents)
    trees = _trees(snapshot, intents, elig)
    decom = drain = growth = rack = 0
    musts: dict[tuple[object, ...], int | None] = {}
    rack_on: dict[int, int] = {}  # bytes on each broker of partitions breaking their rack spread
    active = elig.active_brokers
    final_total = 0
    for p in snapshot.partitions:
        policy = intents.policy_for(p.topic)
        rf = (
            policy.replication_factor if policy is not None and policy.replication_factor else len(p.replicas)
        )
        final_total += rf * p.size_bytes
        stay = [b for b, d in zip(p.replicas, p.log_dirs, strict=True) if elig.may_keep(b, d, p.size_bytes)]
        on_decom = sum(1 for b in p.replicas if b in elig.decommissioned)
        on_drain = len(p.replicas) - len(stay) - on_decom
        copies = max(0, rf - len(stay))
        d_copies = min(on_decom, copies)
        dr_copies = min(on_drain, copies - d_copies)
        decom += d_copies * p.size_bytes
        drain += dr_copies * p.size_bytes
        growth += (copies - d_copies - dr_copies) * p.size_bytes
        tree = trees.get(policy.name) if policy is not None else None
        if tree is not None and len(stay) >= 1 and tree.violation(stay[:rf]) is not None:
            must = rack_must_move(tree, rf, stay, musts)
            if must is not None:
                rack += max(0, must - copies) * p.size_bytes
                for b in stay:
                    rack_on[b] = rack_on.get(b, 0) + p.size_bytes
    broker_excess: dict[int, float] = dict.fromkeys(active, 0.0)
    dir_excess: dict[int, float] = dict.fromkeys(active, 0.0)
    policies = [q for q in intents.policies if q.balance.brokers]
    loads = balance_loads(snapshot, active)
    raw_loads = dict(loads)
    for p in snapshot.partitions:  # replicas a lower RF drops leave their broker without a copy
        policy = intents.policy_for(p.topic)
        if policy is not None and policy.replication_factor and policy.replication_factor < len(p.replicas):
            for b in p.replicas:
                if b in loads:
                    loads[b] -= p.size_bytes
    bthreshold = 0.0
    unreachable = balance_unreachable(snapshot, intents, active, trees) if policies else None
    if policies and active and unreachable is None:
        tol = min(q.balance.tolerance for q in policies)
        bthreshold = (1 + tol) * final_total / len(active)
        broker_excess = {b: max(0.0, loads[b] - bthreshold) for b in active}
    dir_policies = [q for q in intents.policies if q.balance.log_dirs]
    if dir_policies:
        tol = min(q.balance.tolerance for q in dir_policies)
        all_dirs: dict[tuple[int, str], int] = {}
        for p in snapshot.partitions:
            for x, d in zip(p.replicas, p.log_dirs, strict=True):
                if d is not None:
                    all_dirs[(x, d)] = all_dirs.get((x, d), 0) + p.size_bytes
        for b in active:
            paths = [d for d in elig.dirs[b] if (b, d) not in elig.drained and (b, d) not in elig.offline]
            if len(paths) < 2:
                continue
            # An upper bound of the broker's final load: at most the threshold when it is balanced,
            # otherwise everything forced to move could land on it.
            upper = max(raw_loads[b], bthreshold) if policies else raw_loads[b] + decom + growth + drain
            dthreshold = (1 + tol) * upper / len(paths)
            dir_excess[b] = sum(max(0.0, all_dirs.get((b, d), 0) - dthreshold) for d in paths)
    drained_on: dict[int, int] = dict.fromkeys(active, 0)
    for p in snapshot.partitions:
        policy = intents.policy_for(p.topic)
        if policy is not None and policy.replication_factor and policy.replication_factor < len(p.replicas):
            continue  # a lower RF may simply drop the drained replica
        for x, d in zip(p.replicas, p.log_dirs, strict=True):
            if x in drained_on and d is not None and (x, d) in elig.drained:
                drained_on[x] += p.size_bytes
    # Bytes leaving each broker that keeps data: at least its broker excess, its dirs' excess and its
    # drained dirs (the same bytes may serve all three); rack repairs may also be those bytes.
    leave = {b: max(broker_excess[b], dir_excess[b], drained_on[b]) for b in active}
    leaving = int(sum(leave.values()))
    # Drain and rack-repair copies can serve a broker's leaving bytes only up to what they can take
    # from it (its drained replicas, its replicas of partitions breaking the spread); the rest of its
    # excess leaves by moves of their own.
    uncovered = int(sum(max(0.0, leave[b] - drained_on[b] - rack_on.get(b, 0)) for b in active))
    total = decom + growth + max(drain + rack + uncovered, leaving)
    return {
        "total": total,
        "decommission": decom,
        "rfGrowth": growth,
        "drain": drain,
        "rackRepair": rack,
        "brokerExcess": int(sum(broker_excess.values())),
        "dirExcess": int(sum(dir_excess.values())),
        "leavingBrokers": leaving,
        "uncoveredByRepairs": uncovered,
        "balanceUnreachable": 0 if unreachable is None else 1,
    }


def rack_must_move(
    tree: RackTree, rf: int, stay: Sequence[int], memo: dict[tuple[object, ...], int | None]
) -> int | None:
    """How many of ``rf`` replicas a maximal spread keeping the most of ``stay`` must place anew (None:
    too few brokers). With every broker usable and a fixed rank this depends only on ``rf`` and the
    (unit path, member?) multiset of ``stay``, so it is computed once per such combination."""
    key = (id(tree), rf, *sorted((tree.path[b], b in tree.members) for b in stay))
    if key not in memo:
        kept = tree.allocate(rf, stay, lambda b: True, lambda b: (b,))
        memo[key] = None if kept is None else rf - len(set(kept) & set(stay))
    return memo[key]


def balance_loads(snapshot: ClusterSnapshot, brokers: Sequence[int]) -> dict[int, int]:
    loads = dict.fromkeys(brokers, 0)
    for p in snapshot.partitions:
        for b in p.replicas:
            if b in loads:
                loads[b] += p.size_bytes
    return loads


def evaluate(snapshot: ClusterSnapshot, plan: Plan, intents: Intents | None = None) -> dict[str, Any]:
    """Every metric of ``plan`` on ``snapshot`` (intent-dependent ones are null without intents).

    The intents are checked against the snapshot as ``plan`` checks them (unknown brokers or dirs,
    overlapping policies: BadInputError naming the intents file and document)."""
    if intents is not None:
        validate_against(intents, snapshot)
    after = apply_plan(snapshot, plan)
    known = intents if intents is not None else Intents()
    elig = Eligibility.of(snapshot, known)
    active = list(elig.active_brokers)
    moved = movement(snapshot, after)
    out: dict[str, Any] = {"planId": plan.plan_id, **moved}
    if intents is not None:
        lb = lower_bound(snapshot, intents)
        out["brokerBalanceUnreachable"] = balance_unreachable(
            snapshot,
            intents,
            elig.active_brokers,
            _trees(snapshot, intents, Eligibility.of(snapshot, intents)),
        )
        out["lowerBoundBytes"] = lb["total"]
        out["lowerBound"] = lb
        out["bytesOverLowerBound"] = round(moved["bytesToMove"] / lb["total"], 4) if lb["total"] else None
    else:
        out["lowerBoundBytes"] = None
    out["balanceBefore"] = balance(snapshot, active, elig.drained)
    out["balanceAfter"] = balance(after, active, elig.drained)
    if intents is not None:
        out["violationsBefore"] = violations(snapshot, snapshot, intents)
        out["violationsAfter"] = violations(snapshot, after, intents)
        out["hardViolationsAfter"] = sum(out["violationsAfter"].values())
    out["failureSpread"] = failure_spread(after, active)
    return out


def failure_spread(snapshot: ClusterSnapshot, brokers: Sequence[int]) -> dict[str, float]:
    """For each broker, over how many other brokers the followers of its led partitions spread."""
    peers: dict[int, set[int]] = {b: set() for b in brokers}
    for p in snapshot.partitions:
        if p.replicas[0] in peers:
            peers[p.replicas[0]].update(p.replicas[1:])
    counts = [len(v) for v in peers.values() if v]
    if not counts:
        return {"min": 0, "mean": 0.0}
    return {"min": min(counts), "mean": round(sum(counts) / len(counts), 2)}
