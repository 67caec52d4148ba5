"""End to end: self-healing on the main rig, a real broker SIGKILLed, the operator as a process.

One operator and one KafkaCluster with ``selfHealing.brokerFailure`` (approval Manual: the heal is
planned and waits for approval, so nothing of the shared rig moves). Broker 3 is SIGKILLed twice, each
time briefly, and always restarted (``finally``):

1. with ``afterSeconds: 600`` it is listed in ``status.deadBrokers`` (since when), restarted before the
   delay: its entry goes once it has stayed back ``settleSeconds`` (5 s here) and no heal is created;
2. with ``afterSeconds: 15`` it gets, with no user action, a BrokerDecommission of broker 3 labelled
   ``created-by: self-healing``, owned by the KafkaCluster, annotated with the failure and its time,
   with the cluster's approval; restarted while the heal waits, the heal is retired once the broker has
   stayed back ``settleSeconds`` (``onReturn: Retire``, the default): deleted, Events on it say so, and
   ``status.pastFailures`` keeps both failures.

Cost: about 90 s (two kills; each is seen once the controller fences the broker, ~10 s, and each restart
waits until the cluster sees every broker again). A second test sees a flapping broker healed once, from
its first death, across an operator restart mid-timer (about 4 min); a third heals a broker to completion
under load and, once it is back, sees its heal retired and the broker used again.
"""

from __future__ import annotations

import json
import signal
import time
import uuid
from typing import Any

import pytest
from tests.e2e.conftest import KafkaRig, Operator, free_port, get, metric_samples
from tests.e2e.test_operator import apply
from tests.integration.test_executor_broker_down import rig_node

from kafka_placement.model.self_healing import parse_time

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

        # back while its heal waits (never approved): once settled, the heal is retired, Events say so
        until("broker 3 no longer listed", lambda: not dead_brokers(kubectl, ns, name), operator)
        until("the heal retired (deleted)", lambda: not heals(kubectl, ns), operator, timeout=60)

        def told() -> bool:
            out = kubectl(
                "-n", ns, "get", "events", "--field-selector", f"involvedObject.name={meta['name']}",
                "-o", "json",
            )  # fmt: skip
            reasons = {e.get("reason") for e in json.loads(out.stdout)["items"]}
            return {"FailureEnded", "HealRetired"} <= reasons

        until("Events on the heal saying the broker is back and the heal retired", told, operator, timeout=30)
        past = (get(kubectl, ns, "kafkacluster", name).get("status") or {}).get("pastFailures") or []
        assert [(p["broker"], p.get("heal")) for p in past] == [(DOWN, None), (DOWN, meta["name"])], past
        assert past[1]["since"] == entry["since"], past
        assert (past[1].get("retiredAt") or "") >= past[1]["returnedAt"], past
        print(f"self-healing e2e: {time.monotonic() - started:.0f} s from the first kill")
    finally:
        if down:
            restarted = rig_node("start-node", kafka_rig, DOWN)
            assert restarted.returncode == 0 or "already running" in restarted.stderr, restarted.stderr


FLAPS = 3
FLAP_AFTER_S = 210  # past the three flaps and the operator's restart (each flap 25-40 s on a loaded machine)


@pytest.mark.timeout(480)
def test_a_flapping_broker_is_healed_once_from_its_first_death_across_an_operator_restart(
    operator: Operator, kubectl: Any, k8s_namespace: str, kafka_rig: KafkaRig, new_topic: Any
) -> None:
    """``settleSeconds: 300``: broker 3 is killed and restarted three times, each time seen dead and then
    back (``backSince``) but never settled, so its failure keeps its first ``since``; then it is killed for
    good, and the operator is restarted (SIGTERM, a new process) before ``afterSeconds`` from that first
    death. One heal is created, once that first death is ``afterSeconds`` old, annotated with it, and no
    other (approval Manual: nothing moves; the heal is deleted and the broker restarted at the end)."""
    ns, name = k8s_namespace, "flapping"
    new_topic([[DOWN, 1]])  # broker 3 holds a replica: the cluster names it while it is down
    manifest = cluster(name, kafka_rig.bootstrap_servers, FLAP_AFTER_S).replace(
        "settleSeconds: 5", "settleSeconds: 300"
    )
    apply(kubectl, ns, manifest)
    until(
        "the KafkaCluster connected",
        lambda: (get(kubectl, ns, "kafkacluster", name).get("status") or {}).get("phase") == "Connected",
        operator,
    )

    def entry() -> dict[str, Any] | None:
        listed = dead_brokers(kubectl, ns, name)
        return listed[0] if listed else None

    down = False
    first: str | None = None
    try:
        for flap in range(FLAPS + 1):
            stop = rig_node("stop-node", kafka_rig, DOWN, "--kill")
            assert stop.returncode == 0, stop.stderr + stop.stdout
            down = True
            dead = until(
                f"broker 3 seen dead (death {flap + 1})",
                lambda: (e := entry()) is not None and "backSince" not in e and e,
                operator,
            )
            first = first or dead["since"]
            assert dead["since"] == first, f"a flap reset the failure: {dead}"  # keeps its first since
            if flap == FLAPS:
                break
            start = rig_node("start-node", kafka_rig, DOWN)
            assert start.returncode == 0, start.stderr + start.stdout
            down = False
            back = until(
                f"broker 3 seen back, not settled (return {flap + 1})",
                lambda: (e := entry()) is not None and e.get("backSince") and e,
                operator,
            )
            assert back["since"] == first, back
        assert first is not None
        due = parse_time(first, "since") + FLAP_AFTER_S
        assert time.time() < due, "the flaps took longer than afterSeconds: the restart is not mid-timer"
        assert heals(kubectl, ns) == []
        operator.kill(signal.SIGTERM)  # mid-timer: the new process reads "since" from the status
        operator.start()
        (heal,) = until("one heal", lambda: heals(kubectl, ns), operator, timeout=FLAP_AFTER_S + 60)
        meta = heal["metadata"]
        assert meta["annotations"]["kafkaplacement.io/failed-at"] == first
        created = parse_time(meta["creationTimestamp"], "creationTimestamp")
        assert created >= due - 1, f"healed {due - created:.0f} s before afterSeconds from the first death"
        time.sleep(6)  # a few more reconciles (every 2 s): still the one heal
        assert [h["metadata"]["name"] for h in heals(kubectl, ns)] == [meta["name"]]
        kubectl("-n", ns, "delete", "brokerdecommission", meta["name"], "--timeout=60s")
    finally:
        if down:
            restarted = rig_node("start-node", kafka_rig, DOWN)
            assert restarted.returncode == 0 or "already running" in restarted.stderr, restarted.stderr


