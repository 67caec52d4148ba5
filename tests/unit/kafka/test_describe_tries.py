"""How long the gateway keeps asking DescribeCluster (kafka/cluster_reads.py ``_describe_cluster_anywhere``):
brokers that refuse at once get every try, spaced; a hung broker, which holds each try for the request
timeout, gets no try that would start ``DESCRIBE_CLUSTER_BUDGET_S`` after the first. The clock and the
client are the test's (no Kafka: the tries' timing is the rule under test; the silent "broker" on the rig:
tests/e2e/test_operator.py, tests/integration/test_gateway.py)."""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any

import pytest

from kafka_placement.kafka import cluster_reads, gateway
from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.types import KafkaUnavailableError


def _tries(monkeypatch: pytest.MonkeyPatch, seconds_a_try: float) -> list[float]:
    clock = [0.0]
    started: list[float] = []

    def sleep(s: float) -> None:
        clock[0] += s

    def call(what: str, fn: Any, attempts: int | None = None, needs: str | None = None) -> Any:
        started.append(clock[0])
        clock[0] += seconds_a_try
        raise KafkaUnavailableError("no broker answered")

    monkeypatch.setattr(cluster_reads, "time", SimpleNamespace(monotonic=lambda: clock[0], sleep=sleep))
    gw = gateway.KafkaGateway(ConnectionSettings("127.0.0.1:9"))
    monkeypatch.setattr(gw, "_py", lambda: SimpleNamespace(describe_cluster=None))
    monkeypatch.setattr(gw, "_call", call)
    assert gw._describe_cluster_anywhere("describe cluster") is None
    return started


def test_brokers_that_refuse_get_every_try_spaced() -> None:
    with pytest.MonkeyPatch.context() as mp:
        started = _tries(mp, 0.01)
    assert len(started) == cluster_reads.DESCRIBE_CLUSTER_TRIES
    gaps = [b - a - 0.01 for a, b in itertools.pairwise(started)]
    pause, most = cluster_reads.DESCRIBE_CLUSTER_PAUSE_S, cluster_reads.DESCRIBE_CLUSTER_PAUSE_MAX_S
    assert gaps == pytest.approx([min(pause * 2**i, most) for i in range(len(gaps))])
    assert gaps[0] < 0.04  # under kafka-python's first reconnect backoff (50 ms, +-20%): the broker that
    # refused a try is still in backoff at the next, which goes to another broker
    assert max(gaps) == pytest.approx(most)


def test_a_hung_broker_gets_no_try_past_the_budget() -> None:
    with pytest.MonkeyPatch.context() as mp:
        started = _tries(mp, 10.0)  # each try waits out a 10 s request timeout
    pause = cluster_reads.DESCRIBE_CLUSTER_PAUSE_S
    assert started == pytest.approx([0.0, 10 + pause])  # the third would start past the budget
    assert all(t < cluster_reads.DESCRIBE_CLUSTER_BUDGET_S for t in started)
