"""A broker answering Metadata with no broker listed (a KRaft broker while every broker is fenced: a cluster
starting or restarting as a whole) must neither abort the operator's process nor read as "every broker
dead" (issue 55: librdkafka 2.16 aborted the rig's process with ``rd_kafka_admin_response_parse:
Assertion 'rko_result' failed`` against brokers still starting).

The cause, from librdkafka's source and shown here: its metadata parser answers an answer with no broker
and no topic with "retry" (``RD_KAFKA_RESP_ERR__PARTIAL``); DescribeCluster's response parser returns the
buffer's error instead (none) without a result, and the generic admin parser asserts there is one. So
the gateway sends DescribeCluster through kafka-python only (kafka/gateway.py ``_describe_cluster``).
The listener is tests/unit/kafka/metadata_stub.py (hostile input for the clients, not a Kafka).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest
from tests.unit.kafka.metadata_stub import metadata_stub

from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import KafkaGateway
from kafka_placement.kafka.types import KafkaUnavailableError


def test_librdkafkas_describe_cluster_aborts_the_process_on_an_answer_listing_no_broker() -> None:
    """Why the gateway never uses it: the whole process dies (SIGABRT), no exception to catch. Should a
    librdkafka release fix it, this fails: the kafka-python-only DescribeCluster may then be revisited."""
    script = textwrap.dedent(
        """
        import sys
        from confluent_kafka.admin import AdminClient
        admin = AdminClient({"bootstrap.servers": sys.argv[1], "log_level": 0})
        try:
            admin.describe_cluster(request_timeout=5).result(timeout=10)
        except Exception as e:
            print("raised", e)
        """
    )
    with metadata_stub(brokers_first=1) as stub:  # the bootstrap metadata names a controller, then none
        proc = subprocess.run(
            [sys.executable, "-c", script, stub.bootstrap], capture_output=True, text=True, timeout=60
        )
    assert proc.returncode == -signal.SIGABRT, (proc.returncode, proc.stdout, proc.stderr)
    assert "rko_result" in proc.stderr, proc.stderr


def test_the_gateway_says_a_cluster_whose_brokers_are_all_fenced_serves_none_yet_and_lives() -> None:
    """Connected to a serving cluster, then every broker fenced (a cluster restarting as a whole): the
    answer listing no broker is KafkaUnavailableError (the cluster shows Unreachable; its brokers are not
    counted dead), the process lives on, and once a broker serves again it is listed."""
    with metadata_stub() as stub:
        settings = ConnectionSettings(stub.bootstrap, request_timeout_s=5, connect_timeout_s=5)
        with KafkaGateway(settings, attempts=1, backoff_s=0.1) as gateway:
            assert gateway.describe_cluster()[1] == (1,)
            stub.listing = False
            with pytest.raises(KafkaUnavailableError) as raised:
                gateway.describe_cluster()
            message = str(raised.value)
            assert stub.bootstrap in message, message
            assert "describe cluster: the cluster answered but lists no broker" in message, message
            stub.listing = True
            assert gateway.describe_cluster()[1] == (1,)


def test_a_listener_that_never_listed_a_broker_fails_the_connect_check() -> None:
    """Never a broker listed (every broker fenced from the start): the connect check's metadata answer
    lists none, which is KafkaUnavailableError naming the address and saying so at once (not after the
    connect timeout), no abort."""
    with metadata_stub(brokers_first=0) as stub:
        settings = ConnectionSettings(stub.bootstrap, request_timeout_s=5, connect_timeout_s=5)
        with (
            KafkaGateway(settings, attempts=1, backoff_s=0.1) as gateway,
            pytest.raises(KafkaUnavailableError) as raised,
        ):
            gateway.describe_cluster()
    assert stub.bootstrap in str(raised.value), raised.value
    assert "the cluster answered but lists no broker" in str(raised.value), raised.value
