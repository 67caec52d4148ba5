"""The adaptive throttle (``KafkaCluster.spec.throttle``, mode Adaptive): a replication rate per broker and
side that yields to the client traffic (pure, no I/O).

Replication competes with clients for a broker's network. For each broker taking part in a move:

- its **follower rate** (the bytes it fetches as a new replica) is ``capacity.networkIn x maxShare`` minus
  the client bytes in measured on it (``status.traffic``: what producers write to its replicas, leaders
  and followers);
- its **leader rate** (the bytes new replicas fetch from it) is ``capacity.networkOut x maxShare`` minus
  its measured network out (consumers and followers);

each clamped to ``[minBytesPerSecond, maxBytesPerSecond]``. The traffic sampler measures from offsets, so a
reassignment's own copying is never counted as client traffic (no feedback loop). Without a capacity for a
broker, without a rate measured on it, or when the last look is older than ``STALE_PERIODS`` sampling
periods, the broker gets ``maxBytesPerSecond`` and the note says why.

A side's rate is set when the broker first takes part, then again only when the traffic moves it by more
than ``CHANGE`` (10%), or onto ``minBytesPerSecond`` or ``maxBytesPerSecond``, and its broker's rates were
last changed at least one sampling period ago: config writes are bounded by one per broker per period,
however the traffic jitters. The value Kafka gets is that rate, lowered further by a move's own throttle
or the window cap, and raised by the rate hold's factor (execution/rate_watch.py) like any other;
execution/adapting.py carries the decision out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..kafka.throttles import FOLLOWER_RATE, LEADER_RATE
from ..model.capacity import CapacitySpec
from .record_doc import AdaptiveDoc, AdaptiveSide

__all__ = ["CHANGE", "STALE_PERIODS", "Ceilings", "Measured", "Side", "applied", "decide", "notes"]

CHANGE = 0.10  # a side's rate is set again only when the traffic moves it by more than this share
STALE_PERIODS = 3  # a look older than this many sampling periods is no measurement
SIDES = (LEADER_RATE, FOLLOWER_RATE)

Side = tuple[int, str]  # (broker, LEADER_RATE | FOLLOWER_RATE)


@dataclass(frozen=True, slots=True)
class Measured:
    """One broker's client traffic in the last look, bytes per second (None: not measured)."""

    bytes_in: int | None
    bytes_out: int | None


@dataclass(frozen=True, slots=True)
class Ceilings:
    """One tick's inputs of the adaptive throttle: the spec's bounds and share, the brokers' capacities,
    the last look's traffic (``missing``: why there is none to use, e.g. sampling off or a stale look)."""

    low: int
    high: int
    max_share: float
    capacity: CapacitySpec | None
    traffic: Mapping[int, Measured] = field(default_factory=dict)
    period_s: float = 60.0
    missing: str | None = None

    def value(self, broker: int, config: str) -> tuple[int, str | None]:
        """The side's rate and, when it is the maximum for want of a measurement, why."""
        follower = config == FOLLOWER_RATE
        cap = self.capacity.of(broker) if self.capacity is not None else None
        total = (cap.network_in if follower else cap.network_out) if cap is not None else None
        if total is None:
            name = "networkInBytesPerSec" if follower else "networkOutBytesPerSec"
            return self.high, f"broker {broker}: no spec.capacity {name}"
        if self.missing is not None:
            return self.high, f"broker {broker}: {self.missing}"
        seen = self.traffic.get(broker)
        used = (seen.bytes_in if follower else seen.bytes_out) if seen is not None else None
        if used is None:
            return self.high, f"broker {broker}: no client traffic measured on it in status.traffic"
        room = int(total * self.max_share) - used
        return min(max(room, self.low), self.high), None

    def model_rates(self, brokers: Iterable[int]) -> dict[tuple[str, int], int]:
        """The copy model's per-broker rates (execution/copy_model.py): into each of ``brokers`` its
        follower rate, out of it its leader rate, as they would be set now."""
        out: dict[tuple[str, int], int] = {}
        for b in brokers:
            out[("in", b)] = self.value(b, FOLLOWER_RATE)[0]
            out[("out", b)] = self.value(b, LEADER_RATE)[0]
        return out


def decide(doc: AdaptiveDoc, ceilings: Ceilings, brokers: Iterable[int], now: float) -> dict[Side, int]:
    """The sides of ``brokers`` (those that can be configured now) whose rate is to be set now (module
    docstring): a side not set yet, or one the traffic moved by more than ``CHANGE`` (or onto a bound) on
    a broker not changed within a sampling period. ``doc`` is updated as if they were set: the caller sets
    them (written ahead in the record with the throttles, before Kafka is touched)."""
    sides = {(s.broker, s.config): s for s in doc.sides}
    out: dict[Side, int] = {}
    for b in sorted(set(brokers)):
        wanted = {c: ceilings.value(b, c) for c in SIDES}
        have = {c: sides.get((b, c)) for c in SIDES}
        new = any(h is None for h in have.values())
        moved = any(h is not None and _moved(h.value, wanted[c][0], ceilings) for c, h in have.items())
        rested = now - doc.written.get(b, float("-inf")) >= ceilings.period_s
        if not new and not (moved and rested):
            for c, h in have.items():  # the note follows the measurement at once; the rate waits
                if h is not None and h.note != wanted[c][1]:
                    sides[(b, c)] = h.model_copy(update={"note": wanted[c][1]})
            continue
        for c in SIDES:
            value, note = wanted[c]
            h = have[c]
            if h is not None and h.value == value and h.note == note:
                continue
            sides[(b, c)] = AdaptiveSide(broker=b, config=c, value=value, note=note)
            out[(b, c)] = value
            doc.changes += h is not None
        doc.written[b] = now
    doc.sides = [sides[k] for k in sorted(sides)]
    return out


def _moved(had: int, wanted: int, ceilings: Ceilings) -> bool:
    """Whether a side's rate is to change: by more than ``CHANGE``, or onto a bound (a rate left a few
    percent under the maximum once the traffic is gone would stay there for good)."""
    at_bound = wanted in (ceilings.low, ceilings.high) and wanted != had
    return at_bound or abs(wanted - had) > CHANGE * had


def applied(doc: AdaptiveDoc) -> dict[Side, int]:
    """Each side's rate set so far (``apply_throttles``' ceilings)."""
    return {(s.broker, s.config): s.value for s in doc.sides}


def notes(doc: AdaptiveDoc, limit: int = 5) -> str | None:
    """Why sides are at the maximum, the first ``limit`` brokers of them (None: every side measured)."""
    said = list(dict.fromkeys(s.note for s in doc.sides if s.note is not None))
    if not said:
        return None
    more = f" (and {len(said) - limit} more)" if len(said) > limit else ""
    return "adaptive throttle at maxBytesPerSecond for " + "; ".join(said[:limit]) + more
