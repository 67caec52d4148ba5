"""The adaptive throttle's decision (execution/adaptive.py), its inputs from a KafkaCluster
(reconcile/inputs.ceilings_of) and what the copy model makes of it: capacity x share minus the client
traffic, clamped; the maximum and a reason without a capacity or a rate; set again only past 10% and
once per broker per period."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from tests.unit.execution.test_copy_model import MB, TICK, plan_of

from kafka_placement.execution.adapting import shown
from kafka_placement.execution.adaptive import Ceilings, Measured, applied, decide, notes
from kafka_placement.execution.copy_model import estimate
from kafka_placement.execution.record import Execution
from kafka_placement.execution.record_doc import AdaptiveDoc, Limits
from kafka_placement.execution.store import FileStore
from kafka_placement.kafka.throttles import FOLLOWER_RATE, LEADER_RATE
from kafka_placement.model.capacity import CapacitySpec
from kafka_placement.model.cluster_spec import ClusterSpec
from kafka_placement.model.intent_status import MAX_RATES_SHOWN
from kafka_placement.model.plan import ANY_DIR, PartitionTarget, Plan
from kafka_placement.model.throttle_state import BrokerThrottle, ThrottleState
from kafka_placement.reconcile.inputs import ceilings_of, limits_of

CAPACITY = CapacitySpec.parse(
    {
        "default": {"networkInBytesPerSec": 100 * MB, "networkOutBytesPerSec": 50 * MB},
        "brokers": [{"id": 3, "networkInBytesPerSec": 20 * MB}],
        "maxShare": 0.8,
    }
)
LOW, HIGH = 2 * MB, 40 * MB


def ceilings(traffic: dict[int, Measured], missing: str | None = None, period: float = 60.0) -> Ceilings:
    return Ceilings(LOW, HIGH, 0.8, CAPACITY, traffic, period, missing)


def test_a_side_gets_its_capacity_share_less_the_client_traffic_clamped() -> None:
    c = ceilings({1: Measured(50 * MB, 10 * MB), 2: Measured(79 * MB, 45 * MB), 3: Measured(1 * MB, 0)})
    assert c.value(1, FOLLOWER_RATE) == (30 * MB, None)  # 80 - 50
    assert c.value(1, LEADER_RATE) == (30 * MB, None)  # 40 - 10
    assert c.value(2, FOLLOWER_RATE) == (LOW, None)  # 80 - 79 = 1: the minimum
    assert c.value(2, LEADER_RATE) == (LOW, None)  # 40 - 45 < 0
    assert c.value(3, FOLLOWER_RATE) == (15 * MB, None)  # its own capacity: 16 - 1
    idle = ceilings({1: Measured(0, 0)})
    assert idle.value(1, FOLLOWER_RATE) == (HIGH, None)  # 80, clamped to the maximum


def test_without_a_capacity_or_a_rate_a_broker_gets_the_maximum_and_says_why() -> None:
    c = Ceilings(LOW, HIGH, 0.8, None, {1: Measured(5, 5)})
    assert c.value(1, FOLLOWER_RATE) == (HIGH, "broker 1: no spec.capacity networkInBytesPerSec")
    partial = CapacitySpec.parse({"default": {"networkInBytesPerSec": 100 * MB}})
    value, why = Ceilings(LOW, HIGH, 0.8, partial, {1: Measured(5, 5)}).value(1, LEADER_RATE)
    assert value == HIGH and why == "broker 1: no spec.capacity networkOutBytesPerSec"
    assert ceilings({}).value(4, FOLLOWER_RATE) == (
        HIGH,
        "broker 4: no client traffic measured on it in status.traffic",
    )
    assert ceilings({1: Measured(None, 1)}).value(1, FOLLOWER_RATE)[0] == HIGH
    off = ceilings({1: Measured(50 * MB, 0)}, missing="traffic sampling is off")
    assert off.value(1, FOLLOWER_RATE) == (HIGH, "broker 1: traffic sampling is off")


def test_rates_are_set_first_then_only_past_ten_percent_and_once_a_period() -> None:
    doc = AdaptiveDoc()
    busy = ceilings({1: Measured(50 * MB, 10 * MB), 2: Measured(0, 0)})
    first = decide(doc, busy, [1, 2], now=1000.0)
    assert first == {
        (1, LEADER_RATE): 30 * MB,
        (1, FOLLOWER_RATE): 30 * MB,
        (2, LEADER_RATE): 40 * MB,
        (2, FOLLOWER_RATE): 40 * MB,
    }
    assert applied(doc) == first and doc.changes == 0 and doc.written == {1: 1000.0, 2: 1000.0}
    assert decide(doc, busy, [1, 2], now=2000.0) == {}  # nothing moved
    jitter = ceilings({1: Measured(52 * MB, 10 * MB), 2: Measured(0, 0)})  # 28 MB: under 10% off
    assert decide(doc, jitter, [1], now=3000.0) == {}
    surge = ceilings({1: Measured(70 * MB, 10 * MB), 2: Measured(0, 0)})  # 10 MB: lowered
    assert decide(doc, surge, [1], now=3000.0) == {(1, FOLLOWER_RATE): 10 * MB}
    assert doc.changes == 1 and doc.written[1] == 3000.0
    calm = ceilings({1: Measured(20 * MB, 10 * MB), 2: Measured(0, 0)})  # 60 MB -> 40 MB, the maximum
    assert decide(doc, calm, [1], now=3030.0) == {}  # within a period of the last change
    assert decide(doc, calm, [1], now=3060.0) == {(1, FOLLOWER_RATE): 40 * MB}  # raised back
    assert doc.changes == 2
    decide(doc, ceilings({1: Measured(43 * MB, 10 * MB)}), [1], now=4000.0)  # 37 MB: 7.5% off, kept
    assert applied(doc)[(1, FOLLOWER_RATE)] == 40 * MB
    decide(doc, ceilings({1: Measured(80 * MB, 10 * MB)}), [1], now=5000.0)  # 0: the minimum
    decide(doc, ceilings({1: Measured(45 * MB, 10 * MB)}), [1], now=6000.0)  # 35 MB
    assert applied(doc)[(1, FOLLOWER_RATE)] == 35 * MB
    # onto the maximum, under 10% away: set all the same (else it would stay below once the traffic ends)
    assert decide(doc, calm, [1], now=7000.0) == {(1, FOLLOWER_RATE): 40 * MB}
    assert decide(doc, surge, [], now=9000.0) == {}  # only the brokers asked about


def test_a_broker_falling_back_to_the_maximum_is_noted() -> None:
    doc = AdaptiveDoc()
    decide(doc, ceilings({}, missing="no traffic look yet"), [1, 2], now=0.0)
    assert set(applied(doc).values()) == {HIGH}
    said = notes(doc)
    assert said is not None and said.startswith("adaptive throttle at maxBytesPerSecond for broker 1:")
    assert "broker 2: no traffic look yet" in said
    decide(doc, ceilings({1: Measured(0, 0), 2: Measured(0, 0)}), [1, 2], now=100.0)
    assert notes(doc) is None  # measured now (at the maximum all the same: noted no more)


def cluster(throttle: dict[str, object] | None, traffic: dict[str, object] | None = None) -> ClusterSpec:
    spec: dict[str, object] = {"bootstrapServers": "k:9092", "traffic": traffic or {"enabled": True}}
    spec["capacity"] = {"default": {"networkInBytesPerSec": 100 * MB, "networkOutBytesPerSec": 50 * MB}}
    if throttle is not None:
        spec["throttle"] = throttle
    return ClusterSpec.parse(spec)


ADAPTIVE = {"mode": "Adaptive", "minBytesPerSecond": LOW, "maxBytesPerSecond": HIGH}


def stamp(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_the_inputs_come_from_status_traffic_and_a_stale_look_is_no_measurement() -> None:
    now = 1_800_000_000.0
    status = {
        "traffic": {
            "sampledAt": stamp(now - 30),
            "brokers": [{"id": 1, "bytesInPerSec": 50 * MB, "networkOutBytesPerSec": 10 * MB}],
        }
    }
    assert ceilings_of(cluster(None), status, now) is None  # no throttle
    static = cluster({"mode": "Static", "maxBytesPerSecond": HIGH})
    assert ceilings_of(static, status, now) is None and limits_of(static).throttle == HIGH
    spec = cluster(ADAPTIVE)
    assert limits_of(spec).throttle == HIGH  # batches sized with the maximum
    c = ceilings_of(spec, status, now)
    assert c is not None and c.missing is None and c.period_s == 60.0
    assert c.value(1, FOLLOWER_RATE) == (30 * MB, None)
    stale = ceilings_of(spec, status, now + 200)  # 230 s > 3 x 60 s
    assert stale is not None and stale.missing is not None and "230 s old" in stale.missing
    off = ceilings_of(cluster(ADAPTIVE, {"enabled": False}), status, now)
    assert off is not None and off.missing == "traffic sampling is off (spec.traffic.enabled)"
    none = ceilings_of(spec, {}, now)
    assert none is not None and none.missing == "no traffic look yet"
    bad = ceilings_of(spec, {"traffic": {"brokers": "x"}}, now)
    assert bad is not None and bad.missing == "no traffic look yet"


def test_the_estimate_counts_a_broker_at_its_adaptive_rate() -> None:
    plan = plan_of([((1, 2), (1, 3), 100 * MB), ((1, 2), (1, 4), 100 * MB)])  # 1 leads, 3 and 4 receive
    limits = Limits(hold_rate=True, throttle=20 * MB)
    both = estimate(plan, limits, TICK)
    assert both.copy_seconds == 10.0  # broker 1 sends 200 MB at 20 MB/s
    slow = estimate(plan, limits, TICK, side_rates={("in", 3): 5 * MB, ("out", 1): 40 * MB})
    assert slow.copy_seconds == 20.0 and slow.bound_seconds == 20.0 and slow.busiest_broker == 3


def test_the_status_lists_the_lowest_throttles_beyond_its_cap_and_counts_every_throttled_broker(
    tmp_path: Path,
) -> None:
    """1,000 throttled brokers: the status lists the 200 whose throttle yields most (lowest rate), by id,
    and says 1,000 are throttled (a broker the traffic held down is never left out for its id)."""
    plan = Plan.of([PartitionTarget("t", 0, (1, 3), (ANY_DIR, ANY_DIR))])
    ex = Execution.create(FileStore(tmp_path / "state.json"), plan, limits=Limits())
    rate = {b: 50 * MB for b in range(1000)}
    low = [7, 512, 999]  # held down by client traffic
    for b in low:
        rate[b] = MB
    ex.doc.throttles = ThrottleState(
        brokers=tuple(
            BrokerThrottle(broker=b, config=c, value=str(rate[b] if c == FOLLOWER_RATE else 60 * MB))
            for b in range(1000)
            for c in (LEADER_RATE, FOLLOWER_RATE)
        )
    )
    listed, throttled = shown(ex)
    assert throttled == 1000 and len(listed) == MAX_RATES_SHOWN
    ids = [r["broker"] for r in listed]
    assert ids == sorted(ids) and set(low) <= set(ids)
    assert {r["broker"]: r["followerBytesPerSecond"] for r in listed}[999] == MB
    few = ThrottleState(brokers=ex.doc.throttles.brokers[:20])  # 10 brokers: all of them, by id
    ex.doc.throttles = few
    listed, throttled = shown(ex)
    assert throttled == 10 and [r["broker"] for r in listed] == list(range(10))
