"""The execution record's schema: its phases and their transition table, each plan partition's state,
and the mutable progress document (``RecordDoc``, pydantic, camelCase in JSON) with its parts (the
limits, the rules, the disk watch's and the rate hold's state...). execution/record.py binds them to a
plan, its blobs and a ``Store``.

``TRANSITIONS`` maps ``(phase, event)`` to the next phase and ``next_phase`` is the only way a phase
changes.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..model.capacity import DEFAULT_MAX_DISK_SHARE, MAX_DISK_SHARE, MIN_DISK_SHARE
from ..model.cluster_spec import ASSUMED_UNTHROTTLED_RATE as ASSUMED_UNTHROTTLED_RATE
from ..model.cluster_spec import LimitsSpec
from ..model.crd_parts import OnConfigChange
from ..model.errors import PlacementError
from ..model.throttle_state import ClaimOwner, ThrottleState

_SPEC_LIMITS = LimitsSpec()  # the KafkaCluster's spec.limits defaults (model/cluster_spec.py): one source


class Phase(StrEnum):
    PENDING = "Pending"
    VALIDATING = "Validating"
    THROTTLING = "Throttling"
    MOVING = "Moving"
    FINISHING = "Finishing"
    COMPLETED = "Completed"
    PAUSED = "Paused"
    CANCELLING = "Cancelling"
    CANCELLED = "Cancelled"
    FAILED = "Failed"


class Event(StrEnum):
    START = "start"  # Pending: begin validating the plan against the cluster
    VALID = "valid"  # Validating: the plan fits the cluster
    INVALID = "invalid"  # Validating: the plan names things that do not exist
    THROTTLED = "throttled"  # Throttling: throttles for the first batch are set (or none were asked for)
    ALL_DONE = "all_done"  # every plan partition is at its target, checked against the live cluster
    UNHEALTHY = "unhealthy"  # partitions under-replicated for reasons other than our moves
    HEALTHY = "healthy"  # the safety gate is clear again
    FINISHED = "finished"  # throttles cleared, preferred leaders elected
    CANCEL = "cancel"  # cancelRequested seen
    REVERTED = "reverted"  # none of our moves in flight, original order restored, throttles cleared
    ERROR = "error"  # a non-retriable failure (Kafka refused a move, a move was changed outside)
    RETRY = "retry"  # re-run a failed execution of the same plan


PHASES = tuple(Phase)
TERMINAL = frozenset({Phase.COMPLETED, Phase.CANCELLED, Phase.FAILED})

TRANSITIONS: dict[tuple[Phase, Event], Phase] = {
    (Phase.PENDING, Event.START): Phase.VALIDATING,
    (Phase.VALIDATING, Event.VALID): Phase.THROTTLING,
    (Phase.VALIDATING, Event.INVALID): Phase.FAILED,
    (Phase.VALIDATING, Event.ALL_DONE): Phase.FINISHING,
    (Phase.THROTTLING, Event.THROTTLED): Phase.MOVING,
    (Phase.MOVING, Event.UNHEALTHY): Phase.PAUSED,
    (Phase.MOVING, Event.ALL_DONE): Phase.FINISHING,
    (Phase.PAUSED, Event.HEALTHY): Phase.MOVING,
    (Phase.FINISHING, Event.FINISHED): Phase.COMPLETED,
    (Phase.CANCELLING, Event.REVERTED): Phase.CANCELLED,
    (Phase.FAILED, Event.RETRY): Phase.PENDING,
    **{
        (p, Event.CANCEL): Phase.CANCELLING
        for p in (Phase.PENDING, Phase.VALIDATING, Phase.THROTTLING, Phase.MOVING, Phase.PAUSED, Phase.FAILED)
    },
    **{
        (p, Event.ERROR): Phase.FAILED
        for p in (
            Phase.VALIDATING,
            Phase.THROTTLING,
            Phase.MOVING,
            Phase.PAUSED,
            Phase.FINISHING,
            Phase.CANCELLING,
        )
    },
}


class IllegalTransition(PlacementError):
    """An event that the current phase does not accept (a bug or a tampered record)."""

    reason = "IllegalTransition"


def next_phase(phase: str, event: str) -> Phase:
    """The phase after ``event`` in ``phase``; raises ``IllegalTransition`` if the table has no entry."""
    try:
        return TRANSITIONS[(Phase(phase), Event(event))]
    except (KeyError, ValueError):
        raise IllegalTransition(f"event '{event}' is not allowed in phase {phase}") from None


class PState(IntEnum):
    """A plan partition's state, one byte each in ``RecordDoc.states``."""

    PENDING = 0
    IN_FLIGHT = 1  # submitted (details in RecordDoc.in_flight)
    DONE = 2
    CANCELLED = 3  # reverted, or completed before a cancel reached it and kept


