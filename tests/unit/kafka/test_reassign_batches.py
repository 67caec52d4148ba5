"""AlterPartitionReassignments in requests of at most ``gateway.REASSIGN_BATCH`` partitions: a KRaft
controller takes at most 10,000 records in one operation and refused the second half of a 20,000-partition
request on the rig (tests/bench/run_operator_exec.py's Kafka's-tool run). The client is the test's (the
split is the rule under test; reassignments against a real Kafka: tests/integration/test_executor*.py)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from kafka_placement.kafka import gateway
from kafka_placement.kafka.connection import ConnectionSettings


def _gateway(monkeypatch: pytest.MonkeyPatch, answer: Any) -> tuple[gateway.KafkaGateway, list[int]]:
    sizes: list[int] = []

    def alter(request: dict[Any, Any], timeout_ms: int) -> dict[Any, Any]:
        sizes.append(len(request))
        return answer(request)

    gw = gateway.KafkaGateway(ConnectionSettings("127.0.0.1:9"))
    monkeypatch.setattr(gw, "_py", lambda: SimpleNamespace(alter_partition_reassignments=alter))
    monkeypatch.setattr(gw, "_call", lambda what, fn, attempts=None, needs=None: fn())
    return gw, sizes


def test_a_large_submission_goes_in_requests_the_controller_takes() -> None:
    n = 2 * gateway.REASSIGN_BATCH + 1
    targets = {(f"t{i % 7}", i): [1, 2, 3] for i in range(n)}
    with pytest.MonkeyPatch.context() as mp:
        gw, sizes = _gateway(mp, lambda request: dict.fromkeys(request))
        assert gw.alter_reassignments(targets) == {}
    assert sizes == [gateway.REASSIGN_BATCH, gateway.REASSIGN_BATCH, 1]
    assert gateway.REASSIGN_BATCH <= 10_000


def test_a_partition_no_request_answered_for_is_an_unknown_outcome() -> None:
    targets = {("t", i): [1, 2] for i in range(gateway.REASSIGN_BATCH + 3)}
    with pytest.MonkeyPatch.context() as mp:
        gw, sizes = _gateway(mp, lambda request: {tp: None for tp in request if tp.partition % 2})
        errors = gw.alter_reassignments(targets)
    assert sizes == [gateway.REASSIGN_BATCH, 3]
    assert set(errors) == {("t", i) for i in range(len(targets)) if i % 2 == 0}
    assert all(e.outcome_unknown for e in errors.values())
