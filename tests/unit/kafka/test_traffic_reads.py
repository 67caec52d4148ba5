"""Per-item failures of the traffic reads (kafka/traffic_reads.py ``Failures``), with confluent-kafka's own
error values: the cluster's (unreachable) and the principal's (denied) are raised for the gateway to map, an
item's own (a topic deleted meanwhile) leaves the item out, unless every item failed."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_placement.kafka.traffic_reads import Failures


def _error(code: int) -> KafkaException:
    return KafkaException(KafkaError(code))


@pytest.mark.parametrize("code", [KafkaError._TRANSPORT, KafkaError.TOPIC_AUTHORIZATION_FAILED])
def test_the_clusters_and_the_principals_failures_are_raised_at_once(code: int) -> None:
    e = _error(code)
    with pytest.raises(KafkaException) as raised:
        Failures().add(e, "list offsets of t-0")
    assert raised.value is e


def test_an_items_own_failure_leaves_it_out_when_others_succeeded() -> None:
    failed = Failures()
    failed.add(_error(KafkaError.UNKNOWN_TOPIC_OR_PART), "list offsets of gone-0")
    failed.check(succeeded=3)  # nothing raised: the look goes on without that partition


def test_every_item_failing_raises_the_first_failure_for_a_retry() -> None:
    failed = Failures()
    first = _error(KafkaError.LEADER_NOT_AVAILABLE)
    failed.add(first, "list offsets of t-0")
    failed.add(_error(KafkaError.UNKNOWN_TOPIC_OR_PART), "list offsets of t-1")
    with pytest.raises(KafkaException) as raised:
        failed.check(succeeded=0)
    assert raised.value is first


def test_no_failure_and_no_item_is_fine() -> None:
    Failures().check(succeeded=0)
