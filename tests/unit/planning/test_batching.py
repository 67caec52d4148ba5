"""A plan's batches: first fit under the per-broker and per-batch limits, checked against the rule
written out plainly (scan every batch for each change) on random changes."""

from __future__ import annotations

import random

import pytest
from tests.unit.builders import racked_cluster
from tests.unit.planning.test_metrics_tally import random_plan

from kafka_placement.model.intents import Intents
from kafka_placement.planning import plan_quality
from kafka_placement.planning.batching import Change, changes, order
from kafka_placement.planning.state import Eligibility


def _first_fit(found: list[Change], max_per_broker: int, max_per_batch: int) -> list[list[str]]:
    """The rule itself: each change, freeing first then smallest, to the first batch with room."""
    result: list[list[str]] = []
    loads: list[dict[int, int]] = []
    for c in sorted(found, key=lambda c: (not c.freeing, c.size_bytes, c.name)):
        i = 0
        while i < len(result) and (
            (max_per_batch and len(result[i]) >= max_per_batch)
            or any(loads[i].get(b, 0) >= max_per_broker for b in c.brokers)
        ):
            i += 1
        if i == len(result):
            result.append([])
            loads.append({})
        result[i].append(c.name)
        for b in c.brokers:
            loads[i][b] = loads[i].get(b, 0) + 1
    return result


def _changes(rng: random.Random, n: int, brokers: int) -> list[Change]:
    return [
        Change(
            f"t{rng.randrange(5)}-{i}",
            rng.choice([0, rng.randrange(1 << 30)]),
            frozenset(rng.sample(range(brokers), rng.choice([0, 1, 2, 2, 3, 4]))),
            rng.random() < 0.3,
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("seed", range(40))
def test_batches_are_the_first_fit_of_the_rule(seed: int) -> None:
    rng = random.Random(seed)
    found = _changes(rng, rng.randrange(1, 600), rng.randrange(4, 40))
    max_per_broker, max_per_batch = rng.choice([1, 2, 5]), rng.choice([0, 0, 3, 17])
    got = order(found, max_per_broker, max_per_batch)
    assert got == _first_fit(found, max_per_broker, max_per_batch)
    by_name = {c.name: c for c in found}
    assert sorted(n for batch in got for n in batch) == sorted(by_name)
    for batch in got:
        assert batch and (not max_per_batch or len(batch) <= max_per_batch)
        for b in {b for n in batch for b in by_name[n].brokers}:
            assert sum(b in by_name[n].brokers for n in batch) <= max_per_broker


def test_one_change_per_broker_per_batch_at_scale_is_still_the_rule() -> None:
    """One change per broker per batch is where the old scan over every batch took minutes (358k
    changes); here 6,000 changes on 30 brokers, about 450 batches."""
    found = _changes(random.Random(7), 6_000, 30)
    assert order(found, 1) == _first_fit(found, 1, 0)


def test_changes_without_brokers_fill_the_first_batch_and_limits_are_checked() -> None:
    found = [Change(f"t-{i}", i, frozenset(), False) for i in range(4)]
    assert order(found, 1) == [["t-0", "t-1", "t-2", "t-3"]]
    assert order(found, 1, 3) == [["t-0", "t-1", "t-2"], ["t-3"]]
    with pytest.raises(ValueError, match="max_per_broker"):
        order(found, 0)


@pytest.mark.parametrize("seed", range(6))
def test_a_change_copies_what_the_summary_counts_and_involves_the_brokers_it_changes(seed: int) -> None:
    """``Change.moved`` is ``count_move``'s bytes to move (new replicas copy the local bytes, a dir move
    the whole log; a few dirs unknown, RF +-1, ``any`` dirs), and the brokers involved are those gaining
    or losing a replica or moving it between dirs, on random plans."""
    snap = racked_cluster(seed)
    plan = random_plan(random.Random(seed), snap)
    elig = Eligibility.of(snap, Intents())
    found = changes(snap, plan, elig)
    assert len(found) == len(plan.partitions) > 100
    for c, t in zip(found, plan.partitions, strict=True):
        p = snap.partition(t.topic, t.partition)
        assert p is not None and c.name == t.name and c.size_bytes == p.copy_bytes
        q = plan_quality.after_move(p, t)
        counted = dict.fromkeys(plan_quality.MOVEMENT, 0)
        plan_quality.count_move(counted, p, q)
        assert c.moved == counted["bytesToMove"]
        was, now = (
            dict(zip(p.replicas, p.log_dirs, strict=True)),
            dict(zip(q.replicas, q.log_dirs, strict=True)),
        )
        moving = {b for b in was.keys() & now.keys() if None not in (was[b], now[b]) and was[b] != now[b]}
        assert c.brokers == (was.keys() ^ now.keys()) | moving
