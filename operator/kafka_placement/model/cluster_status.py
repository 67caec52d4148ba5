# ruff: noqa: RUF009  (child/items/custom return dataclasses.field specifiers, like field(): nothing is shared)
"""The status of a KafkaCluster, declared once, as the intents' is (model/intent_status.py).

Each part is a frozen dataclass of ``spec_fields`` declarations: the CRD's status schema
(``ClusterStatus.schema``, used by model/crd_schema.py and so by ``docs/reference.md``) and the parser of
a stored status or of a status patch derive from them. Self-healing's entries (``status.deadBrokers`` and
the rest) are declared in model/self_healing.py and enter here as custom fields with their own readers.
Several writers patch parts of this status (the reconcile's pass, the traffic sampler, the new-partition
lane); ``check_patch`` parses what each sends against these declarations before it is sent, so a writer
cannot write a field the schema does not hold (the apiserver would prune it silently).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from .crd_parts import (
    CLUSTER_CONDITION_TYPES,
    CLUSTER_PHASES,
    NEW_PARTITION_PHASES,
    Schema,
    arr_schema,
    bool_schema,
    int_schema,
    str_schema,
)
from .errors import BadInputError
from .intent_status import Condition, conditions_field
from .jsonio import as_list, as_object
from .self_healing import (
    MAX_PAST_FAILURES,
    DeadBroker,
    OfflineLogDir,
    PastFailure,
    PressuredLogDir,
    UnreachableBroker,
)
from .spec_fields import child, custom, items, leaf, object_schema, parse_object, to_json

P = TypeVar("P")

# ---- brokers -------------------------------------------------------------------------------------------


# The bytes of JSON ``status.brokers`` and ``status.dirTable`` may take (reconcile/status_dirs.py). A custom
# resource is bound by etcd's request limit (1.5 MiB by default: a patch over it gets a 500, "request is
# too large"); the project holds every object it writes under 1 MiB. The rest of the KafkaCluster shares
# that MiB: ``status.traffic`` (up to 2,000 brokers, ~300 bytes each with capacities), self-healing's
# entries, the conditions, the spec, and the metadata (kopf's annotations, managedFields). 256 KiB leaves
# them 768 KiB, and still lists every dir of 1,000 brokers with one dir each.
STATUS_BROKERS_BUDGET = 256 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class LogDirStatus:
    DESCRIPTION: ClassVar[str] = "One log dir of the broker."

    path: str | None = leaf("path", str_schema("Absolute path of the log dir."))
    used_bytes: int | None = leaf("usedBytes", int_schema("Bytes used by partition replicas.", 0, int64=True))
    total_bytes: int | None = leaf("totalBytes", int_schema("Size of the volume.", 0, int64=True))
    usable_bytes: int | None = leaf("usableBytes", int_schema("Free bytes on the volume.", 0, int64=True))
    cordoned: bool | None = leaf(
        "cordoned", bool_schema("Whether the dir is cordoned (KIP-1066 or by a LogDirCordon).")
    )
    online: bool | None = leaf("online", bool_schema("Whether the dir is online."))


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerStatus:
    DESCRIPTION: ClassVar[str] = "One broker of the cluster."

    id: int | None = leaf("id", int_schema("Broker id.", 0))
    rack: str | None = leaf("rack", str_schema("Rack string (may be hierarchical, e.g. /dc1/r2)."))
    log_dir_count: int | None = leaf("logDirCount", int_schema("How many log dirs the broker has.", 0))
    used_bytes: int | None = leaf(
        "usedBytes", int_schema("Bytes used by partition replicas, over the broker's dirs.", 0, int64=True)
    )
    usable_bytes: int | None = leaf(
        "usableBytes", int_schema("Free bytes on the broker's volumes.", 0, int64=True)
    )
    log_dirs: tuple[LogDirStatus, ...] = items(
        "logDirs",
        LogDirStatus,
        "The broker's log dirs: every one while status.dirTable.complete, else those to see first "
        "(offline, cordoned, nearly full; status.dirTable.message).",
        max_items=None,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class DirTable:
    DESCRIPTION: ClassVar[str] = (
        "How much of the brokers' dir table status.brokers lists: every dir while its JSON fits the "
        f"status's budget ({STATUS_BROKERS_BUDGET // 1024} KiB), else the offline, cordoned and nearly "
        "full dirs first, then the other brokers' summaries."
    )

    complete: bool | None = leaf("complete", bool_schema("Whether every broker and every log dir is listed."))
    log_dirs_listed: int | None = leaf("logDirsListed", int_schema("Log dirs listed.", 0, int64=True))
    log_dirs_omitted: int | None = leaf("logDirsOmitted", int_schema("Log dirs not listed.", 0, int64=True))
    brokers_omitted: int | None = leaf("brokersOmitted", int_schema("Brokers not listed.", 0, int64=True))
    message: str | None = leaf(
        "message",
        str_schema("When not complete: what is listed and left out, and where every dir is.", maxLength=1000),
    )


# ---- the new-partition lane ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class NewPartitionsStatus:
    DESCRIPTION: ClassVar[str] = (
        "The new-partition lane: partitions created since the cluster was last read, placed per the "
        "intents within seconds, also while an execution runs (its last plan and its state)."
    )

    phase: str | None = leaf(
        "phase",
        str_schema(
            "Watching, AwaitingApproval, Paused, Executing, Completed, Failed or Blocked.",
            enum=list(NEW_PARTITION_PHASES),
        ),
    )
    plan_id: str | None = leaf(
        "planId",
        str_schema("The lane plan's id; with approval Manual, copy it to spec.approvedPlan.", maxLength=128),
    )
    partitions: int | None = leaf("partitions", int_schema("Partitions the lane plan moves.", 0, int64=True))
    message: str | None = leaf("message", str_schema("What the lane did or waits for.", maxLength=1000))

    @staticmethod
    def parse(raw: object, where: str = "status.newPartitions") -> NewPartitionsStatus:
        return parse_object(NewPartitionsStatus, raw, where)


# ---- traffic -------------------------------------------------------------------------------------------


def _number(description: str) -> Schema:
    return {"type": "number", "description": description}


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerCapacityStatus:
    DESCRIPTION: ClassVar[str] = "The broker's capacity per spec.capacity (known fields only)."

    network_in: int | None = leaf("networkIn", int_schema("Network in, bytes per second.", 1, int64=True))
    network_out: int | None = leaf("networkOut", int_schema("Network out, bytes per second.", 1, int64=True))
    disk: int | None = leaf("disk", int_schema("Disk, bytes.", 1, int64=True))


@dataclass(frozen=True, slots=True, kw_only=True)
class Utilisation:
    DESCRIPTION: ClassVar[str] = "Load / capacity per resource with a known capacity (1.0 = full)."

    network_in: float | None = leaf("networkIn", _number("bytesInPerSec / capacity.networkIn."))
    network_out: float | None = leaf("networkOut", _number("networkOutBytesPerSec / capacity.networkOut."))
    disk: float | None = leaf("disk", _number("diskBytes / capacity.disk."))


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerTraffic:
    DESCRIPTION: ClassVar[str] = (
        "One broker's traffic (sums over its replicas whose partition has a known rate)."
    )

    id: int | None = leaf("id", int_schema("Broker id.", 0))
    bytes_in: int | None = leaf(
        "bytesInPerSec",
        int_schema(
            "Bytes per second written to the broker's replicas, leaders and followers.", 0, int64=True
        ),
    )
    leader_bytes_in: int | None = leaf(
        "leaderBytesInPerSec",
        int_schema("Bytes per second produced to the partitions the broker leads.", 0, int64=True),
    )
    network_out: int | None = leaf(
        "networkOutBytesPerSec",
        int_schema(
            "Bytes per second fetched from the broker: over the partitions it leads, bytes in x "
            "(followers + read fan-out).",
            0,
            int64=True,
        ),
    )
    disk_bytes: int | None = leaf(
        "diskBytes", int_schema("Bytes of the broker's replicas (the largest replica's size).", 0, int64=True)
    )
    replicas_measured: int | None = leaf(
        "replicasMeasured", int_schema("The broker's replicas with a known rate.", 0, int64=True)
    )
    capacity: BrokerCapacityStatus | None = child("capacity", BrokerCapacityStatus)
    utilisation: Utilisation | None = child("utilisation", Utilisation)


def _count(description: str) -> Schema:
    return int_schema(description, 0, int64=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class SamplesSkipped:
    DESCRIPTION: ClassVar[str] = (
        "Samples skipped so far (kept across restarts), by reason; none gives a rate."
    )

    failed_read: int | None = leaf("failedRead", _count("A look that failed for a partition."))
    recreated: int | None = leaf(
        "recreated",
        _count(
            "The log went backwards or the topic id changed (deleted and created again): its history dropped."
        ),
    )
    clock_back: int | None = leaf("clockBack", _count("A look not after the last one (a clock set back)."))
    too_close: int | None = leaf("tooClose", _count("A look too close to the last one."))
    group_back: int | None = leaf(
        "groupBack", _count("A consumer group's committed offset went backwards (a reset, not reading).")
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class KafkaWorkStatus:
    """``status.kafkaWork``: Kafka's own time per partition move, measured on the cluster's last execution
    of many small moves (execution/copy_model.py ``kafka_time_per_move``); later plans' estimates use it."""

    DESCRIPTION: ClassVar[str] = (
        "Kafka's own time per partition move whatever its bytes (its controller and brokers committing the "
        "reassignment), measured on this cluster's last execution of many moves whose pace it set; the "
        "estimates of later plans (status.plan.estimate) use it instead of the assumed 8 ms."
    )

    microseconds_per_move: int | None = leaf(
        "microsecondsPerMove", int_schema("The time per move measured (microseconds).", 0, int64=True)
    )
    moves: int | None = leaf("moves", int_schema("The moves of the execution that measured it.", 0))
    plan_id: str | None = leaf("planId", str_schema("That execution's plan id.", maxLength=128))
    measured_at: str | None = leaf(
        "measuredAt", str_schema("When that execution ended (RFC 3339).", format="date-time")
    )

    @staticmethod
    def of(status: Mapping[str, Any] | None) -> KafkaWorkStatus | None:
        """The cluster's ``status.kafkaWork`` (None: none measured yet, or one this release cannot read)."""
        raw = (status or {}).get("kafkaWork")
        if not isinstance(raw, Mapping):
            return None
        try:
            found = parse_object(KafkaWorkStatus, raw, "status.kafkaWork")
        except BadInputError:
            return None
        return found if found.microseconds_per_move else None


