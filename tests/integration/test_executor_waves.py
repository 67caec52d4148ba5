"""The executor filling a finished wave at once, against the real Kafka rig: a tick reads its candidates
before it sees which moves finished, so the tick that finds every move in flight done has read ahead only
for the room it had; it says so (``tick`` returns True) and ``run`` ticks again at once, counted in
``counters.refills``. The read-ahead is shrunk here (LOOKAHEAD 1, at least 1) so four moves in flight
show what 1,250 do at the defaults (read ahead 256).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.integration.test_executor_safety import our_throttles_in_kafka, plan_of, replicas

from kafka_placement.execution import executor, lookahead
from kafka_placement.execution.record import Execution
from kafka_placement.execution.record_doc import Phase
from kafka_placement.execution.store import FileStore
from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import KafkaGateway

if TYPE_CHECKING:
    from conftest import KafkaRig, TopicFactory

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(180)]

Wait = Callable[..., Any]
MOVES = 12
IN_FLIGHT = 4


def test_a_finished_wave_is_filled_at_once_and_nothing_submitted_twice(
    kafka_rig: KafkaRig,
    new_topic: TopicFactory,
    tmp_path: Path,
    kafka_wait: Wait,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lookahead, "LOOKAHEAD", 1)
    monkeypatch.setattr(lookahead, "MIN_LOOKAHEAD", 1)
    topic = new_topic([[1, 2]] * MOVES)
    keys = [(topic, p) for p in range(MOVES)]
    plan = plan_of([(topic, p, [1, 3]) for p in range(MOVES)])
    limits = executor.Limits(max_moves=IN_FLIGHT, max_moves_per_broker=MOVES)
    with KafkaGateway(ConnectionSettings(kafka_rig.bootstrap_servers)) as gw:
        throttles_before = our_throttles_in_kafka(gw, topic, [1, 2, 3])
        ex = Execution.create(FileStore(tmp_path / "state.json"), plan, limits=limits)
        ex.save()

        def wave_done() -> bool:
            return not gw.list_reassignments(keys) and sum(
                r == (1, 3) for r in replicas(gw, topic).values()
            ) >= (ex.doc.counters.submissions)

        # the first tick validates and submits as many as the room: nothing more to read
        assert executor.tick(gw, ex, limits) is False
        assert ex.phase == Phase.MOVING and len(ex.doc.in_flight) == IN_FLIGHT, ex.doc.last_error
        kafka_wait("the first wave at target", wave_done)

        # room 0 before it read: one candidate read, four moves found done, one submitted: it says so
        assert executor.tick(gw, ex, limits) is True
        assert len(ex.doc.in_flight) == 1 and ex.doc.done_count == IN_FLIGHT
        # the tick at once reads for the room it has now and fills it; then nothing more to read
        assert executor.tick(gw, ex, limits) is False
        assert len(ex.doc.in_flight) == IN_FLIGHT and ex.doc.counters.submissions == 2 * IN_FLIGHT
        kafka_wait("the second wave at target", wave_done)

        # run: its first tick finds the wave done, the next one runs at once (no poll between)
        seen: list[int] = []
        executor.run(
            gw,
            ex,
            limits,
            wait=True,
            poll_s=0.5,
            retry_s=60,
            on_tick=lambda e: seen.append(len(e.doc.in_flight)),
        )
        assert seen[:2] == [1, IN_FLIGHT], seen
        assert ex.doc.counters.refills == 1, ex.doc.counters

        assert ex.phase == Phase.COMPLETED, ex.doc.last_error
        assert ex.doc.counters.submissions == MOVES and ex.doc.counters.resubmitted == 0, ex.doc.counters
        assert replicas(gw, topic) == dict.fromkeys(range(MOVES), (1, 3))
        assert not gw.list_reassignments(keys)
        assert our_throttles_in_kafka(gw, topic, [1, 2, 3]) == throttles_before
