"""Traffic estimates from successive looks: bytes in per second and read fan-out per partition. Pure: no
I/O, no clock (the looks carry their times).

``fold(state, look, window_s)`` takes one more ``TrafficLook`` into a ``TrafficState`` (small: per
partition the last look, an exponentially weighted rate and, per consumer group, the last committed
offset and when it last advanced); ``estimates(state, window_s)`` reads each partition's
``bytesInPerSec`` and ``readFanout`` from it, ``None`` where they are unknown (never a made-up zero).

Bytes in over an interval: the log end offset's advance times the bytes per offset. While the log start
offset stays put (nothing deleted), the size's growth over that advance is exactly the bytes of the new
offsets; once retention deleted segments (the start offset moved) or compaction shrank the log (the size
did not grow), the bytes per offset are the log's average, size / (end - start), the smaller of the two
looks' (a start offset moved by DeleteRecords leaves the segments below it, and their bytes in the size,
until the broker's next retention check), and the growth, when positive, a floor. Compaction's gaps
make that average a lower bound, never a negative or unbounded rate. The rate is an exponentially
weighted mean of the intervals' rates with the time constant ``window_s`` (an interval of length dt
weighs ``1 - exp(-dt / window_s)``).

Bad input, each handled, never a negative or absurd rate:
- a partition seen once (no history): unknown;
- end or start offset going backwards, or a new topic id: the topic was deleted and created again under
  the same name; its history is dropped and this look starts a new one (unknown until the next);
- a look whose clock is not after the last one (a clock set back), or closer to it than
  ``min_interval_s``: no rate from it; a clock set back makes it the new baseline, the rate kept;
- a look that failed for a partition (negative offsets, start past end): ignored for that partition;
- a partition missing from a look: kept for one window (a failed read), then forgotten (a deleted topic).

Every sample skipped is counted by reason (``TrafficState.skipped``, kept with the state and shown in
``status.traffic.samplesSkipped``): ``failedRead`` (a look that failed for a partition), ``recreated``
(the log went backwards or the topic id changed: the history dropped), ``clockBack`` (a look not after
the last), ``tooClose`` (closer than ``min_interval_s``) and ``groupBack`` (a group's committed offset
went backwards: a reset, not reading).

Read fan-out: the consumer groups whose committed offset on the partition advanced within the window
(a group's first commit counts when the previous look read that group and it had none there). Known
once the partition has one interval of history; a group reading nothing new is not counted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ..model.snapshot import ClusterSnapshot
from ..model.traffic_looks import PartitionKey, PartitionLook, TrafficLook

DEFAULT_WINDOW_S = 300.0  # minutes, not hours: the rate follows a shift of load within a few windows
MIN_INTERVAL_S = 1.0  # looks closer than this give no rate (offsets and sizes are not read atomically)


@dataclass(frozen=True, slots=True)
class PartitionTraffic:
    """What the state keeps of one partition."""

    at: float  # time of the last look taken in (the next interval's start)
    look: PartitionLook
    rate: float | None = None  # bytes in per second (weighted); None: no interval yet
    committed: Mapping[str, int] = field(default_factory=dict)  # group -> committed offset at ``at``
    advanced: Mapping[str, float] = field(default_factory=dict)  # group -> when its offset last advanced

    @property
    def known(self) -> bool:
        """One interval of history at least: rate and fan-out are measured."""
        return self.rate is not None


@dataclass(frozen=True, slots=True)
class TrafficState:
    """Every partition's traffic so far, and the groups the last look read."""

    partitions: Mapping[PartitionKey, PartitionTraffic] = field(default_factory=dict)
    groups: frozenset[str] = frozenset()
    skipped: Mapping[str, int] = field(default_factory=dict)  # samples skipped so far, by reason


SKIP_REASONS = ("failedRead", "recreated", "clockBack", "tooClose", "groupBack")


@dataclass(frozen=True, slots=True)
class Traffic:
    """A partition's estimates; None: unknown."""

    bytes_in_per_sec: float | None
    read_fanout: int | None


def bytes_in(before: PartitionLook, after: PartitionLook) -> float | None:
    """Bytes appended between two looks of one log (``after`` not behind ``before``); None when no look
    tells the bytes per offset (both hold no offsets)."""
    advance = after.end_offset - before.end_offset
    if advance <= 0:
        return 0.0
    growth = after.size_bytes - before.size_bytes
    if after.start_offset == before.start_offset and growth > 0:
        return float(growth)  # nothing deleted: the growth is the new offsets' bytes
    averages = [look.size_bytes / look.span for look in (before, after) if look.span > 0]
    if not averages:
        return None
    # Segments below a moved start offset may still be counted in the size (DeleteRecords leaves them
    # to the next retention check): the smaller average; and the growth is a floor (deleted bytes only
    # ever lower it).
    return max(float(growth), advance * min(averages))


