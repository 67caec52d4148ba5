"""Self-healing's decision: which heals to create, and what the status and the SelfHealing condition say.

``decide_healing`` is a pure function of plain values: the KafkaCluster's ``spec.selfHealing``, the
failures its status already tracks (``HealingState``: "since when" survives restarts and leader
changes), what this reconcile saw of Kafka (``Seen``), the heal objects that exist (``Heal``) and the
time ``now`` (epoch seconds, passed in: no clock is read here). The reconcile shell (reconciler.py) reads
those facts, calls it, creates the heals through the KubeGateway and posts the Events; everything here
is unit-tested from plain values (tests/unit/reconcile/test_healing.py).

Rules (docs/operations.md, "Self-healing"): a broker the cluster names (a replica or its registration)
not alive for ``brokerFailure.afterSeconds`` gets a BrokerDecommission; an offline dir of a live broker for
``logDirFailure.afterSeconds`` a LogDirCordon with ``drain: true``. Alive is the cluster's word
(kafka/liveness.py): a broker alive in the cluster that does not answer the operator is *unreachable*
(``status.unreachableBrokers``, the BrokersReachable condition), never dead, never healed. A dead broker
that is back is healthy again only once it has stayed alive ``brokerFailure.settleSeconds``
(``track_brokers``: ``backSince`` in its entry); dying again before that keeps its first ``since``, so a
flapping broker is healed. A failure that ends before its heal starts nothing (its entry goes); one that
ends while its heal runs leaves the heal running, and an Event says so.
More brokers dead or being healed at once than ``maxConcurrentBrokerHeals`` is a correlated failure: no
broker heal is created, the condition and a Warning Event say why. A deleted heal is a cancelled one:
its failure keeps the heal's name and gets no other. Partitions every replica of which is lost (data
gone) are named in the status and the condition: no heal restores them.

Where the facts come from, without a Kafka snapshot more often than the reconcile already takes one:
``seen_in_snapshot`` (a full reconcile's snapshot: brokers named by replicas, ``Broker.alive``, dirs'
``online``, and the lost partitions), or ``seen_live`` (a reconcile driving an execution, which reads
DescribeCluster and the live brokers' dirs anyway: the brokers the status last listed or tracked stand
for the brokers the cluster names, ``named_in``; lost partitions are then left as the status has them).
Such a reconcile that finds a listed broker newly not alive, or not answering (``lost_now``), reads the
cluster whole in the same reconcile.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from ..model.cluster_spec import InvalidPart
from ..model.crd_parts import COMPLETED, FAILED, GROUP, PLURALS, VERSION
from ..model.errors import BadInputError
from ..model.intent_status import IntentStatus
from ..model.intents import BrokerDecommission, LogDirCordon, parse_resource
from ..model.self_healing import (
    DEFAULT_SETTLE_S,
    MAX_LOST_SHOWN,
    RETIRE,
    DeadBroker,
    HealingState,
    OfflineLogDir,
    SelfHealingSpec,
    UnreachableBroker,
    format_time,
    parse_time,
)
from ..model.snapshot import ClusterSnapshot
from ..planning import waiting
from ..planning.waiting import NO_IN_SYNC_REPLICA

CREATED_BY = "kafkaplacement.io/created-by"
SELF_HEALING = "self-healing"
FAILURE = "kafkaplacement.io/failure"
FAILED_AT = "kafkaplacement.io/failed-at"  # when the failure was first seen (RFC 3339): the heal's start
HEAL_BROKERS = "kafkaplacement.io/heal-brokers"  # a decommission heal's spec.brokers at creation (JSON)
DECOMMISSION, CORDON = "BrokerDecommission", "LogDirCordon"
SHOWN = 10  # failures named in one condition message

Target = int | tuple[int, str]  # a broker, or (broker, log dir path)
Lost = tuple[int, tuple[str, ...]]  # how many partitions are lost, and the first names
E = TypeVar("E", DeadBroker, OfflineLogDir)


# ---- the facts ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """What this reconcile saw of Kafka."""

    named: frozenset[int]  # brokers the cluster names (replicas, registration; or the status' last list)
    live: frozenset[int]  # brokers alive now: in the cluster's word (registered, not fenced)
    dirs_read: frozenset[int]  # brokers whose log dirs were read (a live one not among them: unreachable)
    offline: frozenset[tuple[int, str]]  # (broker, path) of the offline dirs among those
    full: bool = False  # from a full snapshot: a broker no replica names holds nothing
    lost: Mapping[Target, Lost] | None = None  # per failure; None: not known in this reconcile
    # per dead broker: its partitions with no in-sync replica left (planning/waiting.py); None: not known
    no_isr: Mapping[int, Lost] | None = None


def seen_in_snapshot(snap: ClusterSnapshot) -> Seen:
    """The facts of a full snapshot (lost partitions: every replica on a dead broker or offline dir)."""
    live = frozenset(b.id for b in snap.brokers if b.alive)
    read = live - set(snap.unreachable)
    offline = frozenset(
        (b.id, d.path) for b in snap.brokers if b.id in read for d in b.log_dirs if not d.online
    )
    names: dict[Target, list[str]] = {}
    counts: dict[Target, int] = {}
    dead = frozenset(b.id for b in snap.brokers if not b.alive)
    stuck_names: dict[int, list[str]] = {}
    stuck_counts: dict[int, int] = {}
    for p in snap.partitions:
        where: list[Target] = []
        for b, d in zip(p.replicas, p.log_dirs, strict=True):
            if b not in live:
                where.append(b)
            elif d is not None and (b, d) in offline:
                where.append((b, d))
        if len(where) < len(p.replicas):  # a replica is on a live broker and dir: the data is there...
            if dead and waiting.no_in_sync_replica(dead, p.replicas, p.leader, p.isr):
                behind = ",".join(str(b) for b in p.replicas if b not in dead)  # ... out of sync
                for b in p.replicas:
                    if b in dead:
                        stuck_counts[b] = stuck_counts.get(b, 0) + 1
                        if len(stuck_names.setdefault(b, [])) < MAX_LOST_SHOWN:
                            stuck_names[b].append(f"{p.name} (out of sync: {behind})")
            continue
        for t in where:
            counts[t] = counts.get(t, 0) + 1
            if len(names.setdefault(t, [])) < MAX_LOST_SHOWN:
                names[t].append(p.name)
    lost = {t: (n, tuple(names[t])) for t, n in counts.items()}
    no_isr = {b: (n, tuple(stuck_names[b])) for b, n in stuck_counts.items()}
    return Seen(frozenset(snap.broker_ids), live, read, offline, full=True, lost=lost, no_isr=no_isr)


def seen_live(
    named: Iterable[int], live: Iterable[int], dirs: Mapping[int, Iterable[tuple[str, bool]]]
) -> Seen:
    """The facts of a reconcile without a snapshot: DescribeCluster's live ids, the dirs of the live
    brokers that answered ((path, online) each) and the brokers the status last listed."""
    return Seen(
        frozenset(named),
        frozenset(live),
        frozenset(dirs),
        frozenset((b, path) for b, ds in dirs.items() for path, online in ds if not online),
    )


def _ids(entries: object) -> set[int]:
    return {
        e["id"]
        for e in (entries if isinstance(entries, list) else ())
        if isinstance(e, Mapping) and type(e.get("id")) is int
    }


def named_in(status: Mapping[str, Any]) -> set[int]:
    """The brokers a KafkaCluster status names, for a reconcile without a snapshot: those it lists and
    those it tracks as dead or unreachable (a light reconcile lists only the brokers whose dirs it read)."""
    return (
        _ids(status.get("brokers")) | _ids(status.get("deadBrokers")) | _ids(status.get("unreachableBrokers"))
    )


def lost_now(status: Mapping[str, Any], live: Iterable[int], read: Collection[int]) -> frozenset[int]:
    """The brokers the status lists, not yet tracked as dead or unreachable, that are now not alive in the
    cluster or did not answer the operator (``read``: the brokers whose dirs were read). A reconcile driving
    an execution that finds one reads the cluster whole at once, so that the failure is tracked (and its
    heal can supersede the execution) without waiting for the execution to end."""
    tracked = _ids(status.get("deadBrokers")) | _ids(status.get("unreachableBrokers"))
    alive = set(live)
    return frozenset(b for b in _ids(status.get("brokers")) - tracked if b not in alive or b not in read)


@dataclass(frozen=True)
class Tracked:
    """``track_brokers``' answer: the broker failures and unreachable brokers to keep in the status."""

    dead: tuple[DeadBroker, ...]  # dead now, or back and not settled yet (``back_since`` set)
    unreachable: tuple[UnreachableBroker, ...]  # alive in the cluster, not answering the operator
    ended: tuple[DeadBroker, ...] = ()  # failures that ended now: back and alive for settleSeconds
    wake_at: float | None = None  # when the next back broker settles (epoch seconds)
    reachable: frozenset[int] = frozenset()  # the live brokers that answered

    @property
    def all_unreachable(self) -> bool:
        """Brokers are alive in the cluster and none answers the operator."""
        return bool(self.unreachable) and not self.reachable


