"""The adaptive throttle applied: each tick's decision (execution/adaptive.py, pure) carried out.

``first_rates`` runs before a batch's throttles are set: the brokers the batch brings get their rates from
the traffic now (``apply_throttles`` writes them with the batch, through its ``ceilings``), by the same
rule as the moves in flight. ``adapt`` runs in every moving tick: the brokers of the moves in flight whose
traffic moved their rate by more than 10% or onto a bound (at most once per broker per sampling period)
get it set through ``throttling.set_owned``, the record saved with what will be set before Kafka is
touched, as for every throttle. A side a disk hold keeps at a
trickle stays there (execution/disk_watch.py); the rate hold's factor applies on top
(execution/rate_watch.py). ``shown`` is what ``status.progress.throttles`` lists.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Sequence
from typing import Any

from ..kafka.gateway import KafkaGateway
from ..kafka.throttles import FOLLOWER_RATE, LEADER_RATE, Move, broker_rates, scaled
from ..model.intent_status import MAX_RATES_SHOWN
from . import adaptive
from .adaptive import Ceilings, Side
from .rate import factors
from .record import Execution
from .throttling import set_owned

__all__ = ["adapt", "first_rates", "shown"]

log = logging.getLogger(__name__)


def first_rates(
    ex: Execution,
    ceilings: Ceilings | None,
    moves: Sequence[Move],
    rate: int | None,
    brokers: Collection[int],
) -> dict[Side, int]:
    """The adaptive rates ``apply_throttles`` caps ``moves`` at, decided from the traffic now for their
    brokers that can be configured now (``brokers``): a broker new to the execution gets its first, one
    idle since its last change its current (by the same rule as ``adapt``); {} without the adaptive
    throttle."""
    doc = ex.doc.adaptive
    if ceilings is not None:
        adaptive.decide(doc, ceilings, [b for b in broker_rates(moves, rate) if b in brokers], time.time())
    return adaptive.applied(doc)


def adapt(
    ex: Execution,
    gateway: KafkaGateway,
    moves: Sequence[Move],
    rate: int | None,
    ceilings: Ceilings | None,
    brokers: Collection[int],
) -> None:
    """Set the rates of the moves in flight (``moves``, as the executor throttles them now; ``rate``: the
    execution's) that the traffic moved (module docstring)."""
    if ceilings is None:
        return
    doc = ex.doc.adaptive
    per_broker = broker_rates(moves, rate)
    writes = adaptive.decide(doc, ceilings, [b for b in per_broker if b in brokers], time.time())
    held = {(r.broker, r.config) for r in ex.doc.disk.rates}
    boost = factors(ex)
    wanted: dict[int, dict[str, str | None]] = {}
    for (b, config), value in sorted(writes.items()):
        if (b, config) not in held:
            set_to = scaled(min(per_broker[b], value), boost.get((b, config), 1.0))
            wanted.setdefault(b, {})[config] = str(set_to)
    if not wanted:
        return  # (the decision is saved with the tick)

    set_owned(ex, gateway, wanted)
    for b, configs in sorted(wanted.items()):
        log.info(
            "adaptive throttle: broker %d %s",
            b,
            ", ".join(f"{c.split('.')[0]} {int(v or 0) / 1e6:.2f} MB/s" for c, v in sorted(configs.items())),
        )


def shown(ex: Execution) -> tuple[list[dict[str, Any]], int]:
    """Each throttled broker's replication rates as set in Kafka now (ours, from the record), and how many
    brokers are throttled: beyond ``MAX_RATES_SHOWN`` brokers (~90 bytes each) those with the lowest rate
    (where the throttle yields most to clients), listed by id."""
    per: dict[int, dict[str, Any]] = {}
    for t in ex.doc.throttles.brokers:
        if t.value is None or not t.value.isdigit() or t.config not in (LEADER_RATE, FOLLOWER_RATE):
            continue
        key = "leaderBytesPerSecond" if t.config == LEADER_RATE else "followerBytesPerSecond"
        per.setdefault(t.broker, {"broker": t.broker})[key] = int(t.value)

    def lowest(b: int) -> tuple[int, int]:
        return min(v for k, v in per[b].items() if k != "broker"), b

    kept = sorted(per) if len(per) <= MAX_RATES_SHOWN else sorted(sorted(per, key=lowest)[:MAX_RATES_SHOWN])
    return [per[b] for b in kept], len(per)
