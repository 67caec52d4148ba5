"""The executor's disk watch applied: one tick's decision (execution/disk_watch.py, pure) carried out.

``watch_disks`` runs in every moving tick after the tick's read (no read of its own): it decides from the
dirs the view holds, holds or releases broker throttles through ``kafka/throttles.set_rates`` (the record
is saved with what will be set before Kafka is touched, as for every throttle), and writes the record's
``disk`` (execution/record.DiskWatchDoc): the dirs held with their moves, the candidates deferred, the dirs
watched. ``clear_holds`` forgets the holds once the execution's throttles are removed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Sequence

from ..kafka.gateway import KafkaGateway
from ..kafka.throttles import FOLLOWER_REPLICAS, ThrottleError, set_rates
from ..model.throttle_state import ThrottleState
from ..planning.headroom import hard_stop
from . import disk_watch
from .disk_watch import REPLICATION, TRICKLE, DiskDecision, Write
from .record import Execution
from .record_doc import MAX_WATCHED, DirSeen, HeldDir, HeldRate
from .view import TickView

__all__ = ["MAX_HELD_CHARS", "TRICKLE", "clear_holds", "describe_held", "held_dirs", "watch_disks"]

log = logging.getLogger(__name__)

SHOWN = 10
MAX_HELD_CHARS = 1000  # status.progress.diskHeld and the Events: far under any object's size limit


def watch_disks(
    ex: Execution, gateway: KafkaGateway, view: TickView, candidates: Sequence[int]
) -> DiskDecision:
    """Decide for this tick, hold or release throttles, record it; returns the decision (the executor
    leaves the deferred candidates out and starts no dir move into a dir above the limit)."""
    plan, disk = ex.plan, ex.doc.disk
    use = disk_watch.usage(view.dirs)
    previous = {(s.broker, s.path): s.used for s in disk.seen}
    active = [w for i in ex.active() for w in disk_watch.writes(plan, i, view)]
    ahead = [w for i in candidates for w in disk_watch.writes(plan, i, view)]
    held_before = [(h.broker, h.path) for h in disk.held]
    d = disk_watch.decide(ex.doc.limits.max_disk_share, use, previous, held_before, active, ahead)
    _apply_holds(ex, gateway, view, d, active)
    now = time.time()
    since = {(h.broker, h.path): h.since for h in disk.held}
    new = [k for k in d.held if k not in since]
    disk.holds += len(new)
    disk.held = [
        HeldDir(
            broker=b,
            path=p,
            share=round(use[(b, p)].share, 4),
            since=since.get((b, p), now),
            moves=len(moves),
            partitions=[plan.targets[i].name for i in moves[:SHOWN]],
        )
        for (b, p), moves in sorted(d.held.items())[:MAX_WATCHED]
    ]
    disk.deferred = len(d.deferred)
    into = sorted(set(d.deferred.values()))
    disk.deferred_into = [f"broker {b} {p} ({100 * use[(b, p)].share:.1f}%)" for b, p in into[:SHOWN]]
    disk.seen = [
        DirSeen(broker=b, path=p, used=u.used, total=u.total)
        for (b, p), u in sorted(d.watched.items())[:MAX_WATCHED]
    ]
    for b, p in new:
        log.warning("disk watch: holding the moves into broker %d %s (%s)", b, p, describe_held(ex)[:300])
    return d


def _apply_holds(
    ex: Execution, gateway: KafkaGateway, view: TickView, d: DiskDecision, active: Sequence[Write]
) -> None:
    """Lower the throttles of newly held dirs to ``TRICKLE``, put back those of released ones (on live
    brokers that answer: one that is not live cannot be configured, nor does it copy anything)."""
    disk = ex.doc.disk
    had = {(r.broker, r.config): r for r in disk.rates}
    start = sorted(k for k in d.hold if k not in had and k[0] in view.answering)
    end = sorted(k for k in had if k not in d.hold and k[0] in view.answering)
    if not start and not end:
        return
    ours = {(e.broker, e.config): e.value for e in ex.doc.throttles.brokers}
    wanted: dict[int, dict[str, str | None]] = {}
    for b, c in start:
        wanted.setdefault(b, {})[c] = str(TRICKLE)
    for b, c in end:
        wanted.setdefault(b, {})[c] = had[(b, c)].before
    # a held replica copied from another broker is throttled only if its topic lists it (an unthrottled
    # execution listed nothing): its partition:broker entry is appended, and removed with the others
    replicas: dict[str, dict[str, list[str]]] = {}
    for w in active:
        if w.config == REPLICATION and (w.broker, w.config) in start:
            t = ex.plan.targets[w.move]
            entries = replicas.setdefault(t.topic, {}).setdefault(FOLLOWER_REPLICAS, [])
            entries.append(f"{t.partition}:{w.broker}")
    kept = [r for k, r in had.items() if k not in end]
    rates = kept + [HeldRate(broker=b, config=c, before=ours.get((b, c))) for b, c in start]

    def write_ahead(planned: ThrottleState) -> None:  # the holds are recorded with what Kafka will have
        ex.doc.throttles = planned
        disk.rates = rates
        ex.save()

    try:
        ex.doc.throttles = set_rates(
            gateway,
            ex.doc.throttles,
            wanted,
            replicas,
            before_alter=write_ahead,
            claim=ex.doc.claim_owner,
        )
    except ThrottleError as e:
        ex.doc.throttles = e.state
        raise
    if end:
        log.info("disk watch: released %s", ", ".join(f"broker {b} {c}" for b, c in end))


def clear_holds(ex: Execution, dead: Collection[int]) -> None:
    """The execution's throttles were removed (those of ``dead`` brokers excepted): no hold is left."""
    disk = ex.doc.disk
    disk.rates = [r for r in disk.rates if r.broker in dead]
    disk.held = []


def describe_held(ex: Execution) -> str:
    """One line naming each held dir, its share against the hard stop and the moves it holds ("" when
    none); what the status and the Events say."""
    disk = ex.doc.disk
    if not disk.held:
        return ""
    share = ex.doc.limits.max_disk_share
    parts = []
    for h in disk.held[:SHOWN]:
        more = h.moves - len(h.partitions)
        names = ", ".join(h.partitions) + (f" and {more} more" if more > 0 else "")
        parts.append(f"broker {h.broker} {h.path} at {100 * h.share:.1f}%: {h.moves} move(s) held ({names})")
    rest = f"; and {len(disk.held) - SHOWN} more dirs" if len(disk.held) > SHOWN else ""
    return (
        f"moves held (throttled to {TRICKLE} B/s, resumed under maxDiskShare {100 * share:.0f}%; hard stop "
        f"{100 * hard_stop(share):.1f}%): " + "; ".join(parts) + rest
    )


def held_dirs(ex: Execution) -> tuple[str, ...]:
    """The dirs whose moves the execution holds, one ``broker <id> <path>`` each (the Events compare them
    before and after a tick)."""
    return tuple(f"broker {h.broker} {h.path}" for h in ex.doc.disk.held)
