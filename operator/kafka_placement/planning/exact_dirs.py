"""Exact dirs for dir balance, broker by broker, on small clusters. Pure: no I/O, no clock.

With the replicas each broker holds fixed (the plan so far), dir balance is a separate problem per broker:
which of its dirs each of its replicas sits on, so that every dir that keeps data is within its threshold
(``shares.dir_thresholds``: the broker's bytes over those dirs are fixed, so the thresholds are too) and
every volume within its room under the disk headroom limit, copying the fewest bytes: a replica the
broker held before the plan copies its bytes when it leaves that dir (a local copy), a new one lands on
any dir for free. The dir balance goal (goals/dir_balance.py) answers it greedily, shedding each full
dir's excess; this answers it exactly, as a program of a few hundred binaries per broker solved by HiGHS
(``exact.run_program``, its deterministic bounds). Only replicas of the topics that ask for dir balance,
and new or already moved ones, change dirs, as the goal moves them; the others stay where they are.

``place`` applies the answer on the brokers given and returns the brokers it could not balance (no
solution within the bounds, or one that ``exact.dirs_met`` rejects in exact integers), which keep their dirs.
"""

from __future__ import annotations

from collections.abc import Iterable

from .context import PlanningContext
from .exact import MAX_VARIABLES, SLACK, Program, dirs_met, run_program
from .shares import dir_thresholds
from .state import Key


def place(ctx: PlanningContext, tolerance: float, brokers: Iterable[int]) -> list[int]:
    """The cheapest dirs within dir balance on each of ``brokers`` not within it already (of those with two
    dirs or more that keep data), set on the working assignment; returns the brokers left as they were."""
    left = []
    for b in brokers:
        if dirs_met(ctx, b, tolerance):
            continue  # (within balance already: any dir change would copy more)
        found = _solve(ctx, b, tolerance)
        if found is None or not _apply(ctx, b, tolerance, found):
            left.append(b)
    return left


def _solve(ctx: PlanningContext, broker: int, tolerance: float) -> dict[Key, str] | None:
    a, e = ctx.assignment, ctx.eligibility
    paths = e.keeping_dirs(broker)
    balanced = ctx.balanced_topics("log_dirs")
    top = dir_thresholds(a.dir_bytes, broker, paths, tolerance, e.sizes.get(broker))
    receiving = [d for d in paths if e.dir_may_receive(broker, d)]
    m = Program()
    choice: dict[Key, list[tuple[str, int]]] = {}
    bytes_in: dict[str, list[tuple[int, float]]] = {d: [] for d in paths}
    fixed = {d: 0 for d in paths}
    for key, now in a.by_broker[broker].items():
        if now not in fixed:
            continue  # (on a dir that keeps no data: the hard goal moves it off)
        p = ctx.snapshot.partition(*key)
        assert p is not None
        home = dict(zip(p.replicas, p.log_dirs, strict=True)).get(broker) if broker in p.replicas else None
        size = a.size[key]
        if key[0] not in balanced and now == home:
            fixed[now] += size  # (a replica the goal would not move)
            continue
        options = [d for d in receiving if d != home]
        if home in fixed and e.may_keep(broker, home, size):
            options.append(home)
        if now not in options:
            options.append(now)  # (where the plan put it: allowed there)
        vs = []
        for d in sorted(options):
            v = m.var(0.0 if home is None or d == home else float(p.size_bytes))
            vs.append((d, v))
            bytes_in[d].append((v, float(size)))
        choice[key] = vs
        m.row([(v, 1.0) for _, v in vs], 1.0, 1.0)
        if len(m.cost) > MAX_VARIABLES:
            return None
    if not choice:
        return None
    for d in paths:
        most = top[d] - fixed[d]
        m.row(bytes_in[d], float("-inf"), most - SLACK * max(top[d], 1.0))
    for volume, places in _volumes(ctx, broker, paths).items():
        held = sum(a.dir_bytes[(broker, d)] for d in places)
        terms = [t for d in places for t in bytes_in[d]]
        m.row(terms, float("-inf"), float(held + max(a.free[volume], 0) - sum(fixed[d] for d in places)))
    values = run_program(m, None).values
    if values is None:
        return None
    return {key: next(d for d, v in vs if values[v] > 0.5) for key, vs in choice.items()}


def _volumes(ctx: PlanningContext, broker: int, paths: list[str]) -> dict[tuple[int, str], list[str]]:
    a = ctx.assignment
    out: dict[tuple[int, str], list[str]] = {}
    for d in paths:
        v = a.vol.get((broker, d))
        if v is not None:
            out.setdefault(v, []).append(d)
    return out


def _apply(ctx: PlanningContext, broker: int, tolerance: float, found: dict[Key, str]) -> bool:
    """Set ``found``; undone, and False, unless the broker's dirs are then within balance and room."""
    a = ctx.assignment
    before = {key: list(a.dirs[key]) for key in found}
    paths = ctx.eligibility.keeping_dirs(broker)
    rooms = {d: a.room(broker, d) for d in paths}
    for key, d in found.items():
        dirs = list(a.dirs[key])
        dirs[a.replicas[key].index(broker)] = d
        if dirs != a.dirs[key]:
            a.set_placement(key, a.replicas[key], dirs)
    if dirs_met(ctx, broker, tolerance) and all(
        (r := a.room(broker, d)) is None or r >= min(rooms[d] or 0, 0) for d in paths
    ):
        return True  # (a volume above the limit before: no fuller than it was)
    for key, dirs in before.items():
        if a.dirs[key] != dirs:
            a.set_placement(key, a.replicas[key], dirs)
    return False
