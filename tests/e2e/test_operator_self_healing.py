"""End to end: self-healing on the main rig, a real broker SIGKILLed, the operator as a process.

One operator and one KafkaCluster with ``selfHealing.brokerFailure`` (approval Manual: the heal is
planned and waits for approval, so nothing of the shared rig moves). Broker 3 is SIGKILLed twice, each
time briefly, and always restarted (``finally``):

1. with ``afterSeconds: 600`` it is listed in ``status.deadBrokers`` (since when), restarted before the
   delay: its entry goes once it has stayed back ``settleSeconds`` (5 s here) and no heal is created;
2. with ``afterSeconds: 15`` it gets, with no user action, a BrokerDecommission of broker 3 labelled
   ``created-by: self-healing``, owned by the KafkaCluster, annotated with the failure and its time,
   with the cluster's approval; restarted while the heal waits, the heal stays and an Event says so.

Cost: about 90 s (two kills; each is seen once the controller fences the broker, ~10 s, and each restart
waits until the cluster sees every broker again).
"""

from __future__ import annotations

import json
import signal
import time
from typing import Any

import pytest
from tests.e2e.conftest import KafkaRig, Operator, free_port, get, metric_samples
from tests.e2e.test_operator import apply
from tests.integration.test_executor_broker_down import rig_node

pytestmark = [pytest.mark.kafka, pytest.mark.k8s, pytest.mark.timeout(420)]

DOWN = 3
LABEL = "kafkaplacement.io/created-by=self-healing"


def cluster(name: str, bootstrap: str, after: int) -> str:
    return (
        f"apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {{name: {name}}}\n"
        f"spec:\n  bootstrapServers: '{bootstrap}'\n  selfHealing:\n"
        f"    brokerFailure: {{enabled: true, afterSeconds: {after}, settleSeconds: 5}}\n"
        "    approval: Manual\n    maxConcurrentBrokerHeals: 1\n"
    )


def heals(kubectl: Any, ns: str) -> list[dict[str, Any]]:
    out = kubectl("-n", ns, "get", "brokerdecommissions", "-l", LABEL, "-o", "json")
    items: list[dict[str, Any]] = json.loads(out.stdout)["items"]
    return items


def until(what: str, check: Any, op: Operator, timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout} s\noperator log:\n{op.tail()}", pytrace=False)
        time.sleep(0.5)


def dead_brokers(kubectl: Any, ns: str, name: str) -> list[dict[str, Any]]:
    status = get(kubectl, ns, "kafkacluster", name).get("status") or {}
    listed: list[dict[str, Any]] = status.get("deadBrokers") or []
    return listed


