"""The one liveness rule (kafka/liveness.py), shared by a full read and an execution's tick: alive is the
cluster's word (registered, not fenced), never whether the operator reached the broker. No Kafka: the
DescribeCluster answers are built in the shapes the two clients return."""

from __future__ import annotations

from types import SimpleNamespace

from kafka_placement.kafka.liveness import ClusterBrokers, cluster_brokers


def test_librdkafka_nodes_are_the_live_brokers_with_their_racks() -> None:
    """confluent-kafka's DescribeCluster (no KIP-1073 option) lists the registered, unfenced brokers."""
    nodes = [
        SimpleNamespace(id=3, rack="/dc1/r2"),
        SimpleNamespace(id=1, rack=None),
        SimpleNamespace(id=2, rack=""),
    ]
    got = cluster_brokers("abc", nodes)
    assert got == ClusterBrokers("abc", (1, 2, 3), (), {3: "/dc1/r2", 1: None, 2: None})
    assert got.alive(3) and not got.alive(4)


def test_kip_1073_fenced_brokers_are_registered_but_dead() -> None:
    """kafka-python's DescribeCluster v2 asks IncludeFencedBrokers: a fenced broker is listed, and dead."""
    answer = [
        {"broker_id": 1, "host": "h", "port": 9092, "rack": "r1", "is_fenced": False},
        {"broker_id": 2, "host": "h", "port": 9093, "rack": "r2", "is_fenced": True},
        {"broker_id": 3, "host": "h", "port": 9094, "rack": None},  # v0/v1: no IsFenced, listed = unfenced
    ]
    got = cluster_brokers("", answer)
    assert got.cluster_id is None and got.live == (1, 3) and got.fenced == (2,)
    assert dict(got.racks) == {1: "r1", 3: None}


def test_a_live_broker_that_did_not_answer_is_unreachable_not_dead() -> None:
    got = cluster_brokers("c", [SimpleNamespace(id=b, rack=None) for b in (1, 2, 3)])
    assert got.unreachable({1, 3}) == (2,)  # DescribeLogDirs answered by 1 and 3
    assert got.alive(2)  # liveness does not depend on who answered us
    assert got.unreachable({1, 2, 3, 9}) == ()
    assert got.unreachable(()) == (1, 2, 3)


def test_kafka_pythons_answer_reads_as_librdkafkas_with_its_operations() -> None:
    """The gateway's DescribeCluster through any reachable broker (kafka-python; used when the broker the
    metadata names controller does not answer this operator): the same liveness, and KIP-430's bit field
    decoded to the operation names librdkafka's answer has (INT32_MIN: none reported)."""
    from kafka_placement.kafka.liveness import DescribedCluster

    answer = {
        "cluster_id": "abc",
        "controller_id": 3,
        "brokers": [
            {"broker_id": 1, "host": "h", "port": 9092, "rack": "r1", "is_fenced": False},
            {"broker_id": 2, "host": "h", "port": 9093, "rack": None, "is_fenced": True},
        ],
        "cluster_authorized_operations": (1 << 7) | (1 << 8) | (1 << 10),
    }
    got = DescribedCluster.of(answer)
    assert got.authorized_operations == ("ALTER", "DESCRIBE", "DESCRIBE_CONFIGS")
    assert cluster_brokers(got.cluster_id, got.nodes) == ClusterBrokers("abc", (1,), (2,), {1: "r1"})
    none = DescribedCluster.of({**answer, "cluster_authorized_operations": -(2**31)})
    assert none.authorized_operations is None
