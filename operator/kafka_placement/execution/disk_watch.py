"""The executor's disk watch: how full the dirs its moves write to are, and what it holds (pure, no I/O).

Producers write too while replicas move, and the plan's headroom (planning/headroom.py, the one
definition: ``maxDiskShare``, its hard stop) was computed from a snapshot that cannot see them. So every
tick the executor looks at the dirs its moves write to, from the DescribeLogDirs it already reads for
progress (execution/view.py: the brokers holding or receiving the partitions it reads; each dir reports
its filesystem's ``totalBytes`` and ``usableBytes``, so a dir's share is its volume's). A dir of unknown
size (``totalBytes`` 0, or not reported) has no limit, as in planning.

- **Where a move writes**: a replica it adds writes into the dir the plan names on that broker (when the
  plan says ``any``: the dir the new replica is seen in, else any dir of that broker); a replica it moves
  between dirs of one broker writes into its target dir. The first is governed by the receiving broker's
  ``follower.replication.throttled.rate``, the second by its ``replica.alter.log.dirs.io.max.bytes.per.
  second`` (kafka/throttles.py).
- **Deferred**: a candidate that would write into a dir above ``maxDiskShare`` (or through a throttle held
  on its broker) is not submitted this tick; it stays pending, in execution order.
- **Held**: moves in flight into a dir above the hard stop (``headroom.hard_stop``), or above the limit
  and passing the hard stop within ``AHEAD`` ticks if it keeps rising as it did since the last one, are
  held: the throttle that governs them is lowered to ``TRICKLE`` bytes/s on that broker (every move it
  governs there slows with them). Kafka meters a throttle over its quota window (11 s by default) and a
  follower's fetch brings up to ``replica.fetch.max.bytes`` (1 MiB by default) at once, so a held move
  still copies about one such fetch per window: a trickle (about 90 KiB/s per partition by default),
  bounded by what the held moves have left to copy. Never a revert, never a move submitted again. A held
  dir stays held until it is back under ``maxDiskShare`` (or no move in flight writes into it); then the
  rate it had before the hold is put back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..kafka.throttles import DIR_RATE, FOLLOWER_RATE
from ..kafka.types import LogDirInfo
from ..model.plan import ANY_DIR
from ..planning.headroom import Volume, hard_stop, limit_bytes
from .record import ExecutionPlan
from .view import TickView

DirKey = tuple[int, str]
RateKey = tuple[int, str]  # (broker, throttle config)

TRICKLE = 1024  # bytes/s a held move may still copy (a throttle, never a revert)
AHEAD = 3  # ticks looked ahead: a hold takes effect a moment after the read it is decided from, and a
# loaded machine reads late (2 let a producer at 6%/s of a dir pass the hard stop 0.25 s before the hold)
REPLICATION = FOLLOWER_RATE  # the throttle of a replica copied from another broker
DIR_MOVE = DIR_RATE  # the throttle of a replica copied between dirs of one broker

__all__ = [
    "AHEAD",
    "DIR_MOVE",
    "REPLICATION",
    "TRICKLE",
    "DiskDecision",
    "Write",
    "decide",
    "usage",
    "writes",
]


@dataclass(frozen=True, slots=True)
class Write:
    """One replica a move writes: plan index, broker, dir (None: not known yet, any dir of the broker)
    and the throttle config that governs it there (``REPLICATION`` or ``DIR_MOVE``)."""

    move: int
    broker: int
    path: str | None
    config: str


@dataclass(frozen=True)
class DiskDecision:
    """What one tick does about the disks: candidates deferred (-> the dir that defers them), dirs held
    (-> the moves in flight into them), the broker throttles to keep at ``TRICKLE``, and the dirs the
    moves in flight write into with their usage (watched: the record keeps them for the next tick's rise
    and the metric)."""

    deferred: dict[int, DirKey] = field(default_factory=dict)
    held: dict[DirKey, list[int]] = field(default_factory=dict)
    hold: frozenset[RateKey] = frozenset()
    watched: dict[DirKey, Volume] = field(default_factory=dict)
    above: frozenset[DirKey] = frozenset()  # dirs above maxDiskShare (no new write into them)


def usage(dirs: Mapping[int, Iterable[LogDirInfo]]) -> dict[DirKey, Volume]:
    """The online dirs of known size among those DescribeLogDirs reported."""
    return {
        (b, d.path): Volume(d.total_bytes, d.usable_bytes)
        for b, infos in dirs.items()
        for d in infos
        if d.online and d.total_bytes > 0
    }


def writes(plan: ExecutionPlan, i: int, view: TickView) -> list[Write]:
    """The replicas plan partition ``i`` writes, and where (module docstring)."""
    t = plan.targets[i]
    out: list[Write] = []
    for b, d in zip(t.replicas, t.log_dirs, strict=True):
        if b in plan.adding[i]:
            path = d if d != ANY_DIR else view.replica(t.topic, t.partition, b).current
            out.append(Write(i, b, path, REPLICATION))
        elif b in plan.dir_moving[i]:
            out.append(Write(i, b, d, DIR_MOVE))
    return out


def decide(
    share: float,
    use: Mapping[DirKey, Volume],
    previous: Mapping[DirKey, int],
    held_before: Iterable[DirKey],
    active: Sequence[Write],
    candidates: Sequence[Write],
) -> DiskDecision:
    """Defer and hold per the module docstring. ``use``: this tick's dirs; ``previous``: the used bytes of
    the dirs watched last tick; ``held_before``: the dirs held after the last tick; ``active`` and
    ``candidates``: what the moves in flight and those that may be submitted write."""
    stop = hard_stop(share)
    above = frozenset(k for k, u in use.items() if u.used > limit_bytes(u.total, share))
    stopping = {
        k
        for k, u in use.items()
        if u.used > limit_bytes(u.total, stop)
        or (
            k in above
            and u.used + AHEAD * max(u.used - previous.get(k, u.used), 0) > limit_bytes(u.total, stop)
        )
    }
    was_held = set(held_before)
    by_broker: dict[int, list[DirKey]] = {}
    for k in use:
        by_broker.setdefault(k[0], []).append(k)

    def dirs_of(w: Write) -> list[DirKey]:
        if w.path is None:
            return sorted(by_broker.get(w.broker, ()))
        return [(w.broker, w.path)] if (w.broker, w.path) in use else []

    held: dict[DirKey, list[int]] = {}
    hold: dict[RateKey, DirKey] = {}
    watched: dict[DirKey, Volume] = {}
    for w in active:
        for k in dirs_of(w):
            watched[k] = use[k]
            if k in stopping or (k in was_held and k in above):
                moves = held.setdefault(k, [])
                if w.move not in moves:
                    moves.append(w.move)
                hold.setdefault((w.broker, w.config), k)
    deferred: dict[int, DirKey] = {}
    for w in candidates:
        if w.move in deferred:
            continue
        into = [k for k in dirs_of(w) if k in above]
        if into:
            deferred[w.move] = into[0]
        elif (w.broker, w.config) in hold:
            deferred[w.move] = hold[(w.broker, w.config)]
    return DiskDecision(deferred, held, frozenset(hold), watched, above)
