"""A partition's target as every placer builds it: its replication factor, the order of its replicas and
the dirs on its target brokers. Shared by the replica placement goal (goals/replica_placement.py) and the
exact program (exact.py), which builds on that goal's rules: one definition below both, no import circle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .context import PlanningContext
from .state import Key


def order_replicas(current: Sequence[int], target: Sequence[int]) -> list[int]:
    """Target brokers in the current slots: kept replicas stay put, newcomers take freed slots."""
    tset = set(target)
    newcomers = [b for b in target if b not in set(current)]
    out: list[int] = []
    for b in current:
        if b in tset:
            out.append(b)
        elif newcomers:
            out.append(newcomers.pop(0))
    out.extend(newcomers)
    if out and out[0] not in set(current):
        for i, b in enumerate(out):
            if b in set(current):  # a kept replica leads rather than a replica still catching up
                out[0], out[i] = out[i], out[0]
                break
    return out


def target_dirs(
    ctx: PlanningContext, where: Mapping[int, str | None], target: Sequence[int], size: int
) -> list[str | None]:
    """The dirs of a partition's ``target`` brokers, its replicas now on ``where`` (broker -> dir): a
    kept replica stays on its dir when it may, else takes its broker's ``best_dir`` off that dir; a new
    one its broker's ``best_dir`` (None: no dir with room)."""
    e, a = ctx.eligibility, ctx.assignment
    out: list[str | None] = []
    for b in target:
        if b in where:
            d = where[b]
            if d is not None and not e.may_keep(b, d, size):
                d = a.best_dir(e, b, size, exclude=[d])
            out.append(d)
        else:
            out.append(a.best_dir(e, b, size))
    return out


def replication_factor(ctx: PlanningContext, key: Key) -> int:
    """The partition's target RF: its policy's, else the number of replicas it has in the snapshot."""
    policy = ctx.assignment.topic_policy.get(key[0])
    if policy is not None and policy.replication_factor:
        return policy.replication_factor
    return len(ctx.snapshot.at(key).replicas)  # type: ignore[union-attr]
