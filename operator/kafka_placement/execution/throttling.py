"""Removing an execution's throttles at its end (or cancel, or a sweep of a terminal record) and seeing
them gone: a broker that is not alive, or did not answer the operator a moment ago, cannot be asked
(Kafka takes a broker's own config through that broker), so its rates stay in the record until it is back.
"""

from __future__ import annotations

import time

from ..kafka.gateway import KafkaGateway, KafkaOperationError
from ..kafka.throttles import clear_throttles, still_set
from ..model.throttle_state import ThrottleState
from .disk import clear_holds
from .record import Execution

CLEAR_CHECK_S = 15.0  # how long removed throttles may still be shown by a broker before the tick retries


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
