"""Per-cluster reconciliation: all active intents of a KafkaCluster, one plan, approval, executor ticks.

Called periodically for each KafkaCluster (docs/architecture.md, "Data flow"): gather every intent
resource whose ``clusterRef`` names it, then either drive the execution in flight (one stateless executor
tick from the record in the cluster's ConfigMaps, reading only what the tick needs, and the cluster's
status from its brokers' dirs) or snapshot Kafka, plan all intents together, gate the plan on approval,
and start executing exactly the approved plan. Every intent resource's status is written here; Events
are posted on phase changes; a save that loses a race to another writer is retried on the next reconcile.
Every write (record saves, Kafka changes, intent statuses) passes the leader fence (handlers/leader.py):
a process that lost the leader Lease raises ``NotLeader`` before writing anything.
"""

from __future__ import annotations

import base64
import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import kopf
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ..execution import executor
from ..execution.record import TERMINAL, Execution, Phase, Rule
from ..execution.safety import below_min_isr
from ..execution.store import RecordConflict
from ..kafka.connection import ConnectionSettings
from ..kafka.gateway import (
    KafkaAuthenticationError,
    KafkaAuthorizationError,
    KafkaGateway,
    KafkaUnavailableError,
    LogDirInfo,
)
from ..model.errors import BadInputError, InfeasibleError, PlacementError
from ..model.intents import (
    BrokerDecommission,
    Intent,
    Intents,
    LogDirCordon,
    PlacementPolicy,
    parse_spec,
)
from ..model.snapshot import ClusterSnapshot
from . import metrics
from . import status as st
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
EXECUTOR_TO_PHASE = {
    Phase.COMPLETED: st.COMPLETED,
    Phase.CANCELLED: st.CANCELLED,
    Phase.FAILED: st.FAILED,
    Phase.PAUSED: st.PAUSED,
}

EventFn = Callable[[Mapping[str, Any], str, str, str], None]


@dataclass
class Apis:
    custom: client.CustomObjectsApi
    core: client.CoreV1Api


def connection_settings(
    spec: Mapping[str, Any], namespace: str, core: client.CoreV1Api
) -> ConnectionSettings:
    """The KafkaCluster's connection (TLS/SASL material read from its Secrets)."""
    bootstrap = spec.get("bootstrapServers")
    if not isinstance(bootstrap, str) or not bootstrap:
        raise BadInputError('bootstrapServers is required ("host:port,host:port")', "spec.bootstrapServers")
    tls, sasl = spec.get("tls"), spec.get("sasl") or {}
    kw: dict[str, Any] = {}
    if isinstance(tls, Mapping):
        ca = tls.get("caSecretRef")
        if ca:  # absent: the system trust store
            kw["ssl_cafile"] = _secret_file(
                core, namespace, ca.get("name"), ca.get("key", "ca.crt"), "spec.tls.caSecretRef"
            )
        cert = tls.get("certSecretRef")
        if cert:  # mutual TLS: the client certificate and its key
            where = "spec.tls.certSecretRef"
            kw["ssl_certfile"] = _secret_file(
                core, namespace, cert.get("name"), cert.get("certKey", "tls.crt"), where
            )
            kw["ssl_keyfile"] = _secret_file(
                core, namespace, cert.get("name"), cert.get("keyKey", "tls.key"), where
            )
    if sasl:
        ref = sasl.get("secretRef") or {}
        kw["sasl_mechanism"] = sasl.get("mechanism", "SCRAM-SHA-512")
        kw["username"] = _secret_value(
            core, namespace, ref.get("name"), ref.get("usernameKey", "username"), "spec.sasl.secretRef"
        )
        kw["password"] = _secret_value(
            core, namespace, ref.get("name"), ref.get("passwordKey", "password"), "spec.sasl.secretRef"
        )
    secure = tls is not None
    protocol = ("SASL_SSL" if secure else "SASL_PLAINTEXT") if sasl else ("SSL" if secure else "PLAINTEXT")
    return ConnectionSettings(bootstrap_servers=bootstrap, security_protocol=protocol, **kw)


def _secret_value(core: client.CoreV1Api, ns: str, name: str | None, key: str, where: str) -> str:
    if not name:
        raise BadInputError("a Secret name is required", f"{where}.name")
    try:
        secret = core.read_namespaced_secret(name, ns)
    except ApiException as e:
        raise BadInputError(f"cannot read Secret {ns}/{name}: {e.reason}", where) from None
    raw = (secret.data or {}).get(key)
    if raw is None:
        raise BadInputError(f"Secret {ns}/{name} has no key '{key}'", where)
    return base64.b64decode(raw).decode()


