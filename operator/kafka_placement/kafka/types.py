"""Result types and errors of the Kafka gateway (kept apart so gateway.py stays small).

Per-item failures are ``OpError`` values; ``KafkaUnavailableError`` / ``KafkaOperationError`` /
``CordonUnsupportedError`` / ``KafkaUnsupportedError`` are what callers see raised (kafka/failures.py maps
the clients' errors to them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from ..model.errors import PlacementError

T = TypeVar("T")
PartitionKey = tuple[str, int]
ReplicaKey = tuple[str, int, int]  # (topic, partition, broker)
ConfigKind = Literal["broker", "topic"]
ConfigOp = Literal["SET", "DELETE", "APPEND", "SUBTRACT"]

CORDON_CONFIG = "cordoned.log.dirs"
CORDON_METADATA_LEVEL = 30  # metadata.version feature level of 4.3-IV0, the first with cordoned.log.dirs
REPLICA_NOT_AVAILABLE = "REPLICA_NOT_AVAILABLE"
DENIED = "_AUTHORIZATION_FAILED"  # how the error names of a denied request end (CLUSTER_, TOPIC_, ...)


class KafkaUnavailableError(PlacementError):
    """The cluster cannot be reached (connection refused, DNS, TLS or SASL failure, no broker answers)."""

    reason = "KafkaUnavailable"


class KafkaAuthenticationError(KafkaUnavailableError):
    """The cluster refused who we are: wrong SASL credentials, an untrusted broker certificate, a client
    certificate that is expired or rejected. Retrying does not help."""

    reason = "KafkaAuthenticationFailed"


class KafkaAuthorizationError(PlacementError):
    """The principal lacks an ACL a request needs (CLUSTER_/TOPIC_AUTHORIZATION_FAILED, or the authorized
    operations checked before executing); the message names each denied operation and resource."""

    reason = "KafkaNotAuthorized"


class KafkaOperationError(PlacementError):
    """A request reached Kafka but failed as a whole (after the bounded retries)."""

    reason = "KafkaOperationFailed"


class KafkaUnsupportedError(PlacementError):
    """The brokers lack an admin API the operator cannot work without (kafka/api_support.py): found from
    their ApiVersions when the gateway connects, before any request that needs it. Retrying does not
    help; the CLI exits 1 (an "other failure" of the CLI's contract: docs/cli.md) with this message, and the
    operator's KafkaCluster goes ``Unsupported``."""

    exit_code = 1
    reason = "KafkaUnsupported"


class CordonUnsupportedError(PlacementError):
    """The cluster's metadata.version is below 4.3-IV0, so ``cordoned.log.dirs`` does not exist."""

    reason = "CordonUnsupported"


OUTCOME_UNKNOWN = frozenset({"REQUEST_TIMED_OUT", "NOT_CONTROLLER", "UNKNOWN", "UNKNOWN_SERVER_ERROR"})


@dataclass(frozen=True, slots=True)
class OpError:
    """Kafka's answer for one item of a batch request: error name (``REPLICA_NOT_AVAILABLE``) and text."""

    code: str
    message: str
    retriable: bool = False

    @property
    def outcome_unknown(self) -> bool:
        """Kafka may or may not have acted on it (a timeout, a controller change, no answer): only a later
        read of the cluster can tell."""
        return self.code in OUTCOME_UNKNOWN

    @property
    def denied(self) -> bool:
        """The principal lacks an ACL for it: the principal's failure, not the item's."""
        return self.code.endswith(DENIED)

    @property
    def replica_not_available(self) -> bool:
        """The broker does not host the replica (yet): retry after the reassignment created it."""
        return self.code == REPLICA_NOT_AVAILABLE

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.message else self.code


@dataclass(frozen=True, slots=True)
class Reassignment:
    """An in-flight KIP-455 reassignment: the full replica set and which replicas come and go."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ReplicaInDir:
    """One replica in a log dir (DescribeLogDirs); ``is_future`` while a dir move copies it here."""

    topic: str
    partition: int
    size_bytes: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True, slots=True)
class LogDirInfo:
    """One log dir of one broker as DescribeLogDirs reports it; ``cordoned`` is None when not reported."""

    broker: int
    path: str
    error: str | None
    total_bytes: int
    usable_bytes: int
    cordoned: bool | None
    replicas: tuple[ReplicaInDir, ...]

    @property
    def online(self) -> bool:
        return self.error is None

    @staticmethod
    def of_response(broker: int, d: Mapping[str, Any]) -> LogDirInfo:
        """One log dir of kafka-python's DescribeLogDirs response (``-1``: a size not reported)."""
        from kafka.errors import for_code

        code = int(d.get("error_code") or 0)
        replicas = tuple(
            ReplicaInDir(
                topic=str(t["name"]),
                partition=int(p["partition_index"]),
                size_bytes=max(int(p.get("partition_size") or 0), 0),
                offset_lag=int(p.get("offset_lag") or 0),
                is_future=bool(p.get("is_future_key")),
            )
            for t in d.get("topics") or ()
            for p in t.get("partitions") or ()
        )
        cordoned, total, usable = d.get("is_cordoned"), d.get("total_bytes"), d.get("usable_bytes")
        return LogDirInfo(
            broker=broker,
            path=str(d["log_dir"]),
            error=None if code == 0 else str(for_code(code).message or code),
            total_bytes=-1 if total is None else int(total),
            usable_bytes=-1 if usable is None else int(usable),
            cordoned=None if cordoned is None else bool(cordoned),
            replicas=replicas,
        )


@dataclass(frozen=True, slots=True)
class ConfigTarget:
    """A config resource: a broker (``name`` = its id) or a topic."""

    kind: ConfigKind
    name: str

    @staticmethod
    def broker(broker_id: int) -> ConfigTarget:
        return ConfigTarget("broker", str(broker_id))

    @staticmethod
    def topic(name: str) -> ConfigTarget:
        return ConfigTarget("topic", name)


@dataclass(frozen=True, slots=True)
class ConfigValue:
    """A described config entry; ``source`` names its ConfigSource (``DYNAMIC_BROKER_CONFIG``, ...)."""

    value: str | None
    source: str
    is_default: bool
    is_read_only: bool
    is_sensitive: bool

    @property
    def is_dynamic(self) -> bool:
        return self.source.startswith("DYNAMIC_")


@dataclass(frozen=True, slots=True)
class ConfigChange:
    """One incremental config operation; ``value`` is ignored for DELETE."""

    name: str
    op: ConfigOp
    value: str | None = None


def failed_dir_of(dirs: Sequence[LogDirInfo], in_sync: bool) -> str | None:
    """The log dir of a replica that no online dir of its live broker lists (``dirs``: the broker's, from
    DescribeLogDirs): Kafka describes an offline dir by its error alone, never its replicas, so a replica
    out of sync on a broker with exactly one offline dir is on that dir (the controller takes the
    replicas of a failed dir out of the ISR). None (unknown) for a replica in sync (a new partition the
    broker has not created yet) or when the broker has no offline dir, or several."""
    offline = [d.path for d in dirs if not d.online]
    return offline[0] if len(offline) == 1 and not in_sync else None
