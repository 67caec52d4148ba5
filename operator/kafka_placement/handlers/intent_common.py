"""Shared by the three intent handlers: spec validation on create/update, cancel on delete."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import kopf

from ..execution.record import TERMINAL, Execution
from ..execution.store import RecordConflict
from ..model.errors import BadInputError
from ..model.intents import Intent, parse_spec
from . import leader
from . import status as st
from .runtime import runtime


def require_leader() -> None:
    """Only the leader handles events; a process that lost the Lease leaves them to the new leader."""
    lead = leader.current()
    if not lead.is_leader():
        raise kopf.TemporaryError(f"{lead.identity} is not the leader; the leader handles this", delay=5)


def validate(kind: str, body: Mapping[str, Any], patch: kopf.Patch) -> Intent:
    """Parse the spec; an invalid one fails permanently with a Degraded condition naming the field."""
    require_leader()
    name = body["metadata"]["name"]
    try:
        intent = parse_spec(kind, body.get("spec") or {}, f"{kind} {name}: spec", name)
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
    cluster = ((body.get("spec") or {}).get("clusterRef") or {}).get("name")
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
