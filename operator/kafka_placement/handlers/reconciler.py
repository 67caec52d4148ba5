"""Per-cluster reconciliation, the I/O shell: read what ``decide`` asks for, perform what it decides.

Called periodically for each KafkaCluster (docs/architecture.md, "Reconcile"). The decisions — which
gate holds the intents, what their statuses say, whether to plan, tick or start an execution — are made
by the pure ``decide.decide``; this module only reads (the intent resources, the execution record, Kafka)
and writes (statuses, Events, the record, Kafka) through the two gateways: ``kube.gateway.KubeGateway``
for Kubernetes and the fenced ``kafka.gateway.KafkaGateway`` for Kafka. One reconcile is a loop: view ->
decide -> perform its actions, each action adding one fact to the view, until a decision has none.

An idle cluster costs almost nothing: when no execution is in flight, no planner job runs, and neither
the KafkaCluster's spec nor any intent's spec changed since its last full reconcile (``fingerprint``), the
reconcile reads only the intent resources and the record, and re-reads Kafka and plans again at most every
``resync_s`` seconds (``--resync-seconds``, default 60): placement drift made by someone else is found
within that time.

Every write passes the leader fence (handlers/leader.py): a process that lost the leader Lease raises
``NotLeader`` before writing anything. A record save that loses a race to another writer is retried on
the next reconcile (kopf TemporaryError).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import kopf

from ..execution import executor, supersede
from ..execution.disk import MAX_HELD_CHARS, describe_held, held_dirs
from ..execution.record import TERMINAL, Execution, Phase, plan_blob, plan_blob_name
from ..execution.safety import below_min_isr
from ..execution.store import RecordConflict
from ..kafka import throttle_claims
from ..kafka.connection import ConnectionSettings
from ..kafka.gateway import (
    KafkaAuthenticationError,
    KafkaAuthorizationError,
    KafkaGateway,
    KafkaOperationError,
    KafkaUnavailableError,
)
from ..kube.gateway import KubeConflict, KubeError, KubeGateway
from ..model.cluster_spec import ClusterSpec, is_connection_error
from ..model.crd_parts import GROUP, PLURALS, VERSION
from ..model.errors import BadInputError, PlacementError
from ..model.intents import (
    BrokerDecommission,
    ClusterRef,
    Intents,
    parse_resource,
)
from ..model.plan import Plan
from ..model.self_healing import HealingState, SelfHealingSpec, past_failures, pressured_log_dirs
from ..model.snapshot import ClusterSnapshot
from ..model.spec_fields import spec_of
from ..model.throttle_state import ClaimOwner
from ..model.traffic import PartitionKey
from ..planning.goals.replica_placement import unmet
from ..planning.plan_keeping import KeptPlan, inputs_key, loads_of, tolerance_of
from ..planning.report import Report, build_report
from ..planning.traffic import Traffic, with_traffic
from . import healing, metrics, periods, plan_review, pressure, retiring
from . import new_partitions as lane
from . import status as st
from .cordons import (
    CordonChanges,
    declared_cordons,
    described,
    owned_cordons,
    sync_cordons,
    with_cordons,
)
from .decide import (
    CheckIntents,
    CheckMinIsr,
    Decision,
    Failure,
    PlanIntents,
    Planned,
    RecordView,
    RequestCancel,
    StartExecution,
    StatusPatch,
    SyncCordons,
    Tick,
    View,
    cordon_sync,
    decide,
    parse,
    window_gate,
)
from .fencing import FencedGateway
from .leader import Leadership, NotLeader, Unelected
from .planner import PlanInputs, plan_cluster
from .secret_files import pem_file
from .store import ConfigMapStore

log = logging.getLogger(__name__)

INTENT_KINDS = ("LogDirCordon", "BrokerDecommission", "PlacementPolicy")  # listed in this order
MAX_STEPS = 8  # decide/perform rounds of one reconcile (the longest path takes 4)


@dataclass(frozen=True)
class Settled:
    """The last full idle reconcile of a cluster that settled: until the resync period ends or something
    of ours changes (``fingerprint``), the next reconciles are quiet (Kafka is not read whole)."""

    fingerprint: str
    at: float  # the monotonic clock's reading
    live: frozenset[int]  # the brokers alive in the cluster then


def _heals_dead_brokers(spec: ClusterSpec) -> bool:
    """Whether the cluster declares broker-failure self-healing: its quiet reconciles look at liveness."""
    healing_spec = spec.self_healing
    return isinstance(healing_spec, SelfHealingSpec) and healing_spec.broker_failure.enabled


def _looked(gw: KafkaGateway, settled: Settled) -> bool:
    """A quiet reconcile's look at liveness (one DescribeCluster, whatever the cluster's size): whether
    the brokers alive are those of the last full read. A broker that died (or returned) ends the quiet
    period at once, so its failure is tracked from the reconcile after it, not a resync period later. A
    look that fails (other than Kafka unreachable, which the caller reports) counts as a change: the full
    read that follows says what is wrong."""
    try:
        return frozenset(gw.cluster_brokers().live) == settled.live
    except (KafkaOperationError, KafkaAuthorizationError):
        return False


def fingerprint(
    cluster: Mapping[str, Any],
    bodies: Sequence[Mapping[str, Any]],
    record: Execution | None,
    lane_plan: str | None = None,
) -> str:
    """What an idle reconcile's outcome depends on apart from Kafka: the KafkaCluster's and every intent's
    spec (and uid), and the record's phase and plan. Statuses are left out: they are this operator's. An
    ``approvedPlan`` naming ``lane_plan`` (the new-partition lane's plan awaiting approval) is left out
    too: approving it is the lane's business, not a reason to re-plan the cluster (whose plan would have
    another id, and ask for approval again)."""
    h = hashlib.sha256()
    h.update(json.dumps(spec_of(cluster), sort_keys=True, default=str).encode())
    for b in bodies:
        meta, spec = b["metadata"], dict(spec_of(b))
        if lane_plan is not None and spec.get("approvedPlan") == lane_plan:
            del spec["approvedPlan"]
        h.update(json.dumps([b["kind"], meta.get("uid"), spec], sort_keys=True, default=str).encode())
    if record is not None:
        h.update(f"{record.phase}\0{record.doc.plan_id}".encode())
    return h.hexdigest()


def secret_value(kube: KubeGateway, ns: str, name: str | None, key: str, where: str) -> str:
    """One value of a Secret, decoded; bad input naming the field when it cannot be read."""
    if not name:
        raise BadInputError("a Secret name is required", f"{where}.name")
    try:
        data = kube.secret_data(ns, name)
    except KubeError as e:
        raise BadInputError(
            f"cannot read Secret {ns}/{name}: {e.status} (see the operator's RBAC)", where
        ) from None
    if data is None:
        raise BadInputError(f"Secret {ns}/{name} not found", where)
    raw = data.get(key)
    if raw is None:
        raise BadInputError(f"Secret {ns}/{name} has no key '{key}'", where)
    try:
        return base64.b64decode(raw, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise BadInputError(f"Secret {ns}/{name} key '{key}' is not valid base64 UTF-8 text", where) from None


def connection_settings(spec: ClusterSpec, namespace: str, kube: KubeGateway) -> ConnectionSettings:
    """The KafkaCluster's connection (TLS/SASL material read from its Secrets; PEM as reused 0600 files)."""
    tls, sasl = spec.tls, spec.sasl
    kw: dict[str, Any] = {}

    def pem(name: str, key: str, where: str) -> str:
        return pem_file(secret_value(kube, namespace, name, key, where))

    if tls is not None:
        ca = tls.ca_secret_ref
        if ca is not None:  # absent: the system trust store
            kw["ssl_cafile"] = pem(ca.name, ca.key, "spec.tls.caSecretRef")
        cert = tls.cert_secret_ref
        if cert is not None:  # mutual TLS: the client certificate and its key
            kw["ssl_certfile"] = pem(cert.name, cert.cert_key, "spec.tls.certSecretRef")
            kw["ssl_keyfile"] = pem(cert.name, cert.key_key, "spec.tls.certSecretRef")
    if sasl is not None:
        ref, where = sasl.secret_ref, "spec.sasl.secretRef"
        kw["sasl_mechanism"] = sasl.mechanism
        kw["username"] = secret_value(kube, namespace, ref.name, ref.username_key, where)
        kw["password"] = secret_value(kube, namespace, ref.name, ref.password_key, where)
    secure = tls is not None
    protocol = (
        ("SASL_SSL" if secure else "SASL_PLAINTEXT")
        if sasl is not None
        else ("SSL" if secure else "PLAINTEXT")
    )
    return ConnectionSettings(bootstrap_servers=spec.bootstrap_servers, security_protocol=protocol, **kw)


