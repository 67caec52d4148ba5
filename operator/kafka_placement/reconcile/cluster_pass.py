"""One reconcile of one cluster with Kafka reachable (``ReconcilePass``): the view grows by what each
action reads — the snapshot, the cordons synced, the plan, the execution's tick — and ``decide`` is asked
again until it has nothing left to do; healing, retiring heals, disk pressure, plan review and the
new-partition lane are performed here. The ``Reconciler`` (reconciler.py) creates one per reconcile.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..execution import copy_model, executor, supersede
from ..execution.disk import held_dirs
from ..execution.record import Execution, plan_blob, plan_blob_name
from ..execution.record_doc import TERMINAL, Phase
from ..execution.safety import below_min_isr
from ..kafka import throttle_claims
from ..kafka.gateway import (
    KafkaGateway,
    KafkaOperationError,
    KafkaUnavailableError,
)
from ..kube.gateway import KubeConflict, KubeError
from ..model.cluster_spec import ClusterSpec
from ..model.cluster_status import racks_of
from ..model.crd_parts import GROUP, PLURALS, VERSION
from ..model.errors import BadInputError, PlacementError
from ..model.intents import (
    Intents,
)
from ..model.plan import Plan
from ..model.self_healing import HealingState, SelfHealingSpec, past_failures, pressured_log_dirs
from ..model.snapshot import ClusterSnapshot
from ..model.spec_fields import to_json
from ..model.throttle_state import ClaimOwner
from ..model.windows import finish_at
from ..planning.goals.replica_placement import unmet
from ..planning.plan_keeping import KeptPlan, inputs_key, loads_of, tolerance_of
from ..planning.plan_summary import StatusSummary
from ..planning.report import Report, build_report
from ..planning.traffic_rates import with_traffic
from ..spark.collector import collector_paused
from . import healing, kafka_work, metrics, periods, plan_review, pressure, retiring
from . import status as st
from .cordons import (
    owned_cordons,
    sync_cordons,
    with_cordons,
)
from .decide import decide, execution_rules, window_bound, window_gate
from .decision import (
    CheckIntents,
    CheckMinIsr,
    Decision,
    PlanIntents,
    Planned,
    RequestCancel,
    StartExecution,
    SyncCordons,
    Tick,
    View,
)
from .inputs import MAX_STEPS, ceilings_of, planning_document, record_view
from .planner import PlanInputs, plan_cluster
from .record_store import ConfigMapStore

if TYPE_CHECKING:
    from .reconciler import Reconciler

log = logging.getLogger(__name__)


class ReconcilePass:
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
        checked: Collection[str] = (),  # topics whose ACLs the reconcile checked before this pass
    ) -> None:
        self.rec, self.gw, self.cluster, self.store, self.record = rec, gw, cluster, store, record
        self.checked = set(checked)
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
        self.kafka_work: dict[str, Any] | None = None  # status.kafkaWork an execution just measured

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
            self.rec.publish(decision)
            for action in decision.actions:
                self._perform(action)
            if decision.done or self.started:  # a new execution's first tick is the next reconcile's
                self._release_orphaned_throttles()
                measured = {"kafkaWork": self.kafka_work} if self.kafka_work is not None else {}
                return self._heal({**(decision.cluster or {}), **self._cluster_status(), **measured})
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
        racks = racks_of(self.cluster.get("status"))
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
        rec.memory(where).heal_due = None
        wakes = [t for t in (out.wake_at, pressure.wake_at) if t is not None]
        if wakes:
            rec.memory(where).heal_due = min(wakes)
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
        executor.sweep(self.gw, record)
        before = record.doc.defence.reapplied
        held_before = held_dirs(record)
        with contextlib.suppress(BadInputError):  # the record says why (Failed, lastError): status follows
            ceilings = ceilings_of(self.spec, self.cluster.get("status") or {}, self.rec.wall())
            if executor.tick(self.gw, record, self.limits, window_open=window.open, ceilings=ceilings):
                # a wave finished: fill the room now (the ACLs of topics the reconcile did not check first)
                more = executor.work_topics(record, self.limits) - self.checked
                if more:
                    when = "checked before submitting more: the moves in flight go on"
                    self.gw.check_authorized(more, when=when)
                    self.checked |= more
                record.doc.counters.refills += 1
                executor.tick(self.gw, record, self.limits, window_open=window.open, ceilings=ceilings)
        if record.phase == Phase.COMPLETED:
            self.snap = None  # the intents are checked next against a fresh read, not the one before
        if record.doc.defence.reapplied > before:
            metrics.OWNED_CONFIG_REAPPLIED.inc(record.doc.defence.reapplied - before)
        progress = executor.progress(record)
        meta = self.cluster["metadata"]
        metrics.observe_progress(
            metrics.cluster_label(meta["namespace"], meta["name"]),
            record.doc.plan_id,
            self.limits.throttle,
            progress,
        )
        metrics.observe_dirs(metrics.cluster_label(meta["namespace"], meta["name"]), record)
        metrics.observe_throttles(metrics.cluster_label(meta["namespace"], meta["name"]), record)
        bound = window_bound(self.spec.execution, self.spec.self_healing, members)
        viewed = record_view(record, before, held_before, bound)
        ended = viewed.last_execution if viewed is not None else None
        if record.phase == Phase.COMPLETED and viewed is not None:  # Kafka's work per move, measured
            self.kafka_work = kafka_work.measured(ended, viewed.plan_status)
        if record.phase == Phase.COMPLETED and ended is not None and ended.error_ratio is not None:
            metrics.ETA_ERROR.labels(metrics.cluster_label(meta["namespace"], meta["name"])).set(
                float(ended.error_ratio)
            )
        self.view = replace(self.view, ticked=True, record=viewed, window=window)

    def _sync_cordons(self, a: SyncCordons) -> None:
        """Set ``cordoned.log.dirs`` for the declared cordons and remove those only deleted resources
        declared (reconcile/cordons.py) on brokers that support KIP-1066. With an execution in flight only
        the brokers' dirs are read (``cordon_view``: its cost follows brokers x dirs), and nothing when no
        cordon is declared; else the snapshot that planning reads next, which then shows the changes."""
        self.view = replace(self.view, cordons_synced=True)
        executing = self.record is not None and self.record.phase not in TERMINAL
        full = None if executing else self.snapshot()  # planning reads it next; the status shows it
        changes = sync_cordons(self.gw, a.intents, a.released, full)
        if full is not None and changes is not None:  # Kafka shows them a moment later
            self.snap = with_cordons(full, changes)
        self.rec.released(self.cluster, a, changes)

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
        memory = rec.memory(where)
        kept, memory.kept = memory.kept, None
        if kept is None and not memory.kept_read:  # this process's first plan of the cluster
            memory.kept_read = True
            kept = self._kept_from_review(key)
        if kept is not None:
            why = kept.keep(key, loads_of(snap, kept.plan), rates_known)
            if why is None:
                try:
                    kept.plan.check_against(snap, live_only=True)
                except BadInputError as e:
                    why = e.message
                else:
                    memory.kept = kept
                    return Planned(plan=kept.plan, summary=kept.summary)
            log.info(
                "KafkaCluster %s/%s: plan %s not kept (%s): planning afresh", *where, kept.plan.plan_id, why
            )
        return KeptPlan(Plan(()), StatusSummary(), key, loads_of(snap), tolerance_of(inputs.intents))

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
            self.rec.memory((meta["namespace"], meta["name"])).kept = None
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
        if documents or flight is None:  # in-process engines: on the planner pool, off this thread
            planned = plan_cluster(
                self.rec.kube,
                runs,
                meta["namespace"],
                self.spec,
                snap,
                inputs,
                reactive,
                plans=self.rec.plans,
                cluster=meta["name"],
                key=keep.key if keep is not None else None,
            )
        else:  # only retired heals ran it: no intent is left to plan, the moves in flight are kept
            planned = Planned(plan=Plan(()), summary=StatusSummary())
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
                self.rec.memory((meta["namespace"], meta["name"])).kept = replace(
                    made, summary=planned.summary
                )
        self.view = replace(self.view, planned=replace(planned, rejected=rejected))

    def _review(
        self,
        planned: Planned,
        plan: Plan,
        snap: ClusterSnapshot,
        intents: Intents,
        kept: KeptPlan | None = None,
    ) -> Planned:
        """The plan where its approver can read it (reconcile/plan_review.py): its blob in the record's
        store (blobs of plans no longer current pruned, the running execution's kept), the review
        ConfigMap (with ``kept``, what keeps the plan across a leader change), and
        ``status.plan.review``, measured with the intents the planner had. A failure to write them is
        told, never a reason not to plan."""
        rec, meta = self.rec, self.cluster["metadata"]

        def report() -> Report:  # the planner's tally of this plan when it made one
            found = planned.tally if planned.plan is plan else None
            with collector_paused():  # (as the planner: spark.collector)
                return build_report(snap, plan, intents, self.limits.max_moves_per_broker, found)

        def estimated() -> dict[str, Any]:  # as if approved now: the execution's limits, rules, windows
            rules = execution_rules(intents.decommissions)
            ceilings = ceilings_of(self.spec, self.cluster.get("status") or {}, rec.wall())
            sides = ceilings.model_rates(b.id for b in snap.brokers) if ceilings is not None else None
            per_move = kafka_work.per_move(self.cluster.get("status"))  # (None: none measured yet)
            est = copy_model.estimate_plan(
                snap, plan, self.limits, periods.interval_s(), rules, sides, per_move
            )
            windows = window_bound(self.spec.execution, self.spec.self_healing, self.view.resources)
            return copy_model.estimate_json(est, finish_at(windows, rec.wall(), est.seconds))

        try:
            blob, data = plan_blob(plan)
            keep = {blob}
            if self.record is not None:
                keep |= {b for b in (self.record.doc.blobs.plan, self.record.doc.blobs.baseline) if b}
            self.store.prune_blobs(keep)
            self.store.put_blob(blob, data)
            review, estimate = plan_review.publish(
                rec.kube, meta["namespace"], self.cluster, plan.plan_id, report, self.limits,
                rec.leadership.fence, plan_review.kept_text(kept), make_estimate=estimated,
            )  # fmt: skip
        except (KubeError, PlacementError) as e:
            rec.leadership.fence()
            rec.kube.event(
                self.cluster, "Warning", "PlanReviewNotWritten", f"plan {plan.plan_id}: {e}"[:1000]
            )
            return planned
        return replace(planned, summary=replace(planned.summary, review=review, estimate=estimate))

    def _start(self, a: StartExecution) -> None:
        meta = self.cluster["metadata"]
        self.rec.memory((meta["namespace"], meta["name"])).kept = None  # executed: never kept again
        snap = self.snapshot()
        old = self.record if a.supersedes is not None else None
        done = self.record if old is None and self.record is not None else None
        left = done.doc.throttles if done is not None and not done.doc.throttles.empty else None
        if a.replaces_record and old is None:
            self.store.prune_blobs(set())  # the previous execution is over: its plan and baseline go
        record = Execution.create(
            self.store,
            a.plan,
            limits=self.limits,
            bootstrap_servers=self.gw.settings.bootstrap_servers,
            cluster_id=snap.cluster_id,
            rules=list(a.rules),
            participants=list(a.participants),
            plan_status=to_json(a.plan_status),
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
        self.rec.publish(Decision(statuses=a.then, events=a.events))
