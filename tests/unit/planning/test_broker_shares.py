"""Broker balance by share of disk capacity (planning/shares.py, issue 53): where brokers' disks differ in
size, a broker holds bytes in proportion to its capacity (a small broker is not filled to match a big
one); with one size everywhere, or a size unknown anywhere, plans are exactly those of plain bytes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_placement.model.intents import Intents
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning import shares
from kafka_placement.planning.optimizer import compute_plan

GB = 10**9
BALANCE = "kind: PlacementPolicy\nspec: {balance: {brokers: true, tolerance: 0.1}}\n"


def cluster(sizes: dict[int, int], partitions: int = 60) -> ClusterSnapshot:
    """Brokers with one dir each of ``sizes[b]`` GB (0: unknown); ``partitions`` replicas pairs of 1 GB
    over brokers 1-3 only (the last broker joins empty)."""
    pairs = [(1, 2), (2, 3), (3, 1)]
    held = dict.fromkeys(sizes, 0)
    parts: list[dict[str, Any]] = []
    for i in range(partitions):
        reps = list(pairs[i % 3])
        for b in reps:
            held[b] += GB
        parts.append(
            {
                "topic": "t",
                "partition": i,
                "replicas": reps,
                "logDirs": ["/d0", "/d0"],
                "leader": reps[0],
                "isr": reps,
                "sizeBytes": GB,
            }
        )
    brokers = [
        {
            "id": b,
            "rack": None,
            "logDirs": [
                {"path": "/d0", "totalBytes": size * GB, "usableBytes": size * GB - held[b] if size else 0}
            ],
        }
        for b, size in sizes.items()
    ]
    return ClusterSnapshot.from_json({"version": 1, "brokers": brokers, "partitions": parts})


def after(snap: ClusterSnapshot, intents: Intents) -> tuple[dict[int, int], dict[str, Any]]:
    result = compute_plan(snap, intents)
    held: dict[int, int] = dict.fromkeys((b.id for b in snap.brokers), 0)
    for t in result.plan.partitions:
        for b in t.replicas:
            held[b] += GB
    moved = {(t.topic, t.partition) for t in result.plan.partitions}
    for p in snap.partitions:
        if (p.topic, p.partition) not in moved:
            for b in p.replicas:
                held[b] += GB
    return held, result.summary.to_json()


def test_a_big_new_broker_takes_bytes_in_proportion_to_its_disk() -> None:
    # Brokers 1-3: 100 GB disks holding 40 GB each; broker 4 joins with a 300 GB disk. By bytes each would
    # end at 30 GB (broker 4 at 10% of its disk, the others at 30%); by share of capacity the limits are
    # 22 GB for brokers 1-3 and 66 GB for broker 4 (1.1 x 120 GB x capacity / 600 GB).
    held, s = after(cluster({1: 100, 2: 100, 3: 100, 4: 300}), Intents.loads(BALANCE))
    assert all(held[b] <= 22 * GB for b in (1, 2, 3)), held
    assert held[4] >= 54 * GB, held
    assert s["balanceAfter"]["brokerBytesMaxMean"] <= 1.1
    assert s["bytesToMove"] == 54 * GB  # each broker's excess over its limit: the lower bound (in floats)
    assert s["lowerBoundBytes"] == pytest.approx(54 * GB, abs=2)
    assert s["hardViolationsAfter"] == 0


def test_a_small_broker_is_not_filled_to_match_big_ones() -> None:
    # Broker 4 joins with a 40 GB disk beside 200 GB ones: by bytes it would take 30 GB (75% of its disk);
    # by share it takes its 40/640 of the 120 GB, within the tolerance.
    held, s = after(cluster({1: 200, 2: 200, 3: 200, 4: 40}), Intents.loads(BALANCE))
    assert held[4] <= 1.1 * 120 * GB * 40 / 640, held
    assert s["balanceAfter"]["brokerBytesMaxMean"] <= 1.1


@pytest.mark.parametrize("sizes", [{1: 100, 2: 100, 3: 100, 4: 100}, {1: 100, 2: 100, 3: 100, 4: 0}])
def test_one_size_everywhere_or_an_unknown_size_plans_by_bytes_as_before(sizes: dict[int, int]) -> None:
    # equal capacities, or one broker's unknown: the same plan as with no size known anywhere (bytes)
    intents = Intents.loads(BALANCE)
    sized = compute_plan(cluster(sizes), intents)
    plain = compute_plan(cluster(dict.fromkeys(sizes, 0)), intents)
    assert sized.plan.partitions == plain.plan.partitions
    held, s = after(cluster(sizes), intents)
    assert max(held.values()) <= 33 * GB and s["balanceAfter"]["brokerBytesMaxMean"] <= 1.1  # by bytes


@given(
    st.dictionaries(st.integers(1, 9), st.integers(0, 10**6), min_size=1, max_size=8),
    st.dictionaries(st.integers(1, 9), st.integers(1, 10**5), min_size=1, max_size=8),
    st.floats(0.0, 0.5),
)
def test_max_mean_is_within_the_tolerance_exactly_when_every_broker_is_within_its_limit(
    held: dict[int, int], capacity: dict[int, int], tol: float
) -> None:
    brokers = sorted(held)
    measure = shares.max_mean(capacity, brokers, held)
    limits = shares.limits(capacity, brokers, sum(held.values()), tol)
    if measure is None:
        assert sum(held.values()) == 0
        return
    within = all(held[b] <= limits[b] * (1 + 1e-9) for b in brokers)
    if abs(measure - (1 + tol)) > 1e-3:  # (max_mean is rounded to 4 places)
        assert within == (measure <= 1 + tol)


def test_balance_is_proven_out_of_reach_against_each_brokers_limit() -> None:
    # a 300-byte partition of 600 bytes over three brokers: above the even threshold (1.1 x 200 = 220), so
    # balance by bytes is out of reach; with one broker holding 4/6 of the disk its limit is 440: reachable
    from kafka_placement.planning.reach import Reach

    reach = Reach(total=600, largest=(300, "t", 0))
    intents = Intents.loads(BALANCE)
    even = reach.why(intents, (1, 2, 3), {}, {1: 100, 2: 100, 3: 100})
    assert even == "partition t-0 (300 bytes) is larger than the threshold 220 bytes"
    assert reach.why(intents, (1, 2, 3), {}, {1: 100, 2: 100, 3: 400}) is None
    big = Reach(total=600, largest=(500, "t", 0)).why(intents, (1, 2, 3), {}, {1: 100, 2: 100, 3: 400})
    assert big is not None and "larger than the largest broker's limit 440 bytes" in big
