"""How much of Kafka a reconcile reads (reconcile/reading.py), from plain values: the quiet, lane-only and
full reads, and when the settled reconcile is remembered."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_placement.reconcile.reading import Reading, reading

IDLE: dict[str, Any] = dict(
    fingerprint="f",
    settled_fingerprint="f",
    settled_age_s=10.0,
    resync_s=60.0,
    active=False,
    leaving=False,
    lane_active=False,
    heal_due=False,
    heals_dead_brokers=False,
    lane_enforced=lambda: False,
)


def test_an_idle_settled_cluster_reads_nothing() -> None:
    assert reading(**IDLE) == Reading(
        quiet=True, lane_only=True, keep_settled=True, watch_live=False, skip=True
    )


@pytest.mark.parametrize(
    "change",
    [
        {"fingerprint": "g"},  # a spec, the record or the lane's plan changed
        {"settled_fingerprint": None},  # nothing settled (a new process, or a failure forgot it)
        {"settled_age_s": 60.0},  # the resync period ended
        {"active": True},  # an execution in flight is ticked by a full reconcile
        {"leaving": True},  # an intent being deleted: its cordons are removed by a full reconcile
        {"heal_due": True},  # a tracked failure is due for a heal
    ],
)
def test_anything_of_ours_changed_reads_kafka_whole(change: dict[str, Any]) -> None:
    r = reading(**{**IDLE, **change})
    assert not r.quiet and r.full and not r.skip and not r.keep_settled


def test_a_quiet_reconcile_still_looks_for_new_partitions_and_watches_the_live_brokers() -> None:
    lane = reading(**{**IDLE, "lane_enforced": lambda: True})
    assert lane.quiet and lane.lane_only and not lane.skip and not lane.watch_live
    healing = reading(**{**IDLE, "heals_dead_brokers": True})
    assert healing.quiet and healing.watch_live and not healing.skip and healing.keep_settled


def test_a_lane_execution_alone_runs_the_lane_and_a_full_replan_waits() -> None:
    r = reading(**{**IDLE, "fingerprint": "g", "lane_active": True})
    assert r.lane_only and not r.quiet and not r.skip and r.keep_settled
    nothing = reading(**{**IDLE, "settled_fingerprint": None, "lane_active": True})
    assert nothing.lane_only and not nothing.keep_settled  # nothing settled to keep
    both = reading(**{**IDLE, "lane_active": True, "active": True})
    assert both.full  # the main execution's reconcile drives both
