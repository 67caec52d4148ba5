"""Disk headroom, the one definition: no log dir is planned above ``maxDiskShare`` of its volume.

A full log dir goes offline (the broker marks it failed, and every replica on it with it), so every plan
keeps each dir's volume at most ``share`` (``KafkaCluster.spec.capacity.maxDiskShare``, the CLI's
``--max-disk-share``; default 0.85) full. Every place that decides whether a replica fits asks ``room``
(through ``Eligibility.rooms``, which the working assignment's ``free`` starts from, and the shards'
view): the greedy goals (``Assignment.fits`` / ``best_dir``), the repacking and ejection searches, the
exact program's room rows, the sharded planning and the new-partition lane. ``metrics`` judges a plan by
the same function (its ``capacity`` violation), and ``optimizer.compute_plan`` refuses a plan that breaks
it (``DiskHeadroomError``).

- **A volume**: a dir's ``totalBytes`` (its size; 0 = unknown: such a dir has no limit, and the summary
  lists it) and ``usableBytes`` (free). Two dirs of one broker reporting the same known ``totalBytes``
  and the same ``usableBytes`` sit on one filesystem (Kafka reports the filesystem's figures for each
  dir on it): their volume is counted once, keyed by the first of them in the broker's order
  (``volumes``), so their bytes share one room; unless their replicas together hold more bytes than
  that filesystem's used bytes (``total - usable``), which one filesystem cannot: then they are
  distinct disks of one size that happen to be equally full. Distinct disks whose figures are equal to
  the byte and whose replicas fit in one of them (two empty disks of one model) are counted as one
  volume: stricter, never less safe, but it halves what a new broker with identical empty disks may take;
  ``capacity.diskPerLogDir`` (declared: no two dirs of a broker share a filesystem) makes every dir its
  own volume.
- **Bytes counted**: the volume's used bytes at snapshot time (``total - usable``) or, when larger, the
  sum of the full sizes of the replicas the snapshot places on its dirs (a replica being copied in, a
  reassignment in flight that the planner sees at its target, counts at its full size, not at what it
  has copied so far); then what the plan brings in minus what it takes out.
- **Room**: ``floor(share x total) - max(total - usable, held)``, the net bytes the plan may still bring
  to the volume. A dir whose volume is above the limit before the plan (``above_limit``) receives no
  replica at all (``Eligibility.dir_may_receive``), though replicas may leave it.
- **Hard stop** (``hard_stop``): ``share`` plus half the room above it, at most 0.97 (0.925 for the
  default 0.85). The executor watches the dirs its moves write to (execution/disk_watch.py): no new move
  into a dir above ``share``; the moves into a dir about to pass the hard stop are held (throttled down)
  until it is back under ``share`` (producers write too: the plan's arithmetic cannot see them).

Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..model.capacity import DEFAULT_MAX_DISK_SHARE
from ..model.errors import DIR_CAPACITY, DiskHeadroomError
from ..model.snapshot import ClusterSnapshot
from .summary_parts import DirShare, DiskHeadroom, FullestDir

DirKey = tuple[int, str]
RULE = DIR_CAPACITY  # the InfeasibleError rule of a plan refused by this limit

__all__ = [
    "DEFAULT_MAX_DISK_SHARE",
    "RULE",
    "Volume",
    "above_limit",
    "fullest",
    "hard_stop",
    "held_per_volume",
    "limit_bytes",
    "planned_share",
    "refused",
    "room",
    "rooms",
    "summary",
    "uneven",
    "used_after",
    "volumes",
]


@dataclass(frozen=True, slots=True)
class Volume:
    """A log dir's filesystem: its size and free bytes as Kafka reports them (``total`` > 0: known); the
    planner's headroom and the executor's disk watch (execution/disk_watch.py) read it alike."""

    total: int
    usable: int

    @property
    def used(self) -> int:
        return max(self.total - self.usable, 0)

    @property
    def share(self) -> float:
        """How full it is (0..1; ``total`` > 0)."""
        return self.used / self.total


def limit_bytes(total: int, share: float) -> int:
    """The most bytes a volume of ``total`` bytes may hold after a plan."""
    return int(share * total)


HARD_STOP_CAP = 0.97  # the hard stop never leaves less than this share of a volume free


def hard_stop(share: float) -> float:
    """The share of a volume at which the executor holds the moves writing into it: ``share`` plus half
    the room above it, at most ``HARD_STOP_CAP`` (and never below ``share``)."""
    return max(share, min(share + (1.0 - share) / 2, HARD_STOP_CAP))


def room(total: int, usable: int, held: int, share: float) -> int | None:
    """The net bytes a plan may still bring to a volume of ``total`` bytes with ``usable`` free whose
    dirs hold replicas of ``held`` bytes in the snapshot (module docstring); None: size unknown, no
    limit. Negative: the volume is above the limit already."""
    if total <= 0:
        return None
    return limit_bytes(total, share) - max(total - usable, held)


def rooms(
    volume: Mapping[DirKey, DirKey], sizes: Mapping[DirKey, Volume], held: Mapping[DirKey, int], share: float
) -> dict[DirKey, int]:
    """``room`` of each volume of known size, its dirs holding ``held`` bytes of replicas (per dir)."""
    per = held_per_volume(volume, held)
    out: dict[DirKey, int] = {}
    for v, s in sizes.items():
        r = room(s.total, s.usable, per.get(v, 0), share)
        if r is not None:
            out[v] = r
    return out


def volumes(
    snapshot: ClusterSnapshot, disk_per_log_dir: bool = False
) -> tuple[dict[DirKey, DirKey], dict[DirKey, Volume]]:
    """Each dir of known size mapped to its volume's key (itself, or the first dir of its broker with the
    same ``totalBytes`` and ``usableBytes``: one filesystem, unless their replicas hold more bytes than
    that filesystem's used bytes, which one filesystem cannot), and each volume's size and free bytes.
    The snapshot's replicas are summed only when some dirs look shared, and only for those dirs.
    ``disk_per_log_dir`` (``capacity.diskPerLogDir``, declared by the user): every dir is its own volume."""
    volume: dict[DirKey, DirKey] = {}
    sizes: dict[DirKey, Volume] = {}
    shared: set[DirKey] = set()
    for b in snapshot.brokers:
        first: dict[tuple[int, int], DirKey] = {}
        for d in b.log_dirs:
            if d.total_bytes <= 0:
                continue
            figures = (d.total_bytes, d.usable_bytes)
            key = (b.id, d.path) if disk_per_log_dir else first.setdefault(figures, (b.id, d.path))
            volume[(b.id, d.path)] = key
            sizes.setdefault(key, Volume(d.total_bytes, d.usable_bytes))
            if key != (b.id, d.path):
                shared.add(key)
    if not shared:
        return volume, sizes
    held: dict[DirKey, int] = {}
    for p in snapshot.partitions:
        for broker, path in zip(p.replicas, p.log_dirs, strict=True):
            v = volume.get((broker, path)) if path is not None else None
            if v in shared:
                held[v] = held.get(v, 0) + p.size_bytes
    for v in shared:
        if held.get(v, 0) > sizes[v].used:  # more than one filesystem holds: distinct disks of one size
            for place in [d for d, of in volume.items() if of == v and d != v]:
                volume[place] = place
                sizes[place] = sizes[v]
    return volume, sizes


def uneven(
    dirs: Mapping[int, tuple[str, ...]], volume: Mapping[DirKey, DirKey], sizes: Mapping[DirKey, Volume]
) -> dict[int, dict[str, int]]:
    """Per broker whose dirs' volumes are all of known size but not all of one size: each dir's volume
    size (balance then compares shares of the volumes; elsewhere bytes, as before)."""
    out: dict[int, dict[str, int]] = {}
    for b, paths in dirs.items():
        keys = [volume.get((b, p)) for p in paths]
        if len(paths) < 2 or any(k is None for k in keys):
            continue
        totals = {p: sizes[k].total for p, k in zip(paths, keys, strict=True) if k is not None}
        if len(set(totals.values())) > 1:
            out[b] = totals
    return out


def above_limit(volume: Mapping[DirKey, DirKey], sizes: Mapping[DirKey, Volume], share: float) -> set[DirKey]:
    """The dirs whose volume is above the limit at snapshot time (they receive nothing)."""
    over = {v for v, s in sizes.items() if s.used > limit_bytes(s.total, share)}
    return {d for d, v in volume.items() if v in over}


def held_per_volume(volume: Mapping[DirKey, DirKey], held: Mapping[DirKey, int]) -> dict[DirKey, int]:
    """The bytes of replicas on each volume (the sum over its dirs)."""
    out: dict[DirKey, int] = {}
    for d, v in volume.items():
        out[v] = out.get(v, 0) + held.get(d, 0)
    return out


def _share(bytes_: float, total: int) -> float:
    return round(bytes_ / total, 4)


def used_after(s: Volume, held_before: int, held_after: int) -> int:
    """A volume's bytes after the plan: its bytes counted before (module docstring) plus the change."""
    return max(s.used, held_before) + held_after - held_before


