"""The executor against the real Kafka rig through `kafka-placement execute|status|cancel|verify`:
a decommission-style move plus a log-dir move under live traffic, crash/resume without resubmission,
cancel (KIP-455 revert with the original replica order), bad input and an unreachable cluster.
Real brokers only (`make rig-up`); topics are small and unique, every wait is bounded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.integration.conftest import flowing

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

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(120)]

Wait = Callable[..., Any]
CLI = Path(sys.executable).parent / "kafka-placement"
RATES = (LEADER_RATE, FOLLOWER_RATE, DIR_RATE)


@pytest.fixture(scope="module")
def gateway(kafka_rig: KafkaRig) -> Iterator[KafkaGateway]:
    with KafkaGateway(ConnectionSettings(kafka_rig.bootstrap_servers)) as gw:
        yield gw


def run_cli(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=timeout)


def start_cli(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(CLI), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def produce(rig: KafkaRig, topic: str, partitions: int, per_partition: int, size: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": rig.bootstrap_servers, "acks": "all", "linger.ms": 20})
    value = os.urandom(size)  # incompressible: the bytes really move
    for p in range(partitions):
        for _ in range(per_partition):
            producer.produce(topic, value=value, partition=p)
            producer.poll(0)
    assert producer.flush(60) == 0


def write_plan(path: Path, entries: list[tuple[str, int, list[int], list[str]]]) -> Path:
    doc = {
        "version": 1,
        "partitions": [{"topic": t, "partition": p, "replicas": r, "log_dirs": d} for t, p, r, d in entries],
    }
    path.write_text(json.dumps(doc))
    return path


def throttle_configs(gw: KafkaGateway, topic: str) -> dict[str, Any]:
    """Broker rate configs (dynamic values) and the topic's throttled-replica lists."""
    brokers = [ConfigTarget.broker(b) for b in gw.broker_ids()]
    described = gw.describe_configs([*brokers, ConfigTarget.topic(topic)])
    out: dict[str, Any] = {}
    for b in brokers:
        for name in RATES:
            v = described[b].get(name)
            out[f"{b.name}:{name}"] = v.value if v is not None and v.is_dynamic else None
    for name in (LEADER_REPLICAS, FOLLOWER_REPLICAS):
        v = described[ConfigTarget.topic(topic)].get(name)
        out[f"{topic}:{name}"] = v.value if v is not None else ""
    return out


def throttles_back(gateway: KafkaGateway, topic: str, before: dict[str, Any], kafka_wait: Wait) -> None:
    """Until the throttle configs are as ``before`` the execution: the executor removes its throttles
    through the controller before it reports Completed (or Cancelled); each broker applies that moments
    later, and a describe is answered by the broker concerned. Strict all the same: nothing else removes
    them."""
    last: list[dict[str, Any]] = [{}]

    def back() -> bool:
        last[0] = throttle_configs(gateway, topic)
        return last[0] == before

    kafka_wait(f"the throttles as before the execution, {before}", back, timeout=30, why=lambda: str(last[0]))


def other_dir(rig: KafkaRig, broker: int, current: str | None) -> str:
    return next(d for d in rig.node(broker).log_dirs if d != current)