def test_a_killed_broker_is_healed_after_the_delay_and_one_back_before_is_not(
    operator: Operator, kubectl: Any, k8s_namespace: str, kafka_rig: KafkaRig, new_topic: Any
) -> None:
    ns, name = k8s_namespace, "healing"
    new_topic([[DOWN, 1]])  # broker 3 holds a replica: the cluster names it while it is down
    apply(kubectl, ns, cluster(name, kafka_rig.bootstrap_servers, 600))
    until(
        "the KafkaCluster connected",
        lambda: (get(kubectl, ns, "kafkacluster", name).get("status") or {}).get("phase") == "Connected",
        operator,
    )
    started = time.monotonic()
    down = False
    try:
        # 1. back before afterSeconds: nothing is created
        stop = rig_node("stop-node", kafka_rig, DOWN, "--kill")
        assert stop.returncode == 0, stop.stderr + stop.stdout
        down = True
        (entry,) = until("broker 3 listed dead", lambda: dead_brokers(kubectl, ns, name), operator)
        assert entry["id"] == DOWN and entry["since"].endswith("Z") and "heal" not in entry
        start = rig_node("start-node", kafka_rig, DOWN)
        assert start.returncode == 0, start.stderr + start.stdout
        down = False
        until("broker 3 no longer listed", lambda: not dead_brokers(kubectl, ns, name), operator)
        assert heals(kubectl, ns) == []

        # 2. dead for afterSeconds: a heal, with no user action
        kubectl(
            "-n", ns, "patch", "kafkacluster", name, "--type=merge",
            "-p", '{"spec":{"selfHealing":{"brokerFailure":{"afterSeconds":15}}}}',
        )  # fmt: skip
        stop = rig_node("stop-node", kafka_rig, DOWN, "--kill")
        assert stop.returncode == 0, stop.stderr + stop.stdout
        down = True
        (heal,) = until("a self-healing BrokerDecommission", lambda: heals(kubectl, ns), operator)
        meta, spec = heal["metadata"], heal["spec"]
        owner = get(kubectl, ns, "kafkacluster", name)["metadata"]
        assert spec["brokers"] == [DOWN] and spec["clusterRef"] == {"name": name}
        assert spec["approval"] == "Manual"
        assert [(r["kind"], r["name"], r["uid"]) for r in meta["ownerReferences"]] == [
            ("KafkaCluster", name, owner["uid"])
        ]
        (entry,) = until(
            "the status names the heal",
            lambda: [e for e in dead_brokers(kubectl, ns, name) if e.get("heal")],
            operator,
            timeout=20,
        )
        failure = f"broker {DOWN} not alive since {entry['since']}"
        assert meta["annotations"]["kafkaplacement.io/failure"] == failure
        assert entry["heal"] == meta["name"]
        start = rig_node("start-node", kafka_rig, DOWN)
        assert start.returncode == 0, start.stderr + start.stdout
        down = False

        # back while its heal waits: the heal stays, an Event on it says so
        until("broker 3 no longer listed", lambda: not dead_brokers(kubectl, ns, name), operator)
        assert [h["metadata"]["name"] for h in heals(kubectl, ns)] == [meta["name"]]

        def told() -> bool:
            out = kubectl(
                "-n", ns, "get", "events", "--field-selector", f"involvedObject.name={meta['name']}",
                "-o", "json",
            )  # fmt: skip
            return any(e.get("reason") == "FailureEnded" for e in json.loads(out.stdout)["items"])

        until("an Event on the heal saying the broker is back", told, operator, timeout=30)
        print(f"self-healing e2e: {time.monotonic() - started:.0f} s from the first kill")
    finally:
        if down:
            restarted = rig_node("start-node", kafka_rig, DOWN)
            assert restarted.returncode == 0 or "already running" in restarted.stderr, restarted.stderr