def summary(
    snapshot: ClusterSnapshot,
    share: float,
    before: Mapping[DirKey, int],
    after: Mapping[DirKey, int],
    disk_per_log_dir: bool = False,
) -> DiskHeadroom:
    """The summary's ``diskHeadroom``: the limit, each dir of known size with its volume's share before
    (as measured) and after the plan, the fullest after, and the dirs without a limit (size unknown).
    ``before``/``after``: the bytes of replicas per dir before and after the plan."""
    volume, sizes = volumes(snapshot, disk_per_log_dir)
    hb, ha = held_per_volume(volume, before), held_per_volume(volume, after)
    dirs: list[DirShare] = []
    unknown: list[tuple[int, str]] = []
    for b in snapshot.brokers:
        for d in b.log_dirs:
            v = volume.get((b.id, d.path))
            if v is None:
                unknown.append((b.id, d.path))
                continue
            s = sizes[v]
            dirs.append(
                DirShare(
                    b.id,
                    d.path,
                    s.total,
                    _share(s.used, s.total),
                    _share(used_after(s, hb.get(v, 0), ha.get(v, 0)), s.total),
                    v[1] if v != (b.id, d.path) else None,
                )
            )
    top = fullest(sizes, hb, ha)
    most = None if top is None else FullestDir(*top[0], round(top[1], 4))
    return DiskHeadroom(share, tuple(dirs), most, tuple(unknown))


