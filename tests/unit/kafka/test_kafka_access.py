"""What the principal may do (kafka/access.py), how the clients' failures become ours (kafka/failures.py),
and that a gateway checks access once: no Kafka needed."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from kafka.errors import (
    KafkaConnectionError,
    NodeNotReadyError,
    NotControllerError,
    TopicAuthorizationFailedError,
    UnknownBrokerIdError,
)

from kafka_placement.kafka import access, failures
from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import (
    ConfigTarget,
    KafkaAuthenticationError,
    KafkaAuthorizationError,
    KafkaGateway,
    KafkaOperationError,
    KafkaUnavailableError,
)

SETTINGS = ConnectionSettings("k1:9092")
EVERYTHING = frozenset({"DESCRIBE", "ALTER", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"})
TOPIC_OPS = frozenset({"DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"})


def authorized(
    cluster: frozenset[str] = EVERYTHING,
    probe: str = "UNKNOWN_TOPIC_OR_PART",
    topics: dict[str, frozenset[str] | None] | None = None,
) -> access.Authorized:
    return access.Authorized(cluster, probe, topics or {})


def denial(found: access.Authorized, *, configs: bool = True, moves: bool = True) -> str:
    with pytest.raises(KafkaAuthorizationError) as raised:
        access.check(SETTINGS, found, configs=configs, moves=moves, when="checked")
    return raised.value.message


def test_everything_granted_passes() -> None:
    access.check(SETTINGS, authorized(topics={"a": TOPIC_OPS}), configs=True, moves=True)


def test_a_snapshot_needs_only_describe_and_every_topic() -> None:
    found = authorized(cluster=frozenset({"DESCRIBE"}), topics={"a": frozenset({"DESCRIBE"})})
    access.check(SETTINGS, found, configs=False, moves=False)
    message = denial(authorized(probe="TOPIC_AUTHORIZATION_FAILED"), configs=False, moves=False)
    assert "DESCRIBE on TOPIC * (every topic)" in message
    assert "SASL" not in message and "k1:9092" in message and "[checked]" in message


def test_moves_need_alter_on_the_cluster_and_describe_configs_on_the_topics() -> None:
    found = authorized(cluster=frozenset({"DESCRIBE"}), topics={"a": frozenset({"DESCRIBE"}), "b": None})
    message = denial(found, configs=False)
    assert "ALTER on CLUSTER kafka-cluster" in message
    assert "DESCRIBE on TOPIC b (" in message  # not even DESCRIBE
    assert "DESCRIBE_CONFIGS on TOPIC a, b" not in message  # the grant is named, not the implied op
    assert "ALTER_CONFIGS on TOPIC a, b (" in message  # DESCRIBE_CONFIGS comes with ALTER_CONFIGS
    assert "ALTER_CONFIGS on CLUSTER" not in message  # no throttles or cordons asked


def test_configs_need_alter_configs_on_the_cluster() -> None:
    message = denial(authorized(cluster=frozenset({"DESCRIBE", "ALTER"})), moves=False)
    assert "ALTER_CONFIGS on CLUSTER kafka-cluster" in message


def test_many_denied_topics_are_shown_by_five() -> None:
    topics: dict[str, frozenset[str] | None] = {f"t{i}": None for i in range(8)}
    assert "TOPIC t0, t1, t2, t3, t4 and 3 more" in denial(authorized(topics=topics), configs=False)


def test_what_a_denied_request_lacks() -> None:
    assert access.on_configs([ConfigTarget.broker(1)]).startswith("ALTER_CONFIGS on CLUSTER kafka-cluster")
    topics = [ConfigTarget.topic("a"), ConfigTarget.topic("b")]
    assert access.on_configs(topics).startswith("ALTER_CONFIGS on TOPIC a, b")
    assert access.on_topics(["a"]).startswith("DESCRIBE on TOPIC a")
    assert access.ON_CLUSTER.startswith("ALTER on CLUSTER kafka-cluster")


def classify(e: Exception, transport: str | None = None, broker_down: bool = False) -> Any:
    return failures.classify("list", e, SETTINGS, access.ON_CLUSTER, lambda: (transport, broker_down))


def confluent(code: int, text: str = "") -> KafkaException:
    return KafkaException(KafkaError(code, text))


def test_a_denied_call_names_the_grant_and_is_not_retried() -> None:
    for e in (confluent(KafkaError.CLUSTER_AUTHORIZATION_FAILED), TopicAuthorizationFailedError()):
        failure, retriable = classify(e)
        assert isinstance(failure, KafkaAuthorizationError) and not retriable
        assert "ALTER on CLUSTER kafka-cluster" in failure.message and "[list]" in failure.message
    unlisted = TopicAuthorizationFailedError()
    failure, _ = failures.classify("x", unlisted, SETTINGS, None, lambda: (None, False))
    assert "TopicAuthorizationFailedError (an operation not in README 'Security')" in failure.message


def test_a_timeout_is_an_unreachable_cluster_only_after_a_transport_error() -> None:
    failure, retriable = classify(confluent(KafkaError._TIMED_OUT, "timed out"))
    assert type(failure) is KafkaOperationError and retriable
    failure, retriable = classify(confluent(KafkaError._TIMED_OUT, "timed out"), "Connection refused")
    assert type(failure) is KafkaUnavailableError and not retriable
    assert failure.message == "cannot reach Kafka at k1:9092: Connection refused"
    failure, retriable = classify(confluent(KafkaError._TRANSPORT, "broker down"))
    assert type(failure) is KafkaUnavailableError and not retriable


def test_a_controller_that_just_died_is_retried() -> None:
    timed_out = confluent(KafkaError._TIMED_OUT, "Timed out waiting for controller")
    failure, retriable = classify(timed_out, "k2:9092/2: Connect failed", broker_down=True)
    assert type(failure) is KafkaOperationError and retriable


def test_a_refused_authentication_is_said_so() -> None:
    sasl = ConnectionSettings(
        "k1:9092", security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", username="u", password="s3cret"
    )
    e = confluent(KafkaError._AUTHENTICATION, "SASL authentication error: Authentication failed")
    failure, retriable = failures.classify("connect", e, sasl, None, lambda: (None, False))
    assert type(failure) is KafkaAuthenticationError and not retriable
    assert "user 'u'" in failure.message and "s3cret" not in failure.message


def test_kafka_python_failures() -> None:
    failure, retriable = classify(KafkaConnectionError("refused"))
    assert type(failure) is KafkaUnavailableError and retriable
    # a broker gone from the client's metadata (stopped, fenced) is one that does not answer, as a refusal
    failure, retriable = classify(UnknownBrokerIdError(3))
    assert type(failure) is KafkaUnavailableError and retriable and "broker 3 " in failure.message
    failure, retriable = classify(NodeNotReadyError(3))  # backing off after a refused connection
    assert type(failure) is KafkaUnavailableError and retriable
    failure, retriable = classify(NotControllerError())
    assert type(failure) is KafkaOperationError and retriable
    assert classify(ValueError("a bug")) is None  # shown as a bug, not as Kafka's


def test_item_errors_are_spelled_as_kafka_spells_them() -> None:
    op = failures.confluent_op_error(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))
    assert op.code == "UNKNOWN_TOPIC_OR_PARTITION" and not op.denied
    assert failures.py_op_error(TopicAuthorizationFailedError).denied


class _Checked(Exception):
    """The snapshot went on past its access check."""


def test_a_gateway_checks_access_once(monkeypatch: pytest.MonkeyPatch) -> None:
    gw = KafkaGateway(SETTINGS)
    asked: list[list[str]] = []

    def read(topics: Any) -> access.Authorized:
        asked.append(list(topics))
        return authorized(cluster=frozenset({"DESCRIBE"}))

    def past(*args: Any, **kw: Any) -> None:
        raise _Checked

    monkeypatch.setattr(gw, "_authorized", read)
    monkeypatch.setattr(gw, "_describe_cluster", past)
    with pytest.raises(KafkaAuthorizationError):  # a denial is not remembered as a check
        gw.check_authorized(["a"])
    for _ in range(2):
        with pytest.raises(_Checked):
            gw.snapshot()
    assert asked == [["a"], []]  # the first snapshot checked DESCRIBE, the second did not
    gw.check_authorized(moves=False, configs=False)  # an explicit check always asks
    assert len(asked) == 3
