"""Small varied plans whose reports and review ConfigMaps are pinned as JSON
(tests/unit/planning/reviews/*.json): everything ``report.build_report`` returns (its summary with the
batches' order) and the ConfigMap's ``data`` and ``binaryData`` (``plan_review.review_data``), as the
report code wrote them before it was made fast for a million partitions. A change that moves a byte of
them shows as a diff here. Regenerate deliberately with ``python -m tests.unit.planning.review_cases``
and review the diff."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.bench.generator import scenario
from tests.unit.builders import intents as parse_intents
from tests.unit.planning.test_network_goals import capacity, hot_cluster

from kafka_placement.execution.copy_model import estimate_json, estimate_plan
from kafka_placement.execution.executor import Limits
from kafka_placement.model.intents import Intents
from kafka_placement.model.plan import ANY_DIR, PartitionTarget, Plan
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning import report as report_mod
from kafka_placement.planning.optimizer import compute_plan
from kafka_placement.planning.plan_summary import PlanSummary
from kafka_placement.planning.report import Report, build_report
from kafka_placement.reconcile import plan_review

REVIEWS = Path(__file__).resolve().parent / "reviews"
GOLDEN = Path(__file__).resolve().parents[2] / "testdata" / "golden"


@dataclass(frozen=True)
class Case:
    """A plan on a snapshot, reported under ``intents`` with ``per_broker`` moves per broker and batch;
    ``tallied``: with the planner's tally (the plan is then the planner's, made at ``planned_at`` moves
    per broker); ``max_data``: the ConfigMap's text limit (a small one stores the page gzipped)."""

    snapshot: ClusterSnapshot
    plan: Plan | None  # None: the planner's
    intents: Intents | None
    per_broker: int = 5
    tallied: bool = False
    planned_at: int = 5
    max_data: int = plan_review.MAX_DATA_BYTES
    caps: tuple[tuple[str, int], ...] = ()  # report.MAX_* made smaller: lists capped on a small cluster


def _golden(name: str) -> tuple[ClusterSnapshot, Plan, Intents]:
    d = GOLDEN / name
    return (
        ClusterSnapshot.loads((d / "snapshot.json").read_text()),
        Plan.loads((d / "plan.json").read_text()),
        Intents.loads((d / "intents.yaml").read_text()),
    )


def _golden_case(name: str, **kw: Any) -> Case:
    snap, plan, found = _golden(name)
    return Case(snap, plan, found, **kw)


def _planned(name: str, **kw: Any) -> Case:
    """The planner's plan of a golden scenario, reported with its tally."""
    snap, _, found = _golden(name)
    return Case(snap, None, found, tallied=True, **kw)


def _tiered() -> Case:
    """Topics with remote storage (one with KIP-1023's untiered bytes), moves between dirs of a broker,
    reorders, an entry that changes nothing and a replication factor that grows and one that shrinks."""
    rng = random.Random(5)
    doc: dict[str, Any] = {
        "version": 1,
        "brokers": [
            {
                "id": b,
                "rack": f"/dc{b % 3}/r{b % 2}",
                "logDirs": [
                    {"path": f"/data/d{d}", "totalBytes": 10**12, "usableBytes": 6 * 10**11} for d in (0, 1)
                ],
            }
            for b in range(1, 9)
        ],
        "partitions": [],
        "topics": [
            {"topic": "tiered", "remoteStorageEnable": True, "localRetentionBytes": 1 << 20},
            {"topic": "plain", "remoteStorageEnable": False},
        ],
        "followerFetchLastTieredOffset": True,
    }
    targets: list[PartitionTarget] = []
    for topic in ("tiered", "plain", "other"):
        for n in range(30):
            reps = rng.sample(range(1, 9), 3)
            dirs = [f"/data/d{rng.randrange(2)}" for _ in reps]
            size = rng.randrange(1, 10**9)
            part: dict[str, Any] = {
                "topic": topic,
                "partition": n,
                "replicas": reps,
                "logDirs": dirs,
                "leader": reps[0],
                "isr": reps[: rng.choice([2, 3])],
                "sizeBytes": size,
                "bytesInPerSec": rng.choice([None, float(rng.randrange(1, 10**6))]),
            }
            if topic == "tiered" and n % 2:
                part["untieredBytes"] = size // rng.randrange(2, 9)
            doc["partitions"].append(part)
            kind = n % 6
            if kind == 0:  # to a new broker, any dir
                new = next(b for b in range(1, 9) if b not in reps)
                t_reps, t_dirs = [new, *reps[1:]], [ANY_DIR] * 3
            elif kind == 1:  # between the dirs of its brokers
                t_reps, t_dirs = reps, ["/data/d1" if d == "/data/d0" else "/data/d0" for d in dirs]
            elif kind == 2:  # a reorder (leader change only)
                t_reps, t_dirs = [reps[1], reps[0], reps[2]], [dirs[1], dirs[0], dirs[2]]
            elif kind == 3:  # nothing changes
                t_reps, t_dirs = reps, dirs
            elif kind == 4:  # replication factor 4, a named dir
                new = next(b for b in range(8, 0, -1) if b not in reps)
                t_reps, t_dirs = [*reps, new], [*dirs, "/data/d1"]
            else:  # replication factor 2
                t_reps, t_dirs = reps[:2], dirs[:2]
            targets.append(PartitionTarget(topic, n, tuple(t_reps), tuple(t_dirs)))
    text = (
        "kind: PlacementPolicy\nspec:\n  topics: {include: ['*']}\n"
        "  balance: {brokers: true, logDirs: true, leaders: true, tolerance: 0.1}\n"
    )
    return Case(ClusterSnapshot.from_json(doc), Plan.of(targets), parse_intents(text), per_broker=2)


