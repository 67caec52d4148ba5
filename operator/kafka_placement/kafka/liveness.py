"""Which brokers are alive: the cluster's word, never whether the operator reached them.

One rule, used by a full read (``KafkaGateway.snapshot``) and by an execution's tick
(``execution/view.read_view``, through ``KafkaGateway.describe_cluster``): a broker is *alive* when the
cluster's DescribeCluster answer lists it registered and not fenced; one that is fenced (KIP-1073: a
DescribeCluster v2 with ``IncludeFencedBrokers`` lists fenced brokers with ``IsFenced``) or not listed at all
(not registered) is *dead*. Whether the operator's own requests to a broker (DescribeLogDirs) were
answered decides nothing about that: a broker alive in the cluster that did not answer is *unreachable*
(``ClusterBrokers.unreachable``), shown and waited for, never healed.

Without KIP-1073 (Kafka before 4.0, or a client that does not ask: confluent-kafka's ``describe_cluster``
has no such option; kafka-python 3's asks) DescribeCluster lists the registered, unfenced brokers only —
in KRaft the metadata's live brokers — which is the same set of live brokers. ``cluster_brokers`` reads
either shape: librdkafka's ``Node`` objects (``id``, ``rack``) or kafka-python's dicts (``broker_id``,
``rack``, ``is_fenced``). ``DescribedCluster`` is kafka-python's answer read into that shape (the
gateway's only DescribeCluster). Pure: no client, no clock (tests/unit/kafka/test_liveness.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ClusterBrokers:
    """The brokers a DescribeCluster answer lists: alive ones (with their racks) and fenced ones."""

    cluster_id: str | None
    live: tuple[int, ...]  # registered and not fenced: alive in the cluster
    fenced: tuple[int, ...] = ()  # registered and fenced (only when the answer lists fenced brokers)
    racks: Mapping[int, str | None] = field(default_factory=dict)  # of the live brokers

    def alive(self, broker: int) -> bool:
        return broker in self.live

    def unreachable(self, answered: Iterable[int]) -> tuple[int, ...]:
        """The live brokers that did not answer the operator (``answered``: those that did)."""
        got = set(answered)
        return tuple(b for b in self.live if b not in got)


def _node(n: Any) -> tuple[int, str | None, bool]:
    """(id, rack, fenced) of one broker of a DescribeCluster answer, either client's shape."""
    if isinstance(n, Mapping):
        rack = n.get("rack")
        return int(n["broker_id"]), (str(rack) if rack else None), bool(n.get("is_fenced", False))
    rack = getattr(n, "rack", None)
    return int(n.id), (str(rack) if rack else None), bool(getattr(n, "is_fenced", False))


def cluster_brokers(cluster_id: str | None, nodes: Iterable[Any]) -> ClusterBrokers:
    """Liveness from a DescribeCluster answer's brokers (module docstring): the one rule of the project."""
    live: dict[int, str | None] = {}
    fenced: set[int] = set()
    for n in nodes:
        b, rack, is_fenced = _node(n)
        if is_fenced:
            fenced.add(b)
        else:
            live[b] = rack
    return ClusterBrokers(cluster_id or None, tuple(sorted(live)), tuple(sorted(fenced - live.keys())), live)


@dataclass(frozen=True)
class DescribedCluster:
    """A DescribeCluster answer read from kafka-python's dict, in the shape of librdkafka's that the
    gateway reads (``cluster_id``, ``nodes``, ``authorized_operations``): ``nodes`` are the brokers' dicts
    (``broker_id``, ``rack``, ``is_fenced``: ``cluster_brokers`` reads both shapes)."""

    cluster_id: str | None
    nodes: tuple[Mapping[str, Any], ...]
    authorized_operations: tuple[str, ...] | None

    @staticmethod
    def of(answer: Mapping[str, Any]) -> DescribedCluster:
        ops = answer.get("cluster_authorized_operations", answer.get("authorized_operations"))
        names: tuple[str, ...] | None
        if isinstance(ops, int):  # KIP-430's bit field: bit i set = operation code i (INT32_MIN: none)
            from kafka.admin import ACLOperation

            names = None if ops < 0 else tuple(op.name for op in ACLOperation if ops >> op.value & 1)
        else:
            names = tuple(str(op) for op in ops) if ops is not None else None
        brokers = tuple(dict(b) for b in answer.get("brokers") or ())
        cluster_id = answer.get("cluster_id")
        return DescribedCluster(str(cluster_id) if cluster_id else None, brokers, names)

    @property
    def brokers(self) -> ClusterBrokers:
        """The answer's brokers by the liveness rule."""
        return cluster_brokers(self.cluster_id, self.nodes)


__all__ = ["ClusterBrokers", "DescribedCluster", "cluster_brokers"]