def track_brokers(previous: HealingState, seen: Seen, now: float, settle_s: float) -> Tracked:
    """The broker failures a reconcile keeps, a pure function of the failures tracked so far, what the
    cluster says now and the time (no clock is read here):

    - a broker the cluster names that is not alive in the cluster is dead: tracked from when it was first
      seen so (``since``); with a full snapshot, a broker no replica names any more is not tracked, unless
      a heal was made for it: a healed broker stays tracked (its heal Completed emptied it) until it is
      back for ``settle_s``, so that its return settles before the heal is retired (retiring.py);
    - a dead broker seen alive again is *back* (``back_since``: when first seen back): its failure ends
      once it has stayed alive ``settle_s``; one that dies again before keeps its first ``since`` (and its
      heal), so a flapping broker is healed ``afterSeconds`` after its first death, not reset forever;
    - a broker alive in the cluster whose dirs were not read did not answer the operator: *unreachable*
      (since when it was first seen so), never dead; a dead one that comes back unreachable is back all
      the same (the cluster says it is alive).
    """
    stamp = format_time(now)
    reachable = frozenset(seen.live & seen.dirs_read)
    dead: list[DeadBroker] = []
    ended: list[DeadBroker] = []
    wake: list[float] = []
    old_dead = {d.id: d for d in previous.dead_brokers}
    for b in sorted(seen.named | old_dead.keys()):
        old = old_dead.get(b)
        if b in seen.live:
            if old is None:
                continue
            back = old.back_since or stamp
            settles = parse_time(back, "backSince") + settle_s
            if now >= settles:
                ended.append(old)
                continue
            dead.append(replace(old, back_since=back))
            wake.append(settles)
            continue
        if seen.full and b not in seen.named and (old is None or old.heal is None):
            continue  # no replica names it and no heal was made for it: nothing left to heal
        entry = old or DeadBroker(b, stamp)
        dead.append(replace(entry, back_since=None) if entry.back_since is not None else entry)
    old_unreachable = {u.id: u for u in previous.unreachable_brokers}
    unreachable = tuple(
        old_unreachable.get(b) or UnreachableBroker(b, stamp) for b in sorted(seen.live - seen.dirs_read)
    )
    return Tracked(tuple(dead), unreachable, tuple(ended), min(wake) if wake else None, reachable)


