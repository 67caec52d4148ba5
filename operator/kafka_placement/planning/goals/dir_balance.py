"""Soft goal: bytes balanced across the log dirs of each broker (intra-broker moves, KIP-113).

Per broker, over its dirs that keep data (not drained, online): met when max/mean <= 1 + tolerance. Where
the broker's volumes differ in size (``Eligibility.sizes``) a dir's load is its share of its volume and
the mean is the broker's bytes over its volumes' size: each dir's threshold is (1 + tolerance) x that mean
x its volume's size (a small disk is not filled to match a big one); with equal volumes the same as bytes.
An over-full dir sheds its excess to the least-loaded dir of the same broker that may receive
(not cordoned) and stays under the threshold — a local copy, no network traffic, and no change to
the broker's replica list, so every earlier goal accepts it. Only topics whose policy sets
``balance.logDirs`` move. Replicas the plan brings to the dir anyway (new to the broker, or already
leaving another dir of it) go first: they land on another dir for no extra copy, where moving a replica
the dir already holds costs a local copy of its bytes. Before any of that, replicas the plan copies to
other brokers are sent where they even a broker's dirs out for no bytes at all (goals/dir_free.py).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from itertools import chain

from ...model.intents import Intents
from ..context import PlanningContext, Verdict, balance_verdict
from ..plan_summary import PlanSummary
from ..shares import dir_thresholds as thresholds
from ..state import Key
from .dir_free import even_dirs_for_free


class DirBalanceGoal:
    """Bytes per dir within each broker: max/mean <= 1 + tolerance."""

    name = "DirBalance"
    is_hard = False

    def accepts(self, ctx: PlanningContext, key: Key, replicas: Sequence[int]) -> bool:
        return True  # leader reorders keep every replica in its dir

    def verdict(self, intents: Intents, summary: PlanSummary) -> Verdict | None:
        """Bytes max/mean over the dirs of the worst broker after the plan."""
        return balance_verdict(intents, "log_dirs", summary.balance_after.dir_bytes_max_mean_worst_broker)

    def optimize(self, ctx: PlanningContext) -> None:
        tol = ctx.tolerance("log_dirs")
        if tol is None:
            return
        balanced = ctx.balanced_topics("log_dirs")
        even_dirs_for_free(ctx, tol, balanced)  # first what evens dirs out for no bytes
        for broker in ctx.eligibility.active_brokers:
            self._balance_broker(ctx, broker, tol, balanced)

    def _balance_broker(
        self, ctx: PlanningContext, broker: int, tol: float, balanced: frozenset[str]
    ) -> None:
        a, e = ctx.assignment, ctx.eligibility
        paths = e.keeping_dirs(broker)
        if len(paths) < 2:
            return
        sizes = e.sizes.get(broker)
        threshold = thresholds(a.dir_bytes, broker, paths, tol, sizes)
        receivers = [p for p in paths if e.dir_may_receive(broker, p)]
        load = _load(a.dir_bytes, broker, sizes)
        over = [p for p in sorted(paths, key=lambda p: -load(p)) if a.dir_bytes[(broker, p)] > threshold[p]]
        # A dir above the threshold never receives (a move keeps its destination at or under it): what
        # each of them holds is read in one pass over the broker's replicas, before any move.
        held_on: dict[str | None, list[Key]] = {p: [] for p in over}
        for key, at in a.by_broker[broker].items():
            found = held_on.get(at)
            if found is not None and key[0] in balanced:
                found.append(key)
        for path in over:
            free: list[tuple[int, Key]] = []  # arriving on this dir with the plan: another dir costs nothing
            costly: list[tuple[int, Key]] = []  # on this dir in the snapshot: moving it is a local copy
            for key in held_on[path]:
                # a partition no goal set is where the snapshot has it (no lookup needed)
                held = key not in a.touched or ctx.held_dir(key, broker) == (True, path)
                (costly if held else free).append((a.size[key], key))
            for movable in (free, costly):
                movable.sort()
                while a.dir_bytes[(broker, path)] > threshold[path] and movable:
                    excess = a.dir_bytes[(broker, path)] - threshold[path]
                    split = bisect.bisect_right(movable, (int(excess), ("\U0010ffff", 1 << 62)))
                    # within the excess, largest first; then the smallest above it (lazily: the
                    # first replica that moves ends the scan, a list of every index cost O(dir) per move)
                    for i in chain(range(split - 1, -1, -1), range(split, len(movable))):
                        size, key = movable[i]
                        if self._move(ctx, key, broker, path, size, threshold, receivers):
                            movable.pop(i)
                            break
                    else:
                        break

    def _move(
        self,
        ctx: PlanningContext,
        key: Key,
        broker: int,
        src: str,
        size: int,
        threshold: Mapping[str, float],
        receivers: list[str],
    ) -> bool:
        a = ctx.assignment
        policy = a.policy(key)
        if policy is None or not ctx.within_budget(policy, size):
            return False
        load = _load(a.dir_bytes, broker, ctx.eligibility.sizes.get(broker))
        for dest in sorted(receivers, key=load):
            if dest == src:
                continue
            if a.dir_bytes[(broker, dest)] + size > threshold[dest]:
                return False
            if not a.fits(broker, dest, size):
                continue
            a.move(key, a.replicas[key].index(broker), broker, dest)
            ctx.charge(policy, size)
            return True
        return False


def _load(
    dir_bytes: Mapping[tuple[int, str], int], broker: int, sizes: Mapping[str, int] | None
) -> Callable[[str], float]:
    """A dir's load: its bytes, or its share of its volume where the volumes differ (``sizes``)."""
    if sizes is None:
        return lambda p: dir_bytes[(broker, p)]
    return lambda p: dir_bytes[(broker, p)] / sizes[p]
