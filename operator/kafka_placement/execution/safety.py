"""Two safety checks of an executor tick (docs/architecture.md §5): owned configs and min.insync.replicas.

**Owned configs.** The throttles an execution set (the record's ``throttles``, with the values it set) and
the cordons it keeps (``ownedCordons``) are compared with Kafka on every tick that has moves in flight, in
one DescribeConfigs of the brokers concerned and the topics with moves in flight (its cost follows the work
in flight). Another party changed or removed one (a Strimzi Topic Operator reverting topic configs, an
admin's script): with the policy ``Reapply`` (the default) it is put back, counted and reported (the CLI
prints a warning, the operator posts a Warning Event and increments a metric); with ``Pause`` no new move is
submitted while the change lasts. It never fights forever: after ``maxReapplies`` re-applications within
``reapplyWindowSeconds`` the execution holds (moves in flight go on, nothing new is submitted, nothing is
re-applied) until the window has passed, with a message naming what keeps changing.

**min.insync.replicas.** A plan that would leave a partition with fewer replicas than its topic's
effective ``min.insync.replicas`` is refused when the execution is validated, before anything moves (with
acks=all such a partition could never be written again). While moving, a candidate whose target falls
below a min ISR raised since then is not submitted, and partitions of the topics read that are at or below
min ISR with a replica out of sync, for reasons other than our moves, pause the execution: the message
names them with their ISR and min ISR. Not those the plan itself repairs (its target drops every replica
out of sync, as a dead broker's decommission does): they are moved, fewest in-sync replicas first (the
execution order, record.Original.urgency). A move whose target keeps at least min ISR replicas never takes a
healthy partition below it: Kafka adds the new replicas and waits for them to join the ISR before it
removes any, and leadership only moves to in-sync replicas (preferred-leader elections included).
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Iterable, Sequence

from ..kafka.gateway import ConfigTarget, KafkaGateway
from ..kafka.throttles import Drift, owned_drift
from ..model.errors import BadInputError
from ..model.plan import PartitionTarget
from ..model.snapshot import PartitionState
from .record import Execution
from .record_doc import Limits
from .view import TickView

log = logging.getLogger(__name__)

SHOWN = 10  # names listed in one message


def _listed(items: Sequence[str]) -> str:
    more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


# ---- owned configs -----------------------------------------------------------------------------------


def _until(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def defend(ex: Execution, gateway: KafkaGateway, limits: Limits, live: Iterable[int]) -> str | None:
    """Check the configs the execution owns and re-apply or hold per ``limits``; returns why no new move
    may be submitted now (None: go on). Counts go to the record's ``defence``."""
    d = ex.doc.defence
    state = ex.doc.throttles
    up = set(live)  # a broker answers for its own configs: one that is down would only time out
    cordons = {b: dirs for b, dirs in ex.doc.owned_cordons.items() if dirs and b in up}
    if state.empty and not cordons:
        return None
    plan = ex.plan
    moving = {b for i in ex.active() for b in (*plan.original(i).replicas, *plan.targets[i].replicas)}
    now = time.time()
    window = limits.reapply_window_s
    d.times = [t for t in d.times if now - t < window]
    topics = {plan.targets[i].topic for i in ex.active()}
    seen, changes = owned_drift(gateway, state, topics, cordons, moving & up)
    # a config set moments ago may not have reached the broker that answers yet (KRaft propagates
    # asynchronously): only a change seen on two checks in a row counts
    suspect = set(d.suspect)
    drifts = [x for x in seen if x.key in suspect]
    d.suspect = [x.key for x in seen]
    changes = {t: ops for t, ops in changes.items() if any(_touches(t, x) for x in drifts)}
    if d.held_until is not None and now >= d.held_until:
        d.held_until = None
    if not drifts:
        return _hold_message(ex, now) if d.held_until is not None else None
    d.drifts += 1
    d.last = [str(x)[:300] for x in drifts[:SHOWN]]
    what = _listed([str(x) for x in drifts])
    if limits.on_config_change == "Pause":
        return f"paused: configs this execution owns were changed by another party (policy Pause): {what}"
    if d.held_until is not None:
        return _hold_message(ex, now)
    if len(d.times) >= limits.max_reapplies:
        d.held_until = now + window
        log.warning("owned configs keep changing, holding until %s: %s", _until(d.held_until), what)
        return _hold_message(ex, now)
    errors = gateway.incremental_alter_configs(changes)
    d.reapplied += 1
    d.times.append(now)
    log.warning("re-applied configs changed by another party: %s", what)
    if errors:
        failed = "; ".join(
            f"{t.kind} {t.name}: {e}" for t, e in sorted(errors.items(), key=lambda i: str(i[0]))
        )
        ex.error(f"re-applying owned configs failed (retried next tick): {failed[:1000]}")
    return None


