"""The execution record (version 2): its one schema, phases, transition table and encoding.

A record is bound to its cluster (``clusterId``) and plan (``planId``) and has two parts kept in a
``Store`` (execution/store.py):

- immutable blobs: the plan (``plan-<planId>``, content-addressed: the same plan is stored once) and the
  execution's baseline (``baseline-<executionId>``: every plan partition's replicas, dirs and size when
  the execution was validated). Written once, read once per process (cached), any size;
- the small mutable progress document (``RecordDoc``): phase, partitions in flight, counters, throttles
  we own (``ThrottleState``, model/throttle_state.py: the one model kafka/throttles.py works on), and the
  per-partition state packed one byte per plan partition (zlib + base64), so what a save writes follows
  the work in flight, not the plan's size.

``TRANSITIONS`` maps ``(phase, event)`` to the next phase and ``next_phase`` is the only way a phase
changes. ``Execution.load`` reads version 2 and refuses anything else with a ``BadInputError`` naming the
store and the field (a record of another version: its version).
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import time
import zlib
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from ..model.capacity import DEFAULT_MAX_DISK_SHARE, MAX_DISK_SHARE, MIN_DISK_SHARE
from ..model.cluster_spec import LimitsSpec
from ..model.crd_parts import OnConfigChange
from ..model.errors import BadInputError, PlacementError
from ..model.plan import ANY_DIR, PartitionTarget, Plan
from ..model.throttle_state import ClaimOwner, ThrottleState
from .store import Store

ASSUMED_UNTHROTTLED_RATE = 100 * 1024 * 1024  # bytes/s a broker is assumed to copy when unthrottled
_SPEC_LIMITS = LimitsSpec()  # the KafkaCluster's spec.limits defaults (model/cluster_spec.py): one source

RECORD_KIND = "KafkaPlacementExecution"
RECORD_VERSION = 2
MAX_SAMPLES = 30
MAX_ERROR_CHARS = 2000


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
    submissions: int = Field(0, ge=0)  # reassignment requests per partition, summed
    resubmitted: int = Field(0, ge=0)  # partitions submitted more than once (must stay 0)
    dir_submissions: int = Field(0, ge=0)
    cancels: int = Field(0, ge=0)
    reverted_stranded: int = Field(0, ge=0)  # a superseded plan's moves toward a dead broker, reverted
    reorders: int = Field(0, ge=0)
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


# ---- the immutable parts -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Original:
    """A plan partition as the execution found it: replicas, their dirs, size (largest replica), and how
    many of its replicas were in sync against its topic's min.insync.replicas (-1, 0: not known)."""

    replicas: tuple[int, ...]
    log_dirs: tuple[str | None, ...]
    size: int
    in_sync: int = -1
    min_isr: int = 0

    @property
    def urgency(self) -> tuple[int, int]:
        """Execution order by health: partitions at or below min ISR with a replica out of sync first, then
        the other under-replicated ones, each with the fewest in-sync replicas first; healthy ones last."""
        if self.in_sync < 0 or self.in_sync >= len(self.replicas):
            return (2, 0)
        return (0 if self.in_sync <= self.min_isr else 1, self.in_sync)


def plan_blob_name(plan_id: str) -> str:
    """The name of the blob holding plan ``plan_id`` (``plan_blob``)."""
    return f"plan-{plan_id}"


def plan_blob(plan: Plan) -> tuple[str, bytes]:
    """The blob holding ``plan`` whole (Kafka's reassignment JSON), content-addressed by its id: what
    ``Execution.create`` stores and the operator's plan review names before approval."""
    return plan_blob_name(plan.plan_id), json.dumps(plan.to_json(), separators=(",", ":")).encode()


