"""What an executor tick reads ahead (execution/executor.py): how many pending moves (``ahead``: LOOKAHEAD x
the room the moves in flight leave, at least MIN_LOOKAHEAD), which ones (``candidates``, in execution
order), the topics the next tick may read or change (``work_topics``: the operator checks their ACLs before
acting), and whether a tick must be followed by another at once (``refill_due``: it read its candidates
before it saw a whole wave finish, so it read ahead only for the room it had). Pure: reads the record only.
"""

from __future__ import annotations

from .record import Execution
from .record_doc import Limits, Phase

LOOKAHEAD = 4  # candidates read per tick: this many times the room left, at least MIN_LOOKAHEAD
MIN_LOOKAHEAD = 256


def work_topics(ex: Execution, limits: Limits) -> set[str]:
    """The topics the next tick may read or change: every plan topic before the execution has moved
    anything (validation reads them all, the first batch sets their throttles), then only those of the moves
    in flight, of the candidates it may submit, and of the throttles it holds (cost follows the work)."""
    parts = ex.plan.plan.partitions
    if ex.phase in (Phase.PENDING, Phase.VALIDATING):
        return {t.topic for t in parts}
    pending = ex.pending(ahead(ex, limits))
    throttled = {t.topic for t in ex.doc.throttles.topics}
    return {parts[i].topic for i in (*ex.active(), *pending)} | throttled


def ahead(ex: Execution, limits: Limits) -> int:
    """How many pending moves a tick reads ahead: LOOKAHEAD x the room left, at least MIN_LOOKAHEAD."""
    room = max(limits.max_moves - len(ex.doc.in_flight), 0)
    return max(LOOKAHEAD * room, MIN_LOOKAHEAD)


def candidates(ex: Execution, scan: int) -> list[int]:
    """The first ``scan`` pending moves in execution order, in the phases that submit (none in others)."""
    if ex.phase != Phase.MOVING and ex.phase != Phase.PAUSED and ex.phase != Phase.THROTTLING:
        return []
    return list(ex.pending(scan))


def refill_due(ex: Execution, limits: Limits, scan: int, read: int, window_open: bool = True) -> bool:
    """After a tick that read ``read`` of the ``scan`` candidates it looked for: True when the next tick
    would look further (its completions freed more room than the tick read ahead for) and more moves are
    pending beyond what it read (it read all it looked for), in Moving with the window open."""
    return ex.phase == Phase.MOVING and window_open and read >= scan and ahead(ex, limits) > scan
