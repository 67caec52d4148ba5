"""Topics' DescribeConfigs go to a broker that has just answered, never to librdkafka's "controller"
(kafka/configs.py): a request holding one broker resource goes to that broker. No Kafka: the confluent
client is replaced by one that records the resources each request asked for and answers them; what is
checked is which resources the gateway puts in a request and what it returns."""

from __future__ import annotations

import time
from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import SILENT_S, KafkaGateway
from kafka_placement.kafka.types import ConfigTarget, KafkaOperationError


class Recording:
    """The admin client's describe_configs: each request's resources; ``fail_via``: requests routed
    through that broker time out."""

    def __init__(self, fail_via: int | None = None) -> None:
        self.requests: list[list[tuple[str, str]]] = []
        self.fail_via = fail_via

    def describe_configs(self, resources: list[Any], request_timeout: float) -> dict[Any, Future[Any]]:
        asked = [(r.restype.name.lower(), r.name) for r in resources]
        self.requests.append(asked)
        out: dict[Any, Future[Any]] = {}
        for r in resources:
            f: Future[Any] = Future()
            if ("broker", str(self.fail_via)) in asked:
                f.set_exception(KafkaException(KafkaError(KafkaError._TIMED_OUT, "timed out")))
            else:
                f.set_result({})
            out[r] = f
        return out

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        """A metadata answer naming no controller (``_controller_admin`` then asks nothing more)."""
        return SimpleNamespace(brokers={}, controller_id=-1)

    def poll(self, timeout: float) -> int:
        return 0


def gateway(admin: Recording, answered: dict[int, float]) -> KafkaGateway:
    gw = KafkaGateway(ConnectionSettings("127.0.0.1:1"), attempts=2, backoff_s=0)
    gw._confluent = admin
    gw._answered.update(answered)
    return gw


def test_topics_go_through_the_lowest_broker_that_answered_and_its_answer_is_dropped() -> None:
    now = time.monotonic()
    admin = Recording()
    gw = gateway(admin, {3: now, 2: now, 1: now - SILENT_S - 1})  # 1 answered too long ago
    gw._silent[2] = now  # 2 was left out since
    got = gw.describe_configs([ConfigTarget.topic("a"), ConfigTarget.topic("b")])
    assert admin.requests == [[("topic", "a"), ("topic", "b"), ("broker", "3")]]
    assert set(got) == {ConfigTarget.topic("a"), ConfigTarget.topic("b")}


def test_without_a_broker_that_answered_topics_go_to_the_controller() -> None:
    admin = Recording()
    gateway(admin, {}).describe_configs([ConfigTarget.topic("a")])
    assert admin.requests == [[("topic", "a")]]


def test_a_broker_resource_is_never_routed_elsewhere() -> None:
    admin = Recording()
    gateway(admin, {1: time.monotonic()}).describe_configs([ConfigTarget.broker(2)])
    assert admin.requests == [[("broker", "2")]]


def test_a_route_that_fails_is_left_for_the_next_attempt() -> None:
    now = time.monotonic()
    admin = Recording(fail_via=1)
    gw = gateway(admin, {1: now, 2: now})
    got = gw.describe_configs([ConfigTarget.topic("a")])
    assert admin.requests == [[("topic", "a"), ("broker", "1")], [("topic", "a"), ("broker", "2")]]
    assert set(got) == {ConfigTarget.topic("a")}
    admin = Recording(fail_via=2)
    gw = gateway(admin, {2: now})  # the only route fails: the retry goes to the controller
    assert set(gw.describe_configs([ConfigTarget.topic("a")])) == {ConfigTarget.topic("a")}
    assert admin.requests == [[("topic", "a"), ("broker", "2")], [("topic", "a")]]
    admin = Recording(fail_via=2)
    gw = KafkaGateway(ConnectionSettings("127.0.0.1:1"), attempts=1, backoff_s=0)
    gw._confluent, gw._answered[2] = admin, now
    with pytest.raises(KafkaOperationError):  # a timeout on the last attempt is the caller's failure
        gw.describe_configs([ConfigTarget.topic("a")])