class ExecutionPlan:
    """The plan with its baseline, indexed once: per plan index the brokers a move adds, removes and
    moves between dirs, its bytes to copy, its priority and throttle, and the execution order (the
    partitions with the fewest in-sync replicas first when some are under-replicated: ``Original.urgency``;
    then higher priority, then moves that free a full dir, then smallest first)."""

    FREEING_DIR_USAGE = 0.85  # a move that takes a replica off a dir at least this full frees space

    def __init__(
        self,
        plan: Plan,
        baseline: Sequence[Original] | None,
        rules: Sequence[Rule] = (),
        dir_usage: Mapping[tuple[int, str], float] | None = None,
    ) -> None:
        self.plan = plan
        self.targets: tuple[PartitionTarget, ...] = plan.partitions
        self.index: dict[tuple[str, int], int] = {t.key: i for i, t in enumerate(self.targets)}
        self.baseline = tuple(baseline) if baseline is not None else None
        n = len(self.targets)
        self.adding: list[tuple[int, ...]] = [()] * n
        self.removing: list[tuple[int, ...]] = [()] * n
        self.dir_moving: list[tuple[int, ...]] = [()] * n
        self.move_bytes: list[int] = [0] * n
        self.priority: list[int] = [0] * n
        self.rate: list[int | None] = [None] * n
        self.order: list[int] = list(range(n))
        if self.baseline is None:
            return
        usage = dir_usage or {}
        freeing = [False] * n
        for i, (t, o) in enumerate(zip(self.targets, self.baseline, strict=True)):
            before = set(o.replicas)
            old_dirs = dict(zip(o.replicas, o.log_dirs, strict=True))
            self.adding[i] = tuple(b for b in t.replicas if b not in before)
            self.removing[i] = tuple(b for b in o.replicas if b not in set(t.replicas))
            self.dir_moving[i] = tuple(
                b
                for b, d in zip(t.replicas, t.log_dirs, strict=True)
                if b in before and d != ANY_DIR and old_dirs.get(b) != d
            )
            self.move_bytes[i] = o.size * (len(self.adding[i]) + len(self.dir_moving[i]))
            matching = [r for r in rules if set(r.brokers) & set(self.removing[i])]
            self.priority[i] = max((r.priority for r in matching), default=0)
            self.rate[i] = min((r.throttle for r in matching if r.throttle is not None), default=None)
            freeing[i] = any(
                usage.get((b, d), 0.0) >= self.FREEING_DIR_USAGE
                for b, d in zip(o.replicas, o.log_dirs, strict=True)
                if d is not None and (b in self.removing[i] or b in self.dir_moving[i])
            )
        base = self.baseline
        self.order.sort(key=lambda i: (base[i].urgency, -self.priority[i], not freeing[i], base[i].size, i))

    def baseline_size(self, i: int) -> int:
        return self.baseline[i].size if self.baseline is not None else 0

    def original(self, i: int) -> Original:
        if self.baseline is None:
            raise PlacementError("the execution has no baseline yet (not validated)")
        return self.baseline[i]

    def dir_only(self, i: int) -> bool:
        """Replicas and their order stay (a reorder is a reassignment: it changes the preferred leader)."""
        return self.original(i).replicas == self.targets[i].replicas

    def involved(self, i: int) -> tuple[int, ...]:
        """Brokers that gain or lose a replica, or (pure dir moves) move one between their dirs."""
        changed = self.adding[i] + self.removing[i]
        return changed if changed else self.dir_moving[i]

    @property
    def total_bytes(self) -> int:
        return sum(self.move_bytes)


_CACHE: OrderedDict[tuple[str, str | None], ExecutionPlan] = OrderedDict()
_CACHE_SIZE = 2


def pack(data: bytes | bytearray) -> str:
    return base64.b64encode(zlib.compress(bytes(data), 6)).decode("ascii")


def unpack(text: str, length: int, where: str) -> bytearray:
    if not text:
        return bytearray(length)
    try:
        raw = zlib.decompressobj().decompress(base64.b64decode(text, validate=True), length + 1)
    except (binascii.Error, zlib.error, ValueError) as e:
        raise BadInputError(f"cannot decode packed partition states: {e}", where) from None
    if len(raw) != length:
        raise BadInputError(f"packed partition states hold {len(raw)} entries, expected {length}", where)
    return bytearray(raw)


def _validation_message(e: ValidationError) -> str:
    parts = []
    for err in e.errors()[:3]:
        loc = ".".join(str(x) for x in err["loc"]) or "(document)"
        parts.append(f"{loc}: {err['msg']}"[:300])
    more = f" (and {e.error_count() - 3} more)" if e.error_count() > 3 else ""
    return "; ".join(parts) + more


