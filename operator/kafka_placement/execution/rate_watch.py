"""The executor's rate hold: each broker's achieved replication rate held at its throttle (pure, no I/O).

Kafka's brokers replicate below the rate they are configured with: a throttled replica is fetched only
while the quota (metered over 11 one-second windows) is not exceeded, a fetch brings up to
``replica.fetch.response.max.bytes`` at once, and the leader's and the follower's quota both gate the same
bytes, each pausing the fetcher by its own backoff. Measured on this project's rig, moves ran at 0.75 to
0.88 of the configured rate (docs/benchmarks.md, "Healing a dead broker"): a plan's copy took 13-33% longer
than its throttle allows, and an ETA of bytes / throttle was as wrong.

With ``limits.holdAchievedRate`` the executor measures what each side of each broker really copies and
sets Kafka's rate above the throttle by the shortfall, so the *achieved* rate is the throttle:

- **A side** is a broker receiving replicas (its ``follower.replication.throttled.rate``) or sending them
  as a partition's leader (its ``leader.replication.throttled.rate``). Its bytes so far = the sizes the
  tick's DescribeLogDirs shows for the replicas its active moves add (already read for progress: no read
  of its own) plus the full size of its moves finished in this execution; cost follows the moves in flight.
- **Measured only while busy**: a side is sampled each tick while its active moves have at least
  ``BUSY_S`` seconds of copy left at the throttle and its broker is live and not held by the disk watch
  (a side starved of work, or held, says nothing about Kafka's throttle); an idle tick drops its samples.
- **Decided over a window** of at least ``WINDOW_S`` seconds (longer than Kafka's quota window, and long
  enough that a fetch's burst is a small part of it), from ``SETTLE_S`` after the last change: the new
  factor is ``factor x throttle / achieved``, each step at most ``MAX_STEP`` times up or down, within
  [1, ``MAX_HOLD_FACTOR``]. A measured rate above the throttle lowers the factor (never under 1: Kafka's
  rate is never set below the throttle asked); one far below it (under ``STALLED`` of it: a partition
  waiting for a leader, a broker busy elsewhere) is no shortfall of the throttle and changes nothing.
- **A new side** starts at the median factor its kind has learnt in this execution (Kafka's shortfall is
  much the same on every broker), so only the first sides of an execution start at 1.
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from ..kafka.throttles import FOLLOWER_RATE, LEADER_RATE, scaled
from .record import ExecutionPlan
from .record_doc import MAX_HOLD_FACTOR, MAX_RATE_SAMPLES, RateSide
from .view import TickView

__all__ = [
    "BUSY_S",
    "MAX_STEP",
    "SETTLE_S",
    "STALLED",
    "WINDOW_S",
    "RateReading",
    "Side",
    "decide",
    "readings",
]

Side = tuple[int, str]  # (broker, LEADER_RATE | FOLLOWER_RATE)

WINDOW_S = 20.0  # the shortest span a rate is measured over
SETTLE_S = 6.0  # after a change, this long before sampling again (Kafka's quota meters the past 11 s)
BUSY_S = 5.0  # a side is sampled only while its moves have this many seconds of copy left at the throttle
MAX_STEP = 1.25  # a factor changes by at most this ratio per decision
MIN_CHANGE = 0.03  # a factor is rewritten only when it moves by this much (bounded config writes)
STALLED = 0.3  # a side achieving under this share of its throttle is stalled for another reason


@dataclass(slots=True)
class RateReading:
    """One tick's look at a side: bytes its active moves copied so far and have left, and the active
    moves' bytes of finished moves to add to its base (``finished``)."""

    copied: int = 0
    left: int = 0
    finished: int = 0


@dataclass(frozen=True, slots=True)
class RateDecision:
    """The sides after this tick, and the Kafka rates to set (side -> bytes/s)."""

    sides: dict[Side, RateSide]
    writes: dict[Side, int] = field(default_factory=dict)