def _secret_file(core: client.CoreV1Api, ns: str, name: str | None, key: str, where: str) -> str:
    """A Secret's PEM value as a file: one 0600 file per content, reused by every reconcile."""
    return pem_file(_secret_value(core, ns, name, key, where))


def cluster_status(snap: ClusterSnapshot, in_flight: int) -> dict[str, Any]:
    used: dict[tuple[int, str], int] = {}
    for p in snap.partitions:
        for b, d in zip(p.replicas, p.log_dirs, strict=True):
            if d is not None:
                used[(b, d)] = used.get((b, d), 0) + p.size_bytes
    return {
        "brokers": [
            {
                "id": b.id,
                "rack": b.rack,
                "logDirs": [
                    {
                        "path": d.path,
                        "usedBytes": used.get((b.id, d.path), 0),
                        "totalBytes": d.total_bytes,
                        "usableBytes": d.usable_bytes,
                        "cordoned": d.cordoned,
                        "online": d.online,
                    }
                    for d in b.log_dirs
                ],
            }
            for b in snap.brokers
        ],
        "reassignmentsInFlight": in_flight,
    }


def light_cluster_status(
    racks: Mapping[int, str | None], dirs: Mapping[int, tuple[LogDirInfo, ...]], in_flight: int
) -> dict[str, Any]:
    """The KafkaCluster status from DescribeLogDirs without replicas (cost follows brokers x dirs): used
    bytes are the disk's (total - usable), as Kafka reports them."""
    return {
        "brokers": [
            {
                "id": b,
                "rack": racks.get(b),
                "logDirs": [
                    {
                        "path": d.path,
                        "usedBytes": max(d.total_bytes - d.usable_bytes, 0),
                        "totalBytes": max(d.total_bytes, 0),
                        "usableBytes": max(d.usable_bytes, 0),
                        "cordoned": bool(d.cordoned),
                        "online": d.online,
                    }
                    for d in dirs.get(b, ())
                ],
            }
            for b in sorted(dirs)
        ],
        "reassignmentsInFlight": in_flight,
    }


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


def execution_rules(intents: Sequence[Intent]) -> list[Rule]:
    """Per-decommission priority and throttle for the executor (moves off those brokers)."""
    return [
        Rule(
            name=f"BrokerDecommission/{i.name}"[:300],
            brokers=list(i.brokers),
            priority=i.priority,
            throttle=i.throttle_bytes_per_sec,
        )
        for i in intents
        if isinstance(i, BrokerDecommission) and (i.priority or i.throttle_bytes_per_sec)
    ]


