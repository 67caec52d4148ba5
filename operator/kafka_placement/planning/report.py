"""The data of a plan's report (``kafka-placement report``; rendered by ``report_html``).

From a snapshot, a plan and optionally the intents: the plan's summary exactly as ``plan --summary``
computes it (``optimizer.summarize``, one tally), and from that same tally the per-broker and per-dir
loads before and after (each dir's share of its volume too, beside the disk headroom limit), replicas per
rack unit at each level of the hierarchy, and the plan's flows (``flows.py``, summed by the tally as it
shifts each entry in): bytes moved in and out of each broker, moves by topic, the largest moves. Bytes
per batch come from the batches' own pass over the plan (each change knows what it copies). With the
planner's tally (``PlanResult.tally``) nothing passes over the partitions again. Lists that grow with
the cluster are capped (``MAX_*``) and keep their full count, so a report of a huge cluster stays small
and says what it left out. Pure: no I/O.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

from ..model.intents import Intents, RackAwareness, validate_against
from ..model.plan import Plan
from ..model.snapshot import ClusterSnapshot
from . import batching, plan_quality
from .batching import MAX_PER_BROKER
from .flows import LARGEST
from .optimizer import summarize
from .plan_summary import PlanSummary
from .state import Eligibility
from .topology import RackTree

MAX_BROKERS = 300  # brokers charted and listed (the most loaded, before or after)
MAX_DIR_BROKERS = 40  # brokers whose dirs are charted (those moving the most bytes)
MAX_UNITS = 100  # rack units per level
MAX_TOPICS = 50  # topics listed (moving the most bytes)
MAX_MOVES = LARGEST  # largest partition moves listed (at most the flows' LARGEST: those are kept)
MAX_LEVELS = 8  # rack levels without a policy (the most a policy may ask for)


@dataclass(frozen=True, slots=True)
class BrokerRow:
    broker: int
    rack: str | None
    bytes: tuple[int, int]  # (before, after)
    replicas: tuple[int, int]
    leaders: tuple[int, int]
    bytes_in: int  # copied to the broker from another
    bytes_out: int  # its replicas that leave it
    dir_bytes: int  # moved between its own dirs


@dataclass(frozen=True, slots=True)
class DirRow:
    broker: int
    path: str
    bytes: tuple[int, int]
    usable_bytes: int  # 0: unknown
    cordoned: bool
    share: tuple[float, float] | None = None  # of its volume, before and after (None: size unknown)


@dataclass(frozen=True, slots=True)
class UnitRow:
    level: int
    unit: str
    replicas: tuple[int, int]


@dataclass(frozen=True, slots=True)
class TopicRow:
    topic: str
    partitions: int
    replica_moves: int
    bytes: int


@dataclass(frozen=True, slots=True)
class MoveRow:
    partition: str
    size_bytes: int
    replicas: tuple[tuple[int, ...], tuple[int, ...]]
    bytes: int


@dataclass(frozen=True, slots=True)
class Capped:
    """How many rows a capped list holds in all (``shown`` of ``total``)."""

    shown: int
    total: int

    @property
    def capped(self) -> bool:
        return self.shown < self.total


@dataclass(frozen=True, slots=True)
class Report:
    """Everything the report shows; ``summary`` is the plan's summary (``optimizer.summarize``)."""

    plan_id: str
    summary: PlanSummary
    with_intents: bool  # False: the lower bound and violations are not known
    threshold: float | None  # bytes per broker the balance goal allows after the plan, if one asks
    brokers: tuple[BrokerRow, ...]
    brokers_count: Capped
    dirs: tuple[DirRow, ...]
    dir_brokers_count: Capped
    rack_levels: int
    units: tuple[UnitRow, ...]
    units_count: Capped
    topics: tuple[TopicRow, ...]
    topics_count: Capped
    moves: tuple[MoveRow, ...]
    moves_count: Capped
    batch_bytes: tuple[int, ...]  # bytes copied by each batch, in execution order
    # partitions changed and bytes copied of topics with remote storage (KIP-405): local bytes only
    tiered: tuple[int, int] = (0, 0)

    @property
    def lower_bound(self) -> int | None:
        return self.summary.lower_bound_bytes if self.with_intents else None

    @property
    def ratio(self) -> float | None:
        return self.summary.bytes_over_lower_bound if self.with_intents else None


