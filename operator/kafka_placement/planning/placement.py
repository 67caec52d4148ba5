"""Placement of new partitions (``kafka-placement place``) honouring cordons, decommissions and policies.

Each new partition gets ``rf`` brokers: maximally spread over the policy's rack hierarchy when it has
one (otherwise over distinct racks when possible), preferred brokers first, then the brokers holding
the fewest replicas, on their emptiest allowed dir. The leader is the chosen broker leading the
fewest partitions, so leaders and followers spread like Kafka's own round-robin placement (the
operator's new-partition lane repairs new partitions with the hard goal instead:
reconcile/new_partitions.py). Pure: no I/O.
Arguments are checked as Kafka would: a legal topic name, partition numbers within int32, a
replication factor within int16, and at most ``MAX_NEW_PARTITIONS`` partitions per call.
"""

from __future__ import annotations

from ..model.errors import BadInputError, InfeasibleError
from ..model.intent_kinds import MAX_NEW_PARTITIONS
from ..model.intents import MAX_REPLICATION_FACTOR, Intents, validate_against
from ..model.jsonio import INT32_MAX, as_topic, brief_list
from ..model.plan import ANY_DIR, PartitionTarget, Plan
from ..model.snapshot import ClusterSnapshot
from .context import PlanningContext


def place(
    snapshot: ClusterSnapshot, intents: Intents, topic: str, count: int, rf: int | None = None, start: int = 0
) -> Plan:
    """Assignments for partitions ``start .. start+count-1`` of ``topic`` (in Kafka's plan format)."""
    as_topic(topic, "--topic")
    if not 1 <= count <= MAX_NEW_PARTITIONS:
        raise BadInputError(f"must be between 1 and {MAX_NEW_PARTITIONS}, got {count}", "--partitions")
    if not 0 <= start <= INT32_MAX:
        raise BadInputError(f"must be between 0 and {INT32_MAX}, got {start}", "--start-partition")
    if start + count - 1 > INT32_MAX:
        raise BadInputError(
            f"partitions {start}..{start + count - 1} go beyond Kafka's largest partition number {INT32_MAX}",
            "--partitions",
        )
    if rf is not None and not 1 <= rf <= MAX_REPLICATION_FACTOR:
        raise BadInputError(
            f"must be between 1 and {MAX_REPLICATION_FACTOR}, got {rf}", "--replication-factor"
        )
    validate_against(intents, snapshot)
    ctx = PlanningContext.of(snapshot, intents)
    a, e = ctx.assignment, ctx.eligibility
    policy = intents.policy_for(topic)
    factor = rf if rf is not None else (policy.replication_factor if policy is not None else None)
    if factor is None or factor < 1:
        raise BadInputError(
            "give --replication-factor (no policy declares one for this topic)", "--replication-factor"
        )
    existing = [p.partition for p in snapshot.partitions if p.topic == topic and p.partition >= start]
    if any(n < start + count for n in existing):
        raise BadInputError(f"partition {topic}-{min(existing)} already exists", "--start-partition")
    preferred = set(policy.preferred_brokers) if policy is not None else set()
    tree = ctx.trees.get(policy.name) if policy is not None else None
    receivers = [b for b in sorted(e.dirs) if e.may_receive(b) and a.best_dir(e, b, 0) is not None]

    def rank(b: int) -> tuple[object, ...]:
        return (b not in preferred, a.broker_replicas[b], a.broker_bytes[b], b)

    targets: list[PartitionTarget] = []
    for n in range(start, start + count):
        chosen: list[int] | None
        if tree is not None:
            chosen = tree.allocate(factor, (), lambda b: b in receivers, lambda bs: [rank(b) for b in bs])
        else:
            chosen = []
            pool = list(receivers)
            while len(chosen) < factor and pool:
                used = {ctx.soft_tree.path[b] for b in chosen}
                best = min(pool, key=lambda b: (rank(b)[0], ctx.soft_tree.path[b] in used, *rank(b)[1:]))
                pool.remove(best)
                chosen.append(best)
            if len(chosen) < factor:
                chosen = None
        if chosen is None:
            raise InfeasibleError(
                f"replication factor {factor} needs {factor} brokers that may take a new replica, "
                f"{len(receivers)} can (decommissioned: {brief_list(sorted(e.decommissioned))}, "
                f"cordoned: {brief_list(sorted(e.cordoned_brokers))})",
                "replication-factor",
                f"{topic}-{n}",
            )
        leader = min(chosen, key=lambda b: (a.broker_leaders[b], b))
        chosen.remove(leader)
        replicas = [leader, *chosen]
        dirs = [a.best_dir(e, b, 0) for b in replicas]
        a.add_partition((topic, n), replicas, list(dirs))
        targets.append(PartitionTarget(topic, n, tuple(replicas), tuple(d or ANY_DIR for d in dirs)))
    return Plan.of(targets)