def reachable_condition(tracked: Tracked, live: frozenset[int]) -> tuple[bool, str, str]:
    """(status, reason, message) of the KafkaCluster's BrokersReachable condition."""
    if not tracked.unreachable:
        return True, "AllBrokersReachable", "every broker alive in the cluster answers the operator"
    if tracked.all_unreachable:
        return (
            False,
            "ClusterUnreachable",
            f"no broker alive in the cluster ({', '.join(map(str, sorted(live)))}) answers the operator: "
            "none is taken for dead, nothing is healed and no plan is made until they answer",
        )
    shown = ", ".join(f"{u.id} (since {u.since})" for u in tracked.unreachable[:SHOWN])
    more = f" and {len(tracked.unreachable) - SHOWN} more" if len(tracked.unreachable) > SHOWN else ""
    return (
        False,
        "BrokersUnreachable",
        f"broker(s) {shown}{more} alive in the cluster do not answer the operator: not dead (no heal, "
        "their replicas are not lost); no plan is made until they answer",
    )


@dataclass(frozen=True)
class Heal:
    """A heal object that exists (labelled ``created-by: self-healing``, not being deleted)."""

    body: Mapping[str, Any]
    kind: str
    name: str
    target: Target
    phase: str | None
    relief: bool = False  # a disk-pressure heal (a LogDirCordon with relieveBelowShare: pressure.py)


