"""Room on full dirs: an ejection search for partitions the greedy packing could not place.

The hard goal places the replicas that must move largest first on the least-loaded brokers. With
little spare room (a few percent) that greedy packing can leave a partition with no dir that fits
although an exact packing exists. Before declaring it infeasible (exit 3), ``eject_for`` picks a dir a
replica of it could use, on a broker every rule allows, and the fewest bytes of replicas *this plan*
placed there (newcomers: they are being copied anyway, so placing them elsewhere costs no bytes) whose
removal makes it fit; their partitions go back to their snapshot placement and are placed again
later (a bounded ejection-chain search, as in bin packing). Partitions the snapshot already holds
there are never touched. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable

from .context import PlanningContext
from .state import Key


def newcomers(ctx: PlanningContext, broker: int, path: str) -> list[Key]:
    """Partitions with a replica on ``broker``/``path`` placed by this plan (not there in the snapshot)."""
    a = ctx.assignment
    out = []
    for key, at in a.by_broker[broker].items():
        p = ctx.snapshot.partition(*key)
        if p is None:
            continue
        if at == path and dict(zip(p.replicas, p.log_dirs, strict=True)).get(broker) != path:
            out.append(key)
    return out


def eject_for(
    ctx: PlanningContext,
    key: Key,
    tabu: dict[Key, int],
    limit: int,
    changing: Callable[[Key], bool],
) -> list[Key]:
    """Partitions sent back to their snapshot placement so a replica of ``key`` fits on some allowed
    dir (the dir needing the fewest bytes moved; partitions ejected ``limit`` times are not chosen
    again); empty when no dir can be freed."""
    a, e = ctx.assignment, ctx.eligibility
    size = a.size[key]
    holders = set(a.replicas[key])
    tree = ctx.tree_for(key)
    keepers = [b for b in a.replicas[key] if ctx.eligibility.broker_may_keep(b)]
    best: tuple[tuple[int, int, int], int, list[Key]] | None = None  # (bytes, count, broker), ...
    for b in sorted(e.dirs):
        if b in holders or not e.may_receive(b):
            continue
        if tree is not None and len(keepers) < len(holders):
            cand = [*keepers, b]
            if tree.violation(cand) is not None and tree.violation(keepers) is None:
                continue
        for path in e.dirs[b]:
            free = a.room(b, path)
            if free is None or free >= size or not e.dir_may_receive(b, path):
                continue
            chosen = _cover(ctx, newcomers(ctx, b, path), size - free, key, tabu, limit)
            if chosen is None:
                continue
            rank = (sum(a.size[k] for k in chosen), len(chosen), b)
            if best is None or rank < best[0]:
                best = (rank, b, chosen)
    if best is None:
        return [key] if _shift_for(ctx, key, changing) else []
    _, _, chosen = best
    for k in chosen:
        p = ctx.snapshot.partition(*k)
        assert p is not None
        a.set_placement(k, list(p.replicas), list(p.log_dirs))
        tabu[k] = tabu.get(k, 0) + 1
    return chosen


def _cover(
    ctx: PlanningContext, keys: list[Key], need: int, key: Key, tabu: dict[Key, int], limit: int
) -> list[Key] | None:
    """Few, small partitions among ``keys`` whose sizes sum to at least ``need``: the smallest single
    one that does, else the largest first."""
    a = ctx.assignment
    ok = sorted((a.size[k], k) for k in keys if k != key and tabu.get(k, 0) < limit)
    single = next((k for s, k in ok if s >= need), None)
    if single is not None:
        return [single]
    chosen, total = [], 0
    for s, k in reversed(ok):
        chosen.append(k)
        total += s
        if total >= need:
            return chosen
    return None


def _shift_for(ctx: PlanningContext, key: Key, changing: Callable[[Key], bool]) -> bool:
    """Free a dir for ``key`` by a local move: the smallest replica of a partition the plan changes
    anyway (``changing``: it breaks a rule) moves to another dir of its broker with room. Costs its
    bytes (a local copy); whether one moved."""
    a, e = ctx.assignment, ctx.eligibility
    size = a.size[key]
    holders = set(a.replicas[key])
    best: tuple[int, Key, int, str] | None = None
    for b in sorted(e.dirs):
        if b in holders or not e.may_receive(b):
            continue
        for path in e.dirs[b]:
            free = a.room(b, path)
            if free is None or free >= size or not e.dir_may_receive(b, path):
                continue
            for other in sorted(a.by_broker[b]):
                s = a.size[other]
                if other == key or s < size - free or (best is not None and s >= best[0]):
                    continue
                if a.by_broker[b][other] != path or not changing(other):
                    continue
                to = a.best_dir(e, b, s, exclude=[path])
                if to is not None:
                    best = (s, other, b, to)
    if best is None:
        return False
    _, other, b, to = best
    a.move(other, a.replicas[other].index(b), b, to)
    return True
