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

Every write passes the leader fence (reconcile/leader.py): a process that lost the leader Lease raises
``NotLeader`` before writing anything. A record save that loses a race to another writer is retried on
the next reconcile (``RecordConflict`` raised: handlers/kafkacluster.py retries it in a second).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from ..execution import executor
from ..execution.record import Execution
from ..execution.record_doc import TERMINAL
from ..execution.store import RecordConflict
from ..kafka.connection import ConnectionSettings
from ..kafka.gateway import (
    KafkaAuthenticationError,
    KafkaAuthorizationError,
    KafkaGateway,
    KafkaOperationError,
    KafkaUnavailableError,
    KafkaUnsupportedError,
)
from ..kube.gateway import KubeGateway
from ..model.cluster_spec import CONNECTION_FIELDS, ClusterSpec, is_connection_error
from ..model.cluster_status import NewPartitionsStatus, conditions_of, new_partitions_of
from ..model.crd_parts import GROUP, INVALID, PLURALS, VERSION
from ..model.errors import BadInputError
from ..model.intent_kinds import KINDS
from ..model.intent_status import IntentStatus
from ..model.intents import (
    ClusterRef,
    Intents,
)
from ..model.spec_fields import spec_of, to_json
from ..model.traffic_looks import PartitionKey
from ..planning.traffic_rates import Traffic
from . import healing, metrics, periods, phases
from . import new_partitions as lane
from . import status as st
from .cluster_pass import ReconcilePass
from .cordons import (
    CordonChanges,
    declared_cordons,
    described,
    sync_cordons,
)
from .decide import cordon_sync, decide, parse
from .decision import CLUSTER_UNREACHABLE, Decision, Failure, StatusPatch, SyncCordons, View
from .fencing import FencedGateway
from .inputs import (
    Settled,
    connection_settings,
    fingerprint,
    heals_dead_brokers,
    limits_of,
    looked,
    planning_document,
)
from .leader import Leadership, NotLeader, Unelected
from .memory import ClusterMemory
from .plan_runs import PlanRuns
from .planner import Made
from .reading import reading
from .record_store import ConfigMapStore