def heals_of(bodies: Iterable[Mapping[str, Any]]) -> list[Heal]:
    """The self-healing heals among the cluster's intent resources."""
    out: list[Heal] = []
    for b in bodies:
        meta = b.get("metadata") or {}
        if (meta.get("labels") or {}).get(CREATED_BY) != SELF_HEALING or meta.get("deletionTimestamp"):
            continue
        try:
            intent = parse_resource(b)
        except BadInputError:
            continue  # a heal edited into an invalid one heals nothing (its status says why)
        target: Target | None = None
        if isinstance(intent, BrokerDecommission) and len(intent.brokers) == 1:
            target = intent.brokers[0]
        elif isinstance(intent, LogDirCordon) and len(intent.log_dirs) == 1:
            target = (intent.broker, intent.log_dirs[0])
        if target is not None:
            phase = IntentStatus.of(b).phase
            relief = isinstance(intent, LogDirCordon) and intent.relieve_below_share is not None
            out.append(Heal(b, str(b["kind"]), intent.name, target, phase, relief))
    return out


# ---- the outcome --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NewHeal:
    """A heal object to create (``body`` is its manifest) and the Event that says why."""

    kind: str
    name: str
    body: Mapping[str, Any]
    message: str

    @property
    def plural(self) -> str:
        return PLURALS[self.kind]


@dataclass(frozen=True)
class HealNote:
    """An Event on the heal object ``on`` (None: on the KafkaCluster)."""

    on: Mapping[str, Any] | None
    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class HealingOutcome:
    state: HealingState  # status.deadBrokers / offlineLogDirs / unreachableBrokers, the creates' heals named
    creates: tuple[NewHeal, ...] = ()
    notes: tuple[HealNote, ...] = ()
    condition: tuple[bool, str, str] | None = None  # the SelfHealing condition (None: not configured)
    wake_at: float | None = None  # when the next tracked failure becomes due, or settles (epoch seconds)
    reachable: tuple[bool, str, str] | None = None  # the BrokersReachable condition (None: not decided)
    ended: tuple[DeadBroker, ...] = ()  # broker failures that ended now (back for settleSeconds)
    live: frozenset[int] = frozenset()  # brokers alive in the cluster (empty: not known, nothing retired)

    def not_created(self, names: Iterable[str]) -> HealingOutcome:
        """The outcome with the heals ``names`` left uncreated (their failures stay pending)."""
        gone = set(names)
        if not gone:
            return self
        s = self.state
        return replace(
            self,
            state=HealingState(
                tuple(replace(d, heal=None) if d.heal in gone else d for d in s.dead_brokers),
                tuple(replace(d, heal=None) if d.heal in gone else d for d in s.offline_log_dirs),
                s.unreachable_brokers,
            ),
            creates=tuple(c for c in self.creates if c.name not in gone),
        )


# ---- the decision -------------------------------------------------------------------------------------