def test_a_killed_broker_is_healed_to_completion_under_load(
    operator: Operator, kubectl: Any, k8s_namespace: str, kafka_rig: KafkaRig, new_topic: Any
) -> None:
    """``approval: Automatic``: a broker SIGKILLed while an idempotent producer writes with acks=all is
    decommissioned by the heal the operator creates, through the executor's repair of the partitions it
    left under-replicated: the heal reports Completed, every partition of the topic is back at RF 2 on live
    brokers and in sync, every acknowledged record is read once, no throttle is left. Then broker 3 is
    restarted and the heal deleted (its finalizer uncordons the broker)."""
    from tests.integration.conftest import read_to_end
    from tests.integration.test_dead_broker import PARTITIONS, Producer
    from tests.integration.test_executor_broker_down import throttle_configs

    from kafka_placement.kafka.connection import ConnectionSettings
    from kafka_placement.kafka.gateway import KafkaGateway

    ns, name = k8s_namespace, "healing-auto"
    servers = kafka_rig.bootstrap_servers
    operator.kill(signal.SIGTERM)
    operator.metrics_port = free_port()  # the heal's metrics are read at the end
    operator.start()
    assignment = [[1 + p % 3, 1 + (p + 1) % 3] for p in range(PARTITIONS)]  # 20 of 30 on broker 3
    topic = new_topic(assignment, config={"min.insync.replicas": "1"})
    with KafkaGateway(ConnectionSettings(servers)) as gw:
        throttles_before = throttle_configs(gw, topic)
    manifest = cluster(name, servers, 5).replace("approval: Manual", "approval: Automatic")
    apply(kubectl, ns, manifest + "  throttleBytesPerSecond: 50000000\n")
    until(
        "the KafkaCluster connected",
        lambda: (get(kubectl, ns, "kafkacluster", name).get("status") or {}).get("phase") == "Connected",
        operator,
    )
    producer = Producer(servers, topic)
    producer.thread.start()
    down = False
    heal_name = None
    try:
        until("records acknowledged before the crash", lambda: len(producer.acked) >= 2_000, operator)
        stop = rig_node("stop-node", kafka_rig, DOWN, "--kill")
        assert stop.returncode == 0, stop.stderr + stop.stdout
        down, killed_at = True, time.monotonic()
        (heal,) = until("a self-healing BrokerDecommission", lambda: heals(kubectl, ns), operator)
        heal_name = heal["metadata"]["name"]
        assert heal["spec"]["approval"] == "Automatic"

        def completed() -> bool:
            status = get(kubectl, ns, "brokerdecommission", heal_name).get("status") or {}
            assert status.get("phase") not in ("Failed", "Paused"), status
            return status.get("phase") == "Completed"

        until("the heal Completed", completed, operator, timeout=240)
        print(f"self-healing e2e: broker {DOWN} healed {time.monotonic() - killed_at:.0f} s after the kill")
        producer.finish()
        assert not producer.failed, producer.failed[:5]

        def healed() -> list[Any] | None:  # in sync: followers that caught up join the ISR moments later
            with KafkaGateway(ConnectionSettings(servers)) as fresh:
                after = [p for p in fresh.snapshot().partitions if p.topic == topic]
            whole = len(after) == PARTITIONS and all(
                len(p.replicas) == 2 and DOWN not in p.replicas and set(p.isr) == set(p.replicas)
                for p in after
            )
            return None if whole else after

        until("every partition at RF 2 on live brokers and in sync", lambda: healed() is None, operator, 60)

        def left() -> dict[str, Any]:
            with KafkaGateway(ConnectionSettings(servers)) as fresh:
                return throttle_configs(fresh, topic)

        # no throttle left: removed through the controller before Completed, applied by each broker moments
        # later (strict: only the operator removes them)
        until(
            "the throttles as they were before",
            lambda: (now := left()) == {k: v for k, v in throttles_before.items() if k in now},
            operator,
            30,
        )
        (heals_created,) = [
            x.value
            for x in metric_samples(operator, "kafka_placement_heals_total")
            if x.labels["kind"] == "BrokerDecommission"
        ]
        assert heals_created == 1
        took = {
            x.name: x.value
            for n in ("count", "sum")
            for x in metric_samples(operator, f"kafka_placement_heal_duration_seconds_{n}")
            if x.labels["kind"] == "BrokerDecommission"
        }
        seconds = took["kafka_placement_heal_duration_seconds_sum"]
        assert took["kafka_placement_heal_duration_seconds_count"] == 1 and seconds >= 5, (
            took
        )  # the delay included
        read = [int(v or b"-1") for rs in read_to_end(servers, topic, PARTITIONS).values() for _, _, v in rs]
        assert len(read) == len(set(read)), "a record was read twice"
        assert producer.acked <= set(read), f"{len(producer.acked - set(read))} acknowledged records lost"
    finally:
        producer.stop.set()
        if down:
            restarted = rig_node("start-node", kafka_rig, DOWN)
            assert restarted.returncode == 0 or "already running" in restarted.stderr, restarted.stderr
        if heal_name is not None:
            kubectl("-n", ns, "delete", "brokerdecommission", heal_name, "--wait=true", "--timeout=120s")
