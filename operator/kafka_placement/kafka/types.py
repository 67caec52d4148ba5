"""Result types, errors and error mapping of the Kafka gateway (kept apart so gateway.py stays small).

Per-item failures are ``OpError`` values; ``KafkaUnavailableError`` / ``KafkaOperationError`` /
``CordonUnsupportedError`` are what callers see raised. The helpers map both clients' errors (librdkafka's
short names, kafka-python's classes) to Kafka's own error names.
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
_UNREACHABLE = {
    "_TRANSPORT",
    "_ALL_BROKERS_DOWN",
    "_RESOLVE",
    "_SSL",
    "_AUTHENTICATION",
    "SASL_AUTHENTICATION_FAILED",
    "_NO_BROKERS",
}
_RETRIABLE_CODES = {
    "_TIMED_OUT",
    "REQUEST_TIMED_OUT",
    "NOT_CONTROLLER",
    "LEADER_NOT_AVAILABLE",
    "NOT_LEADER_OR_FOLLOWER",
    "COORDINATOR_NOT_AVAILABLE",
    "CONCURRENT_TRANSACTIONS",
}

_LIBRDKAFKA_NAMES = {
    "UNKNOWN_TOPIC_OR_PART": "UNKNOWN_TOPIC_OR_PARTITION",
    "NOT_LEADER_FOR_PARTITION": "NOT_LEADER_OR_FOLLOWER",
    "INVALID_REPLICA_ASSIGNMENT": "INVALID_REPLICATION_ASSIGNMENT",
}


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


def _log_dir_info(broker: int, d: Mapping[str, Any]) -> LogDirInfo:
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
    cordoned = d.get("is_cordoned")
    return LogDirInfo(
        broker=broker,
        path=str(d["log_dir"]),
        error=None if code == 0 else str(for_code(code).message or code),
        total_bytes=_int_or(d.get("total_bytes"), -1),
        usable_bytes=_int_or(d.get("usable_bytes"), -1),
        cordoned=None if cordoned is None else bool(cordoned),
        replicas=replicas,
    )


def failed_dir_of(dirs: Sequence[LogDirInfo], in_sync: bool) -> str | None:
    """The log dir of a replica that no online dir of its live broker lists (``dirs``: the broker's, from
    DescribeLogDirs): Kafka describes an offline dir by its error alone, never its replicas, so a replica
    out of sync on a broker with exactly one offline dir is on that dir (the controller takes the
    replicas of a failed dir out of the ISR). None (unknown) for a replica in sync (a new partition the
    broker has not created yet) or when the broker has no offline dir, or several."""
    offline = [d.path for d in dirs if not d.online]
    return offline[0] if len(offline) == 1 and not in_sync else None


def _int_or(value: Any, default: int) -> int:
    return default if value is None else int(value)


def _confluent_op_error(err: Any) -> OpError:
    """An OpError from a confluent-kafka KafkaError, with librdkafka's short names spelled as Kafka's."""
    code = str(err.name())
    return OpError(_LIBRDKAFKA_NAMES.get(code, code), str(err.str()), bool(err.retriable()))


def _py_op_error(err: Any) -> OpError:
    """An OpError from a kafka-python error class or instance."""
    cls = err if isinstance(err, type) else type(err)
    code = str(getattr(cls, "message", None) or cls.__name__)
    text = str(getattr(cls, "description", "") or "")
    if not isinstance(err, type) and err.args:
        text = str(err.args[0]) or text
    return OpError(code, text, bool(getattr(cls, "retriable", False)))


def _py_error_text(e: Exception) -> str:
    text = str(e)
    return text if text else type(e).__name__


def _split_list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def _config_batches(targets: Sequence[ConfigTarget]) -> list[list[ConfigTarget]]:
    """librdkafka takes at most one broker resource per request: one batch per broker, topics together."""
    topics = [t for t in targets if t.kind == "topic"]
    return [[t] for t in targets if t.kind == "broker"] + ([topics] if topics else [])


def _names(batch: Sequence[ConfigTarget]) -> str:
    shown = ", ".join(f"{t.kind} {t.name}" for t in batch[:3])
    return shown + (f" and {len(batch) - 3} more" if len(batch) > 3 else "")


def _enum_name(enum: Any, value: Any) -> str:
    try:
        return str(enum(value).name)
    except (ValueError, TypeError):
        return str(getattr(value, "name", value))
