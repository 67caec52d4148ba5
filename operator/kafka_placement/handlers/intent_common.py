"""Shared by the three intent handlers: spec validation on create/update; on delete, cancel and waiting
for the uncordon (done by the cluster's reconcile)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import kopf

from ..execution.record import Execution
from ..execution.record_doc import TERMINAL
from ..execution.store import RecordConflict
from ..model.errors import BadInputError
from ..model.intent_status import IntentStatus
from ..model.intents import ClusterRef, Intent, OperatorFields, parse_resource
from ..reconcile import leader
from ..reconcile import status as st
from ..reconcile.cordons import declared_cordons
from ..reconcile.phases import IntentEvent, move
from .runtime import runtime


def require_leader() -> None:
    """Only the leader handles events; a process that lost the Lease leaves them to the new leader."""
    lead = leader.current()
    if not lead.is_leader():
        raise kopf.TemporaryError(f"{lead.identity} is not the leader; the leader handles this", delay=5)


def validate(kind: str, body: Mapping[str, Any], patch: kopf.Patch) -> Intent:
    """Parse the spec (the kind's fields and the operator's, as the reconcile does); an invalid one fails
    permanently with a Degraded condition naming the field."""
    require_leader()
    try:
        intent = parse_resource(body, kind)
        OperatorFields.of(body, kind)
    except BadInputError as e:
        status = IntentStatus.of(body)
        to = move(status.phase, IntentEvent.INVALID_SPEC)
        if to is not None:
            patch.status.update(st.intent_status(body, to.phase, to.reason, e.message))
        raise kopf.PermanentError(e.message) from None
    status = IntentStatus.of(body)
    to = move(status.phase, IntentEvent.ACCEPTED)
    new_spec = status.phase is None or status.observed_generation != body["metadata"].get("generation")
    if new_spec and to is not None:
        patch.status.update(st.intent_status(body, to.phase, to.reason, "waiting for the cluster's planner"))
    return intent


def cancel_if_participating(body: Mapping[str, Any], logger: Any) -> None:
    """Deleting a resource whose plan is executing requests a cancel (KIP-455 revert, throttles cleared)."""
    require_leader()
    meta = body["metadata"]
    cluster = ClusterRef.name_of(body)
    if not cluster:
        return
    rt = runtime()
    owner = rt.reconciler.cluster(meta["namespace"], cluster)
    if owner is None:
        return
    store = rt.reconciler.store(meta["namespace"], cluster, owner)
    for _ in range(5):  # another writer (a tick) may save in between: reload and ask again
        record = Execution.load(store)
        if record is None or meta["uid"] not in record.doc.participants or record.phase in TERMINAL:
            return
        record.doc.cancel_requested = True
        try:
            record.save()
        except leader.NotLeader as e:
            raise kopf.TemporaryError(e.message, delay=5) from None
        except RecordConflict:
            continue
        logger.info(f"cancel requested for plan {record.doc.plan_id} (resource deleted)")
        return
    raise kopf.TemporaryError("the execution record kept changing; cancel is retried", delay=2)


def _intent(kind: str, body: Mapping[str, Any]) -> Intent | None:
    """The resource's intent, None when its spec is invalid (an invalid resource declares nothing)."""
    try:
        return parse_resource(body, kind)
    except BadInputError:
        return None


def wait_uncordoned(kind: str, body: Mapping[str, Any]) -> None:
    """Deleting a LogDirCordon or a BrokerDecommission removes what it declared from ``cordoned.log.dirs``
    (KIP-1066), except dirs another live resource of the cluster still declares: the cluster's reconcile
    does it (decide's ``SyncCordons`` releases the cordons of the resources being deleted; so does the
    KafkaCluster's own deletion), this handler waits for it, so the resource goes once its cordons are
    gone (below Kafka 4.3 there is nothing to remove: the planner enforced the cordon). While Kafka cannot
    be reached the resource stays, retried, the message saying why; so it does while the cluster's
    connection fields are invalid (nothing can be reached: the cluster's own deletion gives up after
    ``RELEASE_TIMEOUT_S``, and then this resource goes). Any other invalid field of the cluster's spec (a
    window's time zone, the throttle) does not hold it: its reconcile, phase ``Invalid``, still removes the
    cordons, for which the connection alone is parsed. It goes at once when it declares no
    cordon (an invalid spec declares nothing), its KafkaCluster does not exist (nothing can be reached) or
    is ``Unsupported`` (its brokers lack an API the operator needs: nothing was ever sent to them)."""
    meta, cluster = body["metadata"], ClusterRef.name_of(body)
    mine = _intent(kind, body)
    if not cluster or mine is None or not declared_cordons([mine]):
        return
    rec = runtime().reconciler
    owner = rec.cluster(meta["namespace"], cluster)
    if owner is None or rec.uncordoned(meta["namespace"], cluster, meta["uid"]):
        return
    if (owner.get("status") or {}).get("phase") == st.UNSUPPORTED:
        return
    ready = {c.get("type"): c for c in (owner.get("status") or {}).get("conditions") or ()}.get(st.READY)
    why = f": {ready.get('message')}" if ready is not None and ready.get("status") == "False" else ""
    raise kopf.TemporaryError(
        f"waiting for KafkaCluster {cluster}'s reconcile to remove the cordons this resource declared{why}",
        delay=2,
    )
