"""The execution record (version 2): its plan, its blobs and its progress document, kept in a store.

A record is bound to its cluster (``clusterId``) and plan (``planId``) and has two parts kept in a
``Store`` (execution/store.py):

- immutable blobs: the plan (``plan-<planId>``, content-addressed: the same plan is stored once) and the
  execution's baseline (``baseline-<executionId>``: every plan partition's replicas, dirs and size when
  the execution was validated). Written once, read once per process (cached), any size;
- the small mutable progress document (``RecordDoc``): phase, partitions in flight, counters, throttles
  we own (``ThrottleState``, model/throttle_state.py: the one model kafka/throttles.py works on), and the
  per-partition state packed one byte per plan partition (zlib + base64), so what a save writes follows
  the work in flight, not the plan's size.

The schema (the progress document's models, the phases and their ``TRANSITIONS`` table, ``next_phase``
the only way a phase changes) is execution/record_doc.py's. ``Execution.load`` reads version 2 and
refuses anything else with a ``BadInputError`` naming the store and the field (a record of another
version: its version).
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import secrets
import time
import zlib
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ..model.errors import BadInputError, PlacementError
from ..model.plan import ANY_DIR, PartitionTarget, Plan
from .record_doc import (
    TERMINAL,
    AdoptedDoc,
    Blobs,
    Event,
    InFlight,
    Limits,
    Phase,
    PState,
    RecordDoc,
    Rule,
    Submission,
    SupersededDoc,
    next_phase,
)
from .store import Store

RECORD_KIND = "KafkaPlacementExecution"
RECORD_VERSION = 2
MAX_SAMPLES = 30
MAX_ERROR_CHARS = 2000


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
    ``Execution.create`` stores and the operator's plan review names before approval. Its bytes are the
    plan's canonical JSON, whose SHA-256 the id is: written entry by entry in Python (``Plan.canonical``),
    4x faster than ``json.dumps`` at 333k entries, and never one C call holding the interpreter for
    seconds while other clusters' reconciles wait (docs/benchmarks.md, the operator's path at 1M)."""
    return plan_blob_name(plan.plan_id), plan.canonical().encode()


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
        ruled = [(set(r.brokers), r) for r in rules]
        for i, (t, o) in enumerate(zip(self.targets, self.baseline, strict=True)):
            before = set(o.replicas)
            after = set(t.replicas)
            adding = tuple(b for b in t.replicas if b not in before)
            removing = tuple(b for b in o.replicas if b not in after)
            moving: tuple[int, ...] = ()
            if any(d != ANY_DIR for d in t.log_dirs):  # (most targets name no dir: skipped at once)
                old_dirs = dict(zip(o.replicas, o.log_dirs, strict=True))
                moving = tuple(
                    b
                    for b, d in zip(t.replicas, t.log_dirs, strict=True)
                    if b in before and d != ANY_DIR and old_dirs.get(b) != d
                )
            self.adding[i], self.removing[i], self.dir_moving[i] = adding, removing, moving
            self.move_bytes[i] = o.size * (len(adding) + len(moving))
            if ruled and removing:
                matching = [r for brokers, r in ruled if not brokers.isdisjoint(removing)]
                self.priority[i] = max((r.priority for r in matching), default=0)
                self.rate[i] = min((r.throttle for r in matching if r.throttle is not None), default=None)
            if usage and (removing or moving):
                freeing[i] = any(
                    usage.get((b, d), 0.0) >= self.FREEING_DIR_USAGE
                    for b, d in zip(o.replicas, o.log_dirs, strict=True)
                    if d is not None and (b in removing or b in moving)
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


GAP_TICKS = 5  # a tick this many usual spacings after the last one: the time between was not run
MIN_GAP_S = 60.0  # ... and never a gap shorter than this


def _usual_spacing(samples: Sequence[tuple[float, float]]) -> float | None:
    """The median time between the samples' ticks (None with fewer than two)."""
    steps = sorted(b[0] - a[0] for a, b in itertools.pairwise(samples))
    return steps[len(steps) // 2] if steps else None


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
        the caller saves it (after any further checks). A plan blob already stored (the operator's plan
        review stores it before approval) is not encoded again: its name is the plan's content address
        (``plan_blob_name``), and what is read back is checked (the blob's sha256 by the store, the plan's
        id and size by ``plan``)."""
        blob = plan_blob_name(plan.plan_id)
        if not store.has_blob(blob):
            store.put_blob(*plan_blob(plan))
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
        """Store the validated baseline (immutable) and index the plan with it. The plan is taken before
        the baseline's name is recorded: once it is, ``plan`` would find no indexed plan with that
        baseline and read both blobs back from the store (the whole plan parsed again)."""
        plan = self.plan.plan
        name = f"baseline-{self.doc.execution_id}"
        self.store.put_blob(name, encode_baseline(baseline, dir_usage))
        self.doc.blobs.baseline = name
        self._plan = ExecutionPlan(plan, baseline, self.doc.rules, dir_usage)
        _CACHE[(self.doc.blobs.plan, name)] = self._plan

    # ---- per-partition state -----------------------------------------------------------------------

    @property
    def phase(self) -> Phase:
        return self.doc.phase

    def move(self, event: Event) -> None:
        self.doc.phase = next_phase(self.doc.phase, event)
        if self.doc.phase not in TERMINAL:
            self.doc.finished_at = None  # a failed execution retried ends again
        elif self.doc.finished_at is None:
            self.doc.finished_at = time.time()

    def account(self, started: float, ended: float, *, waiting: bool) -> None:
        """Count the time the execution could not run (``RecordDoc.waits``), at the end of a tick that
        started at ``started`` and ended at ``ended``: ``waiting`` (a window closed, paused) starts a wait
        at ``started`` unless one runs, not ``waiting`` ends it there. A tick that comes more than
        ``GAP_TICKS`` usual tick spacings (and ``MIN_GAP_S``) after the last one ended, with no wait
        running, counts the gap as waited: nothing drove the execution (``spec.paused``, which ticks
        nothing; no operator leading; Kafka unreachable). The usual spacing is the median of the record's
        samples (one per tick); with fewer than two, no gap is counted."""
        w = self.doc.waits
        if w.since is None and w.ticked is not None:
            gap = started - w.ticked
            usual = _usual_spacing(self.doc.samples)
            if usual is not None and gap > max(MIN_GAP_S, GAP_TICKS * usual):
                w.seconds += gap
        if waiting and w.since is None:
            w.since = started
        elif not waiting and w.since is not None:
            w.seconds += max(started - w.since, 0.0)
            w.since = None
        w.ticked = ended

    def waited(self, until: float) -> float:
        """Seconds the execution could not run until ``until`` (its end): the waits counted, and the one
        still running (a record that ended while waiting, or of a tick that raised)."""
        w = self.doc.waits
        return w.seconds + (max(until - w.since, 0.0) if w.since is not None else 0.0)

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