MAX_TRAFFIC_BROKERS = 2000


@dataclass(frozen=True, slots=True, kw_only=True)
class TrafficStatus:
    DESCRIPTION: ClassVar[str] = (
        "Traffic sampled per spec.traffic: per-broker totals of the partitions' weighted bytes in."
    )

    sampled_at: str | None = leaf("sampledAt", str_schema("When the last look was taken (RFC 3339)."))
    window_seconds: int | None = leaf("windowSeconds", int_schema("The window of the weighted rates.", 1))
    looks: int | None = leaf("looks", _count("Looks taken so far (kept across operator restarts)."))
    partitions_measured: int | None = leaf("partitionsMeasured", _count("Partitions with a known rate."))
    groups_read: int | None = leaf(
        "groupsRead",
        _count(
            "Consumer groups whose committed offsets the last look read: only groups the principal may "
            "DESCRIBE; read fan-out counts no other."
        ),
    )
    brokers: tuple[BrokerTraffic, ...] = items(
        "brokers", BrokerTraffic, f"Per broker, at most {MAX_TRAFFIC_BROKERS}.", max_items=MAX_TRAFFIC_BROKERS
    )
    brokers_omitted: int | None = leaf(
        "brokersOmitted", int_schema(f"Brokers beyond the {MAX_TRAFFIC_BROKERS} listed.", 0)
    )
    capacity_error: str | None = leaf(
        "capacityError",
        str_schema("Why no capacity is shown: spec.capacity names a broker the cluster does not have."),
    )
    samples_skipped: SamplesSkipped | None = child("samplesSkipped", SamplesSkipped)
    network_capacity_goal: str | None = leaf(
        "networkCapacityGoal",
        str_schema(
            "Whether plans keep every broker under maxShare of its declared network capacity: 'on: ...' "
            "or 'off: <why>' (no spec.capacity, no network capacity, no measured rate)."
        ),
    )

    @staticmethod
    def parse(raw: object, where: str = "status.traffic") -> TrafficStatus:
        return parse_object(TrafficStatus, raw, where)