def fullest(
    sizes: Mapping[DirKey, Volume], held_before: Mapping[DirKey, int], held_after: Mapping[DirKey, int]
) -> tuple[DirKey, float] | None:
    """The volume with the largest share after the plan, and that share (None: no volume of known size)."""
    best: tuple[DirKey, float] | None = None
    for v, s in sorted(sizes.items()):
        planned = used_after(s, held_before.get(v, 0), held_after.get(v, 0)) / s.total
        if best is None or planned > best[1]:
            best = (v, planned)
    return best


def planned_share(s: Volume, free: int, share: float) -> float:
    """A volume's share after the plan from its room left (``Assignment.free``)."""
    return (limit_bytes(s.total, share) - free) / s.total


def refused(
    share: float, where: DirKey, planned: float, detail: str = "", partition: str = "", so_far: bool = False
) -> DiskHeadroomError:
    """The refusal of a plan by the limit, naming the fullest dir, its planned share and the limit
    (``detail``: what could not be placed, when known; ``so_far``: the share is the dir's with the
    replicas placed before the planner found no room for the others, not a finished plan's)."""
    broker, path = where
    percent = f"{100 * planned:.1f}% full"
    fullest = (
        f"the fullest dir with the replicas placed so far, broker {broker} {path}, is {percent}"
        if so_far
        else f"the fullest dir, broker {broker} {path}, would be {percent}"
    )
    head = (
        f"no plan keeps every log dir within maxDiskShare {share:g} of its volume: {fullest} (limit "
        f"{100 * share:.1f}%)"
    )
    return DiskHeadroomError(f"{head}; {detail}" if detail else head, RULE, partition)
