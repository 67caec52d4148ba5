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
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import kopf

from ..execution import executor
from ..execution.record import TERMINAL, Execution
from ..execution.safety import below_min_isr
from ..execution.store import RecordConflict
from ..kafka.connection import ConnectionSettings
from ..kafka.gateway import (
    KafkaAuthenticationError,
    KafkaAuthorizationError,
    KafkaGateway,
    KafkaUnavailableError,
)
from ..kube.gateway import KubeError, KubeGateway
from ..model.errors import BadInputError
from ..model.intents import Intent, LogDirCordon
from ..model.snapshot import ClusterSnapshot
from . import metrics
from . import status as st
from .decide import (
    CheckMinIsr,
    Decision,
    Failure,
    PlanIntents,
    RecordView,
    RequestCancel,
    StartExecution,
    StatusPatch,
    SyncCordons,
    Tick,
    View,
    decide,
)
from .fencing import FencedGateway
from .leader import Leadership, NotLeader, Unelected
from .planner import plan_cluster
from .secret_files import pem_file
from .store import ConfigMapStore

GROUP, VERSION = "kafkaplacement.io", "v1alpha1"
PLURALS = {
    "LogDirCordon": "logdircordons",
    "BrokerDecommission": "brokerdecommissions",
    "PlacementPolicy": "placementpolicies",
}
MAX_STEPS = 8  # decide/perform rounds of one reconcile (the longest path takes 4)
DEFAULT_RESYNC_S = 60.0


def fingerprint(
    cluster: Mapping[str, Any], bodies: Sequence[Mapping[str, Any]], record: Execution | None
) -> str:
    """What an idle reconcile's outcome depends on apart from Kafka: the KafkaCluster's and every intent's
    spec (and uid), and the record's phase and plan. Statuses are left out: they are this operator's."""
    h = hashlib.sha256()
    h.update(json.dumps(cluster.get("spec") or {}, sort_keys=True, default=str).encode())
    for b in bodies:
        meta = b["metadata"]
        h.update(
            json.dumps(
                [b["kind"], meta.get("uid"), b.get("spec") or {}], sort_keys=True, default=str
            ).encode()
        )
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


def connection_settings(spec: Mapping[str, Any], namespace: str, kube: KubeGateway) -> ConnectionSettings:
    """The KafkaCluster's connection (TLS/SASL material read from its Secrets; PEM as reused 0600 files)."""
    bootstrap = spec.get("bootstrapServers")
    if not isinstance(bootstrap, str) or not bootstrap:
        raise BadInputError('bootstrapServers is required ("host:port,host:port")', "spec.bootstrapServers")
    tls, sasl = spec.get("tls"), spec.get("sasl") or {}
    kw: dict[str, Any] = {}

    def pem(ref: Mapping[str, Any], key: str, where: str) -> str:
        return pem_file(secret_value(kube, namespace, ref.get("name"), key, where))

    if isinstance(tls, Mapping):
        ca = tls.get("caSecretRef")
        if ca:  # absent: the system trust store
            kw["ssl_cafile"] = pem(ca, ca.get("key", "ca.crt"), "spec.tls.caSecretRef")
        cert = tls.get("certSecretRef")
        if cert:  # mutual TLS: the client certificate and its key
            kw["ssl_certfile"] = pem(cert, cert.get("certKey", "tls.crt"), "spec.tls.certSecretRef")
            kw["ssl_keyfile"] = pem(cert, cert.get("keyKey", "tls.key"), "spec.tls.certSecretRef")
    if sasl:
        ref = sasl.get("secretRef") or {}
        where = "spec.sasl.secretRef"
        kw["sasl_mechanism"] = sasl.get("mechanism", "SCRAM-SHA-512")
        kw["username"] = secret_value(
            kube, namespace, ref.get("name"), ref.get("usernameKey", "username"), where
        )
        kw["password"] = secret_value(
            kube, namespace, ref.get("name"), ref.get("passwordKey", "password"), where
        )
    secure = tls is not None
    protocol = ("SASL_SSL" if secure else "SASL_PLAINTEXT") if sasl else ("SSL" if secure else "PLAINTEXT")
    return ConnectionSettings(bootstrap_servers=bootstrap, security_protocol=protocol, **kw)