log = logging.getLogger(__name__)


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
        plans: PlanRuns[Made] | None = None,
    ) -> None:
        self.kube = kube
        # the planner pool: the in-process plans run on its thread, one at a time (plan_runs.py)
        self.plans: PlanRuns[Made] = plans or PlanRuns(observe=metrics.PLANNING_SECONDS.observe)
        # a KafkaCluster -> the traffic sampler's current estimates (None: none known): planning's rates
        self.rates = rates or (lambda _cluster: None)
        # (namespace, cluster) -> what this process remembers of it between reconciles (memory.py)
        self._memory: dict[tuple[str, str], ClusterMemory] = {}
        self.leadership: Leadership = leadership or Unelected()
        self.resync_s = resync_s if resync_s is not None else periods.resync_s()
        self.clock = clock
        self.wall = wall  # self-healing's "since" and "due" times are wall-clock (kept in the status)
        # (namespace, cluster) -> uids of its intent resources being deleted whose declared cordons were
        # removed (SyncCordons): their delete handlers let them go (``uncordoned``)
        self._uncordoned: dict[tuple[str, str], set[str]] = {}

    def memory(self, where: tuple[str, str]) -> ClusterMemory:
        """What this process remembers of the cluster ``where`` (namespace, name), created on first use."""
        return self._memory.setdefault(where, ClusterMemory())

    def remembers(self, where: tuple[str, str]) -> bool:
        return where in self._memory

    def count_due(self, where: tuple[str, str]) -> bool:
        """Whether an execution's reconcile of this cluster counts the under-replicated partitions now:
        once per resync period (a Metadata request of every partition: what an idle cluster reads then)."""
        now, memory = self.clock(), self.memory(where)
        if memory.counted is not None and now - memory.counted < self.resync_s:
            return False
        memory.counted = now
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

    def released(self, cluster: Mapping[str, Any], sync: SyncCordons, changes: CordonChanges | None) -> None:
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
        for kind in KINDS:  # sorted below
            for body in self.kube.list_custom(GROUP, VERSION, namespace, PLURALS[kind]):
                if ClusterRef.name_of(body) == cluster:
                    body.setdefault("kind", kind)
                    out.append(body)
        return sorted(out, key=lambda b: (b["kind"], b["metadata"]["name"]))

    def set_status(self, p: StatusPatch) -> None:
        """Write one intent status (an Event when phase or message changed; nothing when unchanged)."""
        body = p.body
        old, stored = IntentStatus.of(body), body.get("status") or {}
        if old.unread is not None:
            name = body["metadata"]["name"]
            log.warning("%s/%s: status not read, a new one is written: %s", body["kind"], name, old.unread)
        new = st.intent_status(
            body,
            p.phase,
            p.reason,
            p.message,
            plan=p.plan,
            progress=p.progress,
            retry=p.retry,
            last_execution=p.last_execution,
        )
        self.leadership.fence()  # a stale leader neither posts Events nor overwrites the new one's status
        if old.phase != p.phase:  # what tests/e2e hold to the phase table (reconcile/phases.py)
            name = f"{body['kind']}/{body['metadata']['name']}"
            log.info(phases.LOG_TRANSITION, name, old.phase, p.phase, p.event, p.reason)
        if old.phase != p.phase or old.message != p.message:
            etype = "Warning" if p.phase == st.FAILED else "Normal"
            self.kube.event(body, etype, p.reason or p.phase, p.message or p.phase)
        took = healing.healed_in(body, old.phase, p.phase, self.wall())
        if took is not None:
            metrics.HEAL_SECONDS.labels(kind=body["kind"]).observe(took)
        if st.unchanged(stored, new):
            return
        meta = body["metadata"]
        self.kube.patch_custom_status(
            GROUP, VERSION, meta["namespace"], PLURALS[body["kind"]], meta["name"], new
        )

    def publish(self, d: Decision | Sequence[StatusPatch]) -> None:
        statuses = d if not isinstance(d, Decision) else d.statuses
        for p in statuses:
            self.set_status(p)
        if isinstance(d, Decision):
            for n in d.events:
                self.leadership.fence()
                self.kube.event(n.body, n.type, n.reason, n.message)

    def release(self, cluster: Mapping[str, Any]) -> str | None:
        """A KafkaCluster being deleted: the cordons of its intent resources deleted with it are removed as
        a reconcile would (``SyncCordons``: no reconcile runs any more), then its execution is cancelled and
        the cancel driven to its end (moves in flight reverted, their replica order restored, the throttles
        it set removed), so nothing the operator set in Kafka outlives the resources (its record, a
        ConfigMap it owns, goes with it). The cordons go first: Kafka 4.4 refuses any reassignment naming a
        broker whose every dir is cordoned, the reorder that puts a decommissioned broker's replicas back
        in their order too. One tick per call: returns None when nothing is left, else what is still to do
        (the caller calls again). A cluster with no record, or a finished one holding nothing, and no
        intent being deleted with a cordon, is not contacted."""
        left = self._uncordon_leaving(cluster)
        left = left if left is not None else (self._cancel(cluster) or self._cancel(cluster, "lane"))
        if left is None:  # nothing of the cluster stays in memory either (a namesake starts afresh)
            where = (cluster["metadata"]["namespace"], cluster["metadata"]["name"])
            self._memory.pop(where, None)
            self.plans.forget(where)
        return left

    def _cancel(
        self,
        cluster: Mapping[str, Any],
        document: Literal["execution", "lane"] = "execution",
        *,
        requested: bool = False,
    ) -> str | None:
        """One tick of cancelling the cluster's execution (``requested``: only one whose cancel was asked
        for, by the deletion of a resource taking part); None once nothing of it is left in Kafka."""
        meta = cluster["metadata"]
        store = self.store(meta["namespace"], meta["name"], cluster, document)
        try:
            record = Execution.load(store)
        except BadInputError:
            return None  # a corrupt record is never acted on: nothing can be cancelled from it
        if record is None or (record.phase in TERMINAL and record.doc.throttles.empty):
            return None
        if requested and not record.doc.cancel_requested:
            return None
        try:
            settings = self._connection(cluster)
        except BadInputError as e:  # e.g. its Secret deleted first: retried until the caller gives up
            return f"cannot reach Kafka to cancel plan {record.doc.plan_id}: {e.message}"
        try:  # the spec's limits and throttle; the record's own when another field of the spec is invalid
            limits = limits_of(ClusterSpec.of(cluster))
        except BadInputError:
            limits = record.doc.limits
        if record.phase not in TERMINAL and not record.doc.cancel_requested:
            record.doc.cancel_requested = True
            record.save()
        try:
            with FencedGateway(settings, self.leadership.fence) as gw:
                executor.tick(gw, record, limits)
        except (KafkaUnavailableError, KafkaAuthorizationError, KafkaAuthenticationError) as e:
            return f"cancelling plan {record.doc.plan_id} before the cluster goes: {e.message}"
        if record.phase in TERMINAL and record.doc.throttles.empty:
            return None
        return f"cancelling plan {record.doc.plan_id} before the cluster goes: executor phase {record.phase}"

    def _connection(self, cluster: Mapping[str, Any]) -> ConnectionSettings:
        """The KafkaCluster's connection settings from its connection fields alone (``CONNECTION_FIELDS``):
        what cleanup needs, so an invalid window, throttle or other field never keeps the operator from
        removing what it set in Kafka. ``BadInputError`` when they are invalid (or a Secret is missing)."""
        raw = spec_of(cluster)
        fields = {k: raw[k] for k in CONNECTION_FIELDS if k in raw} if isinstance(raw, Mapping) else raw
        spec = ClusterSpec.parse(fields)
        return connection_settings(spec, cluster["metadata"]["namespace"], self.kube)

    def _uncordon_leaving(
        self, cluster: Mapping[str, Any], listed: Sequence[Mapping[str, Any]] | None = None
    ) -> str | None:
        """Remove the cordons only the cluster's intent resources being deleted declared (``listed``: its
        intent resources, read when not given); None when done, else why not yet."""
        meta = cluster["metadata"]
        if listed is None:
            listed = self.intents_of(meta["namespace"], meta["name"])
        leaving = self._leaving(meta["namespace"], meta["name"], listed)
        live, _ = parse([b for b in listed if not b["metadata"].get("deletionTimestamp")])
        sync = cordon_sync([i for _, i in live], leaving)
        changes = None
        if declared_cordons(sync.released):
            names = ", ".join(f"{b['kind']}/{b['metadata']['name']}" for b in leaving)
            try:
                settings = self._connection(cluster)
                with FencedGateway(settings, self.leadership.fence) as gw:
                    changes = sync_cordons(gw, sync.intents, sync.released, setting=False)
            except BadInputError as e:
                return f"cannot reach Kafka to remove the cordons of {names}: {e.message}"
            except KafkaUnsupportedError:  # never sent anything to brokers without the APIs we need
                changes = None
            except (
                KafkaUnavailableError,
                KafkaAuthorizationError,
                KafkaAuthenticationError,
                KafkaOperationError,
            ) as e:
                return f"removing the cordons of {names} before the cluster goes: {e.message}"
        self.released(cluster, sync, changes)
        return None

    # ---- one reconciliation ------------------------------------------------------------------------

    def reconcile(self, cluster: Mapping[str, Any]) -> dict[str, Any]:
        """Reconcile; returns the KafkaCluster's status patch (checked against its declaration)."""
        status = self._reconcile(cluster)
        problem = st.patch_problem(status)
        if problem is not None:
            meta = cluster["metadata"]
            log.error(
                "KafkaCluster %s/%s: the status breaks its schema: %s",
                meta["namespace"],
                meta["name"],
                problem,
            )
        return status

    def _reconcile(self, cluster: Mapping[str, Any]) -> dict[str, Any]:
        """The spec is parsed once, here, and handed down (connection, executor limits, planner,
        self-healing)."""
        meta = cluster["metadata"]
        ns, name = meta["namespace"], meta["name"]
        label = metrics.cluster_label(ns, name)
        listed = self.intents_of(ns, name)
        bodies = [b for b in listed if not b["metadata"].get("deletionTimestamp")]
        leaving = self._leaving(ns, name, listed)  # their cordons are removed by this reconcile's sync
        conditions = conditions_of(cluster.get("status"))

        def failed(reason: str, message: str, connected: bool, phase: str = st.UNREACHABLE) -> dict[str, Any]:
            metrics.RECONCILE_ERRORS.labels(cluster=label).inc()
            self.memory((ns, name)).settled = None  # the next reconcile reads Kafka whole, decides afresh
            failure = Failure(reason, message, connected, phase)
            d = decide(View(bodies, failure=failure, cluster_conditions=conditions, now=time.time()))
            self.publish(d)
            out = dict(d.cluster or {})  # self-healing decides nothing without Kafka: its condition stays
            kept = st.kept_condition(out.get("conditions") or [], conditions, st.SELF_HEALING)
            if reason == CLUSTER_UNREACHABLE:  # no broker answered: one condition says so, none is dead
                unreached = (False, reason, f"no broker answers the operator: {message}")
                kept = st.with_condition(kept, conditions, st.BROKERS_REACHABLE, unreached)
            else:
                kept = st.kept_condition(kept, conditions, st.BROKERS_REACHABLE)
            out["conditions"] = kept
            return out

        try:
            spec = ClusterSpec.of(cluster)
        except BadInputError as e:  # the CRD's validation refuses most (the same schema), not all
            return self._invalid(cluster, listed, leaving, conditions, e, failed)
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
        waiting = new_partitions_of(cluster.get("status"))
        lane_plan = (
            waiting.plan_id if waiting is not None and waiting.phase == lane.AWAITING_APPROVAL else None
        )
        where, print_ = (ns, name), fingerprint(cluster, bodies, record, lane_plan)
        memory = self.memory(where)
        settled, memory.settled = memory.settled, None
        due = memory.heal_due
        read = reading(
            fingerprint=print_,
            settled_fingerprint=settled.fingerprint if settled is not None else None,
            settled_age_s=self.clock() - settled.at if settled is not None else 0.0,
            resync_s=self.resync_s,
            active=active,
            leaving=bool(leaving),
            lane_active=lane_active,
            heal_due=due is not None and self.wall() >= due,
            heals_dead_brokers=heals_dead_brokers(spec),
            lane_enforced=lambda: lane.enforced(bodies),
        )
        quiet, lane_only, watch_live = read.quiet, read.lane_only, read.watch_live
        if read.keep_settled:
            memory.settled = settled
        if read.skip:
            metrics.RECONCILES.labels(cluster=label, kind="quiet").inc()
            return {}
        try:
            with FencedGateway(settings, self.leadership.fence) as gw:
                if watch_live and settled is not None and not looked(gw, settled):
                    memory.settled = None  # a broker died or returned: read Kafka whole now
                    quiet, lane_only = False, lane_active and not active
                if quiet:
                    metrics.RECONCILES.labels(cluster=label, kind="quiet").inc()
                if lane_only:
                    return self._lane(
                        gw, cluster, limits, bodies, record, lane_store, lane_record, full=False
                    )
                # every ACL an execution needs, checked before anything is changed (README, "Security")
                checked = executor.work_topics(record, limits) if record is not None and active else set()
                gw.check_authorized(checked, when="checked before acting: nothing was changed")
                one = ReconcilePass(
                    self, gw, cluster, spec, limits, bodies, leaving, store, record, conditions, checked
                )
                status = one.run()
                if one.snap is not None:  # the full re-plan covered every partition of it
                    memory.watch.saw_snapshot(one.snap)
                    if waiting is not None and waiting.phase in lane.WAITING:
                        status["newPartitions"] = to_json(lane.left_to_replan(waiting))
                status |= self._lane(
                    gw, cluster, limits, bodies, record, lane_store, lane_record, full=one.snap is not None
                )
                metrics.RECONCILES.labels(cluster=label, kind="execution" if active else "full").inc()
                if not active and one.settled:
                    memory.settled = Settled(print_, self.clock(), one.live_brokers())
                return status
        except NotLeader:
            raise  # the timer handler stops quietly: the leader that took over decides
        except KafkaAuthorizationError as e:  # Blocked, with a Warning Event naming the missing ACL
            return failed("KafkaNotAuthorized", e.message, True, st.NOT_AUTHORIZED)
        except KafkaUnsupportedError as e:  # brokers without an API we need: nothing planned nor sent
            if (cluster.get("status") or {}).get("phase") != st.UNSUPPORTED:
                self.leadership.fence()
                self.kube.event(cluster, "Warning", e.reason, e.message)
            return failed(e.reason, e.message, True, st.UNSUPPORTED)
        except KafkaAuthenticationError as e:
            return failed("KafkaAuthenticationFailed", e.message, connected=False)
        except KafkaUnavailableError as e:
            return failed(CLUSTER_UNREACHABLE, e.message, connected=False)
        except RecordConflict:  # another writer was first: nothing was sent; the handler retries it
            metrics.RECONCILE_ERRORS.labels(cluster=label).inc()
            raise

    def _invalid(
        self,
        cluster: Mapping[str, Any],
        listed: Sequence[Mapping[str, Any]],
        leaving: Sequence[Mapping[str, Any]],
        conditions: Sequence[Mapping[str, Any]],
        e: BadInputError,
        failed: Callable[..., dict[str, Any]],
    ) -> dict[str, Any]:
        """The spec does not parse: phase ``Invalid`` with the field named (the Ready condition, a Warning
        Event when it becomes so or the message changes, not at every reconcile); nothing is planned and
        no execution goes on. The cordons of intent resources being deleted are still removed (only the
        connection fields are needed for that), so an invalid window or throttle never holds up their
        deletion; so is an execution whose cancel was asked for (a resource taking part deleted): its moves
        reverted, its throttles removed. Any other execution waits, its moves in flight going on in Kafka."""
        reason = "InvalidConnection" if is_connection_error(e) else "InvalidSpec"
        meta = cluster["metadata"]
        try:
            left = self._uncordon_leaving(cluster, listed) if leaving else None
            cancelling = self._cancel(cluster, requested=True)
        except (KafkaUnsupportedError, KafkaOperationError, RecordConflict) as error:
            left, cancelling = error.message, None  # the next reconcile tries again
        for what in (left, cancelling):
            if what is not None:
                log.info("KafkaCluster %s/%s (invalid spec): %s", meta["namespace"], meta["name"], what)
        ready = next((c for c in conditions if c.get("type") == st.READY), {})
        said = (ready.get("reason"), ready.get("message")) == (reason, e.message)
        if not said or (cluster.get("status") or {}).get("phase") != INVALID:
            self.leadership.fence()
            self.kube.event(cluster, "Warning", reason, e.message)
        out: dict[str, Any] = failed(reason, e.message, False, INVALID)
        return out

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
        """One step of the new-partition lane (reconcile/new_partitions.py): tick its execution in flight;
        else (and unless this reconcile read the whole cluster) look at the partition counts, and plan the
        new partitions that break a rule, starting their execution when approved. Returns the
        KafkaCluster's ``status.newPartitions`` (nothing when the lane has nothing to say)."""
        meta = cluster["metadata"]
        where = (meta["namespace"], meta["name"])
        previous = new_partitions_of(cluster.get("status"))
        unthrottled = limits.model_copy(update={"throttle": None, "max_bytes_per_broker": None})
        shown: NewPartitionsStatus | None = None
        if record is not None and record.phase not in TERMINAL:
            with contextlib.suppress(BadInputError):  # the record says why (Failed, lastError)
                executor.tick(gw, record, unthrottled, scoped=True)
            shown = lane.record_status(record)
            if record.phase not in TERMINAL:
                return {"newPartitions": to_json(shown)}
        watch = self.memory(where).watch
        valid, _ = parse(bodies)
        enforced = [(b, i) for b, i in valid if lane.is_enforced(i)]
        started = self.clock()
        if full or not enforced or not watch.due(started):  # paced by the looks' own cost (Watch)
            return _lane_status(shown)
        watch.look(gw.partition_counts())
        watch.paced(started, self.clock())
        if not watch.pending:
            return _lane_status(shown)
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
                limits=unthrottled,
                bootstrap_servers=gw.settings.bootstrap_servers,
                cluster_id=snap.cluster_id,
                participants=list(out.participants),
            )
            new.save()
            metrics.LANE_PLANS.labels(cluster=metrics.cluster_label(meta["namespace"], meta["name"])).inc()
        if out.status is not None and out.status.phase in (lane.WATCHING, lane.EXECUTING):
            watch.pending.clear()  # placed, planned, or left to the full re-plan (large, or in its plan)
        return _lane_status(
            out.status if out.status is not None and out.status.phase != lane.WATCHING else shown
        )


def _lane_status(shown: NewPartitionsStatus | None) -> dict[str, Any]:
    """The KafkaCluster status patch of the lane: its ``status.newPartitions``, or nothing to say."""
    return {} if shown is None else {"newPartitions": to_json(shown)}