class Submission(StrEnum):
    INTENT = "intent"  # recorded before the request; adopted or dropped after a crash
    CONFIRMED = "confirmed"  # Kafka accepted it (or a dir-only move: nothing to ask the controller)


# ---- the progress document ---------------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, validate_assignment=False
    )


class InFlight(_Model):
    state: Submission
    at: float = Field(ge=0)


class Counters(_Model):
    ticks: int = Field(0, ge=0)
    refills: int = Field(0, ge=0)  # ticks run at once after one that freed more room than it read ahead for
    submissions: int = Field(0, ge=0)  # reassignment requests per partition, summed
    resubmitted: int = Field(0, ge=0)  # partitions submitted more than once (must stay 0)
    dir_submissions: int = Field(0, ge=0)
    cancels: int = Field(0, ge=0)
    reverted_stranded: int = Field(0, ge=0)  # a superseded plan's moves toward a dead broker, reverted
    reorders: int = Field(0, ge=0)
    orders_kept: int = Field(0, ge=0)  # cancelled moves whose replica order Kafka would not restore
    diverged_ticks: int = Field(0, ge=0)
    unsent: int = Field(0, ge=0)  # intents recorded before a crash that never reached Kafka
    refused: int = Field(0, ge=0)  # submissions Kafka answered with an error for (not counted as submitted)
    conflicts: int = Field(0, ge=0)  # saves refused because another writer was first
    diverged_since: float | None = None  # when moves were first seen neither running nor at target


class Defence(_Model):
    """Owned configs (throttles, cordons) changed by another party: how often they were found changed
    and re-applied, the re-applications of the current window, a hold (no new moves) and what changed."""

    drifts: int = Field(0, ge=0)  # ticks that found an owned config changed
    reapplied: int = Field(0, ge=0)  # re-applications
    times: list[float] = Field([], max_length=1000)  # re-applications within the window
    held_until: float | None = None
    last: list[str] = Field([], max_length=10)  # the latest changes found, one line each
    suspect: list[str] = Field([], max_length=100_000)  # changes seen once: acted on if seen again


class Rule(_Model):
    """Per-intent execution settings: moves that take replicas off ``brokers`` get this priority (higher
    first) and throttle (bytes/s; None = the execution's)."""

    name: str = Field(max_length=300)
    brokers: list[int]
    priority: int = Field(0, ge=-1000, le=1000)
    throttle: int | None = Field(None, ge=1)


class Limits(_Model):
    """The executor's limits: concurrency, bytes in flight, throttle, defence and disk headroom. One model
    for the execution and its record (the record keeps the limits it runs under); built from the
    KafkaCluster's ``spec.limits`` (``reconcile/inputs.limits_of``, whose defaults these are) or the
    CLI's flags. Whether a maintenance window is open is decided per tick, never recorded
    (``executor.tick``'s ``window_open``)."""

    # bytes in flight cap large partitions; counts only many tiny ones
    max_moves_per_broker: int = Field(_SPEC_LIMITS.max_moves_per_broker, ge=1)
    max_moves: int = Field(_SPEC_LIMITS.max_moves_in_flight, ge=1)  # cluster-wide, Cruise Control's default
    max_bytes_per_broker: int | None = Field(None, ge=1)  # None: throttle (or the assumed rate) x batch_s
    throttle: int | None = Field(None, ge=1)  # bytes/s for inter-broker and log-dir moves; None: unthrottled
    batch_seconds: int = Field(_SPEC_LIMITS.batch_seconds, ge=1)  # target time to copy a broker's in flight
    # owned configs changed by another party: re-applied (at most max_reapplies within the window), or no
    # new moves while it lasts
    on_config_change: OnConfigChange = _SPEC_LIMITS.on_config_change
    max_reapplies: int = Field(_SPEC_LIMITS.max_reapplies, ge=1, le=1000)
    reapply_window_s: int = Field(_SPEC_LIMITS.reapply_window_seconds, ge=1, le=86400)
    # the disk headroom the plan was made with (planning/headroom.py): the executor's disk watch holds to it
    # (execution/disk_watch.py); records written before it was kept have the default
    max_disk_share: float = Field(DEFAULT_MAX_DISK_SHARE, ge=MIN_DISK_SHARE, le=MAX_DISK_SHARE)
    # hold each broker's achieved replication rate at the throttle (execution/rate_watch.py)
    hold_rate: bool = False
    # the throttle of the moves in flight while every maintenance window is closed (execution/window_cap.py;
    # None: they go on at their own; spec.execution.outsideWindowBytesPerSecond)
    outside_window: int | None = Field(None, ge=1)

    @property
    def bytes_per_broker(self) -> int:
        """Most bytes in flight into (and out of) one broker."""
        if self.max_bytes_per_broker is not None:
            return self.max_bytes_per_broker
        return (self.throttle or ASSUMED_UNTHROTTLED_RATE) * self.batch_seconds


