"""The operator's Kafka gateway behind the leader fence: every call that changes Kafka asks first.

``FencedGateway`` is a ``KafkaGateway`` whose writing calls (reassignments, log-dir moves, config
changes incl. throttles and cordons, leader elections) call ``fence`` right before they reach Kafka, so a
process that lost the leader Lease (reconcile/leader.py) raises ``NotLeader`` instead of submitting. Reads
are not fenced. ``READ_ONLY`` lists the gateway's other public calls; a unit test fails when the gateway
gains a call that is in neither list, so a new writing call cannot slip past the fence.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..kafka.connection import ConnectionSettings
from ..kafka.gateway import ConfigTarget, KafkaGateway, OpError
from ..kafka.types import PartitionKey, ReplicaKey

FENCED = (
    "alter_reassignments",
    "alter_replica_log_dirs",
    "incremental_alter_configs",
    "elect_preferred_leaders",
    "set_cordon",
)
READ_ONLY = (
    "close",
    "servers",
    "snapshot",
    "partition_counts",
    "partition_states",
    "traffic_look",
    "cluster_brokers",
    "describe_cluster",
    "broker_ids",
    "describe_partitions",
    "describe_log_dirs",
    "list_reassignments",
    "describe_configs",
    "min_insync_replicas",
    "check_authorized",
    "metadata_level",
    "metadata_version",
    "supports_cordon",
    "silent",
)


class FencedGateway(KafkaGateway):
    """A ``KafkaGateway`` whose writing calls pass ``fence`` first (see the module docstring)."""

    def __init__(self, settings: ConnectionSettings, fence: Callable[[], None], **kw: Any) -> None:
        super().__init__(settings, **kw)
        self._fence = fence

    def __enter__(self) -> FencedGateway:
        return self

    def alter_reassignments(self, *args: Any, **kw: Any) -> dict[PartitionKey, OpError]:
        self._fence()
        return super().alter_reassignments(*args, **kw)

    def alter_replica_log_dirs(self, *args: Any, **kw: Any) -> dict[ReplicaKey, OpError]:
        self._fence()
        return super().alter_replica_log_dirs(*args, **kw)

    def incremental_alter_configs(self, *args: Any, **kw: Any) -> dict[ConfigTarget, OpError]:
        self._fence()
        return super().incremental_alter_configs(*args, **kw)

    def elect_preferred_leaders(self, *args: Any, **kw: Any) -> dict[PartitionKey, OpError]:
        self._fence()
        return super().elect_preferred_leaders(*args, **kw)

    def set_cordon(self, *args: Any, **kw: Any) -> None:
        self._fence()
        super().set_cordon(*args, **kw)
