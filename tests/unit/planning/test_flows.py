"""The plan's flows (planning/flows.py), summed by the tally as it shifts each entry in: what the report
shows per broker, topic and entry, the same from tallies of any split merged (through pickle, as the
Spark engine's tasks return them) as from one pass, and the values they are defined by."""

from __future__ import annotations

import pickle
import random

import pytest
from tests.unit.builders import racked_cluster
from tests.unit.planning.test_metrics_tally import random_plan

from kafka_placement.model.plan import Plan
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning import flows, plan_quality
from kafka_placement.planning import report as report_mod
from kafka_placement.planning.flows import Flows
from kafka_placement.planning.plan_quality import Scope, Tally
from kafka_placement.planning.report import build_report


def _defined(snap: ClusterSnapshot, plan: Plan) -> tuple[dict[str, list[int]], list[tuple[int, str]], int]:
    """Per topic [entries, replica moves, bytes to move] and every entry's (-bytes, name), from
    ``count_move`` entry by entry, and the bytes copied in to brokers."""
    topics: dict[str, list[int]] = {}
    keys, copied_in = [], 0
    for t in plan.partitions:
        p = snap.partition(t.topic, t.partition)
        assert p is not None
        moved = dict.fromkeys(plan_quality.MOVEMENT, 0)
        plan_quality.count_move(moved, p, plan_quality.after_move(p, t))
        row = topics.setdefault(t.topic, [0, 0, 0])
        row[0] += 1
        row[1] += moved["replicaMoves"]
        row[2] += moved["bytesToMove"]
        keys.append((-moved["bytesToMove"], t.name))
        copied_in += moved["networkBytes"]
    return topics, sorted(keys), copied_in


@pytest.mark.parametrize("seed", range(8))
def test_flows_of_any_split_merged_are_the_one_pass_flows_and_the_defined_ones(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(flows, "LARGEST", 3)  # (so that candidates are cut as they come and merged)
    monkeypatch.setattr(report_mod, "MAX_MOVES", 3)
    rng = random.Random(seed)
    snap = racked_cluster(seed)
    plan = random_plan(rng, snap)
    scope = Scope.of(snap, None)
    one = plan_quality.tally(snap, plan, scope)
    topics, keys, copied_in = _defined(snap, plan)
    assert one.flows.topics == topics and one.flows.entries == len(plan.partitions) > 100
    assert [(e[0], e[1]) for e in one.flows.largest(3)] == keys[:3]
    assert sum(one.flows.bytes_in.values()) == copied_in
    parts = rng.randrange(2, 6)
    entries = list(plan.partitions)
    rng.shuffle(entries)
    merged = plan_quality.tally_of(((p, None) for p in snap.partitions), scope)
    for k in range(parts):
        delta = Tally()
        for t in entries[k::parts]:
            delta.shift(snap.partition(t.topic, t.partition), t, scope)  # type: ignore[arg-type]
        merged.merge(pickle.loads(pickle.dumps(delta)))
    for found in (merged.flows, one.flows):
        assert (found.bytes_in, found.bytes_out, found.dir_bytes) == (
            one.flows.bytes_in,
            one.flows.bytes_out,
            one.flows.dir_bytes,
        )
        assert found.topics == topics and found.largest(3) == one.flows.largest(3)
    afresh = build_report(snap, plan)
    assert build_report(snap, plan, None, 5, merged) == afresh
    assert [(-m.bytes, m.partition) for m in afresh.moves] == keys[:3]
    with pytest.raises(ValueError, match="largest"):
        Flows().largest(4)
