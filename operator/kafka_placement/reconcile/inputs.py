"""What a reconcile reads and derives before it decides: the KafkaCluster's connection settings (Secrets
read through the KubeGateway), the executor's limits from its spec, the fingerprint of the specs that
lets an idle cluster skip a full reconcile (``Settled``), the planning document shown in plan review, and
the record's summary that ``decide`` sees (``record_view``). Used by the shell (reconciler.py) and by one
pass of it (cluster_pass.py).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..execution import adapting, executor
from ..execution.adaptive import STALE_PERIODS, Ceilings, Measured
from ..execution.adaptive import notes as adaptive_notes
from ..execution.disk import MAX_HELD_CHARS, describe_held, held_dirs
from ..execution.record import Execution
from ..execution.record_doc import TERMINAL
from ..kafka.connection import ConnectionSettings
from ..kafka.gateway import (
    KafkaAuthorizationError,
    KafkaGateway,
    KafkaOperationError,
)
from ..kube.gateway import KubeError, KubeGateway
from ..model.capacity import DEFAULT_MAX_SHARE
from ..model.cluster_spec import ClusterSpec
from ..model.cluster_status import TrafficStatus
from ..model.errors import BadInputError
from ..model.intent_status import IntentStatus, PlanStatus, ProgressStatus
from ..model.intents import (
    BrokerDecommission,
    parse_resource,
)
from ..model.self_healing import SelfHealingSpec
from ..model.snapshot import ClusterSnapshot
from ..model.spec_fields import parse_object, spec_of
from ..model.windows import Window
from . import status as st
from .decision import RecordView
from .secret_files import pem_file

log = logging.getLogger(__name__)

MAX_STEPS = 8  # decide/perform rounds of one reconcile (the longest path takes 4)


@dataclass(frozen=True)
class Settled:
    """The last full idle reconcile of a cluster that settled: until the resync period ends or something
    of ours changes (``fingerprint``), the next reconciles are quiet (Kafka is not read whole)."""

    fingerprint: str
    at: float  # the monotonic clock's reading
    live: frozenset[int]  # the brokers alive in the cluster then


def heals_dead_brokers(spec: ClusterSpec) -> bool:
    """Whether the cluster declares broker-failure self-healing: its quiet reconciles look at liveness."""
    healing_spec = spec.self_healing
    return isinstance(healing_spec, SelfHealingSpec) and healing_spec.broker_failure.enabled


def looked(gw: KafkaGateway, settled: Settled) -> bool:
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
    if body["kind"] != "BrokerDecommission" or IntentStatus.of(body).phase not in ACCEPTED:
        return doc
    try:
        intent = parse_resource(body)
    except BadInputError:
        return doc  # planned as it is: the planner names what is wrong
    assert isinstance(intent, BrokerDecommission)
    spec["brokers"] = [b for b in intent.brokers if snap.broker(b) is not None]
    return doc if spec["brokers"] else None


def limits_of(spec: ClusterSpec) -> executor.Limits:
    """The executor's limits from the KafkaCluster's ``spec.limits`` and its throttle (the static
    ``throttleBytesPerSecond``, or ``throttle.maxBytesPerSecond``: the adaptive throttle's maximum, which
    batches are sized with)."""
    limits = spec.limits
    return executor.Limits(
        max_moves_per_broker=limits.max_moves_per_broker,
        max_moves=limits.max_moves_in_flight,
        max_bytes_per_broker=limits.max_bytes_per_broker,
        throttle=spec.top_throttle,
        batch_seconds=limits.batch_seconds,
        on_config_change=limits.on_config_change,
        max_reapplies=limits.max_reapplies,
        reapply_window_s=limits.reapply_window_seconds,
        max_disk_share=spec.max_disk_share,
        hold_rate=limits.hold_achieved_rate,
        outside_window=spec.execution.outside_window_bytes_per_second if spec.execution else None,
    )


def ceilings_of(spec: ClusterSpec, status: Mapping[str, Any], now: float) -> Ceilings | None:
    """The adaptive throttle's inputs (execution/adaptive.py) from the KafkaCluster's ``spec.throttle``,
    ``spec.capacity`` and the traffic its sampler last wrote in ``status.traffic``; None with a static
    throttle (or none)."""
    bounds = spec.adaptive_throttle
    if bounds is None:
        return None
    period = spec.sampling.period_seconds
    traffic: dict[int, Measured] = {}
    missing: str | None = None
    try:
        seen = TrafficStatus.parse(status.get("traffic") or {})
    except BadInputError:
        seen = TrafficStatus()
    at = _epoch(seen.sampled_at)
    if not spec.sampling.enabled:
        missing = "traffic sampling is off (spec.traffic.enabled)"
    elif at is None:
        missing = "no traffic look yet"
    elif now - at > STALE_PERIODS * period:
        missing = f"the last traffic look is {now - at:.0f} s old (> {STALE_PERIODS} x periodSeconds)"
    else:
        traffic = {b.id: Measured(b.bytes_in, b.network_out) for b in seen.brokers if b.id is not None}
    capacity = spec.capacity
    return Ceilings(
        low=bounds[0],
        high=bounds[1],
        max_share=capacity.max_share if capacity is not None else DEFAULT_MAX_SHARE,
        capacity=capacity,
        traffic=traffic,
        period_s=float(period),
        missing=missing,
    )


def _epoch(stamp: str | None) -> float | None:
    if not stamp:
        return None
    try:
        return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def recorded_plan(raw: Mapping[str, Any] | None) -> PlanStatus | None:
    """The ``status.plan`` an execution record keeps: what the schema holds of it (a record of an earlier
    release may carry more, e.g. ``batches``: left out, as the apiserver would); None when it has none or
    it does not parse (the intents' status then shows no plan, the record says why it fails)."""
    if raw is None:
        return None
    try:
        return parse_object(PlanStatus, raw, "record.planStatus", others=True)
    except BadInputError:
        return None


def record_view(
    record: Execution | None,
    reapplied_before: int | None = None,
    held_before: tuple[str, ...] | None = None,
    windows: Sequence[Window] | None = None,
) -> RecordView | None:
    """What ``decide`` needs of the record (with the progress of its last tick; its ETA counted inside
    the maintenance ``windows`` the execution waits for)."""
    if record is None:
        return None
    doc = record.doc
    held = held_dirs(record)
    progress: ProgressStatus | None = None
    if reapplied_before is not None:
        shown = executor.progress(record).status_json(windows)
        if held:
            shown["diskHeld"] = describe_held(record)[:MAX_HELD_CHARS]
        rates, throttled = adapting.shown(record)
        if rates:
            shown["throttles"] = rates
            shown["throttledBrokers"] = throttled
            # why brokers are at maxBytesPerSecond: said while throttles are set (none once it ended)
            if note := adaptive_notes(record.doc.adaptive):
                shown["throttleNote"] = note[:MAX_HELD_CHARS]
        progress = ProgressStatus.parse(shown, "status.progress")
    plan = recorded_plan(doc.plan_status)
    ended = None
    if record.phase in TERMINAL:  # a record of an earlier release has no finishedAt: its last save
        finished = doc.finished_at if doc.finished_at is not None else doc.updated_at
        waited = record.waited(finished)  # a window closed, paused: not its running time
        ended = st.last_execution(doc.plan_id, str(record.phase), plan, doc.created_at, finished, waited)
    return RecordView(
        phase=record.phase,
        plan_id=doc.plan_id,
        participants=frozenset(doc.participants),
        cancel_requested=doc.cancel_requested,
        plan_status=plan,
        last_execution=ended,
        last_error=doc.last_error,
        progress=progress,
        reapplied=doc.defence.reapplied,
        reapplied_before=doc.defence.reapplied if reapplied_before is None else reapplied_before,
        reapplied_what=tuple(doc.defence.last),
        held=held,
        held_before=held if held_before is None else held_before,
        held_what=describe_held(record)[:MAX_HELD_CHARS],
    )