class Execution:
    """One execution record: the progress document, its unpacked per-partition arrays, and the plan with
    its baseline (loaded from the store's blobs on first use). ``save`` writes the document only."""

    def __init__(self, store: Store, doc: RecordDoc, plan: ExecutionPlan | None = None) -> None:
        self.store, self.doc = store, doc
        where = f"{store.where}: states"
        self.states = unpack(doc.states, doc.partitions, where) if doc.states else bytearray(doc.partitions)
        if not doc.states:  # not validated yet: only moves adopted from a superseded plan are in flight
            for i in doc.in_flight:
                if 0 <= i < doc.partitions:
                    self.states[i] = PState.IN_FLIGHT
        self.submits = unpack(doc.submits, doc.partitions, f"{store.where}: submits")
        self._plan = plan

    # ---- creation, loading, saving -----------------------------------------------------------------

    @staticmethod
    def create(
        store: Store,
        plan: Plan,
        *,
        limits: Limits,
        bootstrap_servers: str = "",
        cluster_id: str | None = None,
        rules: Sequence[Rule] = (),
        participants: Sequence[str] = (),
        plan_status: Mapping[str, Any] | None = None,
    ) -> Execution:
        """A new record in phase Pending; stores the plan blob (once per plan id) but not the document:
        the caller saves it (after any further checks)."""
        blob, data = plan_blob(plan)
        store.put_blob(blob, data)
        now = time.time()
        doc = RecordDoc(
            plan_id=plan.plan_id,
            execution_id=secrets.token_hex(6),
            phase=Phase.PENDING,
            cluster_id=cluster_id,
            bootstrap_servers=bootstrap_servers,
            blobs=Blobs(plan=blob),
            partitions=len(plan.partitions),
            limits=limits,
            rules=list(rules),
            participants=list(participants),
            plan_status=dict(plan_status) if plan_status is not None else None,
            created_at=now,
            updated_at=now,
        )
        return Execution(store, doc, ExecutionPlan(plan, None))

    @staticmethod
    def load(store: Store) -> Execution | None:
        data = store.load()
        if data is None:
            return None
        try:
            raw = json.loads(data)
        except (ValueError, RecursionError) as e:
            raise BadInputError(
                f"not an execution record: not valid JSON ({str(e)[:200]})", store.where
            ) from None
        # a record of another version (version 1, a pre-release format, had a planId but no kind)
        ours = isinstance(raw, dict) and (raw.get("kind") == RECORD_KIND or "planId" in raw)
        if ours and raw.get("version") != RECORD_VERSION:
            raise BadInputError(
                f"unsupported execution record version {str(raw.get('version'))[:20]} "
                f"(this release reads version {RECORD_VERSION} only)",
                store.where,
            )
        if not isinstance(raw, dict) or raw.get("kind") != RECORD_KIND:
            raise BadInputError(f"not an execution record (kind must be {RECORD_KIND})", store.where)
        try:
            doc = RecordDoc.model_validate(raw)
        except ValidationError as e:
            raise BadInputError(
                f"malformed execution record: {_validation_message(e)}", store.where
            ) from None
        execution = Execution(store, doc)
        bad = [k for k in doc.in_flight if not 0 <= k < doc.partitions]
        if bad or any(not 0 <= k < doc.partitions for k in doc.copied):
            raise BadInputError(
                "malformed execution record: inFlight/copied name unknown partitions", store.where
            )
        return execution

    def encode(self) -> bytes:
        self.doc.states = pack(self.states) if self.doc.blobs.baseline else ""
        self.doc.submits = pack(self.submits)
        self.doc.updated_at = time.time()
        return self.doc.model_dump_json(by_alias=True).encode()

    def save(self) -> None:
        self.store.save(self.encode())

    @property
    def plan(self) -> ExecutionPlan:
        if self._plan is None or (self.doc.blobs.baseline and self._plan.baseline is None):
            key = (self.doc.blobs.plan, self.doc.blobs.baseline)
            cached = _CACHE.get(key)
            if cached is None:
                cached = self._load_plan()
                _CACHE[key] = cached
                while len(_CACHE) > _CACHE_SIZE:
                    _CACHE.popitem(last=False)
            self._plan = cached
        return self._plan

    def _load_plan(self) -> ExecutionPlan:
        where = self.store.where
        raw = self.store.get_blob(self.doc.blobs.plan)
        if raw is None:
            raise BadInputError(f"the plan blob {self.doc.blobs.plan} is missing", where)
        plan = Plan.loads(raw.decode("utf-8", "replace"), f"{where}: {self.doc.blobs.plan}")
        if plan.plan_id != self.doc.plan_id or len(plan.partitions) != self.doc.partitions:
            raise BadInputError(f"the plan blob does not hold plan {self.doc.plan_id}", where)
        if self.doc.blobs.baseline:
            base = self.store.get_blob(self.doc.blobs.baseline)
            if base is None:
                raise BadInputError(f"the baseline blob {self.doc.blobs.baseline} is missing", where)
            baseline, usage = decode_baseline(
                base, len(plan.partitions), f"{where}: {self.doc.blobs.baseline}"
            )
            return ExecutionPlan(plan, baseline, self.doc.rules, usage)
        return ExecutionPlan(plan, None)

    def set_baseline(self, baseline: Sequence[Original], dir_usage: Mapping[tuple[int, str], float]) -> None:
        """Store the validated baseline (immutable) and index the plan with it."""
        name = f"baseline-{self.doc.execution_id}"
        self.store.put_blob(name, encode_baseline(baseline, dir_usage))
        self.doc.blobs.baseline = name
        self._plan = ExecutionPlan(self.plan.plan, baseline, self.doc.rules, dir_usage)
        _CACHE[(self.doc.blobs.plan, name)] = self._plan

    # ---- per-partition state -----------------------------------------------------------------------

    @property
    def phase(self) -> Phase:
        return self.doc.phase

    def move(self, event: Event) -> None:
        self.doc.phase = next_phase(self.doc.phase, event)

    def error(self, message: str | None) -> None:
        self.doc.last_error = None if message is None else message[:MAX_ERROR_CHARS]

    def state(self, i: int) -> PState:
        return PState(self.states[i])

    def active(self) -> list[int]:
        """Plan indices submitted and neither done nor cancelled."""
        return sorted(self.doc.in_flight)

    def submit(self, i: int, state: Submission, now: float) -> None:
        self.states[i] = PState.IN_FLIGHT
        self.doc.in_flight[i] = InFlight(state=state, at=now)

    def count_submission(self, i: int) -> None:
        self.doc.counters.submissions += 1
        if self.submits[i] == 1:
            self.doc.counters.resubmitted += 1
        self.submits[i] = min(self.submits[i] + 1, 255)

    def forget(self, i: int, *, refused: bool = False) -> None:
        """A submission that did not take effect, pending again and not counted as submitted: a recorded
        intent of which Kafka shows no trace (a crash before the request, or a request whose outcome was
        unknown), or (``refused``) one Kafka answered with an error for."""
        self.states[i] = PState.PENDING
        self.doc.in_flight.pop(i, None)
        self.doc.copied.pop(i, None)
        if self.submits[i] > 0:
            self.submits[i] -= 1
            self.doc.counters.submissions -= 1
            if refused:
                self.doc.counters.refused += 1
            else:
                self.doc.counters.unsent += 1

    def adopt(self, old: Execution, reason: str) -> int:
        """Take over the moves ``old`` has in flight, its plan superseded by this one (which holds each of
        their targets unchanged): they stay in flight here, counted as submitted once (a second submission
        would count as ``resubmitted``), with ``old``'s baseline of them; the throttles ``old`` owns become
        this execution's (restored when it ends), and so do its disk holds. ``old``'s record is replaced by
        this one in one save, so nothing is reverted and nothing is sent twice. A move in flight that the
        new plan gives another target (a stranded one, toward a dead broker: execution/supersede.py) is not
        adopted: its partition is pending here and listed in ``retarget``: the executor reverts the old
        reassignment, then moves it to its new target. Returns how many moves were adopted."""
        now = time.time()
        retarget: list[int] = []
        for i in old.active():
            t = old.plan.targets[i]
            j = self.plan.index.get(t.key)
            if j is None:
                raise PlacementError(f"the new plan does not keep the move in flight of {t.name}")
            if self.plan.targets[j] != t:
                retarget.append(j)
                continue
            o = old.plan.original(i)
            self.doc.adopted[j] = AdoptedDoc(
                replicas=list(o.replicas), log_dirs=list(o.log_dirs), size=o.size
            )
            self.states[j] = PState.IN_FLIGHT
            self.doc.in_flight[j] = InFlight(state=Submission.CONFIRMED, at=old.doc.in_flight[i].at)
            self.submits[j] = max(old.submits[i], 1)
            if i in old.doc.copied:
                self.doc.copied[j] = old.doc.copied[i]
        self.doc.throttles = old.doc.throttles
        self.doc.disk = old.doc.disk.model_copy(deep=True)  # its holds, released by this one's disk watch
        history = [*old.doc.superseded, *self.doc.superseded]
        c = old.doc.counters
        history.append(
            SupersededDoc(
                plan_id=old.doc.plan_id,
                execution_id=old.doc.execution_id,
                partitions=old.doc.partitions,
                done=old.doc.done_count,
                submissions=c.submissions,
                resubmitted=c.resubmitted,
                adopted=len(self.doc.adopted),
                retargeted=len(retarget),
                at=now,
                reason=reason[:500],
            )
        )
        self.doc.superseded = history[-20:]
        self.doc.retarget = sorted(retarget)
        return len(self.doc.adopted)

    def finish(self, i: int, state: PState = PState.DONE) -> None:
        if self.states[i] == PState.DONE:
            return
        self.states[i] = state
        self.doc.in_flight.pop(i, None)
        self.doc.copied.pop(i, None)
        if state == PState.DONE:
            self.doc.done_count += 1
            self.doc.done_bytes += self.plan.move_bytes[i]

    def reopen(self, i: int) -> None:
        """A partition counted done that the live cluster shows elsewhere: pending again."""
        if self.states[i] == PState.DONE:
            self.doc.done_count -= 1
            self.doc.done_bytes -= self.plan.move_bytes[i]
        self.states[i] = PState.PENDING

    def pending(self, limit: int) -> Iterator[int]:
        """Up to ``limit`` pending plan indices in execution order."""
        found = 0
        for i in self.plan.order:
            if self.states[i] == PState.PENDING:
                yield i
                found += 1
                if found >= limit:
                    return

    @property
    def all_done(self) -> bool:
        return self.doc.done_count >= self.doc.partitions