class HeldDir(_Model):
    """A dir whose moves in flight are held (execution/disk_watch.py): its share of its volume at the last
    tick, since when, how many moves write into it and the first of them."""

    broker: int = Field(ge=0)
    path: str = Field(max_length=4096)
    share: float = Field(ge=0)
    since: float = Field(ge=0)
    moves: int = Field(ge=0)
    partitions: list[str] = Field([], max_length=10)


class HeldRate(_Model):
    """A broker throttle the disk watch holds at a trickle, and the value it had before (ours; None: the
    broker's own, put back on release)."""

    broker: int = Field(ge=0)
    config: str = Field(max_length=200)
    before: str | None = None


class DirSeen(_Model):
    """A dir a move in flight writes into, as the last tick saw it (its rise and the usage metric)."""

    broker: int = Field(ge=0)
    path: str = Field(max_length=4096)
    used: int = Field(ge=0)
    total: int = Field(ge=1)


MAX_WATCHED = 500  # dirs kept in ``DiskWatchDoc.seen``: the record stays small whatever is in flight


class DiskWatchDoc(_Model):
    """The executor's disk watch (execution/disk_watch.py): dirs held, the rates it holds, the candidates
    it deferred on the last tick and into which dirs, the dirs the moves in flight write into."""

    held: list[HeldDir] = Field([], max_length=MAX_WATCHED)
    rates: list[HeldRate] = Field([], max_length=10_000)
    holds: int = Field(0, ge=0)  # holds started so far
    deferred: int = Field(0, ge=0)  # candidates deferred by the last tick
    deferred_into: list[str] = Field([], max_length=10)  # the dirs that deferred them, one line each
    seen: list[DirSeen] = Field([], max_length=MAX_WATCHED)


MAX_RATE_SAMPLES = 64  # a side's samples kept (a window of WINDOW_S at the shortest poll, bounded)
MAX_HOLD_FACTOR = 1.5  # Kafka's rate set at most this many times the throttle (execution/rate_watch.py)


class RateSide(_Model):
    """One side of a broker's replication (it receives: the follower rate; it sends as leader: the leader
    rate) whose achieved rate the executor holds at its throttle (execution/rate_watch.py)."""

    broker: int = Field(ge=0)
    config: str = Field(max_length=200)
    target: int = Field(ge=1)  # the throttle asked, bytes/s: what the achieved rate is held at
    factor: float = Field(1.0, ge=1.0, le=MAX_HOLD_FACTOR)  # Kafka's rate = target x factor
    done: int = Field(0, ge=0)  # bytes of this side's finished moves (the cumulative count's base)
    since: float = Field(0.0, ge=0)  # when the factor (or target) was set: measured from a settle time on
    samples: list[tuple[float, int]] = Field([], max_length=MAX_RATE_SAMPLES)  # (time, bytes so far), busy
    rate: float | None = Field(None, ge=0)  # the achieved rate last measured, bytes/s


class RateHoldDoc(_Model):
    """The executor's rate hold (execution/rate_watch.py): each side's factor and samples, and the broker
    that sent each active move's data at the last tick (a finished move's bytes are counted on it)."""

    sides: list[RateSide] = Field([], max_length=20_000)
    leaders: dict[int, int] = {}  # plan index of an active move -> its leader at the last tick
    changes: int = Field(0, ge=0)  # Kafka rates the hold has set so far


class AdaptiveSide(_Model):
    """One side of a broker's replication under the adaptive throttle (execution/adaptive.py): the rate it
    yields to the client traffic last set (before the rate hold's factor), and what it was computed from."""

    broker: int = Field(ge=0)
    config: str = Field(max_length=200)
    value: int = Field(ge=1)  # bytes/s
    note: str | None = Field(None, max_length=300)  # why it is at the maximum (no capacity, no rate)


class AdaptiveDoc(_Model):
    """The adaptive throttle's state: each side's rate set, and when each broker's last was written (at
    most one write per broker per sampling period)."""

    sides: list[AdaptiveSide] = Field([], max_length=20_000)
    written: dict[int, float] = {}  # broker -> when its rates were last changed
    changes: int = Field(0, ge=0)  # rate changes the traffic caused so far