# ---- self-healing's entries ----------------------------------------------------------------------------


def _entries(json: str, entry: Any, description: str, most: int) -> Any:
    """A list of self-healing entries (``entry``'s ``from_json`` / ``to_json``, model/self_healing.py)."""
    schema = arr_schema(description, object_schema(entry), maxItems=most)

    def read(raw: object, where: str) -> tuple[Any, ...]:
        listed = as_list(raw, where)
        if len(listed) > most:
            raise BadInputError(f"at most {most} entries, got {len(listed)}", where)
        return tuple(entry.from_json(e, f"{where}[{i}]") for i, e in enumerate(listed))

    def write(value: tuple[Any, ...]) -> list[dict[str, Any]]:
        return [e.to_json() for e in value]

    return custom(json, schema, read, write, default=())


# ---- the whole status ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterStatus:
    """``status`` of a KafkaCluster; every field absent until the operator writes it."""

    DESCRIPTION: ClassVar[str] = "Observed state of the cluster, written by the operator."

    phase: str | None = leaf(
        "phase",
        str_schema(
            "Connection state; Invalid: the spec does not parse (the Ready condition names the field), "
            "Kafka is not contacted for it.",
            enum=list(CLUSTER_PHASES),
        ),
    )
    brokers: tuple[BrokerStatus, ...] = items(
        "brokers",
        BrokerStatus,
        "Brokers, racks and log dirs with usage and cordon state, bounded in bytes (status.dirTable).",
        max_items=None,
    )
    dir_table: DirTable | None = child("dirTable", DirTable)
    reassignments_in_flight: int | None = leaf(
        "reassignmentsInFlight", int_schema("Partition reassignments in progress in Kafka.", 0)
    )
    new_partitions: NewPartitionsStatus | None = child("newPartitions", NewPartitionsStatus)
    traffic: TrafficStatus | None = child("traffic", TrafficStatus)
    kafka_work: KafkaWorkStatus | None = child("kafkaWork", KafkaWorkStatus)
    dead_brokers: tuple[DeadBroker, ...] = _entries(
        "deadBrokers",
        DeadBroker,
        "Brokers the cluster names (replicas or registration) that are not alive, since when, and their "
        "heal.",
        10000,
    )
    offline_log_dirs: tuple[OfflineLogDir, ...] = _entries(
        "offlineLogDirs",
        OfflineLogDir,
        "Offline log dirs of live brokers, since when, and their heal.",
        10000,
    )
    past_failures: tuple[PastFailure, ...] = _entries(
        "pastFailures",
        PastFailure,
        f"The last {MAX_PAST_FAILURES} broker failures that ended (the broker back for settleSeconds), "
        "oldest first: since when, the heal, when the broker returned, and when the heal was retired or "
        "why it was not (entries awaiting their heal's retirement are kept beyond that count).",
        1000,
    )
    pressured_log_dirs: tuple[PressuredLogDir, ...] = _entries(
        "pressuredLogDirs",
        PressuredLogDir,
        "Log dirs whose volume is above selfHealing.diskPressure.aboveShare, since when, how full, and "
        "their heal.",
        10000,
    )
    unreachable_brokers: tuple[UnreachableBroker, ...] = _entries(
        "unreachableBrokers",
        UnreachableBroker,
        "Brokers alive in the cluster (registered, not fenced) that do not answer the operator, since "
        "when: not dead (never healed, their replicas not lost); no plan is made until they answer.",
        10000,
    )
    conditions: tuple[Condition, ...] = conditions_field(CLUSTER_CONDITION_TYPES)
    observed_generation: int | None = leaf(
        "observedGeneration", int_schema("The metadata.generation the status describes.", 0, int64=True)
    )

    @staticmethod
    def schema() -> Schema:
        return object_schema(ClusterStatus)

    @staticmethod
    def parse(raw: object, where: str = "status") -> ClusterStatus:
        return parse_object(ClusterStatus, raw, where)