def _capped() -> Case:
    """More brokers, dir brokers, rack units, topics and moves than a report lists (its caps made small
    so that the pinned report stays small)."""
    snap, text = scenario("scale-out", brokers=40, partitions=900, topics=12, seed=11)
    empty = sorted(b.id for b in snap.brokers)[-10:]
    targets = []
    for i, p in enumerate(snap.partitions):
        new = empty[i % len(empty)]
        if i % 2 or new in p.replicas:
            continue
        replicas = (*p.replicas[:-1], new)
        targets.append(PartitionTarget(p.topic, p.partition, replicas, (ANY_DIR,) * len(replicas)))
    caps = (("MAX_BROKERS", 7), ("MAX_DIR_BROKERS", 3), ("MAX_UNITS", 2), ("MAX_TOPICS", 4), ("MAX_MOVES", 5))
    return Case(snap, Plan.of(targets), parse_intents(text), per_broker=1000, caps=caps)


def _many_batches() -> Case:
    """More batches than ``batches.json`` lists (summed in groups): every move leaves one broker."""
    snap, text = scenario("decommission", brokers=5, partitions=1100, topics=9, seed=4)
    return Case(snap, None, parse_intents(text), per_broker=1, tallied=True, planned_at=1)


def _network() -> Case:
    snap = hot_cluster(seed=3, brokers=6, parts=60)
    text = "kind: PlacementPolicy\nspec: {balance: {brokers: true, networkIn: true, networkOut: true}}\n"
    found = parse_intents(text).with_capacity(capacity(40_000_000, 40_000_000))
    return Case(snap, None, found, tallied=True)


def _no_intents() -> Case:
    snap, plan, _ = _golden("decommission")
    return Case(snap, plan, None)


def _gzipped() -> Case:
    """A page too large for the ConfigMap's text (the limit made small): stored gzipped."""
    snap, plan, found = _golden("all")
    return Case(snap, plan, found, max_data=20_000)


CASES: dict[str, Callable[[], Case]] = {
    "all": lambda: _golden_case("all"),
    "rack-repair": lambda: _golden_case("rack-repair", per_broker=3),
    "no-intents": _no_intents,
    "drain-tallied": lambda: _planned("drain"),
    "scale-out-tallied-other-limit": lambda: _planned("scale-out", per_broker=2),
    "all-tallied": lambda: _planned("all", per_broker=1000),
    "tiered": _tiered,
    "capped": _capped,
    "many-batches": _many_batches,
    "network": _network,
    "gzipped": _gzipped,
}


@contextlib.contextmanager
def _limits(case: Case) -> Iterator[None]:
    """The case's report caps and ConfigMap text limit, for the time of the block."""
    found = [(report_mod, name, n) for name, n in case.caps] + [
        (plan_review, "MAX_DATA_BYTES", case.max_data)
    ]
    was = [(module, name, getattr(module, name)) for module, name, _ in found]
    for module, name, n in found:
        setattr(module, name, n)
    try:
        yield
    finally:
        for module, name, old in was:
            setattr(module, name, old)


def report_of(case: Case) -> tuple[Report, Plan]:
    """The case's report (with the planner's tally when ``tallied``) and its plan."""
    plan, tally = case.plan, None
    if case.plan is None or case.tallied:
        assert case.intents is not None
        result = compute_plan(case.snapshot, case.intents, max_moves_per_broker=case.planned_at)
        plan, tally = result.plan, result.tally
    assert plan is not None
    return build_report(case.snapshot, plan, case.intents, case.per_broker, tally), plan


def _plain(value: Any) -> Any:
    """A report's value as JSON: dataclasses field by field (a summary as ``to_json`` writes it)."""
    if isinstance(value, PlanSummary):
        return value.to_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


PAGES = ("report.html", "report.html.gz")  # pinned by digest: the page renders the pinned report


def pinned(case: Case) -> dict[str, Any]:
    """What is pinned of a case: the report, and the ConfigMap's data (with the copy model's estimate of
    a throttled execution, as the operator writes it) and binaryData, the page by its SHA-256 and size."""
    limits = Limits(max_moves_per_broker=case.per_broker, throttle=10_000_000)
    with _limits(case):
        report, plan = report_of(case)
        estimate = estimate_json(estimate_plan(case.snapshot, plan, limits, 5.0), None)
        data, binary = plan_review.review_data(report, limits, None, estimate)
    for doc in (data, binary):
        for key in PAGES:
            if key in doc:
                text = doc[key].encode()
                doc[key] = f"sha256 {hashlib.sha256(text).hexdigest()}, {len(text)} bytes"
    return {"report": _plain(report), "data": data, "binaryData": binary}


def text_of(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1) + "\n"


if __name__ == "__main__":
    REVIEWS.mkdir(exist_ok=True)
    for name, build in CASES.items():
        (REVIEWS / f"{name}.json").write_text(text_of(pinned(build())))
        print(name, file=sys.stderr)