def readings(
    plan: ExecutionPlan,
    active: Sequence[int],
    view: TickView,
    leaders: Mapping[int, int],
    finished: Collection[int],
) -> tuple[dict[Side, RateReading], dict[int, int]]:
    """Each side's reading from the tick's view (``active``: the moves in flight; ``finished``: those
    active at the last tick that are done now, counted in full on the sides that moved them then,
    ``leaders`` saying which broker sent each). Returns the readings and each active move's sender."""
    out: dict[Side, RateReading] = {}
    senders: dict[int, int] = {}

    def at(side: Side) -> RateReading:
        r = out.get(side)
        if r is None:
            r = out[side] = RateReading()
        return r

    for i in finished:
        size = plan.baseline_size(i)
        for b in plan.adding[i]:
            at((b, FOLLOWER_RATE)).finished += size
            if i in leaders:
                at((leaders[i], LEADER_RATE)).finished += size
    for i in active:
        if not plan.adding[i]:
            continue  # a dir move: governed by the dir rate, not replication
        t = plan.targets[i]
        size = plan.baseline_size(i)
        p = view.partitions.get(t.key)
        leader = p.leader if p is not None else None
        if leader is not None and leader in view.live:
            senders[i] = leader
        for b in plan.adding[i]:
            copied = min(view.replica(t.topic, t.partition, b).current_size, size)
            side = at((b, FOLLOWER_RATE))
            side.copied += copied
            side.left += size - copied
            if leader is not None and leader in view.live:
                sent = at((leader, LEADER_RATE))
                sent.copied += copied
                sent.left += size - copied
    return out, senders


def decide(
    sides: Mapping[Side, RateSide],
    seen: Mapping[Side, RateReading],
    targets: Mapping[Side, int],
    now: float,
    measurable: Collection[Side],
) -> RateDecision:
    """Update every side from this tick's readings (``targets``: each throttled side's throttle;
    ``measurable``: the sides whose broker is live and not held) and say which Kafka rates change."""
    out: dict[Side, RateSide] = {k: s.model_copy(deep=True) for k, s in sides.items()}
    learnt = _learnt(out.values())
    writes: dict[Side, int] = {}
    for key, reading in seen.items():
        side = out.get(key)
        if side is None:
            target = targets.get(key)
            if target is None:
                continue  # an unthrottled side: nothing to hold
            start = learnt.get(key[1], 1.0)
            side = out[key] = RateSide(broker=key[0], config=key[1], target=target, factor=start, since=now)
            if start != 1.0:
                writes[key] = scaled(target, start)
        side.done += reading.finished
        target = targets.get(key)
        if target is None:
            side.samples = []
            continue
        if target != side.target:  # another throttle asked (a move at its own rate): measured afresh
            side.target, side.since, side.samples = target, now, []
            writes[key] = scaled(target, side.factor)
        busy = reading.left >= target * BUSY_S
        if key not in measurable or not busy:
            side.samples = []
            continue
        if now < side.since + SETTLE_S:
            continue
        side.samples.append((now, side.done + reading.copied))
        factor = _measure(side, now)
        if factor is not None:
            writes[key] = scaled(target, factor)
    return RateDecision(out, writes)


def _measure(side: RateSide, now: float) -> float | None:
    """The side's new factor when its samples span the window and it moves by enough; else None (the
    window slides)."""
    samples = side.samples
    while len(samples) > 2 and samples[1][0] <= now - WINDOW_S:
        samples.pop(0)  # the oldest sample that still spans the window is kept
    del samples[:-MAX_RATE_SAMPLES]
    (t0, c0), (t1, c1) = samples[0], samples[-1]
    if t1 - t0 < WINDOW_S:
        return None
    rate = max(c1 - c0, 0) / (t1 - t0)
    side.rate = round(rate, 1)
    if rate < STALLED * side.target:
        return None
    wanted = side.factor * side.target / rate
    wanted = min(max(wanted, side.factor / MAX_STEP), side.factor * MAX_STEP)
    wanted = round(min(max(wanted, 1.0), MAX_HOLD_FACTOR), 3)
    if abs(wanted - side.factor) < MIN_CHANGE:
        return None
    side.factor, side.since, side.samples = wanted, now, []
    return wanted


def _learnt(sides: Collection[RateSide]) -> dict[str, float]:
    """Per kind of side, the median factor of the sides that measured a rate (where one did)."""
    out: dict[str, float] = {}
    for config in (LEADER_RATE, FOLLOWER_RATE):
        factors = [s.factor for s in sides if s.config == config and s.rate is not None]
        if factors:
            out[config] = round(statistics.median(factors), 3)
    return out
