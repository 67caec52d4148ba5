# ruff: noqa: RUF009  (child/items/custom return dataclasses.field specifiers, like field(): nothing is shared)
"""The status of an intent resource (LogDirCordon, BrokerDecommission, PlacementPolicy), declared once.

Each part is a frozen dataclass of ``spec_fields`` declarations (a JSON name and its schema, description
and bounds included), as the specs are: the CRD's status schema (``IntentStatus.schema``, used by
model/crd_schema.py and so by ``docs/reference.md``), the parser of a stored status (``IntentStatus.of``)
and the JSON the operator writes (``spec_fields.to_json``) all derive from them. The reconcile layer
builds these (reconcile/status.py) and reads them back, never a status dict by string keys. The
conditions' schema (``conditions_schema``) is the KafkaCluster's too, with its own types.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .crd_parts import (
    CONDITION_REASON_PATTERN,
    CONDITION_TYPES,
    PHASES,
    Schema,
    arr_schema,
    bool_schema,
    int_schema,
    str_schema,
)
from .errors import BadInputError
from .jsonio import as_list
from .spec_fields import child, custom, items, leaf, object_schema, parse_object, to_json

MAX_CONDITIONS = 16


# ---- conditions (every kind's) ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Condition:
    """One standard Kubernetes condition (its ``type`` is one of its kind's types)."""

    DESCRIPTION: ClassVar[str] = "One condition of the resource."

    type: str = leaf("type", str_schema("Condition type.", maxLength=316), required=True)
    status: str = leaf(
        "status", str_schema("Whether the condition holds.", enum=["True", "False", "Unknown"]), required=True
    )
    reason: str | None = leaf(
        "reason",
        str_schema(
            "A CamelCase, machine-readable reason for the last transition.",
            maxLength=1024,
            pattern=CONDITION_REASON_PATTERN,
        ),
    )
    message: str | None = leaf(
        "message", str_schema("A human-readable explanation of the condition.", maxLength=32768)
    )
    last_transition_time: str | None = leaf(
        "lastTransitionTime",
        str_schema("When the condition last changed status (RFC 3339).", format="date-time"),
    )
    observed_generation: int | None = leaf(
        "observedGeneration",
        int_schema("The metadata.generation the condition was computed from.", 0, int64=True),
    )


def conditions_schema(types: tuple[str, ...]) -> Schema:
    """``status.conditions`` of a kind whose condition types are ``types``: one entry per type."""
    entry = object_schema(Condition)
    entry["properties"]["type"] = str_schema(f"Condition type: one of {', '.join(types)}.", enum=list(types))
    return arr_schema(
        "Standard Kubernetes conditions, one per type, with the reason and a human-readable message.",
        entry,
        maxItems=MAX_CONDITIONS,
        **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


def _read_conditions(raw: object, where: str) -> tuple[Condition, ...]:
    listed = as_list(raw, where)
    if len(listed) > MAX_CONDITIONS:
        raise BadInputError(f"at most {MAX_CONDITIONS} entries, got {len(listed)}", where)
    return tuple(parse_object(Condition, c, f"{where}[{i}]") for i, c in enumerate(listed))


def _write_conditions(value: tuple[Condition, ...]) -> list[dict[str, Any]]:
    return [to_json(c) for c in value]


def conditions_field(types: tuple[str, ...]) -> Any:
    """The ``conditions`` field of a status class whose kind has the condition ``types``."""
    return custom("conditions", conditions_schema(types), _read_conditions, _write_conditions, default=())


# ---- status.plan ---------------------------------------------------------------------------------------

_IDS = arr_schema("Broker ids.", int_schema("Broker id.", 0), maxItems=128)
_PARTITIONS = int_schema("How many partitions wait, named or not.", 0, int64=True)
_DEAD = arr_schema("The dead brokers they keep a replica on.", int_schema("Broker id.", 0), maxItems=1000)
_FIRST = "The first ones by name."


@dataclass(frozen=True, slots=True, kw_only=True)
class NoInSyncPartition:
    DESCRIPTION: ClassVar[str] = "A partition, its dead replicas and its live out-of-sync ones."

    partition: str | None = leaf("partition", str_schema("topic-partition", maxLength=300))
    dead: tuple[int, ...] | None = leaf("dead", _IDS)
    out_of_sync: tuple[int, ...] | None = leaf("outOfSync", _IDS)


@dataclass(frozen=True, slots=True, kw_only=True)
class NoInSyncReplicaWait:
    DESCRIPTION: ClassVar[str] = (
        "No leader and no live replica in the ISR (the leader died while the others were out of sync): "
        "nothing to copy from until a leader is elected."
    )

    partitions: int | None = leaf("partitions", _PARTITIONS)
    brokers: tuple[int, ...] | None = leaf("brokers", _DEAD)
    first: tuple[NoInSyncPartition, ...] = items("first", NoInSyncPartition, _FIRST, max_items=10)


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacityWait:
    DESCRIPTION: ClassVar[str] = (
        "A replica on a dead broker, and fewer brokers able to hold the partition than its replication "
        "factor: it waits for a broker to return or be added."
    )

    partitions: int | None = leaf("partitions", _PARTITIONS)
    brokers: tuple[int, ...] | None = leaf("brokers", _DEAD)
    first: tuple[str, ...] | None = leaf(
        "first", arr_schema(_FIRST, str_schema("topic-partition", maxLength=300), maxItems=10)
    )
    replication_factor: int | None = leaf(
        "replicationFactor", int_schema("The largest replication factor among them.", 0)
    )
    brokers_available: int | None = leaf(
        "brokersAvailable", int_schema("The fewest brokers that may hold one of them.", 0)
    )
    brokers_needed: int | None = leaf("brokersNeeded", int_schema("How many more brokers they need.", 0))


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitingStatus:
    """``status.plan.waiting``: the partitions no plan can act on now (planning/waiting.py writes it)."""

    DESCRIPTION: ClassVar[str] = (
        "Partitions the plan leaves as they are because no plan can act on them now (a state, not a "
        "failure): the BrokerDecommission of their dead broker stays Pending with the reason."
    )

    no_in_sync_replica: NoInSyncReplicaWait | None = child("NoInSyncReplica", NoInSyncReplicaWait)
    waiting_for_capacity: CapacityWait | None = child("WaitingForCapacity", CapacityWait)


@dataclass(frozen=True, slots=True, kw_only=True)
class Review:
    DESCRIPTION: ClassVar[str] = "Where to read the plan before approving it."

    config_map: str | None = leaf(
        "configMap",
        str_schema(
            "ConfigMap with the plan's report (report.html), per-broker and per-dir load before/after, "
            "moves by topic, the largest moves, batches and an estimated duration.",
            maxLength=253,
        ),
    )
    brokers_changing: str | None = leaf(
        "brokersChanging",
        str_schema("The brokers whose load changes most, with their bytes before and after.", maxLength=1000),
    )
    traffic_changing: str | None = leaf(
        "trafficChanging",
        str_schema(
            "With measured rates: the brokers whose network in and out change most, before and after.",
            maxLength=1000,
        ),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanEstimate:
    """``status.plan.estimate``: the execution's duration by the copy model (execution/copy_model.py)."""

    DESCRIPTION: ClassVar[str] = (
        "How long the plan's execution takes, estimated before approval from the executor's own rules "
        "(spec.limits of the KafkaCluster, its throttle, the bytes each broker copies in, out and between "
        "its dirs, and the reconcile interval)."
    )

    seconds: int | None = leaf(
        "seconds", int_schema("Seconds from the execution's start to its end (at least 0).", 0, int64=True)
    )
    finish_at: str | None = leaf(
        "finishAt",
        str_schema(
            "When it would end if started when the plan was made, maintenance windows counted (RFC 3339); "
            "absent when the windows leave no end within ten years.",
            format="date-time",
        ),
    )
    bytes_per_second: int | None = leaf(
        "bytesPerSecond",
        int_schema(
            "The copy rate per broker assumed: the throttle (or 100 MiB/s unthrottled).", 1, int64=True
        ),
    )
    throttled: bool | None = leaf(
        "throttled", bool_schema("False: no throttle is set, so the rate is a guess and so is the estimate.")
    )
    exact: bool | None = leaf(
        "exact",
        bool_schema(
            "False: the plan was too large to replay move by move; seconds is the busiest broker's bytes "
            "over the rate, the admission rounds its move counts need, or its moves times Kafka's work "
            "per move."
        ),
    )
    bound_seconds: int | None = leaf(
        "boundSeconds",
        int_schema(
            "The busiest broker's bytes over the rate: no execution can copy them faster.", 0, int64=True
        ),
    )
    microseconds_per_move: int | None = leaf(
        "microsecondsPerMove",
        int_schema(
            "Kafka's own time per partition move whatever its bytes (its controller and brokers committing "
            "the reassignment), shared by the moves in flight: measured on this cluster when "
            "perMoveMeasured (status.kafkaWork of the KafkaCluster), else 8000 assumed.",
            0,
            int64=True,
        ),
    )
    per_move_measured: bool | None = leaf(
        "perMoveMeasured",
        bool_schema("True: microsecondsPerMove was measured on this cluster's executions, not assumed."),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class LastExecution:
    """``status.lastExecution``: the estimate against what happened, once an execution of the intent ends."""

    DESCRIPTION: ClassVar[str] = (
        "The last execution of a plan this resource took part in: its estimated and actual duration."
    )

    plan_id: str | None = leaf("planId", str_schema("The executed plan's id.", maxLength=128))
    phase: str | None = leaf(
        "phase", str_schema("How it ended: Completed, Failed or Cancelled.", maxLength=32)
    )
    started_at: str | None = leaf("startedAt", str_schema("When it started (RFC 3339).", format="date-time"))
    finished_at: str | None = leaf("finishedAt", str_schema("When it ended (RFC 3339).", format="date-time"))
    estimated_seconds: int | None = leaf(
        "estimatedSeconds",
        int_schema("The plan's estimate before approval (status.plan.estimate).", 0, int64=True),
    )
    actual_seconds: int | None = leaf(
        "actualSeconds",
        int_schema(
            "How long it ran: from startedAt to finishedAt less waitedSeconds (the estimate's measure: "
            "copy time, no wait counted).",
            0,
            int64=True,
        ),
    )
    waited_seconds: int | None = leaf(
        "waitedSeconds",
        int_schema(
            "Time between startedAt and finishedAt it could not run: nothing in flight while it waited "
            "for a maintenance window to open or was paused by the safety gate, or not ticked for over a "
            "minute (spec.paused, no operator, Kafka unreachable).",
            0,
            int64=True,
        ),
    )
    error_ratio: str | None = leaf(
        "errorRatio",
        str_schema(
            "actualSeconds over estimatedSeconds (1.00: exact; above 1: it took longer), as a decimal "
            "string; the time waited is in neither.",
            maxLength=16,
        ),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanStatus:
    DESCRIPTION: ClassVar[str] = (
        "The current plan made for this intent (together with all other intents of the cluster)."
    )

    id: str | None = leaf(
        "id", str_schema("Plan id; copy it to spec.approvedPlan to approve the plan.", maxLength=128)
    )
    moves: int | None = leaf("moves", int_schema("Number of partition moves in the plan.", 0, int64=True))
    replica_moves: int | None = leaf(
        "replicaMoves",
        int_schema("Number of replica moves (one partition move may move several).", 0, int64=True),
    )
    bytes: int | None = leaf(
        "bytes", int_schema("Bytes the plan moves over the network and between log dirs.", 0, int64=True)
    )
    lower_bound_bytes: int | None = leaf(
        "lowerBoundBytes",
        int_schema("Lower bound of the bytes any plan meeting the constraints must move.", 0, int64=True),
    )
    waiting: WaitingStatus | None = child("waiting", WaitingStatus)
    review: Review | None = child("review", Review)
    estimate: PlanEstimate | None = child("estimate", PlanEstimate)

    @staticmethod
    def parse(raw: object, where: str = "status.plan") -> PlanStatus:
        return parse_object(PlanStatus, raw, where)


# ---- status.progress and status.retry ------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRates:
    DESCRIPTION: ClassVar[str] = "A broker's replication throttle as the execution has set it in Kafka now."

    broker: int | None = leaf("broker", int_schema("Broker id.", 0))
    leader_bytes_per_second: int | None = leaf(
        "leaderBytesPerSecond",
        int_schema("leader.replication.throttled.rate: what new replicas fetch from it.", 0, int64=True),
    )
    follower_bytes_per_second: int | None = leaf(
        "followerBytesPerSecond",
        int_schema("follower.replication.throttled.rate: what it fetches as a new replica.", 0, int64=True),
    )


MAX_RATES_SHOWN = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgressStatus:
    DESCRIPTION: ClassVar[str] = "Progress of the plan's execution."

    partitions_done: int | None = leaf(
        "partitionsDone", int_schema("Partitions whose move completed.", 0, int64=True)
    )
    partitions_total: int | None = leaf(
        "partitionsTotal", int_schema("Partitions the plan moves.", 0, int64=True)
    )
    bytes_moved: int | None = leaf("bytesMoved", int_schema("Bytes moved so far.", 0, int64=True))
    bytes_remaining: int | None = leaf("bytesRemaining", int_schema("Bytes still to move.", 0, int64=True))
    eta: str | None = leaf(
        "eta",
        str_schema(
            "Estimated completion time (RFC 3339), from the recent transfer rate (before one is observed, "
            "or while nothing moves: from the plan's estimate), counted inside the maintenance windows the "
            "execution waits for.",
            format="date-time",
        ),
    )
    summary: str | None = leaf(
        "summary",
        str_schema('Short progress for kubectl, partitions done/total (e.g. "12/40").', maxLength=64),
    )
    disk_held: str | None = leaf(
        "diskHeld",
        str_schema(
            "While the executor holds moves because the log dir they write into is about to fill (above "
            "the hard stop of capacity.maxDiskShare): which dir, how full, which moves. Absent otherwise.",
            maxLength=1000,
        ),
    )

    throttles: tuple[BrokerRates, ...] = items(
        "throttles",
        BrokerRates,
        f"Each throttled broker's replication rates now, by broker id (beyond {MAX_RATES_SHOWN} brokers, "
        f"the {MAX_RATES_SHOWN} with the lowest rate: where the adaptive throttle yields most to clients; "
        "with the adaptive throttle they follow the client traffic).",
        max_items=MAX_RATES_SHOWN,
    )
    throttled_brokers: int | None = leaf(
        "throttledBrokers",
        int_schema(
            "How many brokers the execution throttles now (throttles lists at most "
            f"{MAX_RATES_SHOWN} of them).",
            0,
        ),
    )
    throttle_note: str | None = leaf(
        "throttleNote",
        str_schema(
            "With the adaptive throttle: the brokers left at maxBytesPerSecond for want of a capacity or "
            "a measured rate, and why. Absent otherwise.",
            maxLength=1000,
        ),
    )

    @staticmethod
    def parse(raw: object, where: str = "status.progress") -> ProgressStatus:
        return parse_object(ProgressStatus, raw, where)


@dataclass(frozen=True, slots=True, kw_only=True)
class Retry:
    DESCRIPTION: ClassVar[str] = (
        "Set while this intent, created while an execution ran, could not supersede it (its plan failed, "
        "waits for a broker, or the moves in flight already cover it): it is planned again no earlier "
        "than 'after' (60 s, doubled per attempt, at most an hour), or when the execution ends."
    )

    attempts: int | None = leaf("attempts", int_schema("Failed attempts so far.", 1))
    after: str | None = leaf(
        "after", str_schema("When the next attempt may be made (RFC 3339).", format="date-time")
    )

    @staticmethod
    def parse(raw: object, where: str = "status.retry") -> Retry:
        return parse_object(Retry, raw, where)


# ---- the whole status ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class IntentStatus:
    """``status`` of an intent resource; every field absent until the operator writes it."""

    DESCRIPTION: ClassVar[str] = "Observed state, written by the operator."

    phase: str | None = leaf("phase", str_schema("Lifecycle phase of this intent.", enum=list(PHASES)))
    conditions: tuple[Condition, ...] = conditions_field(CONDITION_TYPES)
    observed_generation: int | None = leaf(
        "observedGeneration",
        int_schema("The metadata.generation of the spec the status describes.", 0, int64=True),
    )
    message: str | None = leaf(
        "message", str_schema("Human-readable summary of the current phase.", maxLength=32768)
    )
    plan: PlanStatus | None = child("plan", PlanStatus)
    progress: ProgressStatus | None = child("progress", ProgressStatus)
    retry: Retry | None = child("retry", Retry)
    last_execution: LastExecution | None = child("lastExecution", LastExecution)
    # not the schema's: why the stored status could not be read (``of``), for the caller to log
    unread: str | None = None

    @staticmethod
    def schema() -> Schema:
        return object_schema(IntentStatus)

    @staticmethod
    def parse(raw: object, where: str = "status") -> IntentStatus:
        return parse_object(IntentStatus, raw, where)

    @staticmethod
    def of(body: Mapping[str, Any]) -> IntentStatus:
        """The stored status of a resource (an empty one when it has none). The apiserver validated it
        against the schema these classes generate; one that does not parse (written by another version,
        or edited by hand through the status subresource) is read as empty, saying why (``unread``: the
        status writer logs it), and the operator writes a whole new one."""
        raw = body.get("status")
        if not raw:
            return IntentStatus()
        try:
            return IntentStatus.parse(raw)
        except BadInputError as e:
            return IntentStatus(unread=str(e))

    def condition(self, ctype: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == ctype), None)


__all__ = [
    "CapacityWait",
    "Condition",
    "IntentStatus",
    "NoInSyncPartition",
    "NoInSyncReplicaWait",
    "PlanStatus",
    "ProgressStatus",
    "Retry",
    "Review",
    "WaitingStatus",
    "conditions_field",
    "conditions_schema",
]
