"""Self-healing's typed contracts: the KafkaCluster's ``spec.selfHealing`` and the failures its status tracks.

One source for three things: the parser of ``spec.selfHealing`` (``SelfHealingSpec.parse``, declared with
its schema in spec_fields.py's way, as the rest of the KafkaCluster's spec in cluster_spec.py), the typed
status entries ``status.deadBrokers`` / ``status.offlineLogDirs`` / ``status.unreachableBrokers`` /
``status.pastFailures`` (``DeadBroker``, ``OfflineLogDir``, ``UnreachableBroker``, ``PastFailure``, read
and written with ``from_json`` / ``to_json``), and the CRD schema of both (``spec_schema``,
``status_schema``, used by ``crd_schema.py``). Each status field is declared once, with its JSON name,
its schema and its description (``leaf``, spec_fields.py); the schema and the (de)serialisation are
derived from that.

"Since when" a failure was first seen, and since when a dead broker is back (``backSince``: the failure
ends once it has stayed alive ``brokerFailure.settleSeconds``), live in the KafkaCluster's status, so they
survive operator restarts and leader changes. Times are RFC 3339 UTC strings (``2026-11-27T12:00:00Z``);
``parse_time`` and ``format_time`` convert them to and from epoch seconds (no clock is read here).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from .crd_parts import APPROVALS, Schema, arr_schema, bool_schema, int_schema, str_schema
from .errors import BadInputError
from .jsonio import brief
from .spec_fields import child, json_names, leaf, object_schema, parse_object
from .spec_fields import to_json as written

MAX_AFTER_SECONDS = 7 * 86400  # a failure older than a week is not "waiting to be healed"
MAX_CONCURRENT_HEALS = 1000
DEFAULT_BROKER_AFTER_S = 600
DEFAULT_DIR_AFTER_S = 60
DEFAULT_PRESSURE_AFTER_S = 300
RELIEF_MARGIN = 0.05  # a disk-pressure heal relieves its dir to aboveShare minus this
DEFAULT_SETTLE_S = 120  # a broker back this long is healthy again: its failure ends
MAX_SETTLE_SECONDS = 86400
MAX_LOST_SHOWN = 20  # partition names kept per failure in the status (the count is exact)
MAX_PAST_FAILURES = 10  # ended broker failures kept in status.pastFailures (those awaiting retirement too)
RETIRE, KEEP = "Retire", "Keep"
ON_RETURN = (RETIRE, KEEP)


# ---- times ------------------------------------------------------------------------------------------


def format_time(epoch: float) -> str:
    """RFC 3339 UTC, whole seconds (``2026-11-27T12:00:00Z``)."""
    return datetime.datetime.fromtimestamp(int(epoch), datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str, where: str) -> float:
    """Epoch seconds of an RFC 3339 time; bad input naming ``where`` otherwise."""
    try:
        t = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadInputError(f"not an RFC 3339 time: {brief(text)}", where) from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.UTC)
    return t.timestamp()


# ---- spec.selfHealing ---------------------------------------------------------------------------------


_ENABLED = bool_schema("Whether the operator heals this kind of failure.", default=False)


def _after(default: int) -> Schema:
    return int_schema(
        f"How long the failure must last before it is healed (1 s to 7 days, {MAX_AFTER_SECONDS} s).",
        1,
        maximum=MAX_AFTER_SECONDS,
        default=default,
    )


@dataclass(frozen=True, slots=True)
class FailureRule:
    """``brokerFailure`` / ``logDirFailure``: heal a failure that has lasted ``after_seconds``. Each is
    declared once (spec_fields.py) by its subclass, with its own default ``afterSeconds``."""

    enabled: bool
    after_seconds: int


@dataclass(frozen=True, slots=True)
class BrokerFailure(FailureRule):
    DESCRIPTION: ClassVar[str] = "Heal a broker that is not alive: a BrokerDecommission of it."

    enabled: bool = leaf("enabled", _ENABLED)
    after_seconds: int = leaf("afterSeconds", _after(DEFAULT_BROKER_AFTER_S))
    settle_seconds: int = leaf(
        "settleSeconds",
        int_schema(
            "How long a dead broker that is back must stay alive before its failure ends (1 s to 1 day, "
            f"{MAX_SETTLE_SECONDS} s): one that dies again before keeps its first 'since', so a flapping "
            "broker is healed afterSeconds after its first death.",
            1,
            maximum=MAX_SETTLE_SECONDS,
            default=DEFAULT_SETTLE_S,
        ),
    )
    on_return: str = leaf(
        "onReturn",
        str_schema(
            "What becomes of a heal (a BrokerDecommission self-healing created) once its broker is back "
            "for settleSeconds: Retire (the operator deletes it, which lifts its cordon, so the placement "
            "may use the broker again; an execution still running it is first re-planned without it: its "
            "moves in flight finish, the rest are dropped, nothing is reverted) or "
            "Keep (it stays, keeping replicas off the broker, until you delete it). A heal whose "
            "spec.brokers was edited is never retired.",
            enum=list(ON_RETURN),
            default=RETIRE,
        ),
    )


@dataclass(frozen=True, slots=True)
class LogDirFailure(FailureRule):
    DESCRIPTION: ClassVar[str] = "Heal an offline log dir of a live broker: a LogDirCordon with drain: true."

    enabled: bool = leaf("enabled", _ENABLED)
    after_seconds: int = leaf("afterSeconds", _after(DEFAULT_DIR_AFTER_S))


@dataclass(frozen=True, slots=True)
class DiskPressure:
    DESCRIPTION: ClassVar[str] = (
        "Relieve a log dir whose volume stays above aboveShare for afterSeconds: a LogDirCordon with "
        "relieveBelowShare aboveShare - 0.05 (the fewest bytes moved off it, to the broker's other dirs "
        "first), retired (deleted, lifting its cordon) once the dir is under that share."
    )

    enabled: bool = leaf("enabled", _ENABLED)
    above_share: float | None = leaf(
        "aboveShare",
        {
            "type": "number",
            "description": (
                "The share of a dir's volume above which it is under pressure (absent: the KafkaCluster's "
                "capacity.maxDiskShare)."
            ),
            "minimum": 0.5,
            "maximum": 0.98,
        },
    )
    after_seconds: int = leaf("afterSeconds", _after(DEFAULT_PRESSURE_AFTER_S))


@dataclass(frozen=True, slots=True)
class SelfHealingSpec:
    """The KafkaCluster's ``spec.selfHealing``, declared once: its parser, CRD schema and defaults
    (spec_fields.py)."""

    DESCRIPTION: ClassVar[str] = (
        "Self-healing: a broker not alive, or a log dir offline, for afterSeconds gets a heal, a "
        "BrokerDecommission or a draining LogDirCordon the operator creates (owned by this "
        "KafkaCluster, labelled kafkaplacement.io/created-by: self-healing); deleting it cancels the "
        "heal. A heal whose broker is back for settleSeconds is retired (deleted) unless "
        "brokerFailure.onReturn is Keep. diskPressure relieves a dir above its share."
    )
    FIELDS: ClassVar[tuple[str, ...]]  # the JSON names, in order

    broker_failure: BrokerFailure = child("brokerFailure", BrokerFailure, absent=True)  # noqa: RUF009
    log_dir_failure: FailureRule = child("logDirFailure", LogDirFailure, absent=True)  # noqa: RUF009
    approval: str = leaf(
        "approval",
        str_schema(
            "The approval of the heals created: Automatic (executed as soon as planned) or Manual "
            "(each waits for spec.approvedPlan).",
            enum=list(APPROVALS),
            default="Automatic",
        ),
    )
    max_concurrent_broker_heals: int = leaf(
        "maxConcurrentBrokerHeals",
        int_schema(
            "Most brokers healed at once (running heals included); more brokers dead at once is a "
            "correlated failure: no heal is created, a Warning Event and the SelfHealing condition "
            "say why.",
            1,
            maximum=MAX_CONCURRENT_HEALS,
            default=1,
        ),
    )

    ignore_windows: bool = leaf(
        "ignoreWindows",
        bool_schema(
            "Heals run outside spec.execution.windows (a dead broker does not wait for the next window); "
            "false: they wait like any intent.",
            default=True,
        ),
    )
    disk_pressure: DiskPressure = child("diskPressure", DiskPressure, absent=True)  # noqa: RUF009

    @classmethod
    def parse(cls, raw: object, where: str = "spec.selfHealing") -> SelfHealingSpec:
        return parse_object(SelfHealingSpec, raw, where)

    @staticmethod
    def schema() -> Schema:
        return object_schema(SelfHealingSpec)


SelfHealingSpec.FIELDS = json_names(SelfHealingSpec)


# ---- status entries ------------------------------------------------------------------------------------


class _Entry:
    """What every status entry below can do: be read from its JSON (``from_json``: parsed against its
    declaration, spec_fields.py, its times checked, RFC 3339) and written as it (``to_json``)."""

    __slots__ = ()

    @classmethod
    def from_json(cls, raw: object, where: str) -> Self:
        entry = parse_object(cls, raw, where)
        _check_times(entry, where)
        return entry

    def to_json(self) -> dict[str, Any]:
        return written(self)


def _check_times(entry: object, where: str) -> None:
    times = (("since", "since"), ("back_since", "backSince"), ("returned_at", "returnedAt"))
    for name, key in (*times, ("retired_at", "retiredAt")):
        value = getattr(entry, name, None)
        if value is not None:
            parse_time(value, f"{where}.{key}")


_SINCE = str_schema("When the operator first saw the failure (RFC 3339).", format="date-time")
_HEAL = str_schema(
    "The heal created for it (a BrokerDecommission or LogDirCordon in this namespace); it stays named after "
    "the heal was deleted (cancelled): the operator does not create another for this failure.",
    maxLength=253,
)
_LOST = arr_schema(
    "Partitions every replica of which is on a dead broker or an offline dir (their data is gone: a heal "
    f"cannot restore them); at most {MAX_LOST_SHOWN} are named.",
    str_schema("topic-partition", maxLength=300),
    maxItems=MAX_LOST_SHOWN,
)
_LOST_COUNT = int_schema("How many partitions are lost, named or not.", 0)
_NO_ISR = arr_schema(
    "Partitions with no in-sync replica left: no leader, a replica on this broker, and none of their live "
    "replicas in sync (their leader died while the others were out of sync). No copy can be made until "
    "they have a leader again; the operator never elects an unclean one (docs/operations.md, 'No in-sync "
    f"replica'). Each as 'topic-partition (out of sync: ids)'; at most {MAX_LOST_SHOWN} are named.",
    str_schema("topic-partition and its out-of-sync replicas", maxLength=400),
    maxItems=MAX_LOST_SHOWN,
)
_NO_ISR_COUNT = int_schema("How many partitions have no in-sync replica left, named or not.", 0)
_BACK_SINCE = str_schema(
    "When the broker was seen alive again (RFC 3339): its failure ends once it has stayed alive "
    "brokerFailure.settleSeconds; dying again before that keeps 'since' (a flapping broker is healed).",
    format="date-time",
)


@dataclass(frozen=True, slots=True)
class DeadBroker(_Entry):
    """A broker the cluster names (a replica or its registration) that is not alive."""

    DESCRIPTION: ClassVar[str] = "One broker that is not alive."

    id: int = leaf("id", int_schema("Broker id.", 0), required=True)
    since: str = leaf("since", _SINCE, required=True)
    heal: str | None = leaf("heal", _HEAL, value=None)
    lost_partitions: tuple[str, ...] = leaf("lostPartitions", _LOST, value=())
    lost_count: int = leaf("lostPartitionCount", _LOST_COUNT, value=0)
    back_since: str | None = leaf("backSince", _BACK_SINCE, value=None)
    no_in_sync: tuple[str, ...] = leaf("noInSyncReplicaPartitions", _NO_ISR, value=())
    no_in_sync_count: int | None = leaf("noInSyncReplicaPartitionCount", _NO_ISR_COUNT, value=None)  # None: 0

    @property
    def failure(self) -> str:
        return f"broker {self.id} not alive since {self.since}"


@dataclass(frozen=True, slots=True)
class UnreachableBroker(_Entry):
    """A broker alive in the cluster (registered, not fenced) that does not answer the operator: never
    taken for dead, never healed; no plan is made while it does not answer."""

    DESCRIPTION: ClassVar[str] = "One unreachable broker."

    id: int = leaf("id", int_schema("Broker id.", 0), required=True)
    since: str = leaf(
        "since",
        str_schema("When the operator first could not reach it (RFC 3339).", format="date-time"),
        required=True,
    )


@dataclass(frozen=True, slots=True)
class OfflineLogDir(_Entry):
    """An offline log dir of a live broker."""

    DESCRIPTION: ClassVar[str] = "One offline log dir."

    broker: int = leaf("broker", int_schema("Id of the broker the dir belongs to.", 0), required=True)
    path: str = leaf("path", str_schema("Absolute path of the log dir.", maxLength=4096), required=True)
    since: str = leaf("since", _SINCE, required=True)
    heal: str | None = leaf("heal", _HEAL, value=None)
    lost_partitions: tuple[str, ...] = leaf("lostPartitions", _LOST, value=())
    lost_count: int = leaf("lostPartitionCount", _LOST_COUNT, value=0)

    @property
    def failure(self) -> str:
        return f"log dir {self.path} of broker {self.broker} offline since {self.since}"


@dataclass(frozen=True, slots=True)
class PressuredLogDir(_Entry):
    """A log dir whose volume is above ``diskPressure.aboveShare`` (or, once healed, not yet under the
    heal's ``relieveBelowShare``)."""

    DESCRIPTION: ClassVar[str] = "One log dir under disk pressure."

    broker: int = leaf("broker", int_schema("Id of the broker the dir belongs to.", 0), required=True)
    path: str = leaf("path", str_schema("Absolute path of the log dir.", maxLength=4096), required=True)
    since: str = leaf("since", _SINCE, required=True)
    used_percent: int = leaf(
        "usedPercent", int_schema("How full its volume was at the last read, in %.", 0), value=0
    )
    heal: str | None = leaf(
        "heal",
        str_schema("The heal created for it (a LogDirCordon with relieveBelowShare).", maxLength=253),
        value=None,
    )

    @property
    def failure(self) -> str:
        return f"log dir {self.path} of broker {self.broker} above its share since {self.since}"


def pressured_log_dirs(status: Mapping[str, Any] | None) -> tuple[PressuredLogDir, ...]:
    """``status.pressuredLogDirs`` (a broken entry is dropped: seen again, with a new ``since``)."""
    out: list[PressuredLogDir] = []
    for i, raw in enumerate((status or {}).get("pressuredLogDirs") or ()):
        try:
            out.append(PressuredLogDir.from_json(raw, f"status.pressuredLogDirs[{i}]"))
        except BadInputError:
            continue
    return tuple(out)


@dataclass(frozen=True, slots=True)
class PastFailure(_Entry):
    """A broker failure that ended (the broker back for ``settleSeconds``), in ``status.pastFailures``: when
    it started, its heal, when the broker returned, and when the heal was retired, or why it was not.
    An entry with a heal and neither ``retiredAt`` nor ``notRetired`` awaits the heal's retirement (an
    execution still runs it)."""

    DESCRIPTION: ClassVar[str] = "One broker failure that ended."

    broker: int = leaf("broker", int_schema("Broker id.", 0), required=True)
    since: str = leaf("since", _SINCE, required=True)
    heal: str | None = leaf(
        "heal",
        str_schema("The heal created for it (a BrokerDecommission in this namespace).", maxLength=253),
        value=None,
    )
    returned_at: str | None = leaf(
        "returnedAt",
        str_schema(
            "When the broker was first seen alive again (RFC 3339; absent: not known).", format="date-time"
        ),
        value=None,
    )
    retired_at: str | None = leaf(
        "retiredAt",
        str_schema(
            "When the operator retired the heal (deleted it, lifting its cordon: brokerFailure.onReturn "
            "Retire), RFC 3339.",
            format="date-time",
        ),
        value=None,
    )
    not_retired: str | None = leaf(
        "notRetired",
        str_schema(
            "Why the heal was not retired (onReturn Keep, its spec.brokers edited, deleted by hand).",
            maxLength=1000,
        ),
        value=None,
    )

    @property
    def awaiting_retirement(self) -> bool:
        return self.heal is not None and self.retired_at is None and self.not_retired is None


def past_failures(status: Mapping[str, Any] | None) -> tuple[tuple[PastFailure, ...], list[str]]:
    """``status.pastFailures`` (oldest first), and the problems of the entries left out."""
    out: list[PastFailure] = []
    problems: list[str] = []
    for i, raw in enumerate((status or {}).get("pastFailures") or ()):
        try:
            out.append(PastFailure.from_json(raw, f"status.pastFailures[{i}]"))
        except BadInputError as e:
            problems.append(e.message)
    return tuple(out), problems


@dataclass(frozen=True, slots=True)
class HealingState:
    """``status.deadBrokers``, ``status.offlineLogDirs`` and ``status.unreachableBrokers`` of a
    KafkaCluster."""

    dead_brokers: tuple[DeadBroker, ...] = ()
    offline_log_dirs: tuple[OfflineLogDir, ...] = ()
    unreachable_brokers: tuple[UnreachableBroker, ...] = ()

    @classmethod
    def from_status(cls, status: Mapping[str, Any] | None) -> tuple[HealingState, list[str]]:
        """The state in a status, and the problems of the entries left out (a broken entry is dropped:
        its failure is seen again, with a new ``since``)."""
        status = status or {}
        problems: list[str] = []
        dead: list[DeadBroker] = []
        dirs: list[OfflineLogDir] = []
        unreachable: list[UnreachableBroker] = []
        for i, raw in enumerate(status.get("deadBrokers") or ()):
            try:
                dead.append(DeadBroker.from_json(raw, f"status.deadBrokers[{i}]"))
            except BadInputError as e:
                problems.append(e.message)
        for i, raw in enumerate(status.get("offlineLogDirs") or ()):
            try:
                dirs.append(OfflineLogDir.from_json(raw, f"status.offlineLogDirs[{i}]"))
            except BadInputError as e:
                problems.append(e.message)
        for i, raw in enumerate(status.get("unreachableBrokers") or ()):
            try:
                unreachable.append(UnreachableBroker.from_json(raw, f"status.unreachableBrokers[{i}]"))
            except BadInputError as e:
                problems.append(e.message)
        return cls(tuple(dead), tuple(dirs), tuple(unreachable)), problems

    def to_status(self) -> dict[str, Any]:
        return {
            "deadBrokers": [d.to_json() for d in self.dead_brokers],
            "offlineLogDirs": [d.to_json() for d in self.offline_log_dirs],
            "unreachableBrokers": [u.to_json() for u in self.unreachable_brokers],
        }


__all__ = [
    "DEFAULT_SETTLE_S",
    "KEEP",
    "MAX_AFTER_SECONDS",
    "MAX_PAST_FAILURES",
    "MAX_SETTLE_SECONDS",
    "ON_RETURN",
    "RETIRE",
    "BrokerFailure",
    "DeadBroker",
    "DiskPressure",
    "FailureRule",
    "HealingState",
    "LogDirFailure",
    "OfflineLogDir",
    "PastFailure",
    "PressuredLogDir",
    "SelfHealingSpec",
    "UnreachableBroker",
    "format_time",
    "parse_time",
    "past_failures",
    "pressured_log_dirs",
]
