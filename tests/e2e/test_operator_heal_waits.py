"""End to end: a heal moves all it can and waits, named, for what it cannot (planning/waiting.py), on the
main rig (3 KRaft nodes, RF-2 internal topics) with a real broker SIGKILLed and the operator as a process.

1. **Too few brokers.** An RF-3 topic and an RF-2 topic both with replicas on broker 3; broker 3 killed:
   the heal (``afterSeconds: 5``, Automatic) moves every RF-2 partition off broker 3 and leaves the RF-3
   ones where they are (two live brokers cannot hold three replicas): the heal goes ``Pending`` with reason
   ``WaitingForCapacity`` and says how many brokers it needs, never ``Failed``/``Infeasible``. Broker 3
   started again: once settled (5 s) the heal is retired, and the RF-3 topic is whole again.
2. **No in-sync replica.** ``stuck-0`` on [3, 1], led by 3: broker 1 is killed (fenced: out of the ISR),
   records are written to broker 3 alone, broker 3 is killed and broker 1 started again. ``stuck-0`` has
   no leader and its live replica is out of sync. The heal of broker 3 moves the other partitions off it
   and names ``stuck-0 (out of sync: 1)`` in ``status.deadBrokers``, the SelfHealing condition
   (``NoInSyncReplica``) and a Warning Event; the heal waits ``Pending`` (reason ``NoInSyncReplica``)
   instead of stalling or pausing. Then the documented way out, an unclean election (the test's own
   admin call, as a user would run ``kafka-leader-election.sh --election-type unclean``): the heal picks
   the partition up and moves it off broker 3 with no user action.

Cost: about 3 minutes (three kills and restarts, each seen once the controller fences the broker).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.e2e.conftest import KafkaRig, Operator, get
from tests.e2e.test_operator import apply
from tests.e2e.test_operator_self_healing import LABEL, until
from tests.integration.test_executor_broker_down import rig_node

pytestmark = [pytest.mark.kafka, pytest.mark.k8s, pytest.mark.timeout(480)]

DOWN = 3


def cluster(name: str, bootstrap: str) -> str:
    return (
        f"apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {{name: {name}}}\n"
        f"spec:\n  bootstrapServers: '{bootstrap}'\n  selfHealing:\n"
        "    brokerFailure: {enabled: true, afterSeconds: 5, settleSeconds: 5}\n"
        "    approval: Automatic\n    maxConcurrentBrokerHeals: 1\n"
    )


def the_heal(kubectl: Any, ns: str) -> dict[str, Any] | None:
    out = kubectl("-n", ns, "get", "brokerdecommissions", "-l", LABEL, "-o", "json")
    items: list[dict[str, Any]] = json.loads(out.stdout)["items"]
    assert len(items) <= 1, [i["metadata"]["name"] for i in items]
    return items[0] if items else None


def placement(servers: str, topic: str) -> dict[int, tuple[list[int], int | None, list[int]]]:
    """Each partition's (replicas, leader, ISR), read afresh."""
    from kafka_placement.kafka.connection import ConnectionSettings
    from kafka_placement.kafka.gateway import KafkaGateway

    with KafkaGateway(ConnectionSettings(servers)) as gw:
        parts = [p for p in gw.snapshot().partitions if p.topic == topic]
    return {p.partition: (list(p.replicas), p.leader, list(p.isr)) for p in parts}


def started(kafka_rig: KafkaRig, node: int) -> None:
    out = rig_node("start-node", kafka_rig, node)
    assert out.returncode == 0 or "already running" in out.stderr, out.stderr + out.stdout


def killed(kafka_rig: KafkaRig, node: int) -> None:
    out = rig_node("stop-node", kafka_rig, node, "--kill")
    assert out.returncode == 0, out.stderr + out.stdout


def pending_with(kubectl: Any, ns: str, reason: str, op: Operator) -> dict[str, Any]:
    """The heal's status once it is Pending with ``reason``; never Failed or Paused meanwhile."""

    seen: list[dict[str, Any]] = [{}]

    def check() -> dict[str, Any] | None:
        heal = the_heal(kubectl, ns)
        status = seen[0] = (heal or {}).get("status") or {"heal": heal is not None}
        assert status.get("phase") not in ("Failed", "Paused", "Cancelled"), status
        ready = [c for c in status.get("conditions") or () if c.get("type") == "Ready"]
        said = ready[0].get("reason") if ready else None  # a Pending intent's reason: on Ready
        return status if (status.get("phase"), said) == ("Pending", reason) else None

    try:
        found: dict[str, Any] = until(f"the heal Pending, reason {reason}", check, op, timeout=240)
    except BaseException:
        print("the heal's last status:", json.dumps(seen[0])[:3000])
        raise
    return found


