"""Moves in flight outside the maintenance windows: while every window is closed the executor submits
nothing new (model/windows.py) and, when ``spec.execution.outsideWindowBytesPerSecond`` is set, lowers the
replication throttle of the moves in flight to it, so that they finish without the bandwidth the
windows exist to keep free; when a window opens they go back to their own rate (an unthrottled move's
brokers to what they had before). The cap applied now is in the record (``RecordDoc.window_cap``): a
change is written once, not every tick, and an operator restarted meanwhile knows what it set; the rates
are throttles like any other, saved before Kafka is touched and cleared when the execution ends.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..kafka.gateway import KafkaGateway
from ..kafka.throttles import (
    DIR_RATE,
    FOLLOWER_RATE,
    LEADER_RATE,
    Move,
    ThrottleError,
    apply_throttles,
    broker_rates,
    set_rates,
)
from ..model.throttle_state import ThrottleState
from . import adaptive
from .disk import TRICKLE
from .rate import factors
from .record import Execution
from .record_doc import Limits
from .view import TickView

__all__ = ["cap_in_flight", "capped"]

log = logging.getLogger(__name__)
RATES = (LEADER_RATE, FOLLOWER_RATE, DIR_RATE)


def capped(moves: Sequence[Move], cap: int | None) -> list[Move]:
    """``moves`` with their rate at most ``cap`` (an unthrottled one gets ``cap``); as they are for None."""
    if cap is None:
        return list(moves)
    return [replace(m, rate=cap if m.rate is None else min(m.rate, cap)) for m in moves]


def cap_in_flight(
    ex: Execution,
    gateway: KafkaGateway,
    view: TickView,
    moves: Sequence[Move],
    limits: Limits,
    cap: int | None,
) -> None:
    """Cap the moves in flight (``moves``, at their own rates) at ``cap``, or lift the cap (None), when that
    differs from what the record says is applied. Brokers that did not answer this tick are left out."""
    if ex.doc.window_cap == cap:
        return
    if cap is not None and not moves:  # nothing in flight to cap: none will start while it holds
        ex.doc.window_cap = cap
        return
    plan = ex.plan
    dir_brokers = sorted({b for i in ex.active() for b in plan.dir_moving[i]})
    held = {(r.broker, r.config): str(TRICKLE) for r in ex.doc.disk.rates}  # a disk hold stays held

    def write_ahead(planned: ThrottleState) -> None:
        ex.doc.throttles = planned
        ex.save()

    try:
        if cap is not None:
            state = apply_throttles(
                gateway,
                capped(moves, cap),
                cap,
                dir_rate=cap,
                dir_move_brokers=dir_brokers,
                state=ex.doc.throttles,
                before_alter=write_ahead,
                claim=ex.doc.claim_owner,
                override=held,
                brokers=view.answering,
                ceilings=adaptive.applied(ex.doc.adaptive),
            )
        else:
            state = _uncap(ex, gateway, view, moves, limits, dir_brokers, held, write_ahead)
    except ThrottleError as e:
        ex.doc.throttles = e.state
        raise
    ex.doc.throttles = state
    if moves:
        log.info(
            "execution of plan %s: %d moves in flight %s",
            ex.doc.plan_id,
            len(moves),
            f"capped at {cap} B/s outside the maintenance windows"
            if cap is not None
            else "back at their rate",
        )
    ex.doc.window_cap = cap
    ex.save()


def _uncap(
    ex: Execution,
    gateway: KafkaGateway,
    view: TickView,
    moves: Sequence[Move],
    limits: Limits,
    dir_brokers: list[int],
    held: dict[tuple[int, str], str],
    write_ahead: Callable[[ThrottleState], None],
) -> ThrottleState:
    """The moves in flight at their own rates again; the brokers only unthrottled moves involve get back
    the rates they had before the cap (ours, recorded)."""
    rated = [m for m in moves if m.rate is not None]
    state = ex.doc.throttles
    if rated:
        rates = [m.rate for m in rated if m.rate is not None]
        state = apply_throttles(
            gateway,
            rated,
            limits.throttle,
            dir_rate=min(rates),
            dir_move_brokers=dir_brokers,
            state=state,
            before_alter=write_ahead,
            claim=ex.doc.claim_owner,
            override=held,
            factors=factors(ex),
            brokers=view.answering,
            ceilings=adaptive.applied(ex.doc.adaptive),
        )
    kept = set(broker_rates(rated, limits.throttle)) | ({*dir_brokers} if rated else set())
    wanted: dict[int, dict[str, str | None]] = {}
    for e in state.brokers:
        ours = e.config in RATES and (e.broker, e.config) not in held
        if ours and e.broker not in kept and e.broker in view.answering:
            wanted.setdefault(e.broker, {})[e.config] = None
    if wanted:
        state = set_rates(gateway, state, wanted, before_alter=write_ahead, claim=ex.doc.claim_owner)
    return state