def decide_healing(
    raw_spec: object,
    owner: Mapping[str, Any],
    previous: HealingState,
    seen: Seen,
    heals: Sequence[Heal],
    now: float,
    previous_condition: Mapping[str, Any] | None = None,
    previous_reachable: Mapping[str, Any] | None = None,
) -> HealingOutcome:
    """The failures to track, the heals to create, the SelfHealing and BrokersReachable conditions
    (module docstring).

    ``raw_spec``: the KafkaCluster's ``spec.selfHealing``, raw or as ``ClusterSpec`` parsed it (None: not
    configured: failures are tracked in the status, nothing is healed, no SelfHealing condition);
    ``owner``: the KafkaCluster; ``previous_condition`` / ``previous_reachable``: the two conditions as
    the KafkaCluster has them (a Warning Event is posted when one turns False with a new message)."""
    spec = raw_spec if isinstance(raw_spec, SelfHealingSpec) else None
    invalid = raw_spec.message if isinstance(raw_spec, InvalidPart) else None
    if raw_spec is not None and spec is None and invalid is None:
        try:
            spec = SelfHealingSpec.parse(raw_spec)
        except BadInputError as e:
            invalid = e.message
    if not seen.live:  # nothing answered: an unreachable cluster is not a dead broker
        return HealingOutcome(previous)
    settle = spec.broker_failure.settle_seconds if spec is not None else DEFAULT_SETTLE_S
    tracked = track_brokers(previous, seen, now, settle)
    reach = reachable_condition(tracked, seen.live)
    notes: list[HealNote] = _reach_notes(reach, previous_reachable)
    if tracked.all_unreachable:  # no broker answers us: nothing is known of failures, nothing is healed
        kept = None
        if raw_spec is not None and previous_condition is not None:
            kept = (
                previous_condition.get("status") == "True",
                str(previous_condition.get("reason") or "Unknown"),
                str(previous_condition.get("message") or ""),
            )
        state = replace(previous, unreachable_brokers=tracked.unreachable)
        return HealingOutcome(state, notes=tuple(notes), condition=kept, reachable=reach)
    heals = [h for h in heals if not h.relief]  # disk pressure's own (pressure.py)
    by_target = {h.target: h for h in heals}
    stamp = format_time(now)

    retire = spec is not None and spec.broker_failure.on_return == RETIRE
    for gone in tracked.ended:
        what = f"broker {gone.id} is alive again (for {settle} s, settleSeconds)"
        notes += _recovered(what, gone.failure, gone.heal, by_target.get(gone.id), retire)
    dead = [
        _with_no_isr(_with_lost(_adopt(d, by_target.get(d.id)), seen.lost, d.id), seen.no_isr)
        for d in tracked.dead
    ]

    dirs: list[OfflineLogDir] = []
    old_dirs = {(d.broker, d.path): d for d in previous.offline_log_dirs}
    for key in sorted(seen.offline | old_dirs.keys()):
        b, path = key
        old_dir = old_dirs.get(key)
        if b not in seen.dirs_read:
            if old_dir is not None:
                dirs.append(old_dir)  # its broker is not alive: the dir's state is unknown, kept
            continue
        if key not in seen.offline:
            if old_dir is not None:
                msg = f"log dir {path} of broker {b} is online again"
                notes += _recovered(msg, old_dir.failure, old_dir.heal, by_target.get(key), False)
            continue
        dir_entry = _adopt(old_dir or OfflineLogDir(b, path, stamp), by_target.get(key))
        dirs.append(_with_lost(dir_entry, seen.lost, key))

    if spec is None:
        state = HealingState(tuple(dead), tuple(dirs), tracked.unreachable)
        base = HealingOutcome(
            state, wake_at=tracked.wake_at, reachable=reach, ended=tracked.ended, live=seen.live
        )
        if invalid is None:
            return replace(base, notes=tuple(notes))
        condition = (False, "InvalidSpec", f"spec.selfHealing: {invalid}")
        return replace(base, notes=tuple(notes + _warn(condition, previous_condition)), condition=condition)

    creates: list[NewHeal] = []
    wake: list[float] = [] if tracked.wake_at is None else [tracked.wake_at]
    rule = spec.broker_failure
    pending = [d for d in dead if d.heal is None and d.back_since is None]  # a back broker: alive now
    # a heal that Failed (its plan refused, say) is not running: it would count against every later
    # failure for good (it is planned again at every resync, and its failure stays tracked meanwhile)
    running = {h.target for h in heals if h.kind == DECOMMISSION and h.phase not in (COMPLETED, FAILED)}
    busy = sorted({d.id for d in pending} | {t for t in running if isinstance(t, int)})
    correlated = rule.enabled and len(busy) > spec.max_concurrent_broker_heals
    if rule.enabled and not correlated:
        for i, d in enumerate(dead):
            if d.heal is None and d.back_since is None:  # healed only while dead (a flap: its first since)
                due = parse_time(d.since, "since") + rule.after_seconds
                if now >= due:
                    new = _decommission(spec, owner, d, rule.after_seconds)
                    creates.append(new)
                    dead[i] = replace(d, heal=new.name)
                else:
                    wake.append(due)
    if spec.log_dir_failure.enabled:
        after = spec.log_dir_failure.after_seconds
        for i, o in enumerate(dirs):
            if o.heal is None and o.broker in seen.live:
                due = parse_time(o.since, "since") + after
                if now >= due:
                    new = _cordon(spec, owner, o, after)
                    creates.append(new)
                    dirs[i] = replace(o, heal=new.name)
                else:
                    wake.append(due)
    state = HealingState(tuple(dead), tuple(dirs), tracked.unreachable)
    made = {c.name for c in creates}  # heals created now exist too (not "deleted: cancelled")
    present = set(by_target) | {d.id for d in dead if d.heal in made}
    present |= {(o.broker, o.path) for o in dirs if o.heal in made}
    condition = _condition(spec, state, present, busy if correlated else None)
    notes += _warn(condition, previous_condition)
    return HealingOutcome(
        state,
        tuple(creates),
        tuple(notes),
        condition,
        min(wake) if wake else None,
        reach,
        ended=tracked.ended,
        live=seen.live,
    )