def owned_cordons(snap: ClusterSnapshot, intents: Sequence[Intent]) -> dict[int, list[str]]:
    """broker -> the dirs declared cordoned (KIP-1066), which an execution keeps cordoned while it moves."""
    out: dict[int, list[str]] = {}
    for c in intents:
        broker = snap.broker(c.broker) if isinstance(c, LogDirCordon) else None
        if isinstance(c, LogDirCordon) and broker is not None:
            paths = broker.dir_paths if c.whole_broker else c.log_dirs
            out.setdefault(c.broker, [])
            out[c.broker] += [p for p in paths if p not in out[c.broker] and broker.dir(p) is not None]
    return {b: dirs for b, dirs in out.items() if dirs}


def limits_of(spec: Mapping[str, Any]) -> executor.Limits:
    """The executor's limits from the KafkaCluster's ``spec.limits`` and ``throttleBytesPerSecond``."""
    limits_spec = spec.get("limits") or {}
    default = executor.Limits()
    return executor.Limits(
        max_moves_per_broker=int(limits_spec.get("maxMovesPerBroker", default.max_moves_per_broker)),
        max_moves=int(limits_spec.get("maxMovesInFlight", default.max_moves)),
        max_bytes_per_broker=limits_spec.get("maxBytesPerBroker"),
        throttle=spec.get("throttleBytesPerSecond"),
        batch_seconds=int(limits_spec.get("batchSeconds", default.batch_seconds)),
        on_config_change="Pause" if limits_spec.get("onConfigChange") == "Pause" else "Reapply",
        max_reapplies=int(limits_spec.get("maxReapplies", default.max_reapplies)),
        reapply_window_s=int(limits_spec.get("reapplyWindowSeconds", default.reapply_window_s)),
    )


def record_view(record: Execution | None, reapplied_before: int | None = None) -> RecordView | None:
    """What ``decide`` needs of the record (with the progress of its last tick)."""
    if record is None:
        return None
    doc = record.doc
    return RecordView(
        phase=record.phase,
        plan_id=doc.plan_id,
        participants=frozenset(doc.participants),
        cancel_requested=doc.cancel_requested,
        plan_status=doc.plan_status,
        last_error=doc.last_error,
        progress=executor.progress(record).status_json() if reapplied_before is not None else None,
        reapplied=doc.defence.reapplied,
        reapplied_before=doc.defence.reapplied if reapplied_before is None else reapplied_before,
        reapplied_what=tuple(doc.defence.last),
    )


