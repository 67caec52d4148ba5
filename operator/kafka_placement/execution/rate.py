"""The executor's rate hold applied: one tick's decision (execution/rate_watch.py, pure) carried out.

``hold_rates`` runs in every moving tick of an execution with ``holdAchievedRate``, after the disk watch
and on the tick's own read: it measures each side of each broker, sets the Kafka rates whose factor changed
through ``kafka/throttles.set_rates`` (the record saved with what will be set before Kafka is touched, as
for every throttle), and keeps the sides in the record (``rate``). ``factors`` gives ``apply_throttles``
the factors to keep when a new batch re-asserts the rates of its brokers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from ..kafka.gateway import KafkaGateway
from ..kafka.throttles import Move, broker_rates
from . import adaptive, rate_watch
from .rate_watch import Side
from .record import Execution
from .record_doc import PState
from .throttling import set_owned
from .view import TickView

__all__ = ["factors", "hold_rates"]

log = logging.getLogger(__name__)


def hold_rates(
    ex: Execution, gateway: KafkaGateway, view: TickView, moves: Sequence[Move], rate: int | None
) -> None:
    """Measure, decide and set for this tick (``moves``: the active moves as the executor throttles them,
    ``rate``: the execution's throttle)."""
    plan, doc = ex.plan, ex.doc.rate
    active = ex.active()
    now_active = set(active)
    finished = [i for i in doc.leaders if i not in now_active and ex.state(i) == PState.DONE]
    seen, senders = rate_watch.readings(plan, active, view, doc.leaders, finished)
    per_broker = broker_rates(moves, rate)
    targets: dict[Side, int] = {}
    ceiling = adaptive.applied(ex.doc.adaptive)  # the adaptive throttle's rates (execution/adaptive.py)
    for b, config in seen:
        if b in per_broker:
            targets[(b, config)] = min(per_broker[b], ceiling.get((b, config), per_broker[b]))
    held = {(r.broker, r.config) for r in ex.doc.disk.rates}
    measurable = {k for k in seen if k[0] in view.answering and k not in held}
    sides = {(s.broker, s.config): s for s in doc.sides}
    d = rate_watch.decide(sides, seen, targets, time.time(), measurable)
    doc.sides = [d.sides[k] for k in sorted(d.sides)]
    doc.leaders = senders
    writes = {k: v for k, v in d.writes.items() if k[0] in view.answering and k not in held}
    if not writes:
        return
    wanted: dict[int, dict[str, str | None]] = {}
    for (b, config), value in sorted(writes.items()):
        wanted.setdefault(b, {})[config] = str(value)

    def counted() -> None:
        doc.changes += len(writes)

    set_owned(ex, gateway, wanted, counted)
    for (b, config), value in sorted(writes.items()):
        s = d.sides[(b, config)]
        achieved = f"{s.rate / 1e6:.2f} MB/s" if s.rate is not None else "not measured yet"
        log.info(
            "rate hold: broker %d %s achieved %s of %.2f MB/s: Kafka's rate set to %.2f MB/s (x%.3f)",
            b,
            config.split(".")[0],
            achieved,
            s.target / 1e6,
            value / 1e6,
            s.factor,
        )


def factors(ex: Execution) -> dict[tuple[int, str], float]:
    """(broker, config) -> the factor the hold keeps on that rate (those above 1)."""
    return {(s.broker, s.config): s.factor for s in ex.doc.rate.sides if s.factor > 1.0}