def _reach_notes(reach: tuple[bool, str, str], previous: Mapping[str, Any] | None) -> list[HealNote]:
    """A Warning Event when BrokersReachable turns False or changes its message; a Normal one when every
    broker answers again."""
    if not reach[0]:
        return _warn(reach, previous)
    if previous is not None and previous.get("status") == "False":
        return [HealNote(None, "Normal", reach[1], reach[2])]
    return []


def _warn(condition: tuple[bool, str, str], previous: Mapping[str, Any] | None) -> list[HealNote]:
    """A Warning Event when the condition is False with another reason or message than before."""
    old = previous or {}
    if condition[0] or (old.get("reason"), old.get("message")) == condition[1:]:
        return []
    return [HealNote(None, "Warning", condition[1], condition[2])]


def _adopt(entry: E, heal: Heal | None) -> E:
    """A tracked failure with no heal recorded takes the name of an existing heal of the same target
    (created by a reconcile whose status write was lost)."""
    return replace(entry, heal=heal.name) if entry.heal is None and heal is not None else entry


def _with_lost(entry: E, lost: Mapping[Target, Lost] | None, target: Target) -> E:
    if lost is None:
        return entry  # not known in this reconcile: the status' last word stands
    count, names = lost.get(target, (0, ()))
    return replace(entry, lost_count=count, lost_partitions=names)


def _recovered(
    what: str, failure: str, heal_name: str | None, heal: Heal | None, retire: bool = False
) -> list[HealNote]:
    """The Events of a failure that ended. A broker's heal is retired with ``retire`` (onReturn: Retire,
    retiring.py says when and posts HealRetired); otherwise a running heal goes on, a completed one keeps
    its cordon. A dir's heal (``retire`` is False for it) stays."""
    if heal_name is None:
        return [HealNote(None, "Normal", "FailureEnded", f"{what} ({failure}): no heal was started")]
    if heal is None:
        msg = f"{what} ({failure}); its heal {heal_name} was deleted"
        return [HealNote(None, "Normal", "FailureEnded", msg)]
    if retire:
        msg = (
            f"{what} ({failure}); its heal {heal.kind} {heal.name} is retired (onReturn: Retire): deleted, "
            "lifting its cordon, once no execution runs it (not if its spec.brokers was edited)"
        )
    elif heal.phase == COMPLETED:
        msg = (
            f"{what} ({failure}); {heal.kind} {heal.name} completed and keeps its replicas off it while it "
            "exists: delete it to let the placement use it again"
        )
    else:
        msg = f"{what} ({failure}); the heal {heal.kind} {heal.name} goes on: delete it to cancel"
    return [HealNote(None, "Normal", "FailureEnded", msg), HealNote(heal.body, "Normal", "FailureEnded", msg)]


