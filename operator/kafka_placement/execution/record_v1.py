"""Reading a version-1 execution record (the plan and every partition's state embedded in one document)
into the version-2 record, so an execution started by an older release resumes.

Version 1 kept ``plan`` (Kafka's reassignment JSON), ``original`` (per ``topic-partition``: replicas,
logDirs, sizeBytes, filled when validated), ``submitted`` (state intent|confirmed|cancelled), ``done``
(a list), ``throttles`` (the ThrottleState JSON), and per-partition submission counters. The plan and the
baseline become blobs; the states are packed; the counters are summed. Malformed input is a
``BadInputError`` naming the store.
"""

from __future__ import annotations

import time
from typing import Any

from ..model.errors import BadInputError
from ..model.plan import Plan
from .record import (
    Execution,
    LimitsDoc,
    Original,
    Phase,
    PState,
    Submission,
    Throttles,
)
from .store import Store


def convert_v1(store: Store, raw: dict[str, Any]) -> Execution:
    where = f"{store.where} (execution record version 1)"
    try:
        return _convert(store, raw, where)
    except BadInputError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise BadInputError(f"malformed record: {type(e).__name__}: {str(e)[:200]}", where) from None


def _tp(key: str) -> tuple[str, int]:
    topic, _, number = key.rpartition("-")
    return topic, int(number)


def _convert(store: Store, raw: dict[str, Any], where: str) -> Execution:
    plan = Plan.from_json(raw["plan"], f"{where}: plan")
    if raw.get("planId") != plan.plan_id:
        raise BadInputError(f"planId {str(raw.get('planId'))[:40]} does not match the embedded plan", where)
    rate = raw.get("throttleRate")
    limits = LimitsDoc(max_moves_per_broker=5, max_moves=10, max_bytes_per_broker=None, throttle=rate)
    ex = Execution.create(
        store,
        plan,
        limits=limits,
        bootstrap_servers=str(raw.get("bootstrapServers") or ""),
        participants=[str(u) for u in raw.get("participants") or []],
        plan_status=raw.get("planStatus"),
    )
    doc = ex.doc
    doc.phase = Phase(raw["phase"])
    doc.cancel_requested = bool(raw.get("cancelRequested"))
    doc.last_error = raw.get("lastError")
    doc.created_at = float(raw.get("createdAt") or time.time())
    doc.throttles = Throttles.model_validate(raw.get("throttles") or {})
    index = ex.plan.index
    original = raw.get("original") or {}
    keys = [f"{t.topic}-{t.partition}" for t in plan.partitions]
    if original and all(k in original for k in keys):
        baseline = [
            Original(
                tuple(int(b) for b in original[k]["replicas"]),
                tuple(original[k]["logDirs"]),
                int(original[k]["sizeBytes"]),
            )
            for k in keys
        ]
        ex.set_baseline(baseline, {})
    elif doc.phase not in (Phase.PENDING, Phase.VALIDATING, Phase.CANCELLED, Phase.FAILED):
        raise BadInputError("the record is past validation but lacks the original placement", where)
    counts = (raw.get("counters") or {}).get("submissions") or {}
    for key, n in counts.items():
        i = index.get(_tp(key))
        if i is not None:
            for _ in range(int(n)):
                ex.count_submission(i)
    for key, sub in (raw.get("submitted") or {}).items():
        i = index.get(_tp(key))
        if i is None:
            continue
        state = sub.get("state")
        if state == "cancelled":
            ex.states[i] = PState.CANCELLED
        elif state in ("intent", "confirmed"):
            ex.submit(i, Submission(state), float(sub.get("submittedAt") or time.time()))
    if ex.plan.baseline is not None:
        for key in raw.get("done") or []:
            i = index.get(_tp(key))
            if i is not None:
                ex.finish(i)
    return ex