ACCEPTED = frozenset({st.EXECUTING, st.PAUSED, st.COMPLETED})


def planning_document(body: Mapping[str, Any], snap: ClusterSnapshot) -> dict[str, Any] | None:
    """An intent resource as the planner reads it. A BrokerDecommission planned before (Executing,
    Paused, Completed) whose broker the cluster no longer has at all (a dead broker no replica names any
    more: its decommission emptied it) has that broker dropped, since no replica is on it; with none left
    it is not planned (and so converges). A broker unknown from the start is still bad input (a typo)."""
    spec: dict[str, Any] = dict(spec_of(body))
    doc = {"kind": body["kind"], "spec": spec, "metadata": {"name": body["metadata"]["name"]}}
    if body["kind"] != "BrokerDecommission" or (body.get("status") or {}).get("phase") not in ACCEPTED:
        return doc
    try:
        intent = parse_resource(body)
    except BadInputError:
        return doc  # planned as it is: the planner names what is wrong
    assert isinstance(intent, BrokerDecommission)
    spec["brokers"] = [b for b in intent.brokers if snap.broker(b) is not None]
    return doc if spec["brokers"] else None


def limits_of(spec: ClusterSpec) -> executor.Limits:
    """The executor's limits from the KafkaCluster's ``spec.limits`` and ``throttleBytesPerSecond``."""
    limits = spec.limits
    return executor.Limits(
        max_moves_per_broker=limits.max_moves_per_broker,
        max_moves=limits.max_moves_in_flight,
        max_bytes_per_broker=limits.max_bytes_per_broker,
        throttle=spec.throttle_bytes_per_second,
        batch_seconds=limits.batch_seconds,
        on_config_change=limits.on_config_change,
        max_reapplies=limits.max_reapplies,
        reapply_window_s=limits.reapply_window_seconds,
        max_disk_share=spec.max_disk_share,
        hold_rate=limits.hold_achieved_rate,
    )


def record_view(
    record: Execution | None,
    reapplied_before: int | None = None,
    held_before: tuple[str, ...] | None = None,
) -> RecordView | None:
    """What ``decide`` needs of the record (with the progress of its last tick)."""
    if record is None:
        return None
    doc = record.doc
    held = held_dirs(record)
    progress = executor.progress(record).status_json() if reapplied_before is not None else None
    if progress is not None and held:
        progress["diskHeld"] = describe_held(record)[:MAX_HELD_CHARS]
    return RecordView(
        phase=record.phase,
        plan_id=doc.plan_id,
        participants=frozenset(doc.participants),
        cancel_requested=doc.cancel_requested,
        plan_status=doc.plan_status,
        last_error=doc.last_error,
        progress=progress,
        reapplied=doc.defence.reapplied,
        reapplied_before=doc.defence.reapplied if reapplied_before is None else reapplied_before,
        reapplied_what=tuple(doc.defence.last),
        held=held,
        held_before=held if held_before is None else held_before,
        held_what=describe_held(record)[:MAX_HELD_CHARS],
    )


