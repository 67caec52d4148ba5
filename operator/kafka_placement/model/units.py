"""Numbers as a person reads them: bytes in binary units, counts with separators, durations.

One source for every text meant for people (the plan report, status messages); machines read the
summary's JSON and the resources' numeric fields, never these strings. Pure.

Rates are the one exception to binary units, on purpose: a network rate is read in decimal units (MB/s =
10^6 bytes per second, as links, Kafka's throttle configs in bytes per second and monitoring usually show
them), so ``planning/loads.rate_text``, the report's traffic table and the executor's throttle log lines
give MB/s; an amount of data (a disk, a plan's bytes) is always binary (GiB).
"""

from __future__ import annotations

UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def binary_bytes(n: float) -> str:
    """Bytes in binary units: ``12.3 GiB``, ``512 B``."""
    unit = 0
    while abs(n) >= 1024 and unit < len(UNITS) - 1:
        n, unit = n / 1024, unit + 1
    return f"{n:.1f} {UNITS[unit]}" if unit else f"{n:.0f} B"


def count(n: float) -> str:
    """A count with thousands separated: ``12,345``."""
    return f"{n:,.0f}"


def duration(seconds: float) -> str:
    """``3 h 25 min``, ``12 min``, ``40 s``."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes = round(whole / 60)
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"


__all__ = ["UNITS", "binary_bytes", "count", "duration"]