def healed_in(body: Mapping[str, Any], old_phase: str | None, new_phase: str, now: float) -> float | None:
    """Seconds from the failure to the end of its heal, when this status write completes a heal (an intent
    self-healing created, Completed now and not before); None otherwise or when its time is unreadable."""
    meta = body.get("metadata") or {}
    if (meta.get("labels") or {}).get(CREATED_BY) != SELF_HEALING:
        return None
    if new_phase != COMPLETED or old_phase == COMPLETED:
        return None
    try:
        return max(0.0, now - parse_time(str((meta.get("annotations") or {}).get(FAILED_AT)), FAILED_AT))
    except BadInputError:
        return None  # a heal made before the annotation existed, or one a user edited


def heal_name(cluster: str, what: str, since: str) -> str:
    """A DNS-1123 name unique per failure: ``<cluster>-heal-<what>-<since as 20261127t120000z>``."""
    when = "".join(ch for ch in since.lower() if ch.isalnum())
    return f"{cluster[:180].rstrip('-.')}-heal-{what}-{when}"


def heal_manifest(
    kind: str, owner: Mapping[str, Any], name: str, spec: Mapping[str, Any], failure: str, since: str
) -> dict[str, Any]:
    meta = owner["metadata"]
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "labels": {
                CREATED_BY: SELF_HEALING,
                "kafkaplacement.io/cluster": meta["name"][:63].rstrip("-._"),
            },
            "annotations": {FAILURE: failure, FAILED_AT: since},
            "ownerReferences": [
                {
                    "apiVersion": f"{GROUP}/{VERSION}",
                    "kind": "KafkaCluster",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": False,
                }
            ],
        },
        "spec": {"clusterRef": {"name": meta["name"]}, **spec},
    }


def _with_no_isr(entry: DeadBroker, no_isr: Mapping[int, Lost] | None) -> DeadBroker:
    if no_isr is None:
        return entry  # not known in this reconcile: the status' last word stands
    count, names = no_isr.get(entry.id, (0, ()))
    return replace(entry, no_in_sync_count=count or None, no_in_sync=names)


def _no_isr_text(entry: DeadBroker) -> str:
    if not entry.no_in_sync_count:
        return ""
    more = entry.no_in_sync_count - len(entry.no_in_sync)  # (not None: checked above)
    return (
        f"; {entry.no_in_sync_count} partitions have no in-sync replica left (no leader: nothing to copy "
        "from until one is elected; the heal does the rest and picks them up once they have a leader): "
        + ", ".join(entry.no_in_sync)
        + (f" and {more} more" if more > 0 else "")
    )


def _lost_text(entry: DeadBroker | OfflineLogDir) -> str:
    if not entry.lost_count:
        return ""
    more = (
        f" and {entry.lost_count - len(entry.lost_partitions)} more"
        if entry.lost_count > len(entry.lost_partitions)
        else ""
    )
    return (
        f"; {entry.lost_count} partitions had every replica there (data lost, not healed): "
        + ", ".join(entry.lost_partitions)
        + more
    )


def _decommission(spec: SelfHealingSpec, owner: Mapping[str, Any], d: DeadBroker, after: int) -> NewHeal:
    name = heal_name(owner["metadata"]["name"], f"broker-{d.id}", d.since)
    body = heal_manifest(
        DECOMMISSION, owner, name, {"brokers": [d.id], "approval": spec.approval}, d.failure, d.since
    )
    body["metadata"]["annotations"][HEAL_BROKERS] = json.dumps([d.id])  # what retiring.py compares with
    msg = (
        f"{d.failure} ({after} s or more): created {DECOMMISSION} {name} (approval {spec.approval}); "
        f"delete it to cancel{_lost_text(d)}"
    )
    return NewHeal(DECOMMISSION, name, body, msg)


