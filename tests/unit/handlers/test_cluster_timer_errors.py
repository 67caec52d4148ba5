"""The KafkaCluster timer when a Kafka request fails after its retries (a broker stopping mid-request in a
rolling restart: the opt-in rolling test of tests/compat saw it): a TemporaryError retried at the next tick
(kopf logs it without a traceback; an exception would wait kopf's minute, an execution's ticks with it),
counted in ``kafka_placement_reconcile_errors_total``, and no status written."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import kopf
import pytest

from kafka_placement.handlers import kafkacluster, runtime
from kafka_placement.kafka.types import KafkaOperationError
from kafka_placement.reconcile import metrics


class Failing:
    def reconcile(self, body: Any) -> dict[str, Any]:
        raise KafkaOperationError("describe configs of broker 3 failed: Broker handle destroyed")


def test_a_failed_kafka_request_is_retried_at_the_next_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "_RUNTIME", SimpleNamespace(reconciler=Failing()))
    body = {"metadata": {"namespace": "ns", "name": "timer-errors", "uid": "u1", "generation": 1}}
    label = metrics.cluster_label("ns", "timer-errors")
    before = metrics.RECONCILE_ERRORS.labels(cluster=label)._value.get()
    patch = kopf.Patch()
    handler: Any = kafkacluster.reconcile_cluster  # kopf's registry keeps the plain function
    with pytest.raises(kopf.TemporaryError) as raised:
        handler(body=body, patch=patch)
    assert raised.value.delay == runtime.INTERVAL
    assert "Broker handle destroyed" in str(raised.value)
    assert metrics.RECONCILE_ERRORS.labels(cluster=label)._value.get() == before + 1
    assert not patch  # no status written
