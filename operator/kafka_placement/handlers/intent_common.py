"""Shared by the three intent handlers: spec validation on create/update, cancel and uncordon on delete."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import kopf

from ..execution.record import TERMINAL, Execution
from ..execution.store import RecordConflict
from ..model.cluster_spec import ClusterSpec
from ..model.errors import BadInputError, PlacementError
from ..model.intents import ClusterRef, Intent, OperatorFields, parse_spec
from ..model.snapshot import Broker, ClusterSnapshot
from . import leader
from . import status as st
from .fencing import FencedGateway
from .reconciler import connection_settings, cordon_view, declared_cordons, owned_cordons
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
    name = body["metadata"]["name"]
    where, spec = f"{kind} {name}: spec", body.get("spec") or {}
    try:
        intent = parse_spec(kind, spec, where, name)
        OperatorFields.parse(spec, where)
    except BadInputError as e:
        patch.status.update(st.intent_status(body, st.FAILED, "InvalidSpec", e.message))
        raise kopf.PermanentError(e.message) from None
    phase = (body.get("status") or {}).get("phase")
    generation = body["metadata"].get("generation")
    if phase is None or (body.get("status") or {}).get("observedGeneration") != generation:
        patch.status.update(
            st.intent_status(body, st.PENDING, "Accepted", "waiting for the cluster's planner")
        )
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


def released_cordons(
    view: ClusterSnapshot, mine: Intent, others: Sequence[Intent]
) -> tuple[dict[int, list[str]], list[int]]:
    """What deleting ``mine`` uncordons: broker -> the dirs it declared cordoned (``declared_cordons``: a
    LogDirCordon's dirs, every dir of the brokers a BrokerDecommission retires) that Kafka reports
    cordoned and that no intent of ``others`` still declares; and the brokers it names that are not alive
    in ``view`` (skipped: a dead broker answers no config request, and the finalizer must not wait)."""
    keep = owned_cordons(view, others)
    release: dict[int, list[str]] = {}
    for b, paths in owned_cordons(view, [mine]).items():
        broker = view.broker(b)
        cordoned = [p for p in paths if p not in keep.get(b, ()) and _cordoned(broker, p)]
        if cordoned:
            release[b] = cordoned
    named = sorted({c.broker for c in declared_cordons([mine])})
    return release, [b for b in named if not _alive(view.broker(b))]


def _cordoned(broker: Broker | None, path: str) -> bool:
    d = broker.dir(path) if broker is not None else None
    return d is not None and d.cordoned


def _alive(broker: Broker | None) -> bool:
    """Alive: in the cluster's live brokers, with its log dirs (a dead one has none in a snapshot)."""
    return broker is not None and bool(broker.log_dirs)


def _intent(kind: str, body: Mapping[str, Any]) -> Intent | None:
    """The resource's intent, None when its spec is invalid (an invalid resource declares nothing)."""
    try:
        return parse_spec(kind, body.get("spec") or {}, "spec", body["metadata"]["name"])
    except BadInputError:
        return None


def uncordon(kind: str, body: Mapping[str, Any], logger: Any) -> None:
    """Deleting a LogDirCordon or a BrokerDecommission removes what it declared from ``cordoned.log.dirs``
    (KIP-1066), except dirs another live resource of the cluster still declares (``released_cordons``);
    brokers that are not alive are skipped with a log line. Nothing to do below Kafka 4.3 (the planner
    enforced the cordon there)."""
    meta, cluster = body["metadata"], ClusterRef.name_of(body)
    rec = runtime().reconciler
    owner = rec.cluster(meta["namespace"], cluster) if cluster else None
    mine = _intent(kind, body)
    if owner is None or not cluster or mine is None or not declared_cordons([mine]):
        return
    others: list[Intent] = []
    for res in rec.intents_of(meta["namespace"], cluster):
        other = _intent(res["kind"], res)
        gone = res["metadata"]["uid"] == meta["uid"] or res["metadata"].get("deletionTimestamp")
        if other is not None and not gone:
            others.append(other)
    try:
        settings = connection_settings(ClusterSpec.of(owner), meta["namespace"], rec.kube)
        with FencedGateway(settings, rec.leadership.fence) as gw:
            if not gw.supports_cordon():
                return
            release, dead = released_cordons(cordon_view(gw), mine, others)
            for b in dead:
                logger.info(f"broker {b} is not alive: its cordon cannot be removed, skipped")
            for b, paths in sorted(release.items()):
                gw.set_cordon(b, paths, False)
                logger.info(f"uncordoned {paths} on broker {b}")
    except PlacementError as e:
        raise kopf.TemporaryError(f"cannot uncordon yet: {e.message}", delay=10) from None