class Reconciler:
    """Reconciles one KafkaCluster and its intents each time it is called (stateless between calls)."""

    def __init__(
        self,
        kube: KubeGateway,
        leadership: Leadership | None = None,
        resync_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kube = kube
        self.leadership: Leadership = leadership or Unelected()
        env = os.environ.get("KP_RESYNC_SECONDS")
        self.resync_s = resync_s if resync_s is not None else float(env) if env else DEFAULT_RESYNC_S
        self.clock = clock
        # (namespace, cluster) -> (fingerprint, when) of the last full idle reconcile that settled
        self._settled: dict[tuple[str, str], tuple[str, float]] = {}

    def store(
        self, namespace: str, cluster: str, owner: Mapping[str, Any], document: str = "execution"
    ) -> ConfigMapStore:
        """The cluster's execution record (or its planning run), written only through the leader fence."""
        lead = self.leadership
        return ConfigMapStore(
            self.kube, namespace, cluster, owner, fence=lead.fence, writer=lead.identity,
            document="planning" if document == "planning" else "execution",
        )  # fmt: skip

    # ---- Kubernetes reads and writes -------------------------------------------------------------

    def cluster(self, namespace: str, name: str | None) -> dict[str, Any] | None:
        """The KafkaCluster ``name`` (None when it does not exist)."""
        return self.kube.get_custom(GROUP, VERSION, namespace, "kafkaclusters", name) if name else None

    def intents_of(self, namespace: str, cluster: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for kind, plural in PLURALS.items():
            for body in self.kube.list_custom(GROUP, VERSION, namespace, plural):
                if ((body.get("spec") or {}).get("clusterRef") or {}).get("name") == cluster:
                    body.setdefault("kind", kind)
                    out.append(body)
        return sorted(out, key=lambda b: (b["kind"], b["metadata"]["name"]))

    def set_status(self, p: StatusPatch) -> None:
        """Write one intent status (an Event when phase or message changed; nothing when unchanged)."""
        body = p.body
        old = body.get("status") or {}
        new = st.intent_status(body, p.phase, p.reason, p.message, plan=p.plan, progress=p.progress)
        self.leadership.fence()  # a stale leader neither posts Events nor overwrites the new one's status
        if old.get("phase") != p.phase or old.get("message") != p.message:
            etype = "Warning" if p.phase == st.FAILED else "Normal"
            self.kube.event(body, etype, p.reason or p.phase, p.message or p.phase)
        if all(
            old.get(k) == new.get(k) for k in ("phase", "message", "plan", "progress", "observedGeneration")
        ):
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

    # ---- one reconciliation ------------------------------------------------------------------------

    def reconcile(self, cluster: Mapping[str, Any]) -> dict[str, Any]:
        """Reconcile; returns the KafkaCluster's status patch."""
        meta, spec = cluster["metadata"], cluster.get("spec") or {}
        ns, name = meta["namespace"], meta["name"]
        bodies = [b for b in self.intents_of(ns, name) if not b["metadata"].get("deletionTimestamp")]
        conditions = (cluster.get("status") or {}).get("conditions")

        def failed(reason: str, message: str, connected: bool, phase: str = "Unreachable") -> dict[str, Any]:
            metrics.RECONCILE_ERRORS.labels(cluster=name).inc()
            failure = Failure(reason, message, connected, phase)
            d = decide(View(bodies, failure=failure, cluster_conditions=conditions))
            self._publish(d)
            return dict(d.cluster or {})

        try:
            settings = connection_settings(spec, ns, self.kube)
        except BadInputError as e:
            return failed("InvalidConnection", e.message, connected=False)
        store = self.store(ns, name, cluster)
        try:
            record = Execution.load(store)
        except BadInputError as e:  # a corrupt record: never act on it, say where it is
            return failed("CorruptExecutionRecord", e.message, connected=True)
        active = record is not None and record.phase not in TERMINAL
        where, print_ = (ns, name), fingerprint(cluster, bodies, record)
        settled = self._settled.pop(where, None)
        quiet = not active and settled is not None and settled[0] == print_
        if quiet and settled is not None and self.clock() - settled[1] < self.resync_s:
            self._settled[where] = settled  # nothing of ours changed: Kafka is re-read when the period ends
            metrics.RECONCILES.labels(cluster=name, kind="quiet").inc()
            return {}
        try:
            with FencedGateway(settings, self.leadership.fence) as gw:
                # every ACL an execution needs, checked before anything is changed (README, "Security")
                gw.check_authorized(
                    executor.work_topics(record, limits_of(spec)) if record is not None and active else (),
                    when="checked before acting: nothing was changed",
                )
                one = _Pass(self, gw, cluster, bodies, store, record, conditions)
                status = one.run()
                metrics.RECONCILES.labels(cluster=name, kind="execution" if active else "full").inc()
                if not active and one.settled:
                    self._settled[where] = (print_, self.clock())
                return status
        except NotLeader:
            raise  # the timer handler stops quietly: the leader that took over decides
        except KafkaAuthorizationError as e:  # Blocked, with a Warning Event naming the missing ACL
            return failed("KafkaNotAuthorized", e.message, True, "NotAuthorized")
        except KafkaAuthenticationError as e:
            return failed("KafkaAuthenticationFailed", e.message, connected=False)
        except KafkaUnavailableError as e:
            return failed("ClusterUnreachable", e.message, connected=False)
        except RecordConflict as e:  # another writer was first: nothing was sent; the next reconcile retries
            metrics.RECONCILE_ERRORS.labels(cluster=name).inc()
            raise kopf.TemporaryError(e.message, delay=1) from None


class _Pass:
    """One reconcile of one cluster with Kafka reachable: the view grows by what each action reads."""

    def __init__(
        self,
        rec: Reconciler,
        gw: KafkaGateway,
        cluster: Mapping[str, Any],
        bodies: list[dict[str, Any]],
        store: ConfigMapStore,
        record: Execution | None,
        conditions: Sequence[Mapping[str, Any]] | None,  # the KafkaCluster's, as the reconcile read them
    ) -> None:
        self.rec, self.gw, self.cluster, self.store, self.record = rec, gw, cluster, store, record
        self.spec: Mapping[str, Any] = cluster.get("spec") or {}
        self.view = View(bodies, record=record_view(record), cluster_conditions=conditions)
        self.snap: ClusterSnapshot | None = None
        self.in_flight = 0
        self.started = False

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
        decision = decide(self.view)
        for _ in range(MAX_STEPS):
            self.rec._publish(decision)
            for action in decision.actions:
                self._perform(action)
            if decision.done or self.started:  # a new execution's first tick is the next reconcile's
                return {**(decision.cluster or {}), **self._cluster_status()}
            decision = decide(self.view)
        raise AssertionError(f"reconcile did not settle in {MAX_STEPS} steps: {decision.actions}")

    def _cluster_status(self) -> dict[str, Any]:
        if self.snap is not None:
            return st.cluster_status(self.snap, self.in_flight)
        # an execution in flight: the brokers' dirs only (cost follows brokers x dirs, not partitions)
        _, live = self.gw.describe_cluster()
        dirs = self.gw.describe_log_dirs(live, partitions=())
        racks = {b["id"]: b.get("rack") for b in ((self.cluster.get("status") or {}).get("brokers") or [])}
        in_flight = len(self.record.doc.in_flight) if self.record is not None else 0
        return st.light_cluster_status(racks, dirs, in_flight)

    def _perform(self, action: object) -> None:
        if isinstance(action, RequestCancel):
            assert self.record is not None
            self.record.doc.cancel_requested = True  # a participating resource was deleted: revert (KIP-455)
            self.record.save()
        elif isinstance(action, Tick):
            self._tick()
        elif isinstance(action, SyncCordons):
            self._sync_cordons(action.intents)
        elif isinstance(action, PlanIntents):
            self._plan(action.resources)
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
        limits = limits_of(self.spec)
        executor.sweep(self.gw, record)
        before = record.doc.defence.reapplied
        with contextlib.suppress(BadInputError):  # the record says why (Failed, lastError): status follows
            executor.tick(self.gw, record, limits)
        if record.doc.defence.reapplied > before:
            metrics.OWNED_CONFIG_REAPPLIED.inc(record.doc.defence.reapplied - before)
        progress = executor.progress(record)
        metrics.observe_progress(
            record.doc.plan_id, limits.throttle, progress.partitions_in_flight, progress.bytes_remaining
        )
        self.view = replace(self.view, ticked=True, record=record_view(record, before))

    def _sync_cordons(self, intents: Sequence[Intent]) -> None:
        """Set ``cordoned.log.dirs`` for declared cordons on brokers that support KIP-1066."""
        snap = self.snapshot()
        wanted = owned_cordons(snap, intents)
        if not wanted or not self.gw.supports_cordon():
            return
        for b, paths in wanted.items():
            broker = snap.broker(b)
            missing = [p for p in paths if broker is not None and (d := broker.dir(p)) and not d.cordoned]
            if missing:
                self.gw.set_cordon(b, missing, True)

    def _plan(self, resources: Sequence[Mapping[str, Any]]) -> None:
        documents = [
            {"kind": b["kind"], "spec": b.get("spec") or {}, "metadata": {"name": b["metadata"]["name"]}}
            for b in resources
        ]
        meta = self.cluster["metadata"]
        runs = self.rec.store(meta["namespace"], meta["name"], self.cluster, "planning")
        started = time.monotonic()
        try:
            planned = plan_cluster(
                self.rec.kube, runs, self.cluster, self.snapshot(), documents, not self.gw.supports_cordon()
            )
        finally:
            metrics.PLANNING_SECONDS.observe(time.monotonic() - started)
        self.view = replace(self.view, planned=planned)

    def _start(self, a: StartExecution) -> None:
        snap = self.snapshot()
        if a.replaces_record:
            self.store.prune_blobs(set())  # the previous execution is over: its plan and baseline go
        record = Execution.create(
            self.store,
            a.plan,
            limits=limits_of(self.spec).to_doc(),
            bootstrap_servers=self.gw.settings.bootstrap_servers,
            cluster_id=snap.cluster_id,
            rules=list(a.rules),
            participants=list(a.participants),
            plan_status=a.plan_status,
        )
        record.doc.owned_cordons = owned_cordons(snap, a.intents) if self.gw.supports_cordon() else {}
        record.save()
        self.started = True
        self.rec._publish(a.then)
