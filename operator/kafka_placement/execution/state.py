"""The executor's durable state: the execution record, its phases and the transition table (DESIGN.md §5).

An execution record is a plain JSON-serializable dict (a file for the CLI, a custom resource's status
for the operator). ``TRANSITIONS`` maps ``(phase, event)`` to the next phase and ``next_phase`` is the
only way a phase changes; anything not in the table is an ``IllegalTransition``. ``FileStore`` writes a
record atomically (temp file + rename) so a crash never leaves a torn file.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from ..model.errors import BadInputError, PlacementError
from ..model.plan import Plan

RECORD_VERSION = 1

PENDING = "Pending"
VALIDATING = "Validating"
THROTTLING = "Throttling"
MOVING = "Moving"
FINISHING = "Finishing"
COMPLETED = "Completed"
PAUSED = "Paused"
CANCELLING = "Cancelling"
CANCELLED = "Cancelled"
FAILED = "Failed"

PHASES = (
    PENDING,
    VALIDATING,
    THROTTLING,
    MOVING,
    FINISHING,
    COMPLETED,
    PAUSED,
    CANCELLING,
    CANCELLED,
    FAILED,
)
TERMINAL = frozenset({COMPLETED, CANCELLED, FAILED})

# events
START = "start"  # Pending: begin validating the plan against the cluster
VALID = "valid"  # Validating: the plan fits the cluster
INVALID = "invalid"  # Validating: the plan names things that do not exist
THROTTLED = "throttled"  # Throttling: throttles for the first batch are set (or none were asked for)
ALL_DONE = "all_done"  # every plan partition is at its target
UNHEALTHY = "unhealthy"  # partitions under-replicated for reasons other than our moves
HEALTHY = "healthy"  # the safety gate is clear again
FINISHED = "finished"  # throttles cleared, preferred leaders elected
CANCEL = "cancel"  # cancelRequested seen
REVERTED = "reverted"  # none of our moves in flight any more, original order restored, throttles cleared
ERROR = "error"  # a non-retriable failure (Kafka refused a move, a move was changed outside)
RETRY = "retry"  # re-run a failed execution of the same plan

TRANSITIONS: dict[tuple[str, str], str] = {
    (PENDING, START): VALIDATING,
    (VALIDATING, VALID): THROTTLING,
    (VALIDATING, INVALID): FAILED,
    (VALIDATING, ALL_DONE): FINISHING,
    (THROTTLING, THROTTLED): MOVING,
    (MOVING, UNHEALTHY): PAUSED,
    (MOVING, ALL_DONE): FINISHING,
    (PAUSED, HEALTHY): MOVING,
    (FINISHING, FINISHED): COMPLETED,
    (CANCELLING, REVERTED): CANCELLED,
    (FAILED, RETRY): PENDING,
    **{(p, CANCEL): CANCELLING for p in (PENDING, VALIDATING, THROTTLING, MOVING, PAUSED, FAILED)},
    **{(p, ERROR): FAILED for p in (VALIDATING, THROTTLING, MOVING, PAUSED, FINISHING, CANCELLING)},
}


class IllegalTransition(PlacementError):
    """An event that the current phase does not accept (a bug or a tampered record)."""

    reason = "IllegalTransition"


def next_phase(phase: str, event: str) -> str:
    """The phase after ``event`` in ``phase``; raises ``IllegalTransition`` if the table has no entry."""
    try:
        return TRANSITIONS[(phase, event)]
    except KeyError:
        raise IllegalTransition(f"event '{event}' is not allowed in phase {phase}") from None


def tp_key(topic: str, partition: int) -> str:
    """The record's name of a partition: ``topic-partition``."""
    return f"{topic}-{partition}"


def parse_tp(key: str) -> tuple[str, int]:
    topic, _, number = key.rpartition("-")
    return topic, int(number)


def replica_key(topic: str, partition: int, broker: int) -> str:
    return f"{topic}-{partition}@{broker}"


def new_record(plan: Plan, bootstrap_servers: str = "", throttle: int | None = None) -> dict[str, Any]:
    """A fresh record for ``plan`` in phase Pending."""
    return {
        "version": RECORD_VERSION,
        "planId": plan.plan_id,
        "plan": plan.to_json(),
        "bootstrapServers": bootstrap_servers,
        "throttleRate": throttle,
        "phase": PENDING,
        "original": {},  # tp -> {"replicas", "logDirs", "sizeBytes"} when validated
        "submitted": {},  # tp -> {"replicas", "submittedAt", "state": intent|confirmed|cancelled, "dirOnly"}
        "done": [],
        "dirMovesDone": [],
        "dirMoves": {},  # "t-p@b" -> {"path", "submittedAt"}
        "throttles": {"brokers": [], "topics": []},
        "cancelRequested": False,
        "lastError": None,
        "counters": {"ticks": 0, "submissions": {}, "dirSubmissions": {}, "cancels": {}, "reorders": {}},
        "samples": [],  # [[time, bytesMoved]] for the ETA
        "copied": {},  # "topic-partition" -> most bytes seen copied of an in-flight partition
        "createdAt": time.time(),
        "updatedAt": time.time(),
    }


def record_plan(record: dict[str, Any]) -> Plan:
    return Plan.from_json(record["plan"], "execution record plan")


def bump(record: dict[str, Any], counter: str, key: str) -> int:
    counts: dict[str, int] = record["counters"].setdefault(counter, {})
    counts[key] = counts.get(key, 0) + 1
    return counts[key]


class FileStore:
    """An execution record kept in a JSON file, written atomically."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    @property
    def cancel_marker(self) -> Path:
        """A cancel request from another process: a file of its own, so no writer of the record loses it."""
        return self.path.with_name(self.path.name + ".cancel")

    def request_cancel(self) -> None:
        try:
            self.cancel_marker.write_text(f"{time.time()}\n", encoding="utf-8")
        except OSError as e:
            raise PlacementError(f"cannot write {self.cancel_marker}: {e}") from None

    def cancel_requested(self) -> bool:
        return self.cancel_marker.exists()

    def clear_cancel(self) -> None:
        self.cancel_marker.unlink(missing_ok=True)

    def load(self) -> dict[str, Any] | None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as e:
            raise BadInputError(f"cannot read the execution state: {e}", str(self.path)) from None
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise BadInputError(f"the execution state is not valid JSON: {e.msg}", str(self.path)) from None
        if not isinstance(doc, dict) or "planId" not in doc or doc.get("phase") not in PHASES:
            raise BadInputError("not an execution record", str(self.path))
        return doc

    def save(self, record: dict[str, Any]) -> None:
        record["updatedAt"] = time.time()
        text = json.dumps(record, indent=1, sort_keys=True) + "\n"
        parent = self.path.parent if str(self.path.parent) else Path(".")
        try:
            fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{self.path.name}.")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except OSError as e:
            raise PlacementError(f"cannot write the execution state {self.path}: {e}") from None
