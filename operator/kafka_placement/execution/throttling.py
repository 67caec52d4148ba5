"""Changing an execution's broker rates with the record written ahead (``set_owned``: the rate hold, the
adaptive throttle), and removing its throttles at its end (or cancel, or a sweep of a terminal record) and
seeing them gone: a broker that is not alive, or did not answer the operator a moment ago, cannot be asked
(Kafka takes a broker's own config through that broker), so its rates stay in the record until it is back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from ..kafka.gateway import KafkaGateway, KafkaOperationError
from ..kafka.throttles import ThrottleError, clear_throttles, set_rates, still_set
from ..model.throttle_state import ThrottleState
from .disk import clear_holds
from .record import Execution

CLEAR_CHECK_S = 15.0  # how long removed throttles may still be shown by a broker before the tick retries


def set_owned(
    ex: Execution,
    gateway: KafkaGateway,
    wanted: Mapping[int, Mapping[str, str | None]],
    before: Callable[[], None] | None = None,
) -> None:
    """Set broker rates (broker -> config -> value) as the execution's own: what will be set is saved in
    the record before Kafka is touched (``before`` runs then too), and on a failure the record keeps what
    may now be set, so it can be cleared."""

    def write_ahead(planned: ThrottleState) -> None:
        ex.doc.throttles = planned
        if before is not None:
            before()
        ex.save()

    try:
        ex.doc.throttles = set_rates(
            gateway, ex.doc.throttles, wanted, before_alter=write_ahead, claim=ex.doc.claim_owner
        )
    except ThrottleError as e:
        ex.doc.throttles = e.state
        raise


def clear_owned(ex: Execution, gateway: KafkaGateway) -> None:
    """Remove our throttles and see them gone (brokers answer from asynchronously updated metadata: a
    throttle read back as "previous" by the next execution would be restored by it forever). Until they
    are seen gone the record keeps them, and the next tick clears again (clearing is idempotent).

    A broker that is not alive cannot be asked (Kafka takes a broker's own config through that broker):
    its rates stay in the record, which the reconcile sweeps while it is terminal and hands to the next
    execution, so they are removed once the broker is back; the execution does not wait for it."""
    state = ex.doc.throttles
    if state.empty:
        return
    _, alive = gateway.describe_cluster()
    live = set(alive) - gateway.silent  # one that refused the operator a moment ago would only time out
    now = ThrottleState(brokers=tuple(b for b in state.brokers if b.broker in live), topics=state.topics)
    later = ThrottleState(brokers=tuple(b for b in state.brokers if b.broker not in live))
    if not now.empty:
        clear_throttles(gateway, now)
        deadline = time.monotonic() + CLEAR_CHECK_S
        while left := still_set(gateway, now):
            if time.monotonic() > deadline:
                raise KafkaOperationError(
                    f"throttles removed but still shown by Kafka after {CLEAR_CHECK_S:.0f}s (retried next "
                    "tick): " + ", ".join(left[:10])
                )
            time.sleep(0.2)
    ex.doc.throttles = later
    clear_holds(ex, {b.broker for b in later.brokers})
    if not later.empty:
        dead = sorted({b.broker for b in later.brokers})
        ex.error(f"throttles left on broker(s) {dead}, not alive or not answering: removed once back")
    ex.save()