def check_patch(patch: Mapping[str, Any], where: str = "status") -> None:
    """A merge patch of a KafkaCluster's status holds only what ``ClusterStatus`` declares: each field it
    sets parses (a null, which removes a field, is always allowed); raises ``BadInputError`` naming the
    field otherwise."""
    obj = as_object(patch, where)
    ClusterStatus.parse({k: v for k, v in obj.items() if v is not None}, where)


def new_partitions_of(status: Mapping[str, Any] | None) -> NewPartitionsStatus | None:
    """``status.newPartitions`` as stored, or None when absent or unreadable (a lane state is then
    written afresh)."""
    return _part(status, "newPartitions", NewPartitionsStatus.parse)


def traffic_of(status: Mapping[str, Any] | None) -> TrafficStatus | None:
    """``status.traffic`` as stored, or None when absent or unreadable."""
    return _part(status, "traffic", TrafficStatus.parse)


def racks_of(status: Mapping[str, Any] | None) -> dict[int, str | None]:
    """Each broker's rack as ``status.brokers`` lists it (empty when absent or unreadable)."""
    parsed = _part(status, "brokers", _alone("brokers"))
    return {b.id: b.rack for b in parsed.brokers if b.id is not None} if parsed is not None else {}


def conditions_of(status: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """``status.conditions`` as stored, parsed (empty when absent or unreadable: written afresh)."""
    parsed = _part(status, "conditions", _alone("conditions"))
    return [to_json(c) for c in parsed.conditions] if parsed is not None else []


def _alone(key: str) -> Callable[[object, str], ClusterStatus]:
    """A parser of one part of a status, alone (the others' errors do not hide it)."""
    return lambda raw, where: ClusterStatus.parse({key: raw}, where.rsplit(".", 1)[0])


def _part(status: Mapping[str, Any] | None, key: str, parse: Callable[[object, str], P]) -> P | None:
    raw = (status or {}).get(key)
    if not raw:
        return None
    try:
        return parse(raw, f"status.{key}")
    except BadInputError:
        return None


__all__ = [
    "BrokerCapacityStatus",
    "BrokerStatus",
    "BrokerTraffic",
    "ClusterStatus",
    "DirTable",
    "KafkaWorkStatus",
    "LogDirStatus",
    "NewPartitionsStatus",
    "SamplesSkipped",
    "TrafficStatus",
    "Utilisation",
    "check_patch",
    "conditions_of",
    "new_partitions_of",
    "racks_of",
    "traffic_of",
]