def _touches(target: ConfigTarget, drift: Drift) -> bool:
    return target.kind == drift.kind and target.name == drift.name


def _hold_message(ex: Execution, now: float) -> str:
    d = ex.doc.defence
    assert d.held_until is not None
    return (
        f"paused until {_until(d.held_until)}: configs this execution owns were changed by another party "
        f"{len(d.times)} times within the window and re-applied each time; not fighting further. Latest: "
        + "; ".join(d.last)
    )


# ---- min.insync.replicas -----------------------------------------------------------------------------


def below_min_isr(targets: Iterable[PartitionTarget], min_isr: dict[str, int]) -> list[str]:
    """Targets with fewer replicas than their topic's min.insync.replicas, one line each."""
    return [
        f"{t.name} ({len(t.replicas)} replicas, min.insync.replicas {min_isr[t.topic]})"
        for t in targets
        if len(t.replicas) < min_isr.get(t.topic, 0)
    ]


def check_plan_min_isr(ex: Execution, gateway: KafkaGateway) -> dict[str, int]:
    """At validation: refuse a plan that would leave any partition below its topic's min ISR; returns the
    plan topics' min ISR."""
    targets = ex.plan.plan.partitions
    min_isr = gateway.min_insync_replicas({t.topic for t in targets})
    bad = below_min_isr(targets, min_isr)
    if bad:
        raise BadInputError(
            f"the plan would leave {len(bad)} partitions with fewer replicas than their topic's "
            f"min.insync.replicas, unwritable with acks=all; nothing was moved: {_listed(bad)}",
            "plan",
        )
    return min_isr


def repairs(target: PartitionTarget, p: PartitionState) -> bool:
    """The move to ``target`` drops every replica of ``p`` that is out of sync (a dead broker's, a failed
    dir's): Kafka copies the new replicas from the in-sync ones before it removes any, so moving it
    repairs the under-replication instead of adding to it. Without a leader nothing can be copied."""
    out_of_sync = set(p.replicas) - set(p.isr)
    return p.leader is not None and not out_of_sync & set(target.replicas)


def unsafe(ex: Execution, view: TickView, candidates: Sequence[int]) -> list[str]:
    """Partitions of the topics read that are under-replicated for reasons other than our moves (with
    their ISR against min ISR), and candidates whose target is now below their topic's min ISR. The
    under-replication the plan repairs (its target drops every out-of-sync replica: ``repairs``) is
    never a reason to pause: it is what the plan is for (a dead broker's decommission)."""
    plan = ex.plan
    ours = {plan.targets[i].key for i in ex.active()}
    out = []
    for k, p in view.partitions.items():
        if k in ours or not p.under_replicated:
            continue
        i = plan.index.get(k)
        if i is not None and repairs(plan.targets[i], p):
            continue
        if not p.isr:
            continue  # offline, every replica lost (a dead broker's RF 1): nothing a move could harm
        isr, m = len(set(p.isr)), view.min_isr.get(p.topic)
        where = "" if m is None else f", {'below' if isr < m else 'at' if isr == m else 'above'} min ISR {m}"
        out.append(f"{p.name} under-replicated, not by our moves (ISR {isr} of {len(p.replicas)}{where})")
    out += [
        f"{line}: its target is below min.insync.replicas, raised since validation; not submitted"
        for line in below_min_isr((ex.plan.targets[i] for i in candidates), dict(view.min_isr))
    ]
    return out
