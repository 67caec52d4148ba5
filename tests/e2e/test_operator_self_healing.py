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
under load, across an operator restart mid-heal, and, once it is back (with its data, or with empty log
dirs: a replaced volume), sees its heal retired and the broker used again (about 2 min each).
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

from kafka_placement.execution.record_doc import TERMINAL
from kafka_placement.model.self_healing import parse_time

pytestmark = [pytest.mark.kafka, pytest.mark.k8s, pytest.mark.timeout(420)]

DOWN = 3
HEAL_THROTTLE = 400_000  # bytes/s: the ballast's copy to brokers 1 and 2 takes about 10 s or more
BALLAST_RECORDS = 24_000  # of 500 bytes: 12 MB over 6 partitions, 8 MB of it on broker 3
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


FLAPS = 2
FLAP_AFTER_S = 170  # past the two flaps, the last death and the operator's restart (each flap 25-40 s on a
# loaded machine: 3 flaps and 210 s took 275 s of the suite's longest lane, 2026-12-03)


@pytest.mark.timeout(480)
def test_a_flapping_broker_is_healed_once_from_its_first_death_across_an_operator_restart(
    operator: Operator, kubectl: Any, k8s_namespace: str, kafka_rig: KafkaRig, new_topic: Any
) -> None:
    """``settleSeconds: 300``: broker 3 is killed and restarted twice, each time seen dead and then
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


@pytest.mark.timeout(600)
@pytest.mark.parametrize("returns", ["with-its-data", "with-empty-log-dirs"])
def test_a_killed_broker_is_healed_to_completion_under_load_and_used_again_once_back(
    returns: str,
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    new_topic: Any,
) -> None:
    """``approval: Automatic``: a broker SIGKILLed while an idempotent producer writes with acks=all is
    decommissioned by the heal the operator creates, through the executor's repair of the partitions it
    left under-replicated; the operator is restarted (SIGTERM, a new process) while the heal's moves are
    in flight and resumes it from its record. The heal reports Completed with no move sent twice, every
    partition of the topic is back at RF 2 on live brokers and in sync, every acknowledged record is read
    once, no throttle is left. Then broker 3 is started again with its id, as a pod returns, with its data
    or with empty log dirs (a replaced volume: emptied and formatted with the cluster's id, new directory
    ids, as a pod's start formats a new volume): once it has stayed back ``settleSeconds`` (5 s) the completed
    heal is retired (``onReturn: Retire``, the default) with no user action: deleted, broker 3 uncordoned
    in Kafka (no ``cordoned.log.dirs``), a topic of RF 3 can be created on the 3-node rig again,
    ``status.pastFailures`` has the failure, ``HealRetired`` is posted and counted, and a PlacementPolicy
    balancing the topic over the brokers puts replicas back on broker 3."""
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]
    from tests.e2e.test_operator import execution_record, fill
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
    ballast = new_topic([[1 + p % 3, 1 + (p + 1) % 3] for p in range(6)])  # 4 of 6 on broker 3
    fill(kafka_rig, ballast, BALLAST_RECORDS)  # 12 MB: the heal's copy lasts while the operator restarts
    with KafkaGateway(ConnectionSettings(servers)) as gw:
        throttles_before = throttle_configs(gw, topic)
    manifest = cluster(name, servers, 5).replace("approval: Manual", "approval: Automatic")
    apply(kubectl, ns, manifest + f"  throttleBytesPerSecond: {HEAL_THROTTLE}\n")
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

        def moving() -> dict[str, Any] | None:
            record = execution_record(kubectl, ns, name)
            return record if record.get("inFlight") and record.get("phase") not in TERMINAL else None

        mid = until("the heal's moves in flight", moving, operator, timeout=120)
        operator.kill(signal.SIGTERM)  # mid-heal: the new process resumes the execution from its record
        operator.start()

        def completed() -> bool:
            status = get(kubectl, ns, "brokerdecommission", heal_name).get("status") or {}
            assert status.get("phase") not in ("Failed", "Paused"), status
            return status.get("phase") == "Completed"

        until("the heal Completed", completed, operator, timeout=240)
        print(f"self-healing e2e: broker {DOWN} healed {time.monotonic() - killed_at:.0f} s after the kill")
        final = execution_record(kubectl, ns, name)
        assert final["planId"] == mid["planId"], "the restart re-planned the heal"
        assert final["counters"]["resubmitted"] == 0, final["counters"]  # no move sent twice
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
        # one heal all along: the restarted process adopted it (its counter of heals created stays 0)
        assert [h["metadata"]["name"] for h in heals(kubectl, ns)] == [heal_name]
        created = metric_samples(operator, "kafka_placement_heals_total")
        assert sum(x.value for x in created if x.labels["kind"] == "BrokerDecommission") == 0, created
        read = [int(v or b"-1") for rs in read_to_end(servers, topic, PARTITIONS).values() for _, _, v in rs]
        assert len(read) == len(set(read)), "a record was read twice"
        assert producer.acked <= set(read), f"{len(producer.acked - set(read))} acknowledged records lost"

        # broker 3 back for good (a pod returning with its id): its completed heal is retired, the broker
        # may take replicas again
        empty = ["--empty-data"] if returns == "with-empty-log-dirs" else []  # its dirs emptied, formatted
        start = rig_node("start-node", kafka_rig, DOWN, *empty)
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

        # used again: a policy balancing the topic's replicas over the brokers moves a third onto broker 3
        apply(
            kubectl, ns,
            "apiVersion: kafkaplacement.io/v1alpha1\nkind: PlacementPolicy\nmetadata: {name: refill}\n"
            f"spec: {{clusterRef: {{name: {name}}}, topics: {{include: ['{topic}']}}, "
            "balance: {brokers: true, tolerance: 0.1}}\n",
        )  # fmt: skip

        def refilled() -> int:
            with KafkaGateway(ConnectionSettings(servers)) as fresh:
                parts = [p for p in fresh.snapshot().partitions if p.topic == topic]
            on_it = sum(DOWN in p.replicas for p in parts)
            in_sync = all(set(p.isr) == set(p.replicas) for p in parts)
            return on_it if on_it >= PARTITIONS // 2 and in_sync else 0  # 20 with tolerance 0.1: 16 or more

        def refill_completed() -> bool:
            status = get(kubectl, ns, "placementpolicy", "refill").get("status") or {}
            assert status.get("phase") not in ("Failed", "Paused", "Blocked"), status
            return status.get("phase") == "Completed"

        until("the refill Completed", refill_completed, operator, timeout=180)
        on_it = until(f"replicas back on broker {DOWN}", refilled, operator, timeout=30)
        print(f"self-healing e2e: {on_it} replicas of the topic back on broker {DOWN} ({returns})")
        until(
            "the throttles as they were before, after the refill",
            lambda: (now := left()) == {k: v for k, v in throttles_before.items() if k in now},
            operator,
            30,
        )
        kubectl("-n", ns, "delete", "placementpolicy", "refill", "--timeout=120s")
        read = [int(v or b"-1") for rs in read_to_end(servers, topic, PARTITIONS).values() for _, _, v in rs]
        assert len(read) == len(set(read)) and producer.acked <= set(read), "records lost or doubled"
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