def build_report(
    snapshot: ClusterSnapshot,
    plan: Plan,
    intents: Intents | None = None,
    max_moves_per_broker: int = MAX_PER_BROKER,
    tally: plan_quality.Tally | None = None,
) -> Report:
    """The report of ``plan`` on ``snapshot`` (measured against the enforced ``intents``, as the planner
    measured it; without intents against none: no lower bound). ``tally``: the planner's tally of this
    plan on this snapshot under these intents (``PlanResult.tally``), not counted again. Bad plans or
    intents: BadInputError."""
    if intents is not None:
        validate_against(intents, snapshot)
    rules = intents.enforced_only() if intents is not None else Intents()
    tallies: list[plan_quality.Tally] = []

    def measure(s: ClusterSnapshot, p: Plan, scope: plan_quality.Scope) -> plan_quality.Tally:
        tallies.append(tally if tally is not None else plan_quality.tally(s, p, scope))
        return tallies[-1]

    moved: dict[str, int] = {}  # bytes each entry copies, from its change

    def ordered(s: ClusterSnapshot, p: Plan, elig: Eligibility, per_broker: int) -> list[list[str]]:
        found = batching.changes(s, p, elig)
        moved.update((c.name, c.moved) for c in found)
        return batching.order(found, per_broker)

    summary = summarize(snapshot, rules, plan, max_moves_per_broker, measure, ordered)
    found = tallies[0]
    before, after, flows = found.before, found.after, found.flows
    brokers = [
        BrokerRow(
            b.id,
            b.rack,
            (before.bytes.get(b.id, 0), after.bytes.get(b.id, 0)),
            (before.replicas.get(b.id, 0), after.replicas.get(b.id, 0)),
            (before.leaders.get(b.id, 0), after.leaders.get(b.id, 0)),
            flows.bytes_in.get(b.id, 0),
            flows.bytes_out.get(b.id, 0),
            flows.dir_bytes.get(b.id, 0),
        )
        for b in snapshot.brokers
    ]
    shown = sorted(_top(brokers, MAX_BROKERS, lambda r: (max(r.bytes), -r.broker)), key=lambda r: r.broker)
    changing = [r for r in brokers if r.bytes_in or r.bytes_out or r.dir_bytes]
    dir_brokers = _top(
        changing, MAX_DIR_BROKERS, lambda r: (r.bytes_in + r.bytes_out + r.dir_bytes, -r.broker)
    )
    shares = {(x.broker, x.path): x for x in summary.disk_headroom.dirs}
    dirs = [
        DirRow(
            b.id,
            d.path,
            (before.dir_bytes.get((b.id, d.path), 0), after.dir_bytes.get((b.id, d.path), 0)),
            d.usable_bytes,
            d.cordoned,
            (x.share_before, x.share_after) if (x := shares.get((b.id, d.path))) is not None else None,
        )
        for r in sorted(dir_brokers, key=lambda r: r.broker)
        if (b := snapshot.broker(r.broker)) is not None
        for d in b.log_dirs
    ]
    units, levels, unit_total = _units(snapshot, rules, brokers)
    topics = sorted(
        (TopicRow(topic, *row) for topic, row in flows.topics.items()), key=lambda t: (-t.bytes, t.topic)
    )
    moves = [MoveRow(name, size, (was, now), -neg) for neg, name, size, was, now in flows.largest(MAX_MOVES)]
    tiered = [t for t in topics if snapshot.remote_storage(t.topic)]
    return Report(
        plan_id=plan.plan_id,
        summary=summary,
        with_intents=intents is not None,
        threshold=_threshold(rules, summary),
        brokers=tuple(shown),
        brokers_count=Capped(len(shown), len(brokers)),
        dirs=tuple(dirs),
        dir_brokers_count=Capped(len(dir_brokers), len(changing)),
        rack_levels=levels,
        units=tuple(units),
        units_count=Capped(len(units), unit_total),
        topics=tuple(topics[:MAX_TOPICS]),
        topics_count=Capped(min(MAX_TOPICS, len(topics)), len(topics)),
        moves=tuple(moves),
        moves_count=Capped(len(moves), flows.entries),
        batch_bytes=tuple(sum(map(moved.__getitem__, batch)) for batch in summary.batches.order or ()),
        tiered=(sum(t.partitions for t in tiered), sum(t.bytes for t in tiered)),
    )


def _top(rows: list[BrokerRow], n: int, key: Any) -> list[BrokerRow]:
    return rows if len(rows) <= n else heapq.nlargest(n, rows, key=key)


def _threshold(intents: Intents, summary: PlanSummary) -> float | None:
    """``(1 + tolerance) * mean`` bytes per broker after the plan, the tightest broker-balance goal's."""
    tolerances = [p.balance.tolerance for p in intents.policies if p.balance.brokers]
    if not tolerances:
        return None
    return (1 + min(tolerances)) * float(summary.balance_after.broker_bytes_mean)


def _units(
    snapshot: ClusterSnapshot, intents: Intents, brokers: list[BrokerRow]
) -> tuple[list[UnitRow], int, int]:
    """Replicas per rack unit at each level (the first policy's rack rule, else racks split on ``/``
    to their deepest level); the units shown (capped per level), the levels and the units in all."""
    racks = {b.id: b.rack for b in snapshot.brokers}
    if not any(racks.values()):
        return [], 0, 0
    rule = next((p.rack_awareness for p in intents.policies if p.rack_awareness is not None), None)
    if rule is None:
        deepest = max(len([x for x in (r or "").split("/") if x]) for r in racks.values())
        rule = RackAwareness(separator="/", levels=min(MAX_LEVELS, max(1, deepest)))
    tree = RackTree.of(racks, rule, racks)
    counts: dict[tuple[str, ...], tuple[int, int]] = {}
    for r in brokers:
        path = tree.path[r.broker]
        for depth in range(1, tree.levels + 1):
            was = counts.get(path[:depth], (0, 0))
            counts[path[:depth]] = (was[0] + r.replicas[0], was[1] + r.replicas[1])
    out: list[UnitRow] = []
    for level in range(1, tree.levels + 1):
        at = sorted((u for u in counts if len(u) == level), key=lambda u: (-max(counts[u]), u))
        out += [UnitRow(level, "/".join(x or "(none)" for x in u), counts[u]) for u in sorted(at[:MAX_UNITS])]
    return out, tree.levels, len(counts)
