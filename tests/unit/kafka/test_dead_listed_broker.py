"""A broker the metadata still lists but that has just died (its port refusing connections; KRaft lists it
until it is fenced) costs the gateway no CPU. librdkafka (2.13 to 2.16) sends a request meant for one
broker (a broker's own configs; DescribeTopics and DescribeCluster go to the broker the metadata names
controller) to that broker and, while the request waits for it, connects to it again and again without
pause: a core busy until the request times out. The connect check asks any broker (a metadata request),
a broker's configs are not asked of a broker that refuses connections, and a request for the controller
waits, at rest, for the metadata to name one that accepts them (kafka/clients.py ``_connected``,
``_refused_by``, ``_controller_admin``). The listener is tests/unit/kafka/metadata_stub.py, which lists
a second broker, 2, at a port nothing listens on and names it controller.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from tests.unit.kafka.metadata_stub import metadata_stub

from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import KafkaGateway
from kafka_placement.kafka.types import ConfigChange, ConfigTarget, KafkaOperationError, KafkaUnavailableError


@pytest.fixture
def gateway() -> Iterator[KafkaGateway]:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        dead = unused.getsockname()[1]  # bound, not listening: connects are refused
        with metadata_stub(dead_controller=dead) as stub:
            settings = ConnectionSettings(stub.bootstrap, request_timeout_s=5, connect_timeout_s=5)
            with KafkaGateway(settings, attempts=1, backoff_s=0.1) as gw:
                yield gw


def test_a_dead_broker_named_controller_costs_the_connect_check_no_cpu(gateway: KafkaGateway) -> None:
    cpu = time.process_time()  # every thread of this process, librdkafka's too
    gateway._admin()  # the listener's answer connects it
    used = time.process_time() - cpu
    assert used < 1.0, f"the connect check used {used:.1f} s of CPU"


def test_a_dead_brokers_configs_are_refused_at_once_at_no_cpu_cost(gateway: KafkaGateway) -> None:
    gateway._admin()
    cpu = time.process_time()
    with pytest.raises(KafkaUnavailableError) as described:
        gateway.describe_configs([ConfigTarget.broker(2)])
    with pytest.raises(KafkaUnavailableError) as altered:
        gateway.incremental_alter_configs(
            {ConfigTarget.broker(2): [ConfigChange("leader.replication.throttled.rate", "SET", "1000")]}
        )
    used = time.process_time() - cpu
    for raised in (described, altered):
        assert "broker 2 (127.0.0.1:" in str(raised.value), raised.value
        assert "refused the connection" in str(raised.value), raised.value
    assert used < 1.0, f"two calls to a dead broker used {used:.1f} s of CPU"


def test_requests_for_a_dead_controller_wait_for_a_live_one_at_no_cpu_cost() -> None:
    """DescribeTopics, ElectLeaders and a config request of topics alone go to the broker the metadata names
    controller: while it names a dead one (here for ever), the gateway asks the metadata again, at rest,
    until the request timeout, and fails naming it (``KafkaClients._controller_admin``)."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        dead = unused.getsockname()[1]
        with metadata_stub(dead_controller=dead) as stub:
            settings = ConnectionSettings(stub.bootstrap, request_timeout_s=1, connect_timeout_s=5)
            with KafkaGateway(settings, attempts=1, backoff_s=0.1) as gw:
                gw._admin()
                cpu = time.process_time()
                calls = {
                    "describe": lambda: gw.describe_partitions(["t"]),
                    "elect": lambda: gw.elect_preferred_leaders([("t", 0)]),
                    "alter": lambda: gw.incremental_alter_configs(
                        {ConfigTarget.topic("t"): [ConfigChange("retention.ms", "SET", "1000")]}
                    ),
                }
                raised = {}
                for what, call in calls.items():
                    try:
                        call()
                    except KafkaOperationError as e:
                        raised[what] = str(e)
                    else:
                        raised[what] = "no error"
                used = time.process_time() - cpu
    assert used < 0.5, f"three calls for a dead controller used {used:.2f} s of CPU"
    for what, message in raised.items():
        assert f"controller, 2 (127.0.0.1:{dead}), refused connections" in message, (what, message)