class WaitsDoc(_Model):
    """The time the execution could not run (``Execution.account``, execution/record.py): idle, nothing in
    flight, waiting for a maintenance window to open or paused (the safety gate or a hold: phase Paused),
    or not ticked at all for much longer than its usual ticks (``spec.paused``, no operator leading, Kafka
    unreachable). Measured at the ticks: a wait starts and ends at the first tick that sees it start or
    end."""

    seconds: float = Field(0.0, ge=0)  # the waits that ended, summed
    since: float | None = Field(None, ge=0)  # when the current wait began (None: not waiting)
    ticked: float | None = Field(None, ge=0)  # when the last tick ended


class Owner(_Model):
    pid: int
    started_at: float


class Blobs(_Model):
    plan: str
    baseline: str | None = None


class AdoptedDoc(_Model):
    """A move in flight taken over from a superseded execution: the partition as that execution found it
    (this execution's baseline of the partition, since Kafka shows it mid-move now)."""

    replicas: list[int]
    log_dirs: list[str | None]
    size: int = Field(ge=0)


class SupersededDoc(_Model):
    """An earlier execution whose plan this one replaced while it ran (its moves in flight adopted)."""

    plan_id: str = Field(max_length=64)
    execution_id: str = Field(max_length=32)
    partitions: int = Field(ge=0)
    done: int = Field(ge=0)
    submissions: int = Field(ge=0)
    resubmitted: int = Field(ge=0)
    adopted: int = Field(ge=0)
    retargeted: int = Field(0, ge=0)  # moves in flight toward a dead broker that this one's targets replace
    at: float = Field(ge=0)
    reason: str = Field("", max_length=500)


class RecordDoc(_Model):
    """The mutable progress document (camelCase in JSON)."""

    kind: Literal["KafkaPlacementExecution"] = "KafkaPlacementExecution"
    version: Literal[2] = 2
    plan_id: str = Field(pattern=r"^[0-9a-f]{6,64}$")
    execution_id: str = Field(pattern=r"^[0-9a-f]{6,32}$")
    cluster_id: str | None = Field(None, max_length=200)
    bootstrap_servers: str = Field("", max_length=10000)
    phase: Phase
    cancel_requested: bool = Field(False)
    last_error: str | None = Field(None)
    blobs: Blobs
    partitions: int = Field(ge=0)
    states: str = ""  # zlib+base64 of one PState byte per plan partition ("" before validation)
    submits: str = ""  # zlib+base64 of one submission count (capped 255) per plan partition
    in_flight: dict[int, InFlight] = Field({})
    done_count: int = Field(0, ge=0)
    done_bytes: int = Field(0, ge=0)
    copied: dict[int, int] = {}  # plan index -> most bytes seen copied of an in-flight partition
    samples: list[tuple[float, float]] = []  # (time, bytes moved) for the rate and ETA
    throttles: ThrottleState = ThrottleState()
    # the KafkaCluster whose execution this is, claimed on each throttled broker (None: the CLI's)
    claim_owner: ClaimOwner | None = None
    limits: Limits
    rules: list[Rule] = []
    counters: Counters = Counters()
    defence: Defence = Defence()
    disk: DiskWatchDoc = DiskWatchDoc()  # absent in records written before the disk watch
    rate: RateHoldDoc = RateHoldDoc()  # absent in records written before the rate hold
    adaptive: AdaptiveDoc = AdaptiveDoc()  # absent in records written before the adaptive throttle
    # the time it could not run (windows closed, paused): absent in records written before it, counted 0
    waits: WaitsDoc = WaitsDoc()
    window_cap: int | None = None  # the rate the moves in flight are capped at now (execution/window_cap.py)
    # "topic/partition/broker" -> when its future replica was first seen caught up, not swapped in yet
    # (execution/promotion.py); absent in records written before it
    caught_up: dict[str, float] = {}
    owned_cordons: dict[int, list[str]] = {}  # broker -> cordoned dirs this execution keeps cordoned
    adopted: dict[int, AdoptedDoc] = {}  # plan index -> moves in flight taken over from a superseded plan
    superseded: list[SupersededDoc] = Field([], max_length=20)  # the plans this one replaced, newest last
    # plan indices whose partition a superseded plan left moving toward a broker that died: this execution
    # reverts that reassignment (KIP-455 cancel), then moves the partition to its own target
    # (execution/supersede.py, "stranded")
    retarget: list[int] = []
    participants: list[str] = []
    plan_status: dict[str, Any] | None = Field(None)
    progress: dict[str, Any] | None = None
    owner: Owner | None = None
    created_at: float = Field()
    updated_at: float = Field()
    finished_at: float | None = None  # when it reached a terminal phase (absent in older records)