def encode_baseline(baseline: Sequence[Original], dir_usage: Mapping[tuple[int, str], float]) -> bytes:
    rows = [
        [list(o.replicas), list(o.log_dirs), o.size, *([o.in_sync, o.min_isr] if o.in_sync >= 0 else [])]
        for o in baseline
    ]
    usage = [[b, d, round(u, 4)] for (b, d), u in sorted(dir_usage.items())]
    return json.dumps({"version": 1, "partitions": rows, "dirUsage": usage}, separators=(",", ":")).encode()


def decode_baseline(data: bytes, n: int, where: str) -> tuple[list[Original], dict[tuple[int, str], float]]:
    """The baseline blob: per plan index the original replicas, dirs and size (and, since they were added,
    the replicas in sync and the min ISR); dir usage (fraction)."""
    try:
        doc = json.loads(data)
        out = [
            Original(
                tuple(int(b) for b in r),
                tuple(None if d is None else str(d) for d in ds),
                int(size),
                *(int(x) for x in health),  # in sync, min ISR: absent in records written before them
            )
            for r, ds, size, *health in doc["partitions"]
        ]
        if any(not -1 <= o.in_sync <= len(o.replicas) or o.min_isr < 0 for o in out):
            raise ValueError("in-sync counts out of range")
        usage = {(int(b), str(d)): float(u) for b, d, u in doc.get("dirUsage", [])}
    except (ValueError, KeyError, TypeError, RecursionError) as e:
        raise BadInputError(f"malformed baseline: {str(e)[:200]}", where) from None
    if len(out) != n or any(len(o.replicas) != len(o.log_dirs) for o in out):
        raise BadInputError(f"the baseline does not match the plan ({len(out)} entries, {n} expected)", where)
    return out, usage