def test_rf3_on_three_brokers_one_dead_heals_the_rest_and_waits_for_capacity(
    operator: Operator, kubectl: Any, k8s_namespace: str, kafka_rig: KafkaRig, new_topic: Any
) -> None:
    ns, name, servers = k8s_namespace, "waits-capacity", kafka_rig.bootstrap_servers
    rf2 = new_topic([[3, 1], [2, 3], [3, 2], [1, 3]], config={"min.insync.replicas": "1"})
    rf3 = new_topic([[1, 2, 3], [3, 1, 2]], config={"min.insync.replicas": "1"})
    apply(kubectl, ns, cluster(name, servers))
    until(
        "the KafkaCluster connected",
        lambda: (get(kubectl, ns, "kafkacluster", name).get("status") or {}).get("phase") == "Connected",
        operator,
    )
    down = False
    try:
        killed(kafka_rig, DOWN)
        down = True
        status = pending_with(kubectl, ns, "WaitingForCapacity", operator)
        waits = status["plan"]["waiting"]["WaitingForCapacity"]
        assert waits["brokers"] == [DOWN] and waits["brokersNeeded"] == 1, waits
        assert waits["replicationFactor"] == 3 and waits["brokersAvailable"] == 2, waits
        assert waits["partitions"] >= 2, waits  # (other RF-3 topics of the shared rig may wait too)
        assert "1 more needed" in status["message"], status["message"]
        # the rest is healed: every RF-2 partition on the two live brokers, the RF-3 ones as they were
        moved = placement(servers, rf2)
        assert all(DOWN not in reps and len(reps) == 2 for reps, _, _ in moved.values()), moved
        kept = placement(servers, rf3)
        assert [sorted(reps) for reps, _, _ in kept.values()] == [[1, 2, 3], [1, 2, 3]], kept

        started(kafka_rig, DOWN)
        down = False
        until("the heal retired once broker 3 settled", lambda: the_heal(kubectl, ns) is None, operator, 90)
        until(
            "the RF-3 topic in sync on its three brokers",
            lambda: all(sorted(isr) == [1, 2, 3] for _, _, isr in placement(servers, rf3).values()),
            operator,
            60,
        )
    finally:
        if down:
            started(kafka_rig, DOWN)


def test_a_partition_whose_only_in_sync_replica_died_is_named_and_the_heal_does_the_rest(
    operator: Operator, kubectl: Any, k8s_namespace: str, kafka_rig: KafkaRig, new_topic: Any
) -> None:
    from confluent_kafka import ElectionType, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]

    ns, name, servers = k8s_namespace, "waits-leader", kafka_rig.bootstrap_servers
    stuck = new_topic([[3, 1]], config={"min.insync.replicas": "1"})
    others = new_topic([[3, 2], [2, 3]], config={"min.insync.replicas": "1"})  # (not on 1: in sync)
    down: set[int] = set()
    try:
        killed(kafka_rig, 1)
        down.add(1)
        until(
            "broker 1 out of the ISR of stuck-0",
            lambda: placement(servers, stuck)[0][2] == [DOWN],
            operator,
            60,
        )
        producer = Producer({"bootstrap.servers": servers, "acks": "1"})
        for n in range(100):  # written to broker 3 alone: broker 1 will lack them
            producer.produce(stuck, value=str(n).encode(), partition=0)
        assert producer.flush(30) == 0
        killed(kafka_rig, DOWN)
        down.add(DOWN)
        started(kafka_rig, 1)
        down.discard(1)
        until(
            "stuck-0 without a leader, broker 1 back but out of sync",
            lambda: (p := placement(servers, stuck)[0])[1] is None and 1 not in p[2],
            operator,
            90,
        )
        apply(kubectl, ns, cluster(name, servers))
        status = pending_with(kubectl, ns, "NoInSyncReplica", operator)
        assert "(out of sync: 1)" in status["message"], status["message"]  # (internal topics may be first)
        assert "never elects an unclean one" in status["message"]
        # the rest of the heal is done: the other topic's partitions left broker 3
        assert all(DOWN not in reps for reps, _, _ in placement(servers, others).values())
        cluster_status = get(kubectl, ns, "kafkacluster", name).get("status") or {}
        (entry,) = cluster_status["deadBrokers"]
        assert f"{stuck}-0 (out of sync: 1)" in entry["noInSyncReplicaPartitions"], entry
        (healing,) = [c for c in cluster_status["conditions"] if c["type"] == "SelfHealing"]
        assert (healing["status"], healing["reason"]) == ("False", "NoInSyncReplica"), healing

        def warned() -> bool:
            out = kubectl(
                "-n", ns, "get", "events", "--field-selector", f"involvedObject.name={name}", "-o", "json"
            )
            said = [
                (e.get("reason"), e.get("type"), e.get("message", ""))
                for e in json.loads(out.stdout)["items"]
            ]
            return any((r, t) == ("NoInSyncReplica", "Warning") and f"{stuck}-0" in m for r, t, m in said)

        until("a Warning Event NoInSyncReplica naming the partition", warned, operator, 30)

        # the user accepts the loss: an unclean election (docs/operations.md) of every partition left
        # without a leader (internal topics' too, when they were on brokers 1 and 3); the heal picks them up
        from kafka_placement.kafka.connection import ConnectionSettings
        from kafka_placement.kafka.gateway import KafkaGateway

        with KafkaGateway(ConnectionSettings(servers)) as gw:
            leaderless = [p for p in gw.snapshot().partitions if p.leader is None and DOWN in p.replicas]
        assert (stuck, 0) in {p.key for p in leaderless}, leaderless
        admin = AdminClient({"bootstrap.servers": servers})
        elect = [TopicPartition(p.topic, p.partition) for p in leaderless]
        admin.elect_leaders(ElectionType.UNCLEAN, elect).result(timeout=60)

        def done() -> bool:
            heal = the_heal(kubectl, ns)
            phase = ((heal or {}).get("status") or {}).get("phase")
            return phase == "Completed" and DOWN not in placement(servers, stuck)[0][0]

        until("the heal moved stuck-0 off broker 3 and Completed", done, operator, 180)
        reps, leader, _ = placement(servers, stuck)[0]
        assert sorted(reps) == [1, 2] and leader is not None, (reps, leader)
    finally:
        for node in sorted(down | {1, DOWN}):
            started(kafka_rig, node)
        until(
            "every broker back in the cluster",
            lambda: all(len(isr) == len(reps) for reps, _, isr in placement(servers, others).values()),
            operator,
            120,
        )
