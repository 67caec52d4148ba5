"""The APIs the operator cannot work without (kafka/api_support.py) and the gateway's check of a broker's
ApiVersions ranges against them (kafka/clients.py): pure ranges in, the missing APIs and one message out;
the clients refuse such a broker before handing out a client, and remember it. No Kafka: the kafka-python
client is replaced by one that answers ``api_versions()`` with given ranges."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.protocol.api_key import ApiKey

from kafka_placement.kafka import api_support
from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import KafkaGateway, KafkaUnsupportedError

# ApiVersions of a real Kafka 2.3.1 broker (ZooKeeper mode; read with kafka-python 3.0.12): keys 0-44
KAFKA_2_3 = {
    0: (0, 7), 1: (0, 11), 2: (0, 5), 3: (0, 8), 4: (0, 2), 5: (0, 1), 6: (0, 5), 7: (0, 2), 8: (0, 7),
    9: (0, 5), 10: (0, 2), 11: (0, 5), 12: (0, 3), 13: (0, 2), 14: (0, 3), 15: (0, 3), 16: (0, 2),
    17: (0, 1), 18: (0, 2), 19: (0, 3), 20: (0, 3), 21: (0, 1), 22: (0, 1), 23: (0, 3), 24: (0, 1),
    25: (0, 1), 26: (0, 1), 27: (0, 0), 28: (0, 2), 29: (0, 1), 30: (0, 1), 31: (0, 1), 32: (0, 2),
    33: (0, 1), 34: (0, 1), 35: (0, 1), 36: (0, 1), 37: (0, 1), 38: (0, 1), 39: (0, 1), 40: (0, 1),
    41: (0, 1), 42: (0, 1), 43: (0, 0), 44: (0, 0),
}  # fmt: skip
KAFKA_2_4 = {**KAFKA_2_3, 45: (0, 0), 46: (0, 0), 47: (0, 0)}


def test_a_broker_with_every_required_api_misses_none() -> None:
    assert api_support.missing(KAFKA_2_4) == ()


def test_kafka_2_3_lacks_the_kip_455_reassignment_apis() -> None:
    assert [a.name for a in api_support.missing(KAFKA_2_3)] == [
        "AlterPartitionReassignments",
        "ListPartitionReassignments",
    ]


def test_an_absent_key_or_an_empty_range_is_missing() -> None:
    ranges = {**KAFKA_2_4}
    del ranges[35]
    ranges[34] = (2, 1)
    assert [a.key for a in api_support.missing(ranges)] == [34, 35]


def test_the_required_keys_are_kafkas() -> None:
    """Each required API's key is the one Kafka (and kafka-python) gives that name."""
    for api in api_support.REQUIRED:
        assert ApiKey(api.key).name == api.name


def test_the_oldest_supported_release_is_the_newest_first_release_of_a_required_api() -> None:
    newest = max(api_support.REQUIRED, key=lambda a: tuple(int(x) for x in a.since.split(".")))
    assert newest.since == api_support.OLDEST_SUPPORTED


def test_the_message_names_the_release_and_every_missing_api() -> None:
    lacking = api_support.missing(KAFKA_2_3)
    msg = api_support.unsupported_message("h:9092", KAFKA_2_3, "2.3", lacking)
    assert msg == (
        "the Kafka cluster at h:9092 is not supported: it runs Kafka 2.3, which lacks "
        "AlterPartitionReassignments (API key 45, Kafka 2.4+, submitting and cancelling moves (KIP-455)), "
        "ListPartitionReassignments (API key 46, Kafka 2.4+, reading moves in flight (KIP-455)); the "
        "operator needs Kafka 2.4 or newer (nothing was changed)"
    )
    assert "\n" not in msg


def test_without_a_release_the_message_names_the_highest_api_key() -> None:
    assert api_support.describe_release({0: (0, 3), 18: (0, 1)}, None) == (
        "a Kafka broker of unknown release (highest API key served: 18)"
    )


class FakePy:
    """kafka-python's admin client as the check reads it."""

    def __init__(self, ranges: dict[int, tuple[int, int]] | None) -> None:
        self.ranges = ranges
        self.closed = False

    def api_versions(self) -> dict[Any, tuple[int, int]]:
        if self.ranges is None:
            raise AttributeError("'NoneType' object has no attribute 'api_versions'")
        return {ApiKey(k): v for k, v in self.ranges.items() if k in ApiKey._value2member_map_}

    def close(self) -> None:
        self.closed = True


def gateway(monkeypatch: pytest.MonkeyPatch, py: FakePy) -> KafkaGateway:
    gw = KafkaGateway(ConnectionSettings(bootstrap_servers="127.0.0.1:9"))
    monkeypatch.setattr(gw, "_admin", lambda: object())
    monkeypatch.setattr("kafka_placement.kafka.clients.kafka_python_admin", lambda _conf: py)
    return gw


def test_the_gateway_refuses_a_broker_without_the_apis_and_remembers_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    py = FakePy(KAFKA_2_3)
    gw = gateway(monkeypatch, py)
    with pytest.raises(KafkaUnsupportedError) as first:
        gw._py()
    assert "it runs Kafka 2.3, which lacks AlterPartitionReassignments (API key 45" in first.value.message
    assert first.value.exit_code == 1 and first.value.reason == "KafkaUnsupported"
    assert py.closed  # the client is not kept
    monkeypatch.setattr("kafka_placement.kafka.clients.kafka_python_admin", pytest.fail)  # not asked again
    with pytest.raises(KafkaUnsupportedError) as again:
        gw._py()
    assert again.value.message == first.value.message


def test_the_gateway_hands_out_the_client_of_a_supported_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    py = FakePy(KAFKA_2_4)
    assert gateway(monkeypatch, py)._py() is py


def test_no_ranges_is_no_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    py = FakePy(None)
    assert gateway(monkeypatch, py)._py() is py


def test_config_changes_are_not_sent_to_an_unsupported_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    from kafka_placement.kafka.types import ConfigChange, ConfigTarget

    gw = gateway(monkeypatch, FakePy(KAFKA_2_3))
    target = ConfigTarget.broker(1)
    with pytest.raises(KafkaUnsupportedError):
        gw.incremental_alter_configs(
            {target: [ConfigChange("leader.replication.throttled.rate", "SET", "1")]}
        )
