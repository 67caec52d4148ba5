"""Progress of an execution from its record and what a tick read (pure functions, no I/O).

Bytes to move per plan partition = its size times the replicas it copies (new replicas on other brokers
plus existing replicas moving between dirs), indexed once in ``ExecutionPlan.move_bytes``. Done
partitions count in full (the record keeps their sum, ``doneBytes``); an in-flight partition counts what
DescribeLogDirs shows copied so far: the new replica's size on each adding broker, the future replica's
size for dir moves (capped at the partition size). The ETA divides the bytes remaining by the rate
observed over the record's samples; without one (no move yet, nothing moving), the status shows the plan's
estimate of what is left. Cost follows the partitions in flight.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..model.windows import Window, finish_at
from .record import Execution
from .record_doc import PState
from .view import TickView


@dataclass(frozen=True, slots=True)
class Progress:
    partitions_total: int
    partitions_done: int
    partitions_in_flight: int
    partitions_pending: int
    bytes_total: int
    bytes_moved: int
    rate_bytes_per_s: float | None
    eta_s: float | None
    # the plan's estimate of the time left (its seconds x the share of bytes left): the ETA shown while no
    # rate is observed (before the first window opens, or while nothing moves)
    planned_s: float | None = None

    @property
    def bytes_remaining(self) -> int:
        return max(self.bytes_total - self.bytes_moved, 0)

    def status_json(self, windows: Sequence[Window] | None = None) -> dict[str, Any]:
        """The flat ``status.progress`` of the custom resources (crd_schema), ETA as RFC 3339: the time
        left at the observed rate, counted inside the maintenance ``windows`` the execution waits for
        (model/windows.py; none: from now on; beyond ten years of windows: no ETA). While no rate is
        observed (nothing moved yet, as before the first window opens, or nothing moving), the time left
        by the plan's estimate (``planned_s``), counted inside the windows as its ``finishAt`` is."""
        out: dict[str, Any] = {
            "partitionsDone": self.partitions_done,
            "partitionsTotal": self.partitions_total,
            "bytesMoved": self.bytes_moved,
            "bytesRemaining": self.bytes_remaining,
            "summary": f"{self.partitions_done}/{self.partitions_total}",
        }
        left = self.eta_s if self.eta_s is not None else self.planned_s
        if left is not None:
            at = finish_at(windows, time.time(), left)
            if at is not None:
                out["eta"] = datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "partitions": {
                "total": self.partitions_total,
                "done": self.partitions_done,
                "inFlight": self.partitions_in_flight,
                "pending": self.partitions_pending,
            },
            "bytes": {
                "total": self.bytes_total,
                "moved": self.bytes_moved,
                "remaining": self.bytes_remaining,
            },
            "rateBytesPerSecond": self.rate_bytes_per_s,
            "etaSeconds": self.eta_s,
        }

    @staticmethod
    def from_json(doc: dict[str, Any]) -> Progress:
        parts, bytes_ = doc.get("partitions") or {}, doc.get("bytes") or {}
        return Progress(
            int(parts.get("total", 0)),
            int(parts.get("done", 0)),
            int(parts.get("inFlight", 0)),
            int(parts.get("pending", 0)),
            int(bytes_.get("total", 0)),
            int(bytes_.get("moved", 0)),
            doc.get("rateBytesPerSecond"),
            doc.get("etaSeconds"),
        )

    def line(self) -> str:
        eta = "-" if self.eta_s is None else f"{self.eta_s:.0f}s"
        return (
            f"partitions done {self.partitions_done}/{self.partitions_total}, in flight "
            f"{self.partitions_in_flight}, pending {self.partitions_pending}; bytes moved "
            f"{self.bytes_moved}/{self.bytes_total}; eta {eta}"
        )


def in_flight_bytes(ex: Execution, view: TickView) -> dict[int, int]:
    """Bytes copied so far of each active partition (by plan index), from DescribeLogDirs."""
    plan = ex.plan
    out: dict[int, int] = {}
    for i in ex.active():
        t = plan.targets[i]
        size = plan.baseline_size(i)
        total = 0
        for b in plan.adding[i]:
            total += min(view.replica(t.topic, t.partition, b).current_size, size)
        for b in plan.dir_moving[i]:
            total += min(view.replica(t.topic, t.partition, b).future_size, size)
        out[i] = total
    return out


def compute_progress(ex: Execution) -> Progress:
    """Counts and bytes from the record (``doneBytes`` plus the ``copied`` bytes of active partitions)."""
    plan = ex.plan
    total = plan.total_bytes if plan.baseline is not None else 0
    moved = ex.doc.done_bytes + sum(min(ex.doc.copied.get(i, 0), plan.move_bytes[i]) for i in ex.active())
    rate = observed_rate(ex.doc.samples)
    remaining = max(total - moved, 0)
    eta: float | None = None
    if remaining == 0 and plan.baseline is not None:
        eta = 0.0
    elif rate is not None and rate > 0:
        eta = remaining / rate
    n = ex.doc.partitions
    in_flight = len(ex.doc.in_flight)
    cancelled = ex.states.count(PState.CANCELLED)
    return Progress(
        partitions_total=n,
        partitions_done=ex.doc.done_count,
        partitions_in_flight=in_flight,
        partitions_pending=max(n - ex.doc.done_count - in_flight - cancelled, 0),
        bytes_total=total,
        bytes_moved=min(moved, total) if total else moved,
        rate_bytes_per_s=rate,
        eta_s=eta,
        planned_s=planned_left(ex.doc.plan_status, remaining, total),
    )


def planned_left(plan_status: dict[str, Any] | None, remaining: int, total: int) -> float | None:
    """The time left by the plan's estimate (``status.plan.estimate.seconds``, as the record keeps it): its
    share of the bytes left, the whole of it before the baseline gives the bytes (None without one)."""
    estimate = (plan_status or {}).get("estimate")
    seconds = estimate.get("seconds") if isinstance(estimate, dict) else None
    if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0:
        return None
    return float(seconds) * remaining / total if total > 0 else float(seconds)


def observed_rate(samples: list[tuple[float, float]]) -> float | None:
    """Bytes/s between the first and last sample (None with fewer than two or no time between)."""
    if len(samples) < 2:
        return None
    (t0, b0), (t1, b1) = samples[0][:2], samples[-1][:2]
    if t1 <= t0:
        return None
    return max(b1 - b0, 0) / (t1 - t0)