def test_decommission_and_dir_move_under_traffic(
    gateway: KafkaGateway, kafka_rig: KafkaRig, new_topic: TopicFactory, kafka_wait: Wait, tmp_path: Path
) -> None:
    topic = new_topic([[1, 3], [3, 2], [2, 3]], config={"min.insync.replicas": "1"})
    produce(kafka_rig, topic, 3, 100, 10_000)  # ~1 MB per partition
    before = gateway.snapshot()
    throttles_before = throttle_configs(gateway, topic)
    p0 = before.partition(topic, 0)
    assert p0 is not None
    moved_dir = other_dir(kafka_rig, 1, p0.log_dirs[0])
    plan = write_plan(
        tmp_path / "plan.json",
        [
            (topic, 0, [1, 2], [moved_dir, "any"]),
            (topic, 1, [2, 1], ["any", "any"]),
            (topic, 2, [2, 1], ["any", "any"]),
        ],
    )

    from confluent_kafka import Consumer, Producer

    stop = threading.Event()
    sent: list[str] = []
    errors: list[Any] = []

    def producing() -> None:
        producer = Producer(
            {"bootstrap.servers": kafka_rig.bootstrap_servers, "acks": "all", "enable.idempotence": True}
        )
        i = 0
        while not stop.is_set():
            key = f"k{i}"
            producer.produce(
                topic,
                key=key,
                value=b"v" * 100,
                on_delivery=lambda err, m: (
                    errors.append(err) if err else sent.append((m.key() or b"").decode())
                ),
            )
            producer.poll(0)
            i += 1
            time.sleep(0.005)
        assert producer.flush(30) == 0

    thread = threading.Thread(target=producing)
    thread.start()
    try:
        flowing(sent, errors)  # traffic flowing before the moves start (how fast: the machine's business)
        acked_before = len(sent)
        state = tmp_path / "state.json"
        proc = run_cli(
            "execute", "--bootstrap-server", kafka_rig.bootstrap_servers, "--plan", str(plan),
            "--throttle", "20000000", "--state", str(state), "--wait", "--poll-seconds", "0.5",
        )  # fmt: skip
    finally:
        stop.set()
        thread.join(60)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "[Completed]" in proc.stdout
    assert not errors, errors[:3]
    record = json.loads(state.read_text())
    assert record["phase"] == "Completed"

    after = gateway.snapshot()
    for p in range(3):
        part = after.partition(topic, p)
        assert part is not None and 3 not in part.replicas
    p0_after = after.partition(topic, 0)
    assert p0_after is not None and p0_after.replicas == (1, 2) and p0_after.log_dirs[0] == moved_dir
    throttles_back(gateway, topic, throttles_before, kafka_wait)
    verify = run_cli(
        "verify",
        "--bootstrap-server",
        kafka_rig.bootstrap_servers,
        "--plan",
        str(plan),
        "--state",
        str(state),
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr

    consumer = Consumer(
        {
            "bootstrap.servers": kafka_rig.bootstrap_servers,
            "group.id": f"it-exec-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    keyed: list[str] = []
    deadline = time.monotonic() + 60
    try:
        while len(keyed) < len(sent) and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None and msg.key() is not None:
                keyed.append((msg.key() or b"").decode())
    finally:
        consumer.close()
    assert len(sent) > acked_before >= 50  # records acknowledged before the moves and while they ran
    assert len(keyed) == len(set(keyed)) == len(sent)
    assert set(keyed) == set(sent)


def test_crash_and_resume_never_resubmits(
    gateway: KafkaGateway, kafka_rig: KafkaRig, new_topic: TopicFactory, kafka_wait: Wait, tmp_path: Path
) -> None:
    topic = new_topic([[1, 3], [3, 2]])
    # Kafka's replication quota averages over ~10 one-second windows, so about 10 s worth of the rate
    # passes unthrottled (plus one 1 MB fetch): 3 MB per partition at 100 KB/s stays in flight >= 10 s.
    produce(kafka_rig, topic, 2, 300, 10_000)
    throttles_before = throttle_configs(gateway, topic)
    plan = write_plan(
        tmp_path / "plan.json", [(topic, 0, [1, 2], ["any", "any"]), (topic, 1, [2, 1], ["any", "any"])]
    )
    state = tmp_path / "state.json"
    args = (
        "execute", "--bootstrap-server", kafka_rig.bootstrap_servers, "--plan", str(plan),
        "--throttle", "100000", "--state", str(state), "--wait", "--poll-seconds", "0.5",
    )  # fmt: skip
    tps = [(topic, 0), (topic, 1)]
    first = start_cli(*args)
    second: subprocess.CompletedProcess[str] | None = None
    try:

        def both_submitted_and_in_flight() -> bool:
            if not state.exists():
                return False
            in_flight = json.loads(state.read_text())["inFlight"]
            confirmed = len(in_flight) == 2 and all(s["state"] == "confirmed" for s in in_flight.values())
            return confirmed and len(gateway.list_reassignments(tps)) == 2

        kafka_wait("both submissions confirmed and in flight", both_submitted_and_in_flight, every=0.05)
        first.send_signal(signal.SIGKILL)  # crash with both moves in flight and throttles set
        first.wait(10)
        assert gateway.list_reassignments(tps), "moves should still be in flight after the crash"
        second = run_cli(*args, timeout=100)
    finally:
        if first.poll() is None:
            first.kill()
        if second is None or second.returncode != 0:  # leave no move or throttle behind for later tests
            run_cli("cancel", "--state", str(state), "--wait", "--poll-seconds", "0.3", timeout=60)
    assert second is not None
    assert second.returncode == 0, second.stderr + second.stdout
    assert "resuming execution" in second.stderr
    record = json.loads(state.read_text())
    assert record["phase"] == "Completed"
    assert record["counters"]["submissions"] == 2  # one per partition, counted write-ahead
    assert record["counters"]["resubmitted"] == 0
    after = gateway.snapshot()
    assert after.partition(topic, 0).replicas == (1, 2)  # type: ignore[union-attr]
    assert after.partition(topic, 1).replicas == (2, 1)  # type: ignore[union-attr]
    throttles_back(gateway, topic, throttles_before, kafka_wait)


def test_cancel_reverts_in_flight_moves_with_their_order(
    gateway: KafkaGateway, kafka_rig: KafkaRig, new_topic: TopicFactory, kafka_wait: Wait, tmp_path: Path
) -> None:
    topic = new_topic([[1, 2]])
    produce(kafka_rig, topic, 1, 300, 10_000)  # 3 MB at 100 KB/s: in flight >= 10 s (see the crash test)
    throttles_before = throttle_configs(gateway, topic)
    plan = write_plan(tmp_path / "plan.json", [(topic, 0, [3, 2], ["any", "any"])])
    state = tmp_path / "state.json"
    execute = start_cli(
        "execute", "--bootstrap-server", kafka_rig.bootstrap_servers, "--plan", str(plan),
        "--throttle", "100000", "--state", str(state), "--wait", "--poll-seconds", "0.5",
    )  # fmt: skip
    try:
        kafka_wait("move in flight", lambda: gateway.list_reassignments([(topic, 0)]), timeout=30)
        kafka_wait(  # the executor's throttles are in place (set before the submission; each broker applies
            # them moments after the controller)
            "the executor's throttles",
            lambda: throttle_configs(gateway, topic) != throttles_before,
            timeout=30,
        )
        cancel = run_cli("cancel", "--state", str(state), "--wait", "--poll-seconds", "0.3", timeout=60)
        assert cancel.returncode == 0, cancel.stderr + cancel.stdout
        out, err = execute.communicate(timeout=30)
    finally:
        if execute.poll() is None:
            execute.kill()
    assert execute.returncode == 0, err + out
    record = json.loads(state.read_text())
    assert record["phase"] == "Cancelled"
    assert record["counters"]["cancels"] >= 1  # reverted through KIP-455
    assert record["counters"]["submissions"] == 1 and record["counters"]["resubmitted"] == 0
    assert not gateway.list_reassignments([(topic, 0)])
    part = gateway.snapshot().partition(topic, 0)
    assert part is not None and part.replicas == (1, 2)
    throttles_back(gateway, topic, throttles_before, kafka_wait)
    status = run_cli("status", "--state", str(state))
    assert status.returncode == 0 and json.loads(status.stdout)["phase"] == "Cancelled"


@pytest.mark.parametrize("bad", ["partition", "broker"])
def test_bad_input_submits_nothing(
    gateway: KafkaGateway, kafka_rig: KafkaRig, new_topic: TopicFactory, tmp_path: Path, bad: str
) -> None:
    topic = new_topic([[1, 2]])
    if bad == "partition":  # a good move first: still nothing may be submitted
        entries = [(topic, 0, [2, 3], ["any", "any"]), (topic, 7, [1, 2], ["any", "any"])]
    else:
        entries = [(topic, 0, [1, 99], ["any", "any"])]
    plan = write_plan(tmp_path / "plan.json", entries)
    proc = run_cli(
        "execute", "--bootstrap-server", kafka_rig.bootstrap_servers, "--plan", str(plan),
        "--state", str(tmp_path / "state.json"), "--wait",
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr + proc.stdout
    assert (f"{topic}-7" if bad == "partition" else "broker 99") in proc.stderr
    assert "Traceback" not in proc.stderr
    assert gateway.list_reassignments() == {}


def test_unreachable_cluster_exits_1_with_one_line(tmp_path: Path) -> None:
    plan = write_plan(tmp_path / "plan.json", [("t", 0, [1, 2], ["any", "any"])])
    proc = run_cli(
        "execute", "--bootstrap-server", "127.0.0.1:1", "--plan", str(plan),
        "--state", str(tmp_path / "state.json"),
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "127.0.0.1:1" in lines[0], proc.stderr
    assert not (tmp_path / "state.json").exists()


def completed_then_moved_back(
    gateway: KafkaGateway, kafka_rig: KafkaRig, new_topic: TopicFactory, kafka_wait: Wait, tmp_path: Path
) -> tuple[str, Path, Path, tuple[str, ...]]:
    """A plan executed to Completed, then its partition moved back behind the record's back (so an
    execute that believed or accepted the record would be wrong). Returns topic, plan, state, execute args."""
    topic = new_topic([[1, 2]])
    plan = write_plan(tmp_path / "plan.json", [(topic, 0, [2, 3], ["any", "any"])])
    state = tmp_path / "state.json"
    args = ("execute", "--bootstrap-server", kafka_rig.bootstrap_servers, "--plan", str(plan),
            "--state", str(state), "--wait", "--poll-seconds", "0.3")  # fmt: skip
    first = run_cli(*args)
    assert first.returncode == 0, first.stderr
    assert gateway.alter_reassignments({(topic, 0): [1, 2]}) == {}
    kafka_wait("moved back", lambda: gateway.snapshot().partition(topic, 0).replicas == (1, 2))  # type: ignore[union-attr]
    kafka_wait("no reassignment", lambda: not gateway.list_reassignments([(topic, 0)]))
    return topic, plan, state, args


def test_a_completed_record_is_checked_against_the_live_cluster(
    gateway: KafkaGateway, kafka_rig: KafkaRig, new_topic: TopicFactory, kafka_wait: Wait, tmp_path: Path
) -> None:
    topic, plan, state, args = completed_then_moved_back(gateway, kafka_rig, new_topic, kafka_wait, tmp_path)
    stale = run_cli("verify", "--bootstrap-server", kafka_rig.bootstrap_servers, "--plan", str(plan),
                    "--state", str(state))  # fmt: skip
    assert stale.returncode == 1
    status = json.loads(run_cli("status", "--state", str(state)).stdout)
    assert status["phase"] == "Completed" and status["liveMismatches"] >= 1  # told, never hidden
    again = run_cli(*args)
    assert again.returncode == 0, again.stderr
    assert "executing it again" in again.stderr
    assert gateway.snapshot().partition(topic, 0).replicas == (2, 3)  # type: ignore[union-attr]


def test_a_record_of_another_cluster_is_refused(
    gateway: KafkaGateway, kafka_rig: KafkaRig, new_topic: TopicFactory, kafka_wait: Wait, tmp_path: Path
) -> None:
    topic, _, state, args = completed_then_moved_back(gateway, kafka_rig, new_topic, kafka_wait, tmp_path)
    doc = json.loads(state.read_text())
    doc["clusterId"] = "AnotherClusterId12345"
    state.write_text(json.dumps(doc))
    refused = run_cli(*args)
    assert refused.returncode == 2, refused.stderr
    assert "AnotherClusterId12345" in refused.stderr and "Traceback" not in refused.stderr
    assert not gateway.list_reassignments([(topic, 0)])  # nothing submitted
    assert gateway.snapshot().partition(topic, 0).replicas == (1, 2)  # type: ignore[union-attr]


def test_the_default_state_is_one_record_per_cluster(
    gateway: KafkaGateway, kafka_rig: KafkaRig, new_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = new_topic([[1, 2]])
    plan = write_plan(tmp_path / "plan.json", [(topic, 0, [2, 1], ["any", "any"])])
    env = {**os.environ, "KAFKA_PLACEMENT_STATE_DIR": str(tmp_path / "states")}
    proc = subprocess.run(
        [str(CLI), "execute", "--bootstrap-server", kafka_rig.bootstrap_servers, "--plan", str(plan),
         "--wait", "--poll-seconds", "0.3"],
        capture_output=True, text=True, timeout=90, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    cluster_id, _ = gateway.describe_cluster()
    state = tmp_path / "states" / f"execution-{cluster_id}.json"
    assert f"execution state: {state}" in proc.stderr  # the path is said
    assert json.loads(state.read_text())["clusterId"] == cluster_id
    assert not list(tmp_path.glob(".kafka-placement*"))  # nothing in the working directory
    status = subprocess.run(
        [str(CLI), "status", "--bootstrap-server", kafka_rig.bootstrap_servers],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert status.returncode == 0 and json.loads(status.stdout)["state"] == str(state)