def _cordon(spec: SelfHealingSpec, owner: Mapping[str, Any], o: OfflineLogDir, after: int) -> NewHeal:
    digest = hashlib.sha256(o.path.encode()).hexdigest()[:8]
    name = heal_name(owner["metadata"]["name"], f"dir-{o.broker}-{digest}", o.since)
    fields = {"broker": o.broker, "logDirs": [o.path], "drain": True, "approval": spec.approval}
    body = heal_manifest(CORDON, owner, name, fields, o.failure, o.since)
    msg = (
        f"{o.failure} ({after} s or more): created {CORDON} {name} (drain, approval {spec.approval}); "
        f"delete it to cancel{_lost_text(o)}"
    )
    return NewHeal(CORDON, name, body, msg)


def _condition(
    spec: SelfHealingSpec,
    state: HealingState,
    heals: Collection[Target],
    correlated: Sequence[int] | None,
) -> tuple[bool, str, str]:
    """(status, reason, message) of the SelfHealing condition; the message changes only with the facts."""
    entries: list[DeadBroker | OfflineLogDir] = [*state.dead_brokers, *state.offline_log_dirs]
    rules = {DeadBroker: spec.broker_failure, OfflineLogDir: spec.log_dir_failure}
    lines: list[str] = []
    for e in entries[:SHOWN]:
        rule = rules[type(e)]
        back = ""
        if isinstance(e, DeadBroker) and e.back_since is not None:
            back = (
                f" (back since {e.back_since}: the failure ends once it stays alive "
                f"{spec.broker_failure.settle_seconds} s)"
            )
        if e.heal is not None:
            target: Target = e.id if isinstance(e, DeadBroker) else (e.broker, e.path)
            gone = "" if target in heals else " (deleted: cancelled)"
            lines.append(f"{e.failure}: heal {e.heal}{gone}{back}")
        elif not rule.enabled:
            lines.append(f"{e.failure}: not healed (disabled){back}")
        else:
            lines.append(f"{e.failure}: healed after {rule.after_seconds} s{back}")
    if len(entries) > SHOWN:
        lines.append(f"and {len(entries) - SHOWN} more failures")
    lost = [e for e in entries if e.lost_count]
    lost_line = "; ".join(f"{e.failure}{_lost_text(e)}" for e in lost[:SHOWN])
    stuck = [e for e in state.dead_brokers if e.no_in_sync_count]
    stuck_line = "; ".join(f"{e.failure}{_no_isr_text(e)}" for e in stuck[:SHOWN])
    tail = ("; ".join(lines) + ".") if lines else ""
    if correlated is not None:
        limit = spec.max_concurrent_broker_heals
        return (
            False,
            "CorrelatedFailure",
            f"{len(correlated)} brokers are not alive or being healed at once ({correlated}), more "
            f"than maxConcurrentBrokerHeals {limit}: no broker heal is created until at most {limit} "
            f"remain. {tail}",
        )
    if lost:
        also = f"; {stuck_line}" if stuck else ""
        return False, "DataLost", f"{lost_line}{also}. {tail}"
    if stuck:
        return (
            False,
            NO_IN_SYNC_REPLICA,
            f"{stuck_line}. The operator never elects an unclean leader (it may lose acknowledged records): "
            f"see docs/operations.md, 'No in-sync replica'. {tail}",
        )
    if any(e.heal is not None for e in entries):
        return True, "Healing", tail
    if entries:
        return True, "FailureSeen", tail
    return True, "NoFailure", "every broker the cluster names is alive and every log dir online"


__all__ = [
    "CREATED_BY",
    "FAILED_AT",
    "FAILURE",
    "HEAL_BROKERS",
    "SELF_HEALING",
    "Heal",
    "HealNote",
    "HealingOutcome",
    "NewHeal",
    "Seen",
    "Tracked",
    "decide_healing",
    "heal_manifest",
    "heal_name",
    "heals_of",
    "lost_now",
    "named_in",
    "reachable_condition",
    "seen_in_snapshot",
    "seen_live",
    "track_brokers",
]