@pytest.mark.timeout(540)
def test_a_killed_broker_is_healed_to_completion_under_load_and_used_again_once_back(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    new_topic: Any,
) -> None:
    """``approval: Automatic``: a broker SIGKILLed while an idempotent producer writes with acks=all is
    decommissioned by the heal the operator creates, through the executor's repair of the partitions it
    left under-replicated: the heal reports Completed, every partition of the topic is back at RF 2 on live
    brokers and in sync, every acknowledged record is read once, no throttle is left. Then broker 3 is
    started again with its id and data, as a pod returns: once it has stayed back ``settleSeconds`` (5 s)
    the completed heal is retired (``onReturn: Retire``, the default) with no user action: deleted, broker 3
    uncordoned in Kafka (no ``cordoned.log.dirs``), a topic of RF 3 can be created on the 3-node rig again,
    ``status.pastFailures`` has the failure, ``HealRetired`` is posted and counted."""
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]
    from tests.integration.conftest import confluent_admin, create_topics_everywhere, read_to_end
    from tests.integration.test_dead_broker import PARTITIONS, Producer
    from tests.integration.test_executor_broker_down import throttle_configs

    from kafka_placement.kafka.connection import ConnectionSettings
    from kafka_placement.kafka.gateway import CORDON_CONFIG, ConfigTarget, KafkaGateway

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

        # broker 3 back for good: its completed heal is retired, the broker may take replicas again
        start = rig_node("start-node", kafka_rig, DOWN)
        assert start.returncode == 0, start.stderr + start.stdout
        down, back_at = False, time.monotonic()
        until("the heal retired (deleted)", lambda: not heals(kubectl, ns), operator, timeout=5 + 60)
        print(
            f"self-healing e2e: heal retired {time.monotonic() - back_at:.0f} s after broker {DOWN} returned"
        )

        def cordon_left() -> str:
            with KafkaGateway(ConnectionSettings(servers)) as fresh:
                target = ConfigTarget.broker(DOWN)
                entry = fresh.describe_configs([target])[target].get(CORDON_CONFIG)
            return (entry.value or "") if entry is not None else ""

        until(f"broker {DOWN} uncordoned in Kafka", lambda: not cordon_left(), operator, timeout=30)
        wide = f"it-retired-rf3-{uuid.uuid4().hex[:8]}"  # Kafka places it: every broker must take replicas
        admin = confluent_admin(kafka_rig)  # a fresh client: this test's broker restart is behind it
        try:
            create_topics_everywhere(
                admin, [NewTopic(wide, num_partitions=3, replication_factor=3)], kafka_rig
            )
        finally:
            admin.delete_topics([wide], request_timeout=30)
        status = get(kubectl, ns, "kafkacluster", name).get("status") or {}
        assert not status.get("deadBrokers"), status
        (past,) = status.get("pastFailures") or [{}]
        assert past.get("broker") == DOWN and past.get("heal") == heal_name, past
        assert past.get("returnedAt") and (past.get("retiredAt") or "") >= past["returnedAt"], past
        assert "notRetired" not in past, past

        def retired_told() -> bool:
            out = kubectl(
                "-n", ns, "get", "events", "--field-selector", f"involvedObject.name={name}", "-o", "json"
            )
            return any(e.get("reason") == "HealRetired" for e in json.loads(out.stdout)["items"])

        until("an Event HealRetired on the KafkaCluster", retired_told, operator, timeout=30)
        (retired,) = [
            x.value
            for x in metric_samples(operator, "kafka_placement_heals_retired_total")
            if x.labels["kind"] == "BrokerDecommission"
        ]
        assert retired == 1
        heal_name = None  # gone: nothing to delete
    finally:
        producer.stop.set()
        if down:
            restarted = rig_node("start-node", kafka_rig, DOWN)
            assert restarted.returncode == 0 or "already running" in restarted.stderr, restarted.stderr
        if heal_name is not None:
            kubectl(
                "-n", ns, "delete", "brokerdecommission", heal_name, "--wait=true", "--timeout=120s",
                "--ignore-not-found",
            )  # fmt: skip