class Reconciler:
    """Reconciles one KafkaCluster and its intents each time it is called (stateless between calls)."""

    def __init__(
        self,
        kube: KubeGateway,
        leadership: Leadership | None = None,
        resync_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        rates: Callable[[Mapping[str, Any]], Mapping[PartitionKey, Traffic] | None] | None = None,
    ) -> None:
        self.kube = kube
        # a KafkaCluster -> the traffic sampler's current estimates (None: none known): planning's rates
        self.rates = rates or (lambda _cluster: None)
        # (namespace, cluster) -> the last plan made and not yet executed, kept while plan_keeping says so
        self._kept: dict[tuple[str, str], KeptPlan] = {}
        # clusters whose kept plan was looked for in their review ConfigMap (once per process: a leader
        # that loses its Lease exits, so a new leadership is a new process; handlers/plan_review.py)
        self._kept_read: set[tuple[str, str]] = set()
        self.leadership: Leadership = leadership or Unelected()
        self.resync_s = resync_s if resync_s is not None else periods.resync_s()
        self.clock = clock
        # (namespace, cluster) -> the last full idle reconcile that settled: its fingerprint, when, and the
        # brokers alive then (a quiet reconcile of a cluster healing dead brokers compares them: _looked)
        self._settled: dict[tuple[str, str], Settled] = {}
        self.wall = wall  # self-healing's "since" and "due" times are wall-clock (kept in the status)
        # (namespace, cluster) -> when its next tracked failure is due for a heal: the idle period ends then
        self._heal_due: dict[tuple[str, str], float] = {}
        # (namespace, cluster) -> uids of its intent resources being deleted whose declared cordons were
        # removed (SyncCordons): their delete handlers let them go (``uncordoned``)
        self._uncordoned: dict[tuple[str, str], set[str]] = {}
        # (namespace, cluster) -> the new-partition lane's partition counts and pending partitions
        self._watch: dict[tuple[str, str], lane.Watch] = {}
        # (namespace, cluster) -> when the under-replicated gauges were last counted during an execution
        self._counted: dict[tuple[str, str], float] = {}

    def count_due(self, where: tuple[str, str]) -> bool:
        """Whether an execution's reconcile of this cluster counts the under-replicated partitions now:
        once per resync period (a Metadata request of every partition: what an idle cluster reads then)."""
        now = self.clock()
        if now - self._counted.get(where, -self.resync_s) < self.resync_s:
            return False
        self._counted[where] = now
        return True

    def store(
        self,
        namespace: str,
        cluster: str,
        owner: Mapping[str, Any],
        document: Literal["execution", "planning", "lane"] = "execution",
    ) -> ConfigMapStore:
        """The cluster's execution record (or its planning run, or the new-partition lane's record),
        written only through the leader fence."""
        lead = self.leadership
        return ConfigMapStore(
            self.kube, namespace, cluster, owner, fence=lead.fence, writer=lead.identity, document=document
        )

    # ---- Kubernetes reads and writes -------------------------------------------------------------

    def cluster(self, namespace: str, name: str | None) -> dict[str, Any] | None:
        """The KafkaCluster ``name`` (None when it does not exist)."""
        return (
            self.kube.get_custom(GROUP, VERSION, namespace, PLURALS["KafkaCluster"], name) if name else None
        )

    def uncordoned(self, namespace: str, cluster: str, uid: str) -> bool:
        """Whether a reconcile of ``cluster`` (or its deletion) removed the cordons declared by the intent
        resource ``uid``, which is being deleted (in this process: only the leader reconciles)."""
        return uid in self._uncordoned.get((namespace, cluster), ())

    def _leaving(self, namespace: str, cluster: str, listed: Sequence[Mapping[str, Any]]) -> list[Any]:
        """The cluster's intent resources being deleted whose cordons were not removed yet (the uids of
        those already gone are forgotten)."""
        where = (namespace, cluster)
        deleting = [b for b in listed if b["metadata"].get("deletionTimestamp")]
        done = self._uncordoned.pop(where, set()) & {b["metadata"]["uid"] for b in deleting}
        if done:
            self._uncordoned[where] = done
        return [b for b in deleting if b["metadata"]["uid"] not in done]

    def _released(self, cluster: Mapping[str, Any], sync: SyncCordons, changes: CordonChanges | None) -> None:
        """``sync`` was carried out (``changes``: what it changed, None when nothing could be): the
        resources it released may go; what it removed or skipped is told on the KafkaCluster."""
        meta = cluster["metadata"]
        if sync.leaving:
            self._uncordoned.setdefault((meta["namespace"], meta["name"]), set()).update(sync.leaving)
        for line in described(changes) if changes is not None else ():
            self.leadership.fence()
            self.kube.event(cluster, "Normal", "Uncordoned", line)

    def intents_of(self, namespace: str, cluster: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for kind in INTENT_KINDS:
            for body in self.kube.list_custom(GROUP, VERSION, namespace, PLURALS[kind]):
                if ClusterRef.name_of(body) == cluster:
                    body.setdefault("kind", kind)
                    out.append(body)
        return sorted(out, key=lambda b: (b["kind"], b["metadata"]["name"]))

    def set_status(self, p: StatusPatch) -> None:
        """Write one intent status (an Event when phase or message changed; nothing when unchanged)."""
        body = p.body
        old = body.get("status") or {}
        new = st.intent_status(
            body, p.phase, p.reason, p.message, plan=p.plan, progress=p.progress, retry=p.retry
        )
        self.leadership.fence()  # a stale leader neither posts Events nor overwrites the new one's status
        if old.get("phase") != p.phase or old.get("message") != p.message:
            etype = "Warning" if p.phase == st.FAILED else "Normal"
            self.kube.event(body, etype, p.reason or p.phase, p.message or p.phase)
        took = healing.healed_in(body, old.get("phase"), p.phase, self.wall())
        if took is not None:
            metrics.HEAL_SECONDS.labels(kind=body["kind"]).observe(took)
        if st.unchanged(old, new):
            return
        meta = body["metadata"]
        self.kube.patch_custom_status(
            GROUP, VERSION, meta["namespace"], PLURALS[body["kind"]], meta["name"], new
        )

    def _publish(self, d: Decision | Sequence[StatusPatch]) -> None:
        statuses = d if not isinstance(d, Decision) else d.statuses
        for p in statuses:
            self.set_status(p)
        if isinstance(d, Decision):
            for n in d.events:
                self.leadership.fence()
                self.kube.event(n.body, n.type, n.reason, n.message)

    def release(self, cluster: Mapping[str, Any]) -> str | None:
        """A KafkaCluster being deleted: its execution is cancelled and the cancel driven to its end (moves
        in flight reverted, the throttles it set removed), then the cordons of its intent resources deleted
        with it are removed as a reconcile would (``SyncCordons``: no reconcile runs any more), so nothing
        the operator set in Kafka outlives the resources (its record, a ConfigMap it owns, goes with it).
        One tick per call: returns None when nothing is left, else what is still to do (the caller calls
        again). A cluster with no record, or a finished one holding nothing, and no intent being deleted
        with a cordon, is not contacted."""
        left = self._cancel(cluster) or self._cancel(cluster, "lane")
        left = left if left is not None else self._uncordon_leaving(cluster)
        if left is None:  # nothing of the cluster stays in memory either (a namesake starts afresh)
            where = (cluster["metadata"]["namespace"], cluster["metadata"]["name"])
            self._kept_read.discard(where)
            for per_cluster in (self._kept, self._settled, self._heal_due, self._watch, self._counted):
                per_cluster.pop(where, None)
        return left

    def _cancel(
        self, cluster: Mapping[str, Any], document: Literal["execution", "lane"] = "execution"
    ) -> str | None:
        meta = cluster["metadata"]
        store = self.store(meta["namespace"], meta["name"], cluster, document)
        try:
            record = Execution.load(store)
        except BadInputError:
            return None  # a corrupt record is never acted on: nothing can be cancelled from it
        if record is None or (record.phase in TERMINAL and record.doc.throttles.empty):
            return None
        try:
            spec = ClusterSpec.of(cluster)
            settings = connection_settings(spec, meta["namespace"], self.kube)
        except BadInputError as e:  # e.g. its Secret deleted first: retried until the caller gives up
            return f"cannot reach Kafka to cancel plan {record.doc.plan_id}: {e.message}"
        if record.phase not in TERMINAL and not record.doc.cancel_requested:
            record.doc.cancel_requested = True
            record.save()
        try:
            with FencedGateway(settings, self.leadership.fence) as gw:
                executor.tick(gw, record, limits_of(spec))
        except (KafkaUnavailableError, KafkaAuthorizationError, KafkaAuthenticationError) as e:
            return f"cancelling plan {record.doc.plan_id} before the cluster goes: {e.message}"
        if record.phase in TERMINAL and record.doc.throttles.empty:
            return None
        return f"cancelling plan {record.doc.plan_id} before the cluster goes: executor phase {record.phase}"

    def _uncordon_leaving(self, cluster: Mapping[str, Any]) -> str | None:
        meta = cluster["metadata"]
        listed = self.intents_of(meta["namespace"], meta["name"])
        leaving = self._leaving(meta["namespace"], meta["name"], listed)
        live, _ = parse([b for b in listed if not b["metadata"].get("deletionTimestamp")])
        sync = cordon_sync([i for _, i in live], leaving)
        changes = None
        if declared_cordons(sync.released):
            names = ", ".join(f"{b['kind']}/{b['metadata']['name']}" for b in leaving)
            try:
                settings = connection_settings(ClusterSpec.of(cluster), meta["namespace"], self.kube)
                with FencedGateway(settings, self.leadership.fence) as gw:
                    changes = sync_cordons(gw, sync.intents, sync.released, setting=False)
            except BadInputError as e:
                return f"cannot reach Kafka to remove the cordons of {names}: {e.message}"
            except (
                KafkaUnavailableError,
                KafkaAuthorizationError,
                KafkaAuthenticationError,
                KafkaOperationError,
            ) as e:
                return f"removing the cordons of {names} before the cluster goes: {e.message}"
        self._released(cluster, sync, changes)
        return None

    # ---- one reconciliation ------------------------------------------------------------------------

    def reconcile(self, cluster: Mapping[str, Any]) -> dict[str, Any]:
        """Reconcile; returns the KafkaCluster's status patch. The spec is parsed once, here, and handed
        down (connection, executor limits, planner, self-healing)."""
        meta = cluster["metadata"]
        ns, name = meta["namespace"], meta["name"]
        label = metrics.cluster_label(ns, name)
        listed = self.intents_of(ns, name)
        bodies = [b for b in listed if not b["metadata"].get("deletionTimestamp")]
        leaving = self._leaving(ns, name, listed)  # their cordons are removed by this reconcile's sync
        conditions = (cluster.get("status") or {}).get("conditions")

        def failed(reason: str, message: str, connected: bool, phase: str = st.UNREACHABLE) -> dict[str, Any]:
            metrics.RECONCILE_ERRORS.labels(cluster=label).inc()
            self._settled.pop((ns, name), None)  # the next reconcile reads Kafka whole and decides afresh
            failure = Failure(reason, message, connected, phase)
            d = decide(View(bodies, failure=failure, cluster_conditions=conditions))
            self._publish(d)
            out = dict(d.cluster or {})  # self-healing decides nothing without Kafka: its condition stays
            kept = st.kept_condition(out.get("conditions") or [], conditions, st.SELF_HEALING)
            if reason == "ClusterUnreachable":  # no broker answered: one condition says so, none is dead
                unreached = (False, reason, f"no broker answers the operator: {message}")
                kept = st.with_condition(kept, conditions, st.BROKERS_REACHABLE, unreached)
            else:
                kept = st.kept_condition(kept, conditions, st.BROKERS_REACHABLE)
            out["conditions"] = kept
            return out

        try:
            spec = ClusterSpec.of(cluster)
        except BadInputError as e:  # the CRD's validation refuses these first (the same schema)
            reason = "InvalidConnection" if is_connection_error(e) else "InvalidSpec"
            return failed(reason, e.message, connected=False)
        try:
            settings = connection_settings(spec, ns, self.kube)
        except BadInputError as e:
            return failed("InvalidConnection", e.message, connected=False)
        limits = limits_of(spec)
        store = self.store(ns, name, cluster)
        try:
            record = Execution.load(store)
        except BadInputError as e:  # a corrupt record: never act on it, say where it is
            return failed("CorruptExecutionRecord", e.message, connected=True)
        metrics.observe_execution(label, record)
        lane_store = self.store(ns, name, cluster, "lane")
        try:
            lane_record = Execution.load(lane_store)
        except BadInputError as e:
            return failed("CorruptExecutionRecord", e.message, connected=True)
        active = record is not None and record.phase not in TERMINAL
        lane_active = lane_record is not None and lane_record.phase not in TERMINAL
        waiting = (cluster.get("status") or {}).get("newPartitions") or {}
        lane_plan = waiting.get("planId") if waiting.get("phase") == lane.AWAITING_APPROVAL else None
        where, print_ = (ns, name), fingerprint(cluster, bodies, record, lane_plan)
        settled = self._settled.pop(where, None)
        quiet = not active and not leaving and settled is not None and settled.fingerprint == print_
        due = self._heal_due.get(where)
        if due is not None and self.wall() >= due:
            quiet = False  # a tracked failure is due for a heal: Kafka is read now
        if quiet and settled is not None and self.clock() - settled.at < self.resync_s:
            self._settled[where] = settled  # nothing of ours changed: Kafka is re-read when the period ends
            quiet = True
        else:
            quiet = False
        # the lane's look and its execution's tick; a full re-plan waits while a lane execution runs
        lane_only = quiet or (lane_active and not active)
        if lane_only and settled is not None:
            self._settled[where] = settled
        watch_live = quiet and settled is not None and _heals_dead_brokers(spec)
        if lane_only and not lane_active and not lane.enforced(bodies) and not watch_live:
            metrics.RECONCILES.labels(cluster=label, kind="quiet").inc()
            return {}
        try:
            with FencedGateway(settings, self.leadership.fence) as gw:
                if watch_live and settled is not None and not _looked(gw, settled):
                    self._settled.pop(where, None)  # a broker died or returned: read Kafka whole now
                    quiet, lane_only = False, lane_active and not active
                if quiet:
                    metrics.RECONCILES.labels(cluster=label, kind="quiet").inc()
                if lane_only:
                    return self._lane(
                        gw, cluster, limits, bodies, record, lane_store, lane_record, full=False
                    )
                # every ACL an execution needs, checked before anything is changed (README, "Security")
                gw.check_authorized(
                    executor.work_topics(record, limits) if record is not None and active else (),
                    when="checked before acting: nothing was changed",
                )
                one = _Pass(self, gw, cluster, spec, limits, bodies, leaving, store, record, conditions)
                status = one.run()
                if one.snap is not None:  # the full re-plan covered every partition of it
                    self._watch.setdefault(where, lane.Watch()).saw_snapshot(one.snap)
                    if waiting.get("phase") in lane.WAITING:
                        status["newPartitions"] = lane.left_to_replan(waiting)
                status |= self._lane(
                    gw, cluster, limits, bodies, record, lane_store, lane_record, full=one.snap is not None
                )
                metrics.RECONCILES.labels(cluster=label, kind="execution" if active else "full").inc()
                if not active and one.settled:
                    self._settled[where] = Settled(print_, self.clock(), one.live_brokers())
                return status
        except NotLeader:
            raise  # the timer handler stops quietly: the leader that took over decides
        except KafkaAuthorizationError as e:  # Blocked, with a Warning Event naming the missing ACL
            return failed("KafkaNotAuthorized", e.message, True, st.NOT_AUTHORIZED)
        except KafkaAuthenticationError as e:
            return failed("KafkaAuthenticationFailed", e.message, connected=False)
        except KafkaUnavailableError as e:
            return failed("ClusterUnreachable", e.message, connected=False)
        except RecordConflict as e:  # another writer was first: nothing was sent; the next reconcile retries
            metrics.RECONCILE_ERRORS.labels(cluster=label).inc()
            raise kopf.TemporaryError(e.message, delay=1) from None

    def _lane(
        self,
        gw: KafkaGateway,
        cluster: Mapping[str, Any],
        limits: executor.Limits,
        bodies: Sequence[Mapping[str, Any]],
        main: Execution | None,
        store: ConfigMapStore,
        record: Execution | None,
        *,
        full: bool,
    ) -> dict[str, Any]:
        """One step of the new-partition lane (handlers/new_partitions.py): tick its execution in flight;
        else (and unless this reconcile read the whole cluster) look at the partition counts, and plan the
        new partitions that break a rule, starting their execution when approved. Returns the
        KafkaCluster's ``status.newPartitions`` (nothing when the lane has nothing to say)."""
        meta = cluster["metadata"]
        where = (meta["namespace"], meta["name"])
        previous = (cluster.get("status") or {}).get("newPartitions")
        unthrottled = replace(limits, throttle=None, max_bytes_per_broker=None)
        shown: dict[str, Any] | None = None
        if record is not None and record.phase not in TERMINAL:
            with contextlib.suppress(BadInputError):  # the record says why (Failed, lastError)
                executor.tick(gw, record, unthrottled, scoped=True)
            shown = lane.record_status(record)
            if record.phase not in TERMINAL:
                return {"newPartitions": shown}
        watch = self._watch.setdefault(where, lane.Watch())
        valid, _ = parse(bodies)
        enforced = [(b, i) for b, i in valid if lane.is_enforced(i)]
        started = self.clock()
        if full or not enforced or not watch.due(started):  # paced by the looks' own cost (Watch)
            return {"newPartitions": shown} if shown is not None else {}
        watch.look(gw.partition_counts())
        watch.paced(started, self.clock())
        if not watch.pending:
            return {"newPartitions": shown} if shown is not None else {}
        snap = gw.snapshot(only=watch.pending)
        documents = [d for d in (planning_document(b, snap) for b, _ in enforced) if d is not None]
        try:
            legacy = not gw.supports_cordon()  # new replicas up to the lane's bound leave cordoned dirs
            intents = Intents.from_documents(documents).with_reactive_cordon(legacy, lane.LANE_MAX_BYTES)
            # the cluster's disk headroom binds the lane's plans as every other (planning/headroom.py)
            spec = ClusterSpec.of(cluster)
            intents = intents.with_max_disk_share(spec.max_disk_share, spec.disk_per_log_dir)
        except BadInputError:
            return {}  # decide reports the invalid resource; the full re-plan covers the partitions
        running = (
            frozenset(main.plan.index) if main is not None and main.phase not in TERMINAL else frozenset()
        )
        out = lane.decide_lane(snap, enforced, intents.enforced_only(), running, previous)
        for body, etype, reason, message in out.events:
            self.leadership.fence()
            self.kube.event(body, etype, reason, message)
        if out.start is not None:
            if record is not None:  # the last lane execution is over: its plan and baseline go
                store.prune_blobs(set())
            new = Execution.create(
                store,
                out.start,
                limits=unthrottled.to_doc(),
                bootstrap_servers=gw.settings.bootstrap_servers,
                cluster_id=snap.cluster_id,
                participants=list(out.participants),
            )
            new.save()
            metrics.LANE_PLANS.labels(cluster=metrics.cluster_label(meta["namespace"], meta["name"])).inc()
        if out.status is not None and out.status["phase"] in (lane.WATCHING, lane.EXECUTING):
            watch.pending.clear()  # placed, planned, or left to the full re-plan (large, or in its plan)
        status = out.status if out.status is not None and out.status["phase"] != lane.WATCHING else shown
        return {"newPartitions": status} if status is not None else {}


class _Pass:
    """One reconcile of one cluster with Kafka reachable: the view grows by what each action reads."""

    def __init__(
        self,
        rec: Reconciler,
        gw: KafkaGateway,
        cluster: Mapping[str, Any],
        spec: ClusterSpec,  # the cluster's spec, as the reconcile parsed it
        limits: executor.Limits,  # and the executor's limits it sets
        bodies: list[dict[str, Any]],
        leaving: list[dict[str, Any]],  # the cluster's intent resources being deleted (``View.leaving``)
        store: ConfigMapStore,
        record: Execution | None,
        conditions: Sequence[Mapping[str, Any]] | None,  # the KafkaCluster's, as the reconcile read them
    ) -> None:
        self.rec, self.gw, self.cluster, self.store, self.record = rec, gw, cluster, store, record
        self.spec, self.limits = spec, limits
        self.view = View(
            bodies,
            leaving,
            record=record_view(record),
            cluster_conditions=conditions,
            retiring=self._retiring(bodies),
            now=rec.wall(),
        )
        self.snap: ClusterSnapshot | None = None
        self.live: tuple[int, ...] = ()  # without a snapshot: DescribeCluster's live brokers and their dirs
        self.dirs: Mapping[int, Sequence[tuple[str, bool]]] = {}
        self.shares: dict[tuple[int, str], float] | None = None  # ... and how full their volumes are
        self.in_flight = 0
        self.started = False
        self.started_with: frozenset[str] = frozenset()  # the participants of the execution it started

    def _retiring(self, bodies: Sequence[Mapping[str, Any]]) -> frozenset[str]:
        """The heals the last reconcile left waiting for their retirement behind the execution in flight
        (retiring.py): decide re-plans it without them. Nothing without an execution in flight."""
        record = self.record
        if record is None or record.phase in TERMINAL:
            return frozenset()
        status = self.cluster.get("status") or {}
        dead, _ = HealingState.from_status(status)
        past, _ = past_failures(status)
        return retiring.retiring_uids(self.spec.self_healing, dead.dead_brokers, past, bodies)

    def live_brokers(self) -> frozenset[int]:
        """The brokers alive in the cluster as this reconcile read them (snapshot, else the light read)."""
        if self.snap is not None:
            return frozenset(b.id for b in self.snap.brokers if b.alive)
        return frozenset(self.live)

    @property
    def settled(self) -> bool:
        """Idle and waiting for nothing: no execution started and no planner job running."""
        planned = self.view.planned
        return not self.started and (planned is None or planned.running is None)

    def snapshot(self) -> ClusterSnapshot:
        if self.snap is None:
            self.snap = self.gw.snapshot()
            self.in_flight = len(self.gw.list_reassignments())
        return self.snap

    def run(self) -> dict[str, Any]:
        record = self.record
        if record is not None and record.phase in TERMINAL and not record.doc.throttles.empty:
            # throttles a finished execution could not remove (their broker was dead): until it is back
            with contextlib.suppress(KafkaUnavailableError, KafkaOperationError):
                executor.sweep(self.gw, record)
        decision = decide(self.view)
        for _ in range(MAX_STEPS):
            self.rec._publish(decision)
            for action in decision.actions:
                self._perform(action)
            if decision.done or self.started:  # a new execution's first tick is the next reconcile's
                self._release_orphaned_throttles()
                return self._heal({**(decision.cluster or {}), **self._cluster_status()})
            decision = decide(self.view)
        raise AssertionError(f"reconcile did not settle in {MAX_STEPS} steps: {decision.actions}")

    def _release_orphaned_throttles(self) -> None:
        """On a full (not an execution's) reconcile: the throttle claims whose KafkaCluster is gone
        (kafka/throttle_claims.py) have their throttles removed, with an Event. Gone is what the apiserver
        says (absent, or another uid); an owner that cannot be read is left alone. This cluster's own
        claims are gone too when it has no execution holding throttles. Costs a DescribeConfigs per live
        broker, as often as the cluster is re-read (the resync period)."""
        record = self.record
        busy = record is not None and (record.phase not in TERMINAL or not record.doc.throttles.empty)
        if busy or self.started:
            return
        try:
            if self.snap is not None:
                live = [b.id for b in self.snap.brokers if b.alive and b.id not in self.snap.unreachable]
            else:
                live = list(self.live or self.gw.describe_cluster()[1])
            claims = throttle_claims.find_claims(self.gw, live)
            own = self.cluster["metadata"].get("uid")
            owners = {c.owner for c in claims}  # one apiserver read per owner, not per broker
            gone = {o.uid for o in owners if o.uid == own or self._owner_gone(o)}
            released = throttle_claims.release(self.gw, claims, gone)
        except (KafkaUnavailableError, KafkaOperationError) as e:
            log.warning("throttle claims not checked: %s", e)
            return
        if released is not None:
            log.info("%s", released)
            if released.deferred is None:
                self.rec.leadership.fence()
                self.rec.kube.event(self.cluster, "Normal", "OrphanedThrottlesRemoved", str(released)[:1000])

    def _owner_gone(self, owner: ClaimOwner) -> bool:
        try:
            body = self.rec.kube.get_custom(
                GROUP, VERSION, owner.namespace, PLURALS["KafkaCluster"], owner.name
            )
        except KubeError as e:  # not allowed to read it, or no answer: never taken for gone
            log.info("throttle claim of KafkaCluster %s/%s left alone: %s", owner.namespace, owner.name, e)
            return False
        return body is None or (body.get("metadata") or {}).get("uid") != owner.uid

    def _cluster_status(self) -> dict[str, Any]:
        if self.snap is not None:
            meta = self.cluster["metadata"]
            metrics.observe_under_replicated(
                metrics.cluster_label(meta["namespace"], meta["name"]), self.snap.partitions, self.record
            )
            return st.cluster_status(self.snap, self.in_flight)
        # an execution in flight: the brokers' dirs only (cost follows brokers x dirs, not partitions)
        _, live = self.gw.describe_cluster()
        dirs = self.gw.describe_log_dirs(live, partitions=())
        if healing.lost_now(self.cluster.get("status") or {}, live, dirs):
            self.snapshot()  # a broker just died or stopped answering: read it whole now, in this reconcile
            return self._cluster_status()
        meta = self.cluster["metadata"]
        if self.rec.count_due((meta["namespace"], meta["name"])):
            label = metrics.cluster_label(meta["namespace"], meta["name"])
            metrics.observe_under_replicated(label, self.gw.partition_states(), self.record)
        self.live, self.dirs = live, {b: [(d.path, d.online) for d in ds] for b, ds in dirs.items()}
        self.shares = {
            (b, d.path): (d.total_bytes - d.usable_bytes) / d.total_bytes
            for b, ds in dirs.items()
            for d in ds
            if d.online and d.total_bytes > 0
        }
        racks = {b["id"]: b.get("rack") for b in ((self.cluster.get("status") or {}).get("brokers") or [])}
        in_flight = len(self.record.doc.in_flight) if self.record is not None else 0
        return st.light_cluster_status(racks, dirs, in_flight)

    def _heal(self, status: dict[str, Any]) -> dict[str, Any]:
        """Self-healing (healing.py) on the facts this reconcile read: the failures go to the status,
        the heals due are created (a 409 is a heal an earlier reconcile made: adopted), Events posted."""
        rec, meta, old = self.rec, self.cluster["metadata"], self.cluster.get("status") or {}
        if self.snap is not None:
            seen = healing.seen_in_snapshot(self.snap)
        else:  # the brokers the status last listed or tracked stand for those the cluster names
            seen = healing.seen_live(healing.named_in(old), self.live, self.dirs)
        current = self.view.cluster_conditions
        before = next((c for c in current or () if c.get("type") == st.SELF_HEALING), None)
        reached = next((c for c in current or () if c.get("type") == st.BROKERS_REACHABLE), None)
        previous, _ = HealingState.from_status(old)  # a broken entry is dropped: seen again
        heals = healing.heals_of(self.view.resources)
        out = healing.decide_healing(
            self.spec.self_healing, self.cluster, previous, seen, heals, rec.wall(), before, reached
        )
        out = out.not_created(self._create_heals(out.creates))
        for n in out.notes:
            rec.leadership.fence()
            rec.kube.event(n.on or self.cluster, n.type, n.reason, n.message)
        retired = self._retire(out, old)
        pressure = self._pressure(heals, old)
        where = (meta["namespace"], meta["name"])
        rec._heal_due.pop(where, None)
        wakes = [t for t in (out.wake_at, pressure.wake_at) if t is not None]
        if wakes:
            rec._heal_due[where] = min(wakes)
        label = metrics.cluster_label(meta["namespace"], meta["name"])
        metrics.DEAD_BROKERS.labels(cluster=label).set(len(out.state.dead_brokers))
        metrics.UNREACHABLE_BROKERS.labels(cluster=label).set(len(out.state.unreachable_brokers))
        metrics.OFFLINE_LOG_DIRS.labels(cluster=label).set(len(out.state.offline_log_dirs))
        metrics.observe_self_healing(label, out.condition)
        conditions = st.with_condition(
            status.get("conditions") or [], current, st.SELF_HEALING, out.condition
        )
        if out.reachable is not None:
            conditions = st.with_condition(conditions, current, st.BROKERS_REACHABLE, out.reachable)
        else:
            conditions = st.kept_condition(conditions, current, st.BROKERS_REACHABLE)
        return {
            **status,
            **out.state.to_status(),
            **retired.to_status(),
            **pressure.to_status(),
            "conditions": conditions,
        }

    def _create_heals(self, creates: Sequence[healing.NewHeal]) -> list[str]:
        """Create the heals decided (fenced; a 409 is a heal an earlier reconcile made: adopted), with a
        ``HealCreated`` Event on the KafkaCluster and on the heal; returns those Kubernetes refused (a
        Warning Event ``HealNotCreated`` each: tried again next time)."""
        rec, meta = self.rec, self.cluster["metadata"]
        failed: list[str] = []
        for new in creates:
            rec.leadership.fence()
            try:
                made = rec.kube.create_custom(GROUP, VERSION, meta["namespace"], new.plural, dict(new.body))
            except KubeConflict:
                continue
            except KubeError as e:
                failed.append(new.name)
                msg = f"{new.message}; not created: {e.message}"
                rec.kube.event(self.cluster, "Warning", "HealNotCreated", msg)
                continue
            metrics.HEALS.labels(kind=new.kind).inc()
            for on in (self.cluster, made):
                rec.kube.event(on, "Normal", "HealCreated", new.message)
        return failed

    def _delete_heals(self, retires: Sequence[retiring.Retire]) -> list[str]:
        """Delete the heals retired (fenced, their uid and resourceVersion as preconditions: a conflict, the
        heal changed since it was listed, is decided again by the next reconcile; another refusal is a
        Warning Event too), with a ``HealRetired`` Event on the KafkaCluster and on the heal; returns those
        not deleted."""
        rec, meta = self.rec, self.cluster["metadata"]
        refused: list[str] = []
        for r in retires:
            rec.leadership.fence()
            try:
                rec.kube.delete_custom(
                    GROUP, VERSION, meta["namespace"], r.plural, r.name, preconditions=r.preconditions
                )
            except KubeConflict as e:  # changed since listed (an edit, or this reconcile's status write)
                refused.append(r.name)
                log.info("heal %s not retired yet, decided again next reconcile: %s", r.name, e.message)
                continue
            except KubeError as e:  # refused: decided again next time
                refused.append(r.name)
                rec.kube.event(
                    self.cluster, "Warning", "HealNotRetired", f"{r.message}; not deleted: {e.message}"
                )
                continue
            metrics.HEALS_RETIRED.labels(kind=r.kind).inc()
            for on in (self.cluster, r.body):
                rec.kube.event(on, "Normal", "HealRetired", r.message)
        return refused

    def _pressure(self, heals: Sequence[healing.Heal], old: Mapping[str, Any]) -> pressure.Pressure:
        """Disk pressure (pressure.py) on the dirs' usage this reconcile read: heals created and retired
        as decided, Events posted."""
        raw = self.spec.self_healing
        shares = pressure.shares_in_snapshot(self.snap) if self.snap is not None else self.shares
        decided = pressure.decide_pressure(
            raw if isinstance(raw, SelfHealingSpec) else None,
            self.cluster,
            pressured_log_dirs(old),
            shares,
            heals,
            self._running(),
            self.spec.max_disk_share,
            self.rec.wall(),
        )
        decided = decided.not_created(self._create_heals(decided.creates))
        self._delete_heals(decided.retires)  # one refused is decided again next time (its entry went)
        for n in decided.notes:
            self.rec.leadership.fence()
            self.rec.kube.event(n.on or self.cluster, n.type, n.reason, n.message)
        return decided

    def _running(self) -> frozenset[str]:
        """The uids of the participants of the execution in flight after this reconcile: the one it
        started (a superseded one was replaced by it), else the record's while it is not over."""
        if self.started:
            return self.started_with
        record = self.record
        return (
            frozenset(record.doc.participants)
            if record is not None and record.phase not in TERMINAL
            else frozenset()
        )

    def _retire(self, out: healing.HealingOutcome, old: Mapping[str, Any]) -> retiring.Retirement:
        """Heals whose broker is back for good are retired (retiring.py): deleted through the KubeGateway,
        fenced, with their uid and resourceVersion as preconditions (a conflict, the heal changed since it
        was listed, is decided again by the next reconcile; another refusal is a Warning Event too), and a
        ``HealRetired`` Event on the KafkaCluster and on the heal."""
        rec = self.rec
        past, _ = past_failures(old)  # a broken entry is dropped
        decided = retiring.decide_retirement(
            self.spec.self_healing,
            out.state.dead_brokers,
            out.ended,
            out.live,
            self.view.resources,
            self._running(),
            past,
            rec.wall(),
        )
        refused = self._delete_heals(decided.deletes)
        decided = decided.not_deleted(refused)
        for n in decided.notes:
            rec.leadership.fence()
            rec.kube.event(n.on or self.cluster, n.type, n.reason, n.message)
        return decided

    def _perform(self, action: object) -> None:
        if isinstance(action, RequestCancel):
            assert self.record is not None
            self.record.doc.cancel_requested = True  # a participating resource was deleted: revert (KIP-455)
            self.record.save()
        elif isinstance(action, Tick):
            self._tick()
        elif isinstance(action, SyncCordons):
            self._sync_cordons(action)  # sets view.cordons_synced
        elif isinstance(action, CheckIntents):
            self._check(action.resources)
        elif isinstance(action, PlanIntents):
            self._plan(action.resources, action.keeping_in_flight, action.dropping)
        elif isinstance(action, CheckMinIsr):
            plan = action.plan
            unsafe = below_min_isr(
                plan.partitions, self.gw.min_insync_replicas({t.topic for t in plan.partitions})
            )
            self.view = replace(self.view, below_min_isr=unsafe)
        elif isinstance(action, StartExecution):
            self._start(action)
        else:  # pragma: no cover  (decide returns only the actions above)
            raise TypeError(f"unknown action {action!r}")

    def _tick(self) -> None:
        record = self.record
        assert record is not None
        members = [b for b in self.view.resources if b["metadata"]["uid"] in record.doc.participants]
        window = window_gate(self.spec.execution, self.spec.self_healing, members, self.rec.wall())
        limits = replace(self.limits, window_open=window.open)
        executor.sweep(self.gw, record)
        before = record.doc.defence.reapplied
        held_before = held_dirs(record)
        with contextlib.suppress(BadInputError):  # the record says why (Failed, lastError): status follows
            executor.tick(self.gw, record, limits)
        if record.phase == Phase.COMPLETED:
            self.snap = None  # the intents are checked next against a fresh read, not the one before
        if record.doc.defence.reapplied > before:
            metrics.OWNED_CONFIG_REAPPLIED.inc(record.doc.defence.reapplied - before)
        progress = executor.progress(record)
        meta = self.cluster["metadata"]
        metrics.observe_progress(
            metrics.cluster_label(meta["namespace"], meta["name"]),
            record.doc.plan_id,
            limits.throttle,
            progress,
        )
        metrics.observe_dirs(metrics.cluster_label(meta["namespace"], meta["name"]), record)
        self.view = replace(
            self.view, ticked=True, record=record_view(record, before, held_before), window=window
        )

    def _sync_cordons(self, a: SyncCordons) -> None:
        """Set ``cordoned.log.dirs`` for the declared cordons and remove those only deleted resources
        declared (handlers/cordons.py) on brokers that support KIP-1066. With an execution in flight only
        the brokers' dirs are read (``cordon_view``: its cost follows brokers x dirs), and nothing when no
        cordon is declared; else the snapshot that planning reads next, which then shows the changes."""
        self.view = replace(self.view, cordons_synced=True)
        executing = self.record is not None and self.record.phase not in TERMINAL
        full = None if executing else self.snapshot()  # planning reads it next; the status shows it
        changes = sync_cordons(self.gw, a.intents, a.released, full)
        if full is not None and changes is not None:  # Kafka shows them a moment later
            self.snap = with_cordons(full, changes)
        self.rec._released(self.cluster, a, changes)

    def _check(self, resources: Sequence[Mapping[str, Any]]) -> None:
        """The partitions that break the executed intents' hard rules in a fresh snapshot (the tick that
        completed the plan dropped the one read before it)."""
        snap = self.snapshot()
        documents = [d for d in (planning_document(b, snap) for b in resources) if d is not None]
        intents = Intents.from_documents(documents).with_reactive_cordon(not self.gw.supports_cordon())
        self.view = replace(self.view, unmet=unmet(snap, intents))

    def _rated(self) -> tuple[ClusterSnapshot, bool]:
        """The snapshot with the traffic sampler's current estimates (only partitions with a known one),
        and whether the cluster samples and estimates are known; without sampling, the snapshot as read."""
        live = self.snapshot()
        rates = self.rec.rates(self.cluster)
        if rates is None:
            return live, not self.spec.sampling.enabled
        return with_traffic(live, rates), True

    def _kept_plan(self, snap: ClusterSnapshot, inputs: PlanInputs, rates_known: bool) -> Planned | KeptPlan:
        """The plan kept from an earlier reconcile when plan_keeping's rule keeps it, else what a new
        plan is kept with (its key and the loads it is planned from)."""
        rec, meta = self.rec, self.cluster["metadata"]
        where = (meta["namespace"], meta["name"])
        key = inputs_key(snap, inputs.text, repr(self.spec.planner))
        kept = rec._kept.pop(where, None)
        if kept is None and where not in rec._kept_read:  # this process's first plan of the cluster
            rec._kept_read.add(where)
            kept = self._kept_from_review(key)
        if kept is not None and kept.keep(key, loads_of(snap, kept.plan), rates_known) is None:
            with contextlib.suppress(BadInputError):
                kept.plan.check_against(snap, live_only=True)
                rec._kept[where] = kept
                return Planned(plan=kept.plan, summary=kept.summary)
        return KeptPlan(Plan(()), {}, key, loads_of(snap), tolerance_of(inputs.intents))

    def _kept_from_review(self, key: str) -> KeptPlan | None:
        """The plan an earlier leader kept (the review ConfigMap's ``keptPlan`` and the plan's blob), unless
        the execution record already ran it or it was made from other inputs than ``key`` (its blob is not
        read then). A record that cannot be used (a missing or corrupt blob, plan ids that disagree) is
        told in a Normal Event ``KeptPlanNotUsed``; the cluster is planned afresh."""
        rec, meta = self.rec, self.cluster["metadata"]
        try:
            found = plan_review.read_kept(rec.kube, meta["namespace"], self.cluster)
            if not isinstance(found, tuple):
                why = found
            elif self.record is not None and self.record.doc.plan_id == found[0].plan_id:
                return None  # executed (or cancelled) already: never kept again
            elif found[0].key != key:
                return None  # the intents or the placement changed since: not worth reading the plan
            else:
                record, review = found
                raw = self.store.get_blob(plan_blob_name(record.plan_id))
                if raw is None:
                    why = f"the blob of plan {record.plan_id} is missing"
                else:
                    source = f"{self.store.where}: {plan_blob_name(record.plan_id)}"
                    plan = Plan.loads(raw.decode("utf-8", "replace"), source)
                    if plan.plan_id == record.plan_id:
                        return record.kept(plan, review)
                    why = f"the blob of plan {record.plan_id} holds plan {plan.plan_id}"
        except (KubeError, BadInputError) as e:
            why = e.message
        if why is not None:
            rec.leadership.fence()
            rec.kube.event(self.cluster, "Normal", "KeptPlanNotUsed", f"planning afresh: {why}"[:1000])
        return None

    def _plan(
        self, resources: Sequence[Mapping[str, Any]], keeping_in_flight: bool = False, dropping: bool = False
    ) -> None:
        """Plan the intents; ``keeping_in_flight``: from where the running execution's moves in flight
        will be, keeping them (execution/supersede.py); ``dropping`` (heals retired out of it): the plan
        keeps them even when the planner wants nothing, so the rest of the running plan is dropped and
        nothing in flight reverted (a plan that is only those moves is ``kept_only``: no approval).
        Otherwise a plan made earlier and not executed
        is kept while the intents, the placement and the loads it was planned from hold
        (planning/plan_keeping.py): its id stays while the rates drift within the bound."""
        live, rates_known = self._rated()
        if live.unreachable:  # their dirs (and the sizes of their replicas) are unknown: no plan until read
            names = ", ".join(map(str, live.unreachable))
            why = (
                f"waiting: broker(s) {names} alive in the cluster do not answer the operator (their log dirs "
                "cannot be read); no plan is made until they answer (KafkaCluster status.unreachableBrokers)"
            )
            self.view = replace(self.view, planned=Planned(waiting=why))
            return
        flight = supersede.in_flight(self.record, live) if keeping_in_flight and self.record else None
        snap = supersede.planning_view(live, flight) if flight is not None else live
        pairs = [(b, d) for b, d in ((b, planning_document(b, snap)) for b in resources) if d is not None]
        documents = [d for _, d in pairs]
        meta = self.cluster["metadata"]
        reactive = not self.gw.supports_cordon()
        rejected: dict[str, str] = {}
        try:
            inputs = PlanInputs.of(documents, reactive, self.spec.capacity)  # once per reconcile
            alone = inputs.alone_invalid(documents, snap, reactive)  # each fails alone (decide.py)
            if alone:
                rejected = {pairs[i][0]["metadata"]["uid"]: why for i, why in alone.items()}
                documents = [d for i, d in enumerate(documents) if i not in alone]
                inputs = PlanInputs.of(documents, reactive, self.spec.capacity)
        except BadInputError as e:
            self.rec._kept.pop((meta["namespace"], meta["name"]), None)
            self.view = replace(
                self.view, planned=Planned(error_reason="InvalidInput", error=e.message, rejected=rejected)
            )
            return
        keep: KeptPlan | None = None
        if flight is None:
            kept = self._kept_plan(snap, inputs, rates_known)
            if isinstance(kept, Planned):
                self.view = replace(self.view, planned=replace(kept, rejected=rejected))
                return
            keep = kept
        runs = self.rec.store(meta["namespace"], meta["name"], self.cluster, "planning")
        started = time.monotonic()
        try:
            if documents or flight is None:
                planned = plan_cluster(
                    self.rec.kube,
                    runs,
                    meta["namespace"],
                    self.spec,
                    snap,
                    inputs,
                    reactive,
                )
            else:  # only retired heals ran it: no intent is left to plan, the moves in flight are kept
                planned = Planned(plan=Plan(()), summary={})
        finally:
            metrics.PLANNING_SECONDS.observe(time.monotonic() - started)
        # an empty plan leaves the running one going on, unless moves of it are stranded (toward a broker
        # that died): those need the new plan's targets even when the planner wants nothing else
        if (
            flight is not None
            and planned.plan is not None
            and (not planned.plan.empty or flight.stranded or dropping)
        ):
            kept_only = dropping and planned.plan.empty and not flight.stranded
            merged = supersede.keeping_flight(planned.plan, flight, live)
            planned = replace(planned, plan=merged, tally=None, kept_only=kept_only)
        plan = planned.plan
        if plan is not None and not plan.empty:
            made = None
            if keep is not None:
                made = replace(keep, plan=plan, summary=planned.summary, loads=loads_of(snap, plan))
            planned = self._review(planned, plan, snap, inputs.intents, made)
            if made is not None:
                self.rec._kept[(meta["namespace"], meta["name"])] = replace(made, summary=planned.summary)
        self.view = replace(self.view, planned=replace(planned, rejected=rejected))

    def _review(
        self,
        planned: Planned,
        plan: Plan,
        snap: ClusterSnapshot,
        intents: Intents,
        kept: KeptPlan | None = None,
    ) -> Planned:
        """The plan where its approver can read it (handlers/plan_review.py): its blob in the record's
        store (blobs of plans no longer current pruned, the running execution's kept), the review
        ConfigMap (with ``kept``, what keeps the plan across a leader change), and
        ``status.plan.review``, measured with the intents the planner had. A failure to write them is
        told, never a reason not to plan."""
        rec, meta = self.rec, self.cluster["metadata"]

        def report() -> Report:  # the planner's tally of this plan when it made one
            found = planned.tally if planned.plan is plan else None
            return build_report(snap, plan, intents, self.limits.max_moves_per_broker, found)

        try:
            blob, data = plan_blob(plan)
            keep = {blob}
            if self.record is not None:
                keep |= {b for b in (self.record.doc.blobs.plan, self.record.doc.blobs.baseline) if b}
            self.store.prune_blobs(keep)
            self.store.put_blob(blob, data)
            review = plan_review.publish(
                rec.kube, meta["namespace"], self.cluster, plan.plan_id, report, self.limits,
                rec.leadership.fence, plan_review.kept_text(kept),
            )  # fmt: skip
        except (KubeError, PlacementError) as e:
            rec.leadership.fence()
            rec.kube.event(
                self.cluster, "Warning", "PlanReviewNotWritten", f"plan {plan.plan_id}: {e}"[:1000]
            )
            return planned
        return replace(planned, summary={**planned.summary, "review": review})

    def _start(self, a: StartExecution) -> None:
        meta = self.cluster["metadata"]
        self.rec._kept.pop((meta["namespace"], meta["name"]), None)  # executed: never kept again
        snap = self.snapshot()
        old = self.record if a.supersedes is not None else None
        done = self.record if old is None and self.record is not None else None
        left = done.doc.throttles if done is not None and not done.doc.throttles.empty else None
        if a.replaces_record and old is None:
            self.store.prune_blobs(set())  # the previous execution is over: its plan and baseline go
        record = Execution.create(
            self.store,
            a.plan,
            limits=self.limits.to_doc(),
            bootstrap_servers=self.gw.settings.bootstrap_servers,
            cluster_id=snap.cluster_id,
            rules=list(a.rules),
            participants=list(a.participants),
            plan_status=a.plan_status,
        )
        record.doc.owned_cordons = owned_cordons(snap, a.intents) if self.gw.supports_cordon() else {}
        if meta.get("uid"):  # its throttles are claimed on each broker for the KafkaCluster (throttle_claims)
            record.doc.claim_owner = ClaimOwner(
                namespace=meta["namespace"], name=meta["name"], uid=meta["uid"]
            )
        if left is not None:  # the last execution's throttles on a dead broker: this one removes them
            record.doc.throttles = left.model_copy(deep=True)
        if old is not None:  # one save replaces the running record: nothing reverted, nothing sent twice
            record.adopt(old, f"superseded for more urgent intents (plan {a.plan.plan_id})")
            record.save()
            self.store.prune_blobs({record.doc.blobs.plan})  # the superseded plan and baseline go
        else:
            record.save()
        self.started = True
        self.started_with = frozenset(a.participants)
        self.rec._publish(Decision(statuses=a.then, events=a.events))
