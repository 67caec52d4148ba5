"""End to end at scale: the operator decommissions a broker holding thousands of small partitions with its
default limits, under an idempotent producer, with the decommission's own throttle and priority; the
record stays small in its ConfigMap, nothing is submitted twice, no throttle is left, and the status
keeps showing the executed plan once the cluster has converged. A topic created on the retiring broker
while it runs is moved off by the new-partition lane before the decommission ends (the lane never waits
behind the execution, and neither submits a move twice); Kafka 4.4 refuses to create it there (every dir
of the retiring broker is cordoned), which is checked instead. Real apiserver and Kafka only.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import ConfigResource, ResourceType
from tests.e2e.conftest import KafkaRig, Operator, get, wait_phase
from tests.e2e.test_operator import apply, execution_record, no_throttle_left, snapshot
from tests.integration.conftest import wait_for

from kafka_placement.execution import copy_model

# 900 s: the phase wait (420 s) plus the producer's flush (300 s) on a rig shared by three lanes
pytestmark = [pytest.mark.kafka, pytest.mark.k8s, pytest.mark.slow, pytest.mark.timeout(900)]

PARTITIONS = 1500
RETIRED = 1
DECOMMISSION_THROTTLE = 7_340_032  # the intent's own rate, below the cluster's default


def test_operator_decommissions_thousands_of_partitions_with_the_intents_throttle(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    new_topic: Any,
    kafka_admin: Any,
) -> None:
    ns = k8s_namespace
    topic = new_topic([[i % 3 + 1, (i + 1) % 3 + 1] for i in range(PARTITIONS)])
    stop = threading.Event()
    acked: list[int] = []
    unflushed: list[int] = []

    def producing() -> None:
        producer = Producer(
            {"bootstrap.servers": kafka_rig.bootstrap_servers, "enable.idempotence": True, "linger.ms": 20}
        )
        i = 0
        while not stop.is_set() and i < 20_000:
            producer.produce(
                topic,
                value=b"x" * 100,
                partition=(i * 7) % PARTITIONS,
                on_delivery=lambda e, m: acked.append(1),
            )
            producer.poll(0)
            i += 1
            time.sleep(0.01)
        unflushed.append(producer.flush(300))  # bounded: a busy rig acks late, never loses

    thread = threading.Thread(target=producing)
    thread.start()
    rates_seen: set[str] = set()
    fresh: str | None = None  # a topic created on the retiring broker while the decommission runs...
    fresh_moved_meanwhile = False  # ...is moved off it by the new-partition lane before that ends (Kafka
    # 4.3); Kafka 4.4 refuses to create it, the retiring broker's every dir being cordoned: the cordon holds
    refused: str | None = None

    def fresh_replicas() -> list[list[int]] | None:
        """The fresh topic's replicas; None when the look timed out (a saturated rig answers late: the
        caller's loop looks again within its own deadline)."""
        assert fresh is not None
        try:
            md = kafka_admin.list_topics(topic=fresh, timeout=30).topics[fresh]
        except KafkaException as e:
            if e.args[0].code() != KafkaError._TIMED_OUT:
                raise
            return None
        return [list(p.replicas) for p in md.partitions.values()]

    try:
        apply(
            kubectl,
            ns,
            "apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {name: big}\nspec: "
            f"{{bootstrapServers: '{kafka_rig.bootstrap_servers}', throttleBytesPerSecond: 52428800}}\n",
        )
        apply(
            kubectl,
            ns,
            "apiVersion: kafkaplacement.io/v1alpha1\nkind: BrokerDecommission\nmetadata: {name: retire}\n"
            f"spec: {{clusterRef: {{name: big}}, brokers: [{RETIRED}], throttle: {DECOMMISSION_THROTTLE}, "
            "priority: 5}\n",
        )
        deadline = time.monotonic() + 420
        while True:  # watch the throttle the executor sets on a receiving broker while it works
            body = get(kubectl, ns, "brokerdecommission", "retire")
            phase = (body.get("status") or {}).get("phase")
            if phase in ("Completed", "Failed"):
                break
            if phase == "Executing" and fresh is None and refused is None:
                try:
                    fresh = new_topic([[2, RETIRED], [3, RETIRED]], name_prefix="it-np-scale-")
                except KafkaException as e:
                    if e.args[0].code() != KafkaError.INVALID_REPLICA_ASSIGNMENT:
                        raise
                    refused = e.args[0].str()
            elif phase == "Executing" and fresh is not None and not fresh_moved_meanwhile:
                reps = fresh_replicas()
                moved = reps is not None and len(reps) == 2 and all(RETIRED not in r for r in reps)
                fresh_moved_meanwhile = moved
            for node in kafka_rig.nodes:
                resource = ConfigResource(ResourceType.BROKER, str(node.id))
                try:  # a sample: one a busy broker answers late is skipped, the next one taken
                    configs = kafka_admin.describe_configs([resource])[resource].result(30)
                except (concurrent.futures.TimeoutError, KafkaException):
                    continue
                entry = configs.get("follower.replication.throttled.rate")
                if entry is not None and entry.value:
                    rates_seen.add(entry.value)
            assert time.monotonic() < deadline, f"{body.get('status')}\n{operator.tail()}"
            time.sleep(0.5)
    finally:
        stop.set()
        thread.join(330)
    done = wait_phase(kubectl, operator, ns, "brokerdecommission", "retire", ("Completed",), timeout=30)
    assert unflushed == [0] and acked
    if refused is not None:  # Kafka 4.4 enforces the decommission's cordon itself
        assert f"includes broker {RETIRED}, but all its log directories are cordoned" in refused, refused
    else:
        assert fresh is not None and fresh_moved_meanwhile, (fresh, fresh_replicas() if fresh else None)
        # the lane's record says Completed at its tick after Kafka shows the move done: waited for
        lane = wait_for(
            "the lane's record Completed",
            lambda: (doc := execution_record(kubectl, ns, "big", "lane")).get("phase") == "Completed" and doc,
            60,
            why=operator.tail,
        )
        assert lane["counters"]["resubmitted"] == 0, lane
    assert rates_seen == {str(DECOMMISSION_THROTTLE)}, rates_seen  # the intent's rate, not the cluster's
    record = execution_record(kubectl, ns, "big")
    moved = sum(1 for i in range(PARTITIONS) if RETIRED in (i % 3 + 1, (i + 1) % 3 + 1))
    assert record["phase"] == "Completed" and record["doneCount"] >= moved
    assert record["counters"]["resubmitted"] == 0
    assert record["counters"]["submissions"] == record["partitions"]
    assert record["rules"][0]["priority"] == 5
    cm = kubectl("-n", ns, "get", "configmap", "-l", "kafkaplacement.io/cluster=big", "-o", "name")
    assert len(cm.stdout.split()) >= 2  # the progress document plus the plan and baseline blobs
    assert all(RETIRED not in p.replicas for p in snapshot(kafka_rig).partitions)
    no_throttle_left(kafka_admin, kafka_rig)
    plan_id = done["status"]["plan"]["id"]
    # the next reconcile finds nothing to move: still the executed plan's id and progress, "converged"
    deadline = time.monotonic() + 60
    while (
        "converged" not in (status := get(kubectl, ns, "brokerdecommission", "retire")["status"])["message"]
    ):
        assert time.monotonic() < deadline, operator.tail()
        time.sleep(1)
    assert status["plan"]["id"] == plan_id and status["progress"]["partitionsDone"] == record["partitions"]
    # Kafka's own time per move, measured on this execution (reconcile/kafka_work.py: its pace was that
    # work's, not the bytes'): the figure with which the estimate before approval would have read the time
    # it ran, on the KafkaCluster; a later plan's estimate uses it
    last, estimate = status["lastExecution"], status["plan"]["estimate"]
    assert estimate["perMoveMeasured"] is False and estimate["microsecondsPerMove"] == 8000, estimate
    moves = status["plan"]["moves"]
    per_move = copy_model.kafka_time_per_move(
        last["estimatedSeconds"], last["actualSeconds"], moves, 0.008, estimate["boundSeconds"]
    )
    assert per_move is not None, (last, estimate)
    work = wait_for(
        "status.kafkaWork",
        lambda: (get(kubectl, ns, "kafkacluster", "big").get("status") or {}).get("kafkaWork"),
        30,
        why=operator.tail,
    )
    assert work == {
        "microsecondsPerMove": round(per_move * 1e6),
        "moves": moves,
        "planId": plan_id,
        "measuredAt": last["finishedAt"],
    }, (work, last, estimate)
    # (broker 1 back first: with both retired, RF 2 would have one broker left)
    kubectl("-n", ns, "delete", "brokerdecommission", "retire", "--wait=true", "--timeout=60s")
    apply(
        kubectl,
        ns,
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: BrokerDecommission\nmetadata: {name: later}\n"
        "spec: {clusterRef: {name: big}, brokers: [2], approval: Manual}\n",
    )
    later = wait_phase(kubectl, operator, ns, "brokerdecommission", "later", ("AwaitingApproval",), 120)
    assert later["status"]["plan"]["estimate"]["perMoveMeasured"] is True, later["status"]["plan"]
    assert later["status"]["plan"]["estimate"]["microsecondsPerMove"] == work["microsecondsPerMove"]
    kubectl("-n", ns, "delete", "brokerdecommission", "later", "--wait=true", "--timeout=60s")
