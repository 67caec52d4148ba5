"""Shared by the three intent handlers: spec validation on create/update, cancel on delete."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import kopf

from ..model.errors import BadInputError
from ..model.intents import Intent, parse_spec
from . import status as st
from .runtime import runtime
from .store import RecordStore


def validate(kind: str, body: Mapping[str, Any], patch: kopf.Patch) -> Intent:
    """Parse the spec; an invalid one fails permanently with a Degraded condition naming the field."""
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
    meta = body["metadata"]
    cluster = ((body.get("spec") or {}).get("clusterRef") or {}).get("name")
    if not cluster:
        return
    rt = runtime()
    owner = rt.reconciler.cluster(meta["namespace"], cluster)
    if owner is None:
        return
    store = RecordStore(rt.reconciler.apis.core, meta["namespace"], cluster, owner)
    record = store.load()
    if (
        record
        and meta["uid"] in (record.get("participants") or [])
        and record["phase"] not in ("Completed", "Cancelled", "Failed")
    ):
        record["cancelRequested"] = True
        store.save(record)
        logger.info(f"cancel requested for plan {record['planId']} (resource deleted)")
