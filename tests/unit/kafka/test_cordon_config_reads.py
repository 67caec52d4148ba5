"""The snapshot's read of each broker's cordoned dirs (``KafkaGateway._cordon_configs``) when a broker that
answered DescribeLogDirs fails DescribeConfigs right after (stopping in a rolling restart): that broker is
left out as unreachable (its dirs unknown, not planned from), the others are read, nothing raises (the
opt-in rolling-restart test of tests/compat caught a reconcile failing on it with a traceback)."""

from __future__ import annotations

import pytest

from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import KafkaGateway
from kafka_placement.kafka.types import KafkaOperationError, KafkaUnavailableError, LogDirInfo


def dirs_of(broker: int, cordoned: bool | None) -> tuple[LogDirInfo, ...]:
    return tuple(LogDirInfo(broker, f"/d{broker}-{i}", None, 100, 50, cordoned, ()) for i in (0, 1))


@pytest.mark.parametrize(
    "failure",
    [
        KafkaOperationError("describe configs of broker 2 failed: Broker handle destroyed"),
        KafkaUnavailableError("cannot reach Kafka at k:9092: broker 2 is not in the metadata"),
    ],
    ids=["operation", "unavailable"],
)
def test_a_broker_that_fails_its_config_read_is_left_out_as_unreachable(failure: Exception) -> None:
    gateway = KafkaGateway(ConnectionSettings("k:9092"))
    read: list[int] = []

    def cordon_config(broker: int) -> set[str]:
        read.append(broker)
        if broker == 2:
            raise failure
        return {f"/d{broker}-1"}

    gateway._cordon_config = cordon_config  # type: ignore[method-assign]
    dirs = {1: dirs_of(1, None), 2: dirs_of(2, None), 3: dirs_of(3, None), 4: dirs_of(4, False)}
    configs = gateway._cordon_configs(dirs)
    assert configs == {1: {"/d1-1"}, 3: {"/d3-1"}}
    assert read == [1, 2, 3]  # broker 4's DescribeLogDirs said its cordons: no config read
    assert sorted(dirs) == [1, 3, 4]  # broker 2's dirs unknown: unreachable in the snapshot
    assert 2 in gateway.silent


def test_an_authorization_failure_is_not_taken_for_a_broker_leaving() -> None:
    from kafka_placement.kafka.types import KafkaAuthorizationError

    gateway = KafkaGateway(ConnectionSettings("k:9092"))

    def cordon_config(broker: int) -> set[str]:
        raise KafkaAuthorizationError("not authorized to DESCRIBE_CONFIGS on the cluster")

    gateway._cordon_config = cordon_config  # type: ignore[method-assign]
    with pytest.raises(KafkaAuthorizationError):
        gateway._cordon_configs({1: dirs_of(1, None)})
