"""The executor's safety checks against the real Kafka rig (execution/safety.py): min.insync.replicas
(a plan below it refused before anything moves; a min ISR raised mid-run pauses, lowered again resumes)
and owned configs (throttles and cordons removed by a third party mid-move: re-applied and counted; after
``max_reapplies`` within the window the execution holds instead of fighting; it still completes and leaves
no throttle behind). Ticks are driven one by one through the executor API, so each step is observed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.integration.conftest import wait_for
from tests.integration.test_executor import produce

from kafka_placement.execution import executor
from kafka_placement.execution.record import Execution
from kafka_placement.execution.record_doc import Phase
from kafka_placement.execution.store import FileStore
from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import ConfigChange, ConfigTarget, KafkaGateway
from kafka_placement.kafka.throttles import (
    DIR_RATE,
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
)
from kafka_placement.model.plan import Plan

if TYPE_CHECKING:
    from conftest import KafkaRig, TopicFactory

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(240)]

Wait = Callable[..., Any]
CLI = Path(sys.executable).parent / "kafka-placement"


@pytest.fixture(scope="module")
def gateway(kafka_rig: KafkaRig) -> Iterator[KafkaGateway]:
    with KafkaGateway(ConnectionSettings(kafka_rig.bootstrap_servers)) as gw:
        yield gw


@pytest.fixture(autouse=True)
def no_broker_throttle_left(gateway: KafkaGateway, kafka_rig: KafkaRig) -> Iterator[None]:
    """A test that fails mid-move leaves its throttles: remove the brokers' rates afterwards, so the failure
    stays its own and does not fail the next modules' "no throttle set" checks too."""
    yield
    names = (LEADER_RATE, FOLLOWER_RATE, DIR_RATE)
    changes = {
        ConfigTarget.broker(n.id): [ConfigChange(name, "DELETE") for name in names] for n in kafka_rig.nodes
    }
    gateway.incremental_alter_configs(changes)


def plan_of(entries: list[tuple[str, int, list[int]]]) -> Plan:
    return Plan.from_json(
        {
            "version": 1,
            "partitions": [
                {"topic": t, "partition": p, "replicas": r, "log_dirs": ["any"] * len(r)}
                for t, p, r in entries
            ],
        }
    )


def set_topic_config(gw: KafkaGateway, topic: str, name: str, value: str) -> None:
    errors = gw.incremental_alter_configs({ConfigTarget.topic(topic): [ConfigChange(name, "SET", value)]})
    assert not errors, errors


def replicas(gw: KafkaGateway, topic: str) -> dict[int, tuple[int, ...]]:
    return {k[1]: p.replicas for k, p in gw.describe_partitions([topic]).items()}


def our_throttles_in_kafka(gw: KafkaGateway, topic: str, brokers: list[int]) -> dict[str, Any]:
    targets = [ConfigTarget.broker(b) for b in brokers] + [ConfigTarget.topic(topic)]
    described = gw.describe_configs(targets)
    out: dict[str, Any] = {}
    for b in brokers:
        for name in (LEADER_RATE, FOLLOWER_RATE):
            v = described[ConfigTarget.broker(b)].get(name)
            out[f"{b}:{name}"] = v.value if v is not None and v.is_dynamic else None
    for name in (LEADER_REPLICAS, FOLLOWER_REPLICAS):
        v = described[ConfigTarget.topic(topic)].get(name)
        out[name] = ",".join(sorted((v.value or "").split(","))) if v is not None and v.value else ""
    return out


def remove_throttles(gw: KafkaGateway, topic: str, brokers: list[int]) -> None:
    """What a third party (a Topic Operator, a script) does: delete the leader-side rates and the topic's
    leader replica list. The follower side stays, so the move keeps running throttled (fully unthrottled,
    it could finish before the next tick looks)."""
    changes: dict[ConfigTarget, list[ConfigChange]] = {
        ConfigTarget.broker(b): [ConfigChange(LEADER_RATE, "DELETE")] for b in brokers
    }
    changes[ConfigTarget.topic(topic)] = [ConfigChange(LEADER_REPLICAS, "DELETE")]
    assert not gw.incremental_alter_configs(changes)


def lower_rates(gw: KafkaGateway, brokers: list[int]) -> None:
    """Another party changes our follower rate (the move goes on, slower)."""
    changes = {ConfigTarget.broker(b): [ConfigChange(FOLLOWER_RATE, "SET", "50000")] for b in brokers}
    assert not gw.incremental_alter_configs(changes)