def recreated(before: PartitionLook, after: PartitionLook) -> bool:
    """The log went backwards, or the topic has another id: deleted and created again."""
    if before.topic_id is not None and after.topic_id is not None and before.topic_id != after.topic_id:
        return True
    return after.end_offset < before.end_offset or after.start_offset < before.start_offset


def fold(
    state: TrafficState,
    look: TrafficLook,
    window_s: float = DEFAULT_WINDOW_S,
    min_interval_s: float = MIN_INTERVAL_S,
) -> TrafficState:
    """``state`` with ``look`` taken in (see the module's docstring for every case)."""
    if not window_s > 0:
        raise ValueError(f"window_s must be positive, got {window_s}")
    out: dict[PartitionKey, PartitionTraffic] = {}
    skipped = dict.fromkeys(SKIP_REASONS, 0)
    for key, plook in look.partitions.items():
        prev = state.partitions.get(key)
        if not plook.valid:
            skipped["failedRead"] += 1
            if prev is not None:
                out[key] = prev
            continue
        committed = {g: offsets[key] for g, offsets in look.committed.items() if key in offsets}
        if prev is None or recreated(prev.look, plook):
            skipped["recreated"] += prev is not None
            out[key] = PartitionTraffic(look.at, plook, None, committed, {})
            continue
        out[key] = _step(prev, plook, look.at, committed, state.groups, window_s, min_interval_s, skipped)
    for key, prev in state.partitions.items():  # not in this look: a failed read, or a deleted topic
        if key not in look.partitions and look.at - prev.at < window_s:
            out[key] = prev
    total = {r: state.skipped.get(r, 0) + skipped[r] for r in SKIP_REASONS}
    return TrafficState(out, frozenset(look.committed), {r: n for r, n in total.items() if n})


def _step(
    prev: PartitionTraffic,
    plook: PartitionLook,
    at: float,
    committed: Mapping[str, int],
    read_before: frozenset[str],
    window_s: float,
    min_interval_s: float,
    skipped: dict[str, int],
) -> PartitionTraffic:
    dt = at - prev.at
    if dt <= 0:  # the clock was set back: a new baseline, the history kept (its times no later than now)
        skipped["clockBack"] += 1
        advanced = {g: min(t, at) for g, t in prev.advanced.items()}
        return PartitionTraffic(at, plook, prev.rate, committed, advanced)
    if dt < min_interval_s:
        skipped["tooClose"] += 1
        return prev
    rate = prev.rate
    appended = bytes_in(prev.look, plook)
    if appended is not None:
        sample = appended / dt
        rate = sample if rate is None else rate + (1 - math.exp(-dt / window_s)) * (sample - rate)
    advanced = {g: t for g, t in prev.advanced.items() if at - t <= window_s}
    for group, offset in committed.items():
        old = prev.committed.get(group)
        if (old is None and group in read_before) or (old is not None and offset > old):
            advanced[group] = at
        elif old is not None and offset < old:
            skipped["groupBack"] += 1
    return PartitionTraffic(at, plook, rate, committed, advanced)


def estimates(state: TrafficState, window_s: float = DEFAULT_WINDOW_S) -> dict[PartitionKey, Traffic]:
    """Each partition's bytes in per second and read fan-out (None: unknown) as of its last look."""
    out: dict[PartitionKey, Traffic] = {}
    for key, p in state.partitions.items():
        if not p.known:
            out[key] = Traffic(None, None)
            continue
        fanout = sum(1 for t in p.advanced.values() if p.at - t <= window_s)
        out[key] = Traffic(p.rate, fanout)
    return out


def broker_totals(
    traffic: Mapping[PartitionKey, Traffic], leaders: Mapping[PartitionKey, int | None]
) -> dict[int, Traffic]:
    """Per broker, the sums over the partitions it leads (producers write to and consumers read from the
    leader) of the known estimates; a broker leading no partition with a known estimate is left out."""
    rates: dict[int, float] = {}
    fanouts: dict[int, int] = {}
    for key, t in traffic.items():
        leader = leaders.get(key)
        if leader is None:
            continue
        if t.bytes_in_per_sec is not None:
            rates[leader] = rates.get(leader, 0.0) + t.bytes_in_per_sec
        if t.read_fanout is not None:
            fanouts[leader] = fanouts.get(leader, 0) + t.read_fanout
    return {b: Traffic(rates.get(b), fanouts.get(b)) for b in sorted(set(rates) | set(fanouts))}


def with_traffic(snapshot: ClusterSnapshot, traffic: Mapping[PartitionKey, Traffic]) -> ClusterSnapshot:
    """``snapshot`` with each partition's known estimates (``bytesInPerSec``, ``readFanout``); a
    partition without one keeps the field unknown (absent), never zero."""
    parts = tuple(
        replace(p, bytes_in_per_sec=t.bytes_in_per_sec, read_fanout=t.read_fanout)
        if (t := traffic.get(p.key)) is not None
        else p
        for p in snapshot.partitions
    )
    return replace(snapshot, partitions=parts)
