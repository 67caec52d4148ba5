"""Broker balance's limits, the one definition: the most a broker that keeps data may hold after a plan.

Broker balance asks ``max / mean <= 1 + tolerance`` over the brokers that keep data. Where every one of
them has a known disk capacity (``Eligibility.capacity``: the sizes of the volumes all its dirs sit on, a
filesystem shared by two dirs counted once: the hardware's, so a cordon or a failed disk does not change
it) and the capacities differ, balance compares **shares of capacity**, as dir balance does for volumes
of different sizes: broker ``b`` may hold ``(1 + tolerance) x total x capacity[b] / sum of capacities``
(a broker with half the disk holds half the bytes; a small broker is not filled to match a big one).
Otherwise, and always for replica counts (an empty cluster balances counts), every broker the same ``(1 +
tolerance) x total / n``: with equal capacities both are the same number, so a cluster of one disk size
plans exactly as before.

Every place that judges or plans broker balance takes its limits from here: the balance goal and its
reclaiming, the repair (a replica off a drained dir leaves a broker above its limit), failure spread and
the network goals (they keep the balance), the exact program's rows, the metrics' max/mean and lower
bound, and the reach proof. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["capacities", "dir_factors", "dir_thresholds", "limits", "max_mean"]


def capacities(capacity: Mapping[int, int], brokers: Sequence[int]) -> dict[int, int] | None:
    """Each broker's capacity when all of ``brokers`` have a known one (> 0) and they are not all equal;
    None when balance compares plain bytes (unknown somewhere, or one size everywhere)."""
    caps = {b: capacity.get(b, 0) for b in brokers}
    if not caps or min(caps.values()) <= 0 or len(set(caps.values())) < 2:
        return None
    return caps


def limits(
    capacity: Mapping[int, int], brokers: Sequence[int], total: float, tolerance: float, by_bytes: bool = True
) -> dict[int, float]:
    """The most each of ``brokers`` may hold when ``total`` (bytes, or replicas when not ``by_bytes``) is
    spread over them within ``tolerance`` (module docstring)."""
    if not brokers:
        return {}
    caps = capacities(capacity, brokers) if by_bytes else None
    if caps is None:
        even = (1 + tolerance) * total / len(brokers)
        return dict.fromkeys(brokers, even)
    whole = sum(caps.values())
    return {b: (1 + tolerance) * total * c / whole for b, c in caps.items()}


def max_mean(capacity: Mapping[int, int], brokers: Sequence[int], held: Mapping[int, int]) -> float | None:
    """Broker balance's measure over ``brokers`` holding ``held`` bytes: max / mean of the bytes, or of the
    shares of capacity (bytes / capacity over the mean share, sum of bytes / sum of capacities) where
    capacities differ; None without brokers or bytes. ``<= 1 + tolerance`` exactly when every broker is
    within its ``limits``."""
    values = [held.get(b, 0) for b in brokers]
    if not values or sum(values) <= 0:
        return None
    caps = capacities(capacity, brokers)
    if caps is None:
        return round(max(values) / (sum(values) / len(values)), 4)
    mean = sum(values) / sum(caps.values())
    return round(max(held.get(b, 0) / caps[b] for b in brokers) / mean, 4)


def dir_thresholds(
    dir_bytes: Mapping[tuple[int, str], int],
    broker: int,
    paths: Sequence[str],
    tol: float,
    sizes: Mapping[str, int] | None,
) -> dict[str, float]:
    """Dir balance's limits, the one definition (the dir balance goal, the exact dirs per broker of
    planning/exact_dirs.py and their check): each dir's most bytes within the balance: (1 + ``tol``) x
    the mean bytes per dir, or, where the broker's volumes differ in size (``sizes``), (1 + ``tol``) x
    the broker's bytes per volume byte x the dir's volume size."""
    loads = [dir_bytes[(broker, p)] for p in paths]
    limits = _dir_limits(loads, None if sizes is None else [sizes[p] for p in paths], tol)
    return dict(zip(paths, limits, strict=True))


def dir_factors(paths: Sequence[str], tol: float, sizes: Mapping[str, int] | None) -> dict[str, float]:
    """``dir_thresholds`` per byte the broker holds over ``paths``: each threshold is this factor times
    those bytes (linear in them), as the exact program's dir balance rows need it (planning/exact.py)."""
    unit = [1] + [0] * (len(paths) - 1)
    limits = _dir_limits(unit, None if sizes is None else [sizes[p] for p in paths], tol)
    return dict(zip(paths, limits, strict=True))


def dir_excess(
    dir_bytes: Mapping[tuple[int, str], int],
    broker: int,
    paths: Sequence[str],
    tol: float,
    sizes: Mapping[str, int] | None,
    at: str | None = None,
    delta: int = 0,
) -> float:
    """The bytes ``broker``'s dirs hold above their thresholds (``dir_thresholds``), with ``delta`` bytes
    added to dir ``at`` (a replica arriving there, or leaving it with a negative ``delta``)."""
    loads = [dir_bytes[(broker, p)] for p in paths]
    if not loads:
        return 0.0
    if at is not None and at in paths:
        loads[paths.index(at)] += delta
    if sizes is None:  # (the common case, at a planner's hot path: one threshold for every dir)
        cut = _even_limit(sum(loads), len(loads), tol)
        return sum(x - cut for x in loads if x > cut)
    limits = _dir_limits(loads, [sizes[p] for p in paths], tol)
    return sum(x - cut for x, cut in zip(loads, limits, strict=True) if x > cut)


def _dir_limits(loads: Sequence[int], volumes: Sequence[int] | None, tol: float) -> list[float]:
    """``dir_thresholds`` of dirs holding ``loads`` bytes on volumes of ``volumes`` bytes (None: equal)."""
    held = sum(loads)
    if volumes is None:
        return [_even_limit(held, len(loads), tol)] * len(loads)
    per_byte = held / sum(volumes)
    return [(1 + tol) * per_byte * v for v in volumes]


def _even_limit(held: float, dirs: int, tol: float) -> float:
    """Each dir's threshold where the broker's volumes are of one size: (1 + ``tol``) x the mean."""
    return (1 + tol) * (held / dirs)
