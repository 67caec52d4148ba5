"""Hard goal: each dir a LogDirCordon asks to relieve (``relieveBelowShare``) ends under that share.

Disk pressure, healed by moving as few bytes as will do: for each such dir, whose volume is of known
size, replicas leave it until the volume's planned bytes are at most ``floor(share x size)``
(``headroom.limit_bytes``). Which ones: while bytes are still to shed, the smallest replica that alone
sheds the rest (one move finishes it, the fewest bytes), else the largest one below the rest. Where each
goes: another dir of the same broker on another volume first (a local copy, KIP-113: no network traffic,
the broker's replica list unchanged, so every earlier goal accepts it), else another broker, the least
loaded whose place every earlier goal accepts (rack spread, cordons, decommissions, replication factor),
on its least-loaded dir with room under ``maxDiskShare``. A partition with no leader (nothing to copy
from) stays. The same intent cordons the dir, so no later goal brings a replica back.

A dir that cannot be relieved (no room under the limit anywhere the rules allow, or a volume of unknown
size) refuses the plan: ``DiskHeadroomError`` (exit 3; the operator's ``Blocked``, reason
``DiskHeadroom``) naming the dir, the share it would be left at and the share asked: the sign to add
disks. Pure: no I/O, no clock.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from ...model.errors import DiskHeadroomError
from ...model.intents import Intents
from .. import headroom
from ..context import PlanningContext, Verdict
from ..plan_summary import PlanSummary
from ..state import Key


class DiskReliefGoal:
    """Each relieved dir's volume at most ``relieveBelowShare`` full after the plan."""

    name = "DiskRelief"
    is_hard = True

    def accepts(self, ctx: PlanningContext, key: Key, replicas: Sequence[int]) -> bool:
        return True  # the relieved dirs are cordoned: no later goal may bring a replica back to them

    def verdict(self, intents: Intents, summary: PlanSummary) -> Verdict | None:
        return None  # a plan that leaves a relieved dir above its share is refused, never made

    def optimize(self, ctx: PlanningContext) -> None:
        for (broker, path), share in sorted(ctx.eligibility.relieve.items()):
            self._relieve(ctx, broker, path, share)

    def _relieve(self, ctx: PlanningContext, broker: int, path: str, share: float) -> None:
        e, a = ctx.eligibility, ctx.assignment
        volume = e.volume.get((broker, path))
        size = e.volumes.get(volume) if volume is not None else None
        if volume is None or size is None:
            raise DiskHeadroomError(
                f"broker {broker} log dir {path}: its volume's size is unknown (totalBytes 0): it cannot "
                f"be relieved below {share:.0%}",
                headroom.RULE,
            )
        # the volume's planned bytes are the limit's minus its room left (``Assignment.free``)
        cap, target = headroom.limit_bytes(size.total, e.share), headroom.limit_bytes(size.total, share)

        def excess() -> int:
            return cap - a.free[volume] - target

        if excess() <= 0:
            return
        movable = sorted(
            (a.size[key], key)
            for key, at in a.by_broker[broker].items()
            if at == path and self._has_leader(ctx, key)
        )
        while excess() > 0 and movable:
            need = excess()
            i = bisect.bisect_left(movable, (need, ("", -1)))
            pick = i if i < len(movable) else len(movable) - 1  # one that finishes it, else the largest
            weight, key = movable.pop(pick)
            self._move(ctx, key, broker, path, volume, weight)  # (one that cannot move stays)
        if excess() > 0:
            left = headroom.planned_share(size, a.free[volume], e.share)
            raise DiskHeadroomError(
                f"broker {broker} log dir {path} cannot be relieved below {share:.0%} of its volume: the "
                f"plan leaves it at {left:.1%}, with no room under maxDiskShare {e.share:.0%} on the "
                "broker's other volumes or on another broker the rules allow for the rest (add disks or "
                "brokers)",
                headroom.RULE,
            )

    @staticmethod
    def _has_leader(ctx: PlanningContext, key: Key) -> bool:
        original = ctx.snapshot.partition(*key)
        return original is None or original.leader is not None

    @staticmethod
    def _move(
        ctx: PlanningContext, key: Key, broker: int, path: str, volume: tuple[int, str], size: int
    ) -> bool:
        e, a = ctx.eligibility, ctx.assignment
        reps = a.replicas[key]
        index = reps.index(broker)
        local = [
            d
            for d in e.dirs[broker]
            if d != path
            and e.volume.get((broker, d)) != volume
            and e.dir_may_receive(broker, d)
            and a.fits(broker, d, size)
        ]
        if local:
            a.move(key, index, broker, min(local, key=lambda d: (a.dir_bytes[(broker, d)], d)))
            return True
        for dest in sorted(e.dirs, key=lambda b: (a.broker_bytes.get(b, 0), b)):
            if dest in reps or not e.may_receive(dest):
                continue
            candidate = list(reps)
            candidate[index] = dest
            if not ctx.accepts(key, candidate):
                continue
            there = a.best_dir(e, dest, size)
            if there is not None:
                a.move(key, index, dest, there)
                return True
        return False