def tick_until(gw: KafkaGateway, ex: Execution, limits: executor.Limits, done: Callable[[], bool]) -> int:
    """Tick (at most 8 times, 0.3 s apart) until ``done``; returns the ticks it took. A changed config
    counts once seen on two checks in a row (KRaft propagates configs asynchronously)."""
    for n in range(1, 9):
        executor.tick(gw, ex, limits)
        if done():
            return n
        time.sleep(0.3)
    pytest.fail(f"not reached after 8 ticks: phase {ex.phase}, {ex.doc.defence}, {ex.doc.last_error}")


# ---- min.insync.replicas ----------------------------------------------------------------------------


def test_plan_below_min_isr_is_refused_before_anything_moves(
    gateway: KafkaGateway, new_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = new_topic([[1, 2], [2, 3]], config={"min.insync.replicas": "2"})
    before = replicas(gateway, topic)
    assert before == {0: (1, 2), 1: (2, 3)}  # the gateway sees the new topic (else the last check is void)
    throttles_before = our_throttles_in_kafka(gateway, topic, [1, 2, 3])
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [  # p0 keeps RF 2 on other brokers; p1 drops to RF 1 < min ISR 2
                    {"topic": topic, "partition": 0, "replicas": [1, 3], "log_dirs": ["any", "any"]},
                    {"topic": topic, "partition": 1, "replicas": [2], "log_dirs": ["any"]},
                ],
            }
        )
    )
    out = subprocess.run(
        [str(CLI), "execute", "--bootstrap-server", gateway.servers, "--plan", str(plan), "--wait",
         "--state", str(tmp_path / "state.json"), "--throttle", "10000000"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"{topic}-1 (1 replicas, min.insync.replicas 2)" in out.stderr, out.stderr
    assert "nothing was moved" in out.stderr
    assert replicas(gateway, topic) == before  # p0 (fine on its own) did not move either
    assert not gateway.list_reassignments([(topic, 0), (topic, 1)])
    assert our_throttles_in_kafka(gateway, topic, [1, 2, 3]) == throttles_before


def test_min_isr_raised_mid_run_pauses_then_resumes(
    gateway: KafkaGateway, new_topic: TopicFactory, tmp_path: Path, kafka_wait: Wait
) -> None:
    """RF 2 with min ISR 2 moves fine (Kafka adds before it removes); raising min ISR above the target's
    replicas mid-run stops new submissions with a message naming the partition; lowering it resumes."""
    topic = new_topic([[1, 2], [1, 2]], config={"min.insync.replicas": "2"})
    plan = plan_of([(topic, 0, [1, 3]), (topic, 1, [3, 2])])
    ex = Execution.create(FileStore(tmp_path / "state.json"), plan, limits=executor.Limits())
    ex.save()
    limits = executor.Limits(max_moves=1)  # one at a time: p1 is still a candidate after the first tick
    executor.tick(gateway, ex, limits)
    assert ex.phase == Phase.MOVING and len(ex.doc.in_flight) == 1, ex.doc.last_error
    first = next(iter(ex.doc.in_flight))
    set_topic_config(gateway, topic, "min.insync.replicas", "3")
    try:

        def paused() -> bool:
            executor.tick(gateway, ex, limits)
            return ex.phase == Phase.PAUSED

        kafka_wait("the execution to pause on min ISR", paused)
        assert "below min.insync.replicas" in (ex.doc.last_error or ""), ex.doc.last_error
        other = 1 - first
        assert f"{topic}-{other} (2 replicas, min.insync.replicas 3)" in (ex.doc.last_error or "")
        assert ex.doc.counters.submissions == 1  # the second move was not submitted
    finally:
        set_topic_config(gateway, topic, "min.insync.replicas", "2")
    executor.run(gateway, ex, limits, wait=True, poll_s=0.5, retry_s=60)
    assert ex.phase == Phase.COMPLETED, ex.doc.last_error
    assert ex.doc.counters.submissions == 2 and ex.doc.counters.resubmitted == 0
    assert replicas(gateway, topic) == {0: (1, 3), 1: (3, 2)}


# ---- owned configs -----------------------------------------------------------------------------------


def test_removed_throttles_are_reapplied_then_held_and_never_left_behind(
    gateway: KafkaGateway, kafka_rig: KafkaRig, new_topic: TopicFactory, tmp_path: Path, kafka_wait: Wait
) -> None:
    topic = new_topic([[1, 2]], config={"min.insync.replicas": "1"})
    produce(kafka_rig, topic, 1, 120, 100_000)  # 12 MB at 200 KB/s (50 KB/s while held): outlasts the steps
    plan = plan_of([(topic, 0, [1, 3])])
    limits = executor.Limits(throttle=200_000, max_reapplies=2, reapply_window_s=20)
    ex = Execution.create(FileStore(tmp_path / "state.json"), plan, limits=limits)
    ex.save()
    brokers = [1, 2, 3]
    before = our_throttles_in_kafka(gateway, topic, brokers)
    executor.tick(gateway, ex, limits)
    assert ex.phase == Phase.MOVING and ex.doc.in_flight, ex.doc.last_error
    # the throttles the tick set, once every broker applied them (KRaft propagates each broker's config on
    # its own, after the controller): what is read twice, 1 s apart, with the follower side in place
    seen: list[dict[str, Any]] = [{}]

    def settled() -> dict[str, Any] | None:
        now = our_throttles_in_kafka(gateway, topic, brokers)
        stable, seen[0] = now == seen[0], now
        return (
            now
            if stable and now[f"3:{FOLLOWER_RATE}"] == "200000" and "0:3" in now[FOLLOWER_REPLICAS]
            else None
        )

    ours = kafka_wait(
        "the execution's throttles on every broker", settled, 30, every=1.0, why=lambda: str(seen[0])
    )

    def removed() -> bool:
        now = our_throttles_in_kafka(gateway, topic, brokers)
        return now[LEADER_REPLICAS] == "" and all(now[f"{b}:{LEADER_RATE}"] is None for b in brokers)

    for n in (1, 2):  # removed by someone else: put back, counted (once seen on two ticks)
        remove_throttles(gateway, topic, brokers)
        # KRaft propagates each broker's config on its own: a tick between two brokers' updates would
        # re-apply a part, and the rest, seen later, would count as a further change
        kafka_wait("the removal seen on every broker", removed, 30)
        tick_until(gateway, ex, limits, lambda n=n: ex.doc.defence.reapplied == n)
        assert ex.phase == Phase.MOVING
        kafka_wait(
            "the throttles put back", lambda: our_throttles_in_kafka(gateway, topic, brokers) == ours, 30
        )
        assert any("deleted" in line for line in ex.doc.defence.last), ex.doc.defence.last

    # a third time within the window (now lowering the rates): hold, do not fight
    lower_rates(gateway, brokers)

    def lowered() -> bool:
        now = our_throttles_in_kafka(gateway, topic, brokers)
        return all(now[f"{b}:{FOLLOWER_RATE}"] == "50000" for b in brokers)

    kafka_wait("the lowered rates seen on every broker", lowered, 30)
    tick_until(gateway, ex, limits, lambda: ex.doc.defence.held_until is not None)
    assert ex.doc.defence.reapplied == 2
    assert ex.phase == Phase.PAUSED
    assert "not fighting further" in (ex.doc.last_error or ""), ex.doc.last_error
    assert any("now '50000'" in line for line in ex.doc.defence.last), ex.doc.defence.last
    executor.tick(gateway, ex, limits)  # still held: nothing re-applied
    assert ex.doc.defence.reapplied == 2 and ex.phase == Phase.PAUSED
    assert our_throttles_in_kafka(gateway, topic, brokers)[f"3:{FOLLOWER_RATE}"] == "50000"

    # the window passes: re-applied again, the move completes, and no throttle is left behind
    time.sleep(max(0.0, ex.doc.defence.held_until - time.time()) + 0.5)
    tick_until(gateway, ex, limits, lambda: ex.doc.defence.reapplied == 3)
    assert ex.doc.defence.held_until is None

    def restored() -> bool:
        return our_throttles_in_kafka(gateway, topic, brokers)[f"3:{FOLLOWER_RATE}"] == "200000"

    kafka_wait("the lowered rate put back", restored, timeout=30)
    executor.run(gateway, ex, limits, wait=True, poll_s=0.5, retry_s=60)
    assert ex.phase == Phase.COMPLETED, ex.doc.last_error
    assert ex.doc.counters.submissions == 1 and ex.doc.counters.resubmitted == 0
    kafka_wait(  # previous values restored (through the controller; each broker applies it moments later)
        "the throttles as before the execution",
        lambda: our_throttles_in_kafka(gateway, topic, brokers) == before,
        30,
        why=lambda: f"{our_throttles_in_kafka(gateway, topic, brokers)} against {before}",
    )
    assert executor.mismatches(gateway, plan, ex) == []


def test_policy_pause_holds_while_the_change_lasts(
    gateway: KafkaGateway, kafka_rig: KafkaRig, new_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = new_topic([[1, 2], [1, 2]], config={"min.insync.replicas": "1"})
    produce(kafka_rig, topic, 2, 40, 100_000)
    plan = plan_of([(topic, 0, [1, 3]), (topic, 1, [3, 2])])
    limits = executor.Limits(throttle=200_000, max_moves=1, on_config_change="Pause")
    ex = Execution.create(FileStore(tmp_path / "state.json"), plan, limits=limits)
    ex.save()
    executor.tick(gateway, ex, limits)
    assert ex.phase == Phase.MOVING and len(ex.doc.in_flight) == 1
    lower_rates(gateway, [1, 2, 3])
    tick_until(gateway, ex, limits, lambda: ex.phase == Phase.PAUSED)
    assert "policy Pause" in (ex.doc.last_error or ""), ex.doc.last_error
    assert ex.doc.defence.reapplied == 0 and ex.doc.counters.submissions == 1
    assert our_throttles_in_kafka(gateway, topic, [3])[f"3:{FOLLOWER_RATE}"] == "50000"  # not re-applied
    executor.tick(gateway, ex, limits)  # still changed: still paused, nothing new submitted
    assert ex.phase == Phase.PAUSED and ex.doc.counters.submissions == 1
    ex.doc.cancel_requested = True  # end it cleanly: revert, and every throttle recorded is removed
    executor.run(gateway, ex, limits, wait=True, poll_s=0.5, retry_s=60)
    assert ex.phase == Phase.CANCELLED, ex.doc.last_error
    wait_for(  # removed through the controller; the broker answering applies it moments later
        "the topic's leader throttled replicas removed",
        lambda: our_throttles_in_kafka(gateway, topic, [1, 2, 3])[LEADER_REPLICAS] == "",
        30,
    )


def test_removed_cordon_is_reapplied(
    gateway: KafkaGateway, kafka_rig: KafkaRig, new_topic: TopicFactory, tmp_path: Path, kafka_wait: Wait
) -> None:
    """A cordon the execution owns (the operator records its LogDirCordons' dirs) removed mid-run."""
    if not gateway.supports_cordon():
        pytest.skip("the main rig's metadata.version has no cordoned.log.dirs (KIP-1066)")
    topic = new_topic([[1, 2]], config={"min.insync.replicas": "1"})
    produce(kafka_rig, topic, 1, 40, 100_000)
    cordoned = kafka_rig.node(2).log_dirs[1]
    plan = plan_of([(topic, 0, [1, 3])])
    limits = executor.Limits(throttle=200_000)
    ex = Execution.create(FileStore(tmp_path / "state.json"), plan, limits=limits)
    ex.doc.owned_cordons = {2: [cordoned]}
    ex.save()

    def is_cordoned() -> bool:
        target = ConfigTarget.broker(2)
        live = gateway.describe_configs([target])[target]["cordoned.log.dirs"]
        return cordoned in (live.value or "").split(",")

    gateway.set_cordon(2, [cordoned], True)
    try:
        kafka_wait("the cordon set", is_cordoned, timeout=30)
        executor.tick(gateway, ex, limits)
        assert ex.phase == Phase.MOVING
        gateway.set_cordon(2, [cordoned], False)  # someone uncordons it
        tick_until(gateway, ex, limits, lambda: ex.doc.defence.reapplied == 1)
        assert any("cordoned.log.dirs" in line for line in ex.doc.defence.last)
        kafka_wait("the cordon put back", is_cordoned, timeout=30)
        ex.doc.cancel_requested = True
        executor.run(gateway, ex, limits, wait=True, poll_s=0.5, retry_s=60)
        assert ex.phase == Phase.CANCELLED
    finally:
        gateway.set_cordon(2, [cordoned], False)
