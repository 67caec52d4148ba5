"""Progress of an execution from its record and what Kafka shows (pure functions, no I/O).

Bytes to move per plan partition = its size times the replicas it copies (new replicas on other
brokers plus existing replicas moving between dirs). Done partitions count in full; an in-flight
partition counts what DescribeLogDirs shows copied so far: the new replica's size on each adding broker,
the future replica's size for dir moves (capped at the partition size). The ETA divides the bytes
remaining by the rate observed over the record's samples.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..kafka.gateway import LogDirInfo
from ..model.plan import ANY_DIR
from ..model.snapshot import ClusterSnapshot
from . import state as st


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

    @property
    def bytes_remaining(self) -> int:
        return max(self.bytes_total - self.bytes_moved, 0)

    def status_json(self) -> dict[str, Any]:
        """The flat ``status.progress`` of the custom resources (crd_schema), ETA as RFC 3339."""
        out: dict[str, Any] = {
            "partitionsDone": self.partitions_done,
            "partitionsTotal": self.partitions_total,
            "bytesMoved": self.bytes_moved,
            "bytesRemaining": self.bytes_remaining,
            "summary": f"{self.partitions_done}/{self.partitions_total}",
        }
        if self.eta_s is not None:
            eta = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=self.eta_s)
            out["eta"] = eta.strftime("%Y-%m-%dT%H:%M:%SZ")
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

    def line(self) -> str:
        eta = "-" if self.eta_s is None else f"{self.eta_s:.0f}s"
        return (
            f"partitions done {self.partitions_done}/{self.partitions_total}, in flight "
            f"{self.partitions_in_flight}, pending {self.partitions_pending}; bytes moved "
            f"{self.bytes_moved}/{self.bytes_total}; eta {eta}"
        )


def copies(record: Mapping[str, Any], target: Mapping[str, Any]) -> tuple[list[int], list[int]]:
    """(brokers gaining a replica, brokers moving an existing replica to another dir) of a plan entry."""
    key = st.tp_key(str(target["topic"]), int(target["partition"]))
    original = record["original"].get(key, {})
    before = list(original.get("replicas", []))
    old_dirs = dict(zip(before, original.get("logDirs", []), strict=False))
    adding = [b for b in target["replicas"] if b not in before]
    dir_moves = [
        b
        for b, d in zip(target["replicas"], target["log_dirs"], strict=True)
        if b in before and d != ANY_DIR and old_dirs.get(b) != d
    ]
    return adding, dir_moves


def partition_bytes(record: Mapping[str, Any], target: Mapping[str, Any]) -> int:
    key = st.tp_key(str(target["topic"]), int(target["partition"]))
    size = int(record["original"].get(key, {}).get("sizeBytes", 0))
    adding, dir_moves = copies(record, target)
    return size * (len(adding) + len(dir_moves))


def in_flight_bytes(
    record: Mapping[str, Any], snapshot: ClusterSnapshot, dirs: Mapping[int, tuple[LogDirInfo, ...]]
) -> dict[str, int]:
    """Bytes copied so far of each active (submitted, not done) partition, from DescribeLogDirs."""
    done = set(record["done"])
    out: dict[str, int] = {}
    for target in record["plan"]["partitions"]:
        key = st.tp_key(str(target["topic"]), int(target["partition"]))
        sub = record["submitted"].get(key)
        if key in done or sub is None or sub.get("state") == "cancelled":
            continue
        size = int(record["original"].get(key, {}).get("sizeBytes", 0))
        adding, dir_moves = copies(record, target)
        total = 0
        tp = (str(target["topic"]), int(target["partition"]))
        for b in adding:
            total += min(_replica_size(dirs, b, tp, future=None), size)
        for b in dir_moves:
            total += min(_replica_size(dirs, b, tp, future=True), size)
        out[key] = total
    return out


def _replica_size(
    dirs: Mapping[int, tuple[LogDirInfo, ...]], broker: int, tp: tuple[str, int], *, future: bool | None
) -> int:
    sizes = [
        r.size_bytes
        for d in dirs.get(broker, ())
        for r in d.replicas
        if (r.topic, r.partition) == tp and (future is None or r.is_future == future)
    ]
    return max(sizes, default=0)


def compute_progress(record: Mapping[str, Any], partial: Mapping[str, int]) -> Progress:
    """Counts and bytes from the record plus ``partial`` (bytes copied of in-flight partitions)."""
    done = set(record["done"])
    active = {k for k, s in record["submitted"].items() if k not in done and s.get("state") != "cancelled"}
    total = moved = 0
    n = 0
    for target in record["plan"]["partitions"]:
        n += 1
        key = st.tp_key(str(target["topic"]), int(target["partition"]))
        size = partition_bytes(record, target)
        total += size
        if key in done:
            moved += size
        elif key in active:
            moved += min(int(partial.get(key, 0)), size)
    rate = observed_rate(record.get("samples", []))
    remaining = max(total - moved, 0)
    eta: float | None = None
    if remaining == 0:
        eta = 0.0
    elif rate is not None and rate > 0:
        eta = remaining / rate
    keys = {st.tp_key(str(t["topic"]), int(t["partition"])) for t in record["plan"]["partitions"]}
    in_flight = len(active & keys)
    return Progress(
        partitions_total=n,
        partitions_done=len(done),
        partitions_in_flight=in_flight,
        partitions_pending=max(n - len(done) - in_flight, 0),
        bytes_total=total,
        bytes_moved=moved,
        rate_bytes_per_s=rate,
        eta_s=eta,
    )


def observed_rate(samples: list[list[float]]) -> float | None:
    """Bytes/s between the first and last sample (None with fewer than two or no time between)."""
    if len(samples) < 2:
        return None
    (t0, b0), (t1, b1) = samples[0][:2], samples[-1][:2]
    if t1 <= t0:
        return None
    return max(b1 - b0, 0) / (t1 - t0)
