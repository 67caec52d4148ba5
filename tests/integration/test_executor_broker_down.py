"""The executor while the destination broker of its moves is down (real rig, `kafka-placement execute`).

A throttled execution moves three partitions from brokers [1, 2] to [1, 3]; broker 3 is stopped
(`tests/rig/kafka_rig.py stop-node`) while two moves are in flight and one is pending. The executor
must keep ticking, say why it waits (phase Paused / lastError), not complete and submit nothing new;
once broker 3 is back (`start-node`) the execution completes with every partition submitted exactly
once, the placement of the plan and no throttle left. Broker 3 is always restarted (finally).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.integration.conftest import wait_for

from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import ConfigTarget, KafkaGateway
from kafka_placement.kafka.throttles import (
    DIR_RATE,
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
)

if TYPE_CHECKING:
    from conftest import KafkaRig, TopicFactory

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(420)]

CLI = Path(sys.executable).parent / "kafka-placement"
RIG_CLI = Path(__file__).resolve().parents[1] / "rig" / "kafka_rig.py"
DOWN = 3  # the broker that receives the new replicas and goes away mid-move
THROTTLE = 250_000  # bytes/s: 4 MB for broker 3 in the first batch, ~16 s
OUTAGE_S = 15.0
MAX_OUTAGE_S = 150.0


@pytest.fixture(scope="module")
def gateway(kafka_rig: KafkaRig) -> Iterator[KafkaGateway]:
    with KafkaGateway(ConnectionSettings(kafka_rig.bootstrap_servers)) as gw:
        yield gw


def rig_node(command: str, rig: KafkaRig, node: int, *extra: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, str(RIG_CLI), command, "--name", rig.name, "--node", str(node), *extra],
        capture_output=True,
        text=True,
        timeout=180,
    )
    return proc


def node_running(rig: KafkaRig, node: int) -> bool:
    status = subprocess.run(
        [sys.executable, str(RIG_CLI), "status", "--name", rig.name, "--json"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    doc = json.loads(status.stdout)
    return any(n["id"] == node and n["alive"] and n["listening"] for n in doc["nodes"])


def produce(rig: KafkaRig, topic: str, partitions: list[int], per_partition: int, size: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": rig.bootstrap_servers, "acks": "all", "linger.ms": 20})
    value = os.urandom(size)  # incompressible: the bytes really move
    for p in partitions:
        for _ in range(per_partition):
            producer.produce(topic, value=value, partition=p)
            producer.poll(0)
    assert producer.flush(60) == 0


def throttle_configs(gw: KafkaGateway, topic: str) -> dict[str, Any]:
    brokers = [ConfigTarget.broker(b) for b in gw.broker_ids()]
    described = gw.describe_configs([*brokers, ConfigTarget.topic(topic)])
    out: dict[str, Any] = {}
    for b in brokers:
        for name in (LEADER_RATE, FOLLOWER_RATE, DIR_RATE):
            v = described[b].get(name)
            out[f"{b.name}:{name}"] = v.value if v is not None and v.is_dynamic else None
    for name in (LEADER_REPLICAS, FOLLOWER_REPLICAS):
        v = described[ConfigTarget.topic(topic)].get(name)
        out[f"{topic}:{name}"] = v.value if v is not None else ""
    return out


def load(state: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(state.read_text()) if state.exists() else {}
    return doc


def test_destination_broker_down_mid_move(
    gateway: KafkaGateway, kafka_rig: KafkaRig, new_topic: TopicFactory, tmp_path: Path
) -> None:
    assert node_running(kafka_rig, DOWN), f"broker {DOWN} of the rig is not running"
    # p0-p2 move [1,2] -> [1,3]; p3 stays on [2,3] and is not in the plan (under-replicated while
    # broker 3 is down: the safety gate must see it)
    topic = new_topic([[1, 2], [1, 2], [1, 2], [2, 3]], config={"min.insync.replicas": "1"})
    produce(kafka_rig, topic, [0, 1, 2], 200, 10_000)  # ~2 MB per partition, ~6 MB in all
    throttles_before = throttle_configs(gateway, topic)
    moved = [0, 1, 2]
    keys = [f"{topic}-{p}" for p in moved]
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": topic, "partition": p, "replicas": [1, DOWN], "log_dirs": ["any", "any"]}
                    for p in moved
                ],
            }
        )
    )
    state = tmp_path / "state.json"
    log = tmp_path / "execute.log"
    args = [
        str(CLI), "execute", "--bootstrap-server", kafka_rig.bootstrap_servers, "--plan", str(plan),
        "--throttle", str(THROTTLE), "--max-moves-per-broker", "2", "--state", str(state),
        "--wait", "--poll-seconds", "0.5",
    ]  # fmt: skip
    with open(log, "w") as out:
        execute = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, text=True)
    stopped = False
    try:

        def two_in_flight_and_copying() -> bool:
            record = load(state)
            progress = record.get("progress") or {}
            return (
                len(record.get("inFlight", {})) == 2
                and progress.get("bytes", {}).get("moved", 0) > 0
                and not record.get("doneCount")
            )

        wait_for("two moves in flight with bytes copied", two_in_flight_and_copying, timeout=60, every=0.2)
        stop = rig_node("stop-node", kafka_rig, DOWN)
        stopped = True
        assert stop.returncode == 0, stop.stderr + stop.stdout
        at_stop = load(state)
        submissions_at_stop = at_stop["counters"]["submissions"]
        moved_at_stop = at_stop["progress"]["bytes"]["moved"]
        # two were in flight when the stop began; a move that finished while the broker shut down (slower
        # on a loaded machine) lets the third go out before it is down: either is right, nothing after
        assert submissions_at_stop in (2, 3), at_stop["counters"]
        ticks_at_stop = at_stop["counters"]["ticks"]

        phases: set[str] = set()
        errors: set[str] = set()
        # at least OUTAGE_S, and until a few ticks ran without broker 3 (one tick may block for up to the
        # gateway's request timeout on a request to the stopping broker), at most MAX_OUTAGE_S
        started = time.monotonic()
        while True:
            elapsed = time.monotonic() - started
            ticked = load(state)["counters"]["ticks"] >= ticks_at_stop + 5
            if (elapsed >= OUTAGE_S and ticked) or elapsed >= MAX_OUTAGE_S:
                break
            assert execute.poll() is None, f"execute exited while broker {DOWN} was down:\n{log.read_text()}"
            record = load(state)
            phases.add(record["phase"])
            if record.get("lastError"):
                errors.add(record["lastError"])
            assert record["phase"] not in ("Completed", "Failed", "Cancelled"), record["phase"]
            assert record["doneCount"] < len(moved)
            assert record["counters"]["submissions"] == submissions_at_stop  # nothing new submitted
            assert (record["progress"]["bytes"]["remaining"]) > 0
            assert record["progress"]["bytes"]["moved"] >= moved_at_stop  # progress never goes backwards
            time.sleep(0.5)
        during = load(state)
        assert during["counters"]["ticks"] >= ticks_at_stop + 5, "the executor stopped ticking"
        assert "Paused" in phases or errors, (phases, errors)
        assert any("under-replicated" in e for e in errors), errors  # the safety gate (p3 at least)
        in_flight = gateway.list_reassignments([(topic, p) for p in moved])
        assert len(in_flight) == len(during["inFlight"]) == 2  # still Kafka's moves

        start = rig_node("start-node", kafka_rig, DOWN)
        assert start.returncode == 0, start.stderr + start.stdout
        stopped = False
        code = execute.wait(timeout=240)
    finally:
        if execute.poll() is None:
            execute.kill()
            execute.wait(10)
        if stopped or not node_running(kafka_rig, DOWN):
            restarted = rig_node("start-node", kafka_rig, DOWN)
            assert restarted.returncode == 0 or "already running" in restarted.stderr, restarted.stderr
    output = log.read_text()
    assert code == 0, output
    assert "Traceback" not in output
    record = load(state)
    assert record["phase"] == "Completed", output
    assert record["counters"]["submissions"] == len(keys)  # each partition exactly once
    assert record["counters"]["resubmitted"] == 0
    assert record["doneCount"] == len(keys)
    verify_args = [
        str(CLI), "verify", "--bootstrap-server", kafka_rig.bootstrap_servers, "--plan", str(plan),
        "--state", str(state),
    ]  # fmt: skip
    verify = subprocess.run(verify_args, capture_output=True, text=True, timeout=60)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    # a fresh client: the module's one may still hold metadata from before broker 3 restarted
    with KafkaGateway(ConnectionSettings(kafka_rig.bootstrap_servers)) as fresh:
        assert not fresh.list_reassignments([(topic, p) for p in moved])
        after = fresh.snapshot()
        for p in moved:
            part = after.partition(topic, p)
            assert part is not None and part.replicas == (1, DOWN)
        # removed through the controller before Completed; each broker applies that moments later
        wait_for(
            "the throttles as before the execution",
            lambda: throttle_configs(fresh, topic) == throttles_before,
            30,
            why=lambda: f"{throttle_configs(fresh, topic)} != {throttles_before}",
        )
