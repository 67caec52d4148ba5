"""Per-item failures of the traffic reads (kafka/traffic_reads.py ``Failures``), with confluent-kafka's own
error values: the cluster's (unreachable) and the principal's (denied) are raised for the gateway to map, an
item's own (a topic deleted meanwhile) leaves the item out, unless every item failed; a partition whose
leader is moving is asked again a bounded number of times (the rig's test: test_traffic.py)."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_placement.kafka.traffic_reads import (
    LEADER_BACKOFF_S,
    LEADER_TRIES,
    REFRESH_TOPICS,
    Failures,
    list_offsets,
)


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


class _Client:
    """An admin client's ``list_offsets`` and ``list_topics`` answering from a script: per round of
    ListOffsets (earliest, then latest, is one round), the error code of each partition that fails."""

    def __init__(self, rounds: list[dict[tuple[str, int], int]]) -> None:
        self.rounds = rounds
        self.round = -1
        self.asked: list[list[tuple[str, int]]] = []  # the earliest offsets' requests, one a round
        self.refreshed: list[str | None] = []

    def list_offsets(self, request: dict[Any, Any], request_timeout: float) -> dict[Any, Future[Any]]:
        from confluent_kafka import TopicPartition

        keys = sorted((tp.topic, tp.partition) for tp in request)
        if type(next(iter(request.values()))).__name__ == "EarliestSpec":
            self.round += 1
            self.asked.append(keys)
        script = self.rounds[min(self.round, len(self.rounds) - 1)]
        out: dict[Any, Future[Any]] = {}
        for topic, partition in keys:
            f: Future[Any] = Future()
            if (topic, partition) in script:
                f.set_exception(_error(script[(topic, partition)]))
            else:
                f.set_result(SimpleNamespace(offset=partition * 10))
            out[TopicPartition(topic, partition)] = f
        return out

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> None:
        self.refreshed.append(topic)


def _read(client: _Client, keys: list[tuple[str, int]]) -> tuple[dict[tuple[str, int], Any], list[float]]:
    slept: list[float] = []
    found = list_offsets(
        lambda: client, lambda what, fn, attempts=None, needs=None: fn(), keys, 5.0, slept.append
    )
    return found, slept


def test_a_partition_whose_leader_moved_is_asked_again_with_the_clients_metadata_read_again() -> None:
    keys = [("a", 0), ("a", 1), ("b", 0)]
    client = _Client(
        [{("a", 1): KafkaError.FENCED_LEADER_EPOCH}, {("a", 1): KafkaError.OFFSET_NOT_AVAILABLE}, {}]
    )
    found, slept = _read(client, keys)
    assert found == {("a", 0): (0, 0), ("a", 1): (10, 10), ("b", 0): (0, 0)}
    assert client.asked[1:] == [[("a", 1)]] * 2  # only the moving partition, twice more
    assert slept == [LEADER_BACKOFF_S, 2 * LEADER_BACKOFF_S]
    assert client.refreshed == ["a"]  # its topic's metadata, after the stale epoch only


def test_a_leader_still_moving_after_every_try_leaves_the_partition_out_after_a_bounded_wait() -> None:
    keys = [("a", 0), ("a", 1)]
    client = _Client([{("a", 1): KafkaError.OFFSET_NOT_AVAILABLE}])
    found, slept = _read(client, keys)
    assert found == {("a", 0): (0, 0)}
    assert client.asked[1:] == [[("a", 1)]] * (LEADER_TRIES - 1)
    assert slept == [LEADER_BACKOFF_S * 2**i for i in range(LEADER_TRIES - 1)]
    assert sum(slept) < 7 and client.refreshed == []  # no stale epoch: no metadata read


def test_every_partition_still_moving_raises_for_the_gateways_call() -> None:
    client = _Client([{("a", 0): KafkaError.UNKNOWN_LEADER_EPOCH}])
    with pytest.raises(KafkaException) as raised:
        _read(client, [("a", 0)])
    assert raised.value.args[0].code() == KafkaError.UNKNOWN_LEADER_EPOCH


def test_an_items_own_failure_is_not_asked_again_and_many_topics_refresh_in_one_request() -> None:
    keys = [(f"t{i}", 0) for i in range(REFRESH_TOPICS + 1)] + [("gone", 0)]
    moving = dict.fromkeys(keys[:-1], KafkaError.FENCED_LEADER_EPOCH)
    client = _Client([{**moving, ("gone", 0): KafkaError.UNKNOWN_TOPIC_OR_PART}, {("gone", 0): 0}])
    found, slept = _read(client, keys)
    assert set(found) == set(keys[:-1])  # the deleted topic left out, never asked again
    assert ("gone", 0) not in client.asked[1] and slept == [LEADER_BACKOFF_S]
    assert client.refreshed == [None]  # past REFRESH_TOPICS topics: one metadata request for all