class Reconciler:
    """Reconciles one KafkaCluster and its intents each time it is called (stateless between calls)."""

    def __init__(self, apis: Apis, event: EventFn, leadership: Leadership | None = None) -> None:
        self.apis, self.event = apis, event
        self.leadership: Leadership = leadership or Unelected()

    def store(self, namespace: str, cluster: str, owner: Mapping[str, Any]) -> ConfigMapStore:
        """The cluster's execution record, written only through the leader fence."""
        lead = self.leadership
        return ConfigMapStore(
            self.apis.core, namespace, cluster, owner, fence=lead.fence, writer=lead.identity
        )

    # ---- Kubernetes access -----------------------------------------------------------------------

    def cluster(self, namespace: str, name: str | None) -> dict[str, Any] | None:
        """The KafkaCluster ``name`` (None when it does not exist)."""
        if not name:
            return None
        try:
            found: dict[str, Any] = self.apis.custom.get_namespaced_custom_object(  # type: ignore[assignment]
                GROUP, VERSION, namespace, "kafkaclusters", name
            )
        except ApiException as e:
            if e.status == 404:
                return None
            raise
        return found

    def intents_of(self, namespace: str, cluster: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for kind, plural in PLURALS.items():
            listed: dict[str, Any] = self.apis.custom.list_namespaced_custom_object(  # type: ignore[assignment]
                GROUP, VERSION, namespace, plural
            )
            items = listed["items"]
            for body in items:
                if ((body.get("spec") or {}).get("clusterRef") or {}).get("name") == cluster:
                    body.setdefault("kind", kind)
                    out.append(body)
        return sorted(out, key=lambda b: (b["kind"], b["metadata"]["name"]))

    def set_status(self, body: Mapping[str, Any], phase: str, reason: str, message: str, **kw: Any) -> None:
        old = body.get("status") or {}
        new = st.intent_status(body, phase, reason, message, **kw)
        self.leadership.fence()  # a stale leader neither posts Events nor overwrites the new one's status
        if old.get("phase") != phase or old.get("message") != message:
            self.event(body, "Warning" if phase == st.FAILED else "Normal", reason or phase, message or phase)
        if all(
            old.get(k) == new.get(k) for k in ("phase", "message", "plan", "progress", "observedGeneration")
        ):
            return
        meta = body["metadata"]
        try:
            self.apis.custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, meta["namespace"], PLURALS[body["kind"]], meta["name"], {"status": new}
            )
        except ApiException as e:
            if e.status != 404:  # deleted meanwhile
                raise

    # ---- one reconciliation ------------------------------------------------------------------------

    def reconcile(self, cluster: Mapping[str, Any]) -> dict[str, Any]:
        """Reconcile; returns the KafkaCluster's status patch."""
        meta, spec = cluster["metadata"], cluster.get("spec") or {}
        ns, name = meta["namespace"], meta["name"]
        bodies = [b for b in self.intents_of(ns, name) if not b["metadata"].get("deletionTimestamp")]
        try:
            settings = connection_settings(spec, ns, self.apis.core)
        except BadInputError as e:
            return self._unreachable(bodies, "InvalidConnection", e.message, connected=False)
        store = self.store(ns, name, cluster)
        try:
            record = Execution.load(store)
        except BadInputError as e:  # a corrupt record: never act on it, say where it is
            metrics.RECONCILE_ERRORS.labels(cluster=name).inc()
            return self._unreachable(bodies, "CorruptExecutionRecord", e.message, connected=True)
        try:
            with FencedGateway(settings, self.leadership.fence) as gw:
                # every ACL an execution needs, checked before anything is changed (README, "Security")
                active = record is not None and record.phase not in TERMINAL
                gw.check_authorized(
                    {t.topic for t in record.plan.plan.partitions} if record is not None and active else (),
                    when="checked before acting: nothing was changed",
                )
                return self._with_kafka(gw, cluster, bodies, store, record)
        except NotLeader:
            raise  # the timer handler stops quietly: the leader that took over decides
        except KafkaAuthorizationError as e:  # Blocked, with a Warning Event naming the missing ACL
            metrics.RECONCILE_ERRORS.labels(cluster=name).inc()
            return self._unreachable(bodies, "KafkaNotAuthorized", e.message, True, "NotAuthorized")
        except KafkaAuthenticationError as e:
            metrics.RECONCILE_ERRORS.labels(cluster=name).inc()
            return self._unreachable(bodies, "KafkaAuthenticationFailed", e.message, connected=False)
        except KafkaUnavailableError as e:
            metrics.RECONCILE_ERRORS.labels(cluster=name).inc()
            return self._unreachable(bodies, "ClusterUnreachable", e.message, connected=False)
        except RecordConflict as e:  # another writer was first: nothing was sent; the next reconcile retries
            metrics.RECONCILE_ERRORS.labels(cluster=name).inc()
            raise kopf.TemporaryError(e.message, delay=1) from None

    def _unreachable(
        self,
        bodies: list[dict[str, Any]],
        reason: str,
        message: str,
        connected: bool,
        phase: str = "Unreachable",
    ) -> dict[str, Any]:
        for b in bodies:
            if (b.get("status") or {}).get("phase") not in (st.COMPLETED,):
                self.set_status(b, st.FAILED, reason, message)
        return {
            "phase": phase,
            "conditions": st.merge_conditions(
                None,
                {"Ready": (connected, reason, message), "Degraded": (True, reason, message)},
                st.CLUSTER_CONDITION_TYPES,
            ),
        }

    def _parse(self, bodies: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Intent]]:
        valid: list[tuple[dict[str, Any], Intent]] = []
        for b in bodies:
            where = f"{b['kind']} {b['metadata']['name']}: spec"
            try:
                valid.append((b, parse_spec(b["kind"], b.get("spec") or {}, where, b["metadata"]["name"])))
            except BadInputError as e:
                self.set_status(b, st.FAILED, "InvalidSpec", e.message)
        return valid

    def _with_kafka(
        self,
        gw: KafkaGateway,
        cluster: Mapping[str, Any],
        bodies: list[dict[str, Any]],
        store: ConfigMapStore,
        record: Execution | None,
    ) -> dict[str, Any]:
        spec = cluster.get("spec") or {}
        valid = self._parse(bodies)
        ready = st.merge_conditions(
            None,
            {"Ready": (True, "Connected", "Kafka answered"), "Degraded": (False, "Connected", "")},
            st.CLUSTER_CONDITION_TYPES,
        )
        if record is not None and record.phase not in TERMINAL:
            # one read of what the execution needs; the cluster status from brokers and dirs only
            self._drive(gw, valid, record, self._limits(spec))
            _, live = gw.describe_cluster()
            dirs = gw.describe_log_dirs(live, partitions=())
            racks = {b["id"]: b.get("rack") for b in ((cluster.get("status") or {}).get("brokers") or [])}
            status = light_cluster_status(racks, dirs, len(record.doc.in_flight))
            return {"phase": "Connected", **status, "conditions": ready}
        snap = gw.snapshot()
        in_flight = len(gw.list_reassignments())
        self._sync_cordons(gw, snap, [i for _, i in valid])
        self._plan(gw, cluster, snap, valid, store, record)
        return {"phase": "Connected", **cluster_status(snap, in_flight), "conditions": ready}

    @staticmethod
    def _limits(spec: Mapping[str, Any]) -> executor.Limits:
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

    def _drive(
        self,
        gw: KafkaGateway,
        valid: list[tuple[dict[str, Any], Intent]],
        record: Execution,
        limits: executor.Limits,
    ) -> None:
        uids = set(record.doc.participants)
        members = [b for b, _ in valid if b["metadata"]["uid"] in uids]
        if len(members) < len(uids) and not record.doc.cancel_requested:
            record.doc.cancel_requested = True  # a participating resource was deleted: revert (KIP-455)
            record.save()
        if any((b.get("spec") or {}).get("paused") for b in members) and not record.doc.cancel_requested:
            for b in members:
                self.set_status(
                    b,
                    st.PAUSED,
                    "PausedBySpec",
                    "spec.paused is true; no new moves are submitted",
                    plan=record.doc.plan_status,
                )
            return
        executor.sweep(gw, record)
        reapplied = record.doc.defence.reapplied
        with contextlib.suppress(BadInputError):  # the record says why (Failed, lastError): status below
            executor.tick(gw, record, limits)
        if record.doc.defence.reapplied > reapplied:
            metrics.OWNED_CONFIG_REAPPLIED.inc(record.doc.defence.reapplied - reapplied)
            for b in members:
                self.event(
                    b,
                    "Warning",
                    "OwnedConfigChanged",
                    "re-applied configs this execution owns, changed by another party "
                    f"({record.doc.defence.reapplied} times so far): " + "; ".join(record.doc.defence.last),
                )
        progress = executor.progress(record)
        metrics.observe_progress(
            record.doc.plan_id, limits.throttle, progress.partitions_in_flight, progress.bytes_remaining
        )
        prog = progress.status_json()
        phase = EXECUTOR_TO_PHASE.get(record.phase, st.EXECUTING)
        message = record.doc.last_error or f"executor phase {record.phase}"
        if phase == st.COMPLETED:
            message = f"plan {record.doc.plan_id} executed and checked against the live cluster"
        for b in members:
            self.set_status(b, phase, str(record.phase), message, plan=record.doc.plan_status, progress=prog)

    def _sync_cordons(self, gw: KafkaGateway, snap: ClusterSnapshot, intents: list[Intent]) -> None:
        """Set ``cordoned.log.dirs`` for declared cordons on brokers that support KIP-1066."""
        wanted = owned_cordons(snap, intents)
        if not wanted or not gw.supports_cordon():
            return
        for b, paths in wanted.items():
            broker = snap.broker(b)
            missing = [p for p in paths if broker is not None and (d := broker.dir(p)) and not d.cordoned]
            if missing:
                gw.set_cordon(b, missing, True)

    def _plan(
        self,
        gw: KafkaGateway,
        cluster: Mapping[str, Any],
        snap: ClusterSnapshot,
        valid: list[tuple[dict[str, Any], Intent]],
        store: ConfigMapStore,
        last: Execution | None,
    ) -> None:
        if not valid:
            return
        spec = cluster.get("spec") or {}
        for b, _ in valid:
            if (b.get("status") or {}).get("phase") in (None, st.PENDING):
                self.set_status(b, st.PLANNING, "Planning", "planning with all active intents of the cluster")
        documents = [
            {"kind": b["kind"], "spec": b.get("spec") or {}, "metadata": {"name": b["metadata"]["name"]}}
            for b, _ in valid
        ]
        intents = Intents.from_documents(documents)
        intents = intents.with_reactive_cordon(not gw.supports_cordon())  # Kafka < 4.3: no KIP-1066
        started = time.monotonic()
        try:
            result = plan_cluster(self.apis.custom.api_client, cluster, snap, intents, documents)
        except InfeasibleError as e:
            for b, _ in valid:
                self.set_status(b, st.FAILED, "Infeasible", e.message)
            return
        except BadInputError as e:
            for b, _ in valid:
                self.set_status(b, st.FAILED, "InvalidInput", e.message)
            return
        except PlacementError as e:
            for b, _ in valid:
                self.set_status(b, st.FAILED, e.reason, e.message)
            return
        finally:
            metrics.PLANNING_SECONDS.observe(time.monotonic() - started)
        plan, summary = result.plan, result.summary
        plan_status = st.plan_status(summary, plan.plan_id)
        # Advise-mode policies only report: they take no part in the plan, its approval or its execution.
        advisors = [b for b, i in valid if isinstance(i, PlacementPolicy) and not i.enforced]
        for b in advisors:
            self.set_status(
                b, st.COMPLETED, "Advised", st.advice_message(summary), plan=st.advice_plan_status(summary)
            )
        valid = [(b, i) for b, i in valid if b not in advisors]
        if plan.empty:
            # the last execution's plan and progress stay shown until a new plan replaces them
            shown = (
                last.doc.plan_status if last is not None and last.phase == Phase.COMPLETED else plan_status
            )
            executed = f"plan {last.doc.plan_id} executed; " if shown is not plan_status and last else ""
            for b, _ in valid:
                self.set_status(
                    b,
                    st.COMPLETED,
                    "Converged",
                    f"converged: {executed}the placement matches every declared intent",
                    plan=shown,
                    progress=(b.get("status") or {}).get("progress") if executed else None,
                )
            return
        manual = [b for b, _ in valid if (b.get("spec") or {}).get("approval") == "Manual"]
        unapproved = [b for b in manual if (b.get("spec") or {}).get("approvedPlan") != plan.plan_id]
        if unapproved:
            names = ", ".join(f"{b['kind']}/{b['metadata']['name']}" for b in unapproved)
            for b, _ in valid:
                msg = (
                    f"plan {plan.plan_id} ({plan_status['moves']} partitions, {plan_status['bytes']} bytes) "
                    f"awaits approval: set spec.approvedPlan: {plan.plan_id} on {names}"
                )
                self.set_status(b, st.AWAITING_APPROVAL, "AwaitingApproval", msg, plan=plan_status)
            return
        if any((b.get("spec") or {}).get("paused") for b, _ in valid):
            for b, _ in valid:
                self.set_status(b, st.PAUSED, "PausedBySpec", "spec.paused is true", plan=plan_status)
            return
        unsafe = below_min_isr(plan.partitions, gw.min_insync_replicas({t.topic for t in plan.partitions}))
        if unsafe:  # the executor would refuse it too; say so before any record is made
            msg = (
                f"plan {plan.plan_id} would leave {len(unsafe)} partitions with fewer replicas than their "
                f"topic's min.insync.replicas (unwritable with acks=all); nothing moves: "
                + ", ".join(unsafe[:10])
            )
            for b, _ in valid:
                self.set_status(b, st.FAILED, "BelowMinInsyncReplicas", msg, plan=plan_status)
            return
        if last is not None:
            store.prune_blobs(set())  # the previous execution is over: its plan and baseline go
        record = Execution.create(
            store,
            plan,
            limits=self._limits(spec).to_doc(),
            bootstrap_servers=gw.settings.bootstrap_servers,
            cluster_id=snap.cluster_id,
            rules=execution_rules([i for _, i in valid]),
            participants=[b["metadata"]["uid"] for b, _ in valid],
            plan_status=plan_status,
        )
        record.doc.owned_cordons = owned_cordons(snap, [i for _, i in valid]) if gw.supports_cordon() else {}
        record.save()
        for b, _ in valid:
            self.set_status(b, st.EXECUTING, "Executing", f"executing plan {plan.plan_id}", plan=plan_status)
