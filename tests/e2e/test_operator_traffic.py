"""The operator's traffic sampler end to end: a KafkaCluster with ``spec.traffic`` enabled (a 20 s window,
a look every 5 s) while a paced producer writes known rates to a topic of three partitions, two replicas
each: ``status.traffic`` gives every broker the bytes in of its replicas (leaders and followers) and of
the partitions it leads, within 15% of what was sent. Then the operator restarts: the state is loaded from
its ConfigMap (saved every half window, so the looks since the last save are not counted), so the look
count goes on from the stored one and the rates are there after the first look of the new process (a
fresh state would have none until its second).

Then the operator plans with those rates (issue 41, item 4 on the operator's path): a second topic of three
hot partitions, all on brokers 1 and 3, puts broker 1's network in at 1.3x the mean. A PlacementPolicy with
``balance.networkIn`` (tolerance 0.2, Manual) gets a plan whose id stays the same across two more looks of
drifting rates (each reconcile plans again: the plan is kept, planning/plan_keeping.py), and across a
restart of the operator (the new process keeps it from the review ConfigMap, planning nothing); switched to
Automatic, exactly that plan executes, and the per-broker network in measured afterwards meets the
tolerance."""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest
from tests.e2e.conftest import KafkaRig, Operator, free_port, get, metric_samples, wait_phase
from tests.e2e.test_operator import apply, execution_record
from tests.integration.test_traffic import PacedProducer

pytestmark = [pytest.mark.kafka, pytest.mark.k8s, pytest.mark.timeout(300)]

RATES = {0: 60_000, 1: 30_000, 2: 20_000}  # partition -> value bytes per second
ASSIGNMENT = [[1, 2], [2, 3], [3, 1]]  # replicas; the first is the leader
HOT_RATES = {0: 40_000, 1: 40_000, 2: 40_000}  # the hot topic: network in 200k, 90k, 170k B/s with the above
HOT_ASSIGNMENT = [[1, 3], [3, 1], [1, 3]]
TOLERANCE = 0.2


def wait_traffic(
    kubectl: Any, op: Operator, ns: str, name: str, looks: int, timeout: float = 60, newer: str = ""
) -> dict[str, Any]:
    """status.traffic once it counts at least ``looks`` looks (and was sampled after ``newer``)."""
    deadline = time.monotonic() + timeout
    while True:
        traffic = (get(kubectl, ns, "kafkacluster", name).get("status") or {}).get("traffic") or {}
        if traffic.get("looks", 0) >= looks and traffic.get("sampledAt", "") > newer:
            return traffic
        assert time.monotonic() < deadline, f"status.traffic {traffic} after {timeout} s\n{op.tail()}"
        time.sleep(0.5)


CAPACITY_IN = 1_000_000  # spec.capacity: the default network in; broker 2's override below
CAPACITY_IN_2 = 200_000
CAPACITY_OUT = 500_000


def assert_rates(traffic: dict[str, Any], tolerance: float = 0.15) -> None:
    expected: dict[int, float] = {}
    leading: dict[int, float] = {}
    for assignment, rates in ((ASSIGNMENT, RATES), (HOT_ASSIGNMENT, HOT_RATES)):
        for p, replicas in enumerate(assignment):
            for b in replicas:
                expected[b] = expected.get(b, 0) + rates[p]
            leading[replicas[0]] = leading.get(replicas[0], 0) + rates[p]
    by_id = {b["id"]: b for b in traffic["brokers"]}
    for b, rate in expected.items():
        got = by_id[b]
        assert abs(got["bytesInPerSec"] - rate) <= tolerance * rate, (b, got, rate)
        assert abs(got["leaderBytesInPerSec"] - leading[b]) <= tolerance * leading[b], (b, got, leading)
        assert got["replicasMeasured"] >= 2
        # network out: one follower per partition led, no group reads the topic
        assert abs(got["networkOutBytesPerSec"] - leading[b]) <= tolerance * leading[b], (b, got)
        cap_in = CAPACITY_IN_2 if b == 2 else CAPACITY_IN
        assert got["capacity"] == {"networkIn": cap_in, "networkOut": CAPACITY_OUT}, got
        assert got["utilisation"]["networkIn"] == pytest.approx(got["bytesInPerSec"] / cap_in, abs=1e-3)
        out = got["networkOutBytesPerSec"] / CAPACITY_OUT
        assert got["utilisation"]["networkOut"] == pytest.approx(out, abs=1e-3)


def full_reconciles(op: Operator, cluster: str) -> float:
    """The process's full reconciles (Kafka read and planned or a plan kept) of ``cluster``."""
    samples = metric_samples(op, "kafka_placement_reconciles_total")
    return sum(s.value for s in samples if s.labels == {"cluster": cluster, "kind": "full"})


def max_mean(traffic: dict[str, Any]) -> float:
    rates = [b["bytesInPerSec"] for b in traffic["brokers"]]
    return float(max(rates) / (sum(rates) / len(rates)))


def test_status_traffic_per_broker_its_state_survives_a_restart_and_plans_move_it(
    operator: Operator, kubectl: Any, k8s_namespace: str, kafka_rig: KafkaRig, new_topic: Any
) -> None:
    ns = k8s_namespace
    topic, hot = new_topic(ASSIGNMENT), new_topic(HOT_ASSIGNMENT)
    sent = {(topic, p): r for p, r in RATES.items()} | {(hot, p): r for p, r in HOT_RATES.items()}
    producer = PacedProducer(kafka_rig.bootstrap_servers, sent)
    try:
        apply(
            kubectl,
            ns,
            (
                "apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {name: sampled}\n"
                f"spec: {{bootstrapServers: '{kafka_rig.bootstrap_servers}', "
                "traffic: {enabled: true, windowSeconds: 20, periodSeconds: 5}, "
                f"capacity: {{default: {{networkInBytesPerSec: {CAPACITY_IN}, "
                f"networkOutBytesPerSec: {CAPACITY_OUT}}}, "
                f"brokers: [{{id: 2, networkInBytesPerSec: {CAPACITY_IN_2}}}]}}}}\n"
            ),
        )
        refused = kubectl(  # the CRD refuses a negative capacity (schema minimum), naming the field
            "-n", ns, "patch", "kafkacluster", "sampled", "--type=merge",
            "-p", '{"spec": {"capacity": {"default": {"diskBytes": -1}}}}', check=False,
        )  # fmt: skip
        assert refused.returncode != 0 and "spec.capacity.default.diskBytes" in refused.stderr, refused
        before = wait_traffic(kubectl, operator, ns, "sampled", looks=4)
        assert before["windowSeconds"] == 20 and before["partitionsMeasured"] >= len(RATES)
        assert isinstance(before["groupsRead"], int)  # in the CRD's schema: not pruned by the apiserver
        assert isinstance(before["samplesSkipped"], dict)  # (the same), counts by reason
        assert before["networkCapacityGoal"].startswith("on: "), before["networkCapacityGoal"]
        assert_rates(before)
        stored = execution_record(kubectl, ns, "sampled", "traffic")
        assert stored["blob"] == f"state-{stored['looks']}" and "windowSeconds" not in stored
        # saved at the first look, then once the looks advanced half the window (10 s: every 2nd look)
        assert before["looks"] - 2 <= stored["looks"] <= before["looks"] + 2

        operator.kill(signal.SIGTERM)  # releases the Lease: the next process leads at once
        looks = execution_record(kubectl, ns, "sampled", "traffic")["looks"]
        shown = get(kubectl, ns, "kafkacluster", "sampled")["status"]["traffic"]["sampledAt"]
        operator.start()
        after = wait_traffic(kubectl, operator, ns, "sampled", looks=looks + 1, timeout=120, newer=shown)
        assert after["looks"] == looks + 1  # counted on from the stored state, not from 1
        assert_rates(after)  # rates at the first look of the new process: the state was loaded

        # the operator plans with these rates: broker 1 carries 1.3x the mean network in
        assert max_mean(after) > 1 + TOLERANCE, after
        apply(
            kubectl,
            ns,
            (
                "apiVersion: kafkaplacement.io/v1alpha1\nkind: PlacementPolicy\nmetadata: {name: net}\n"
                f"spec: {{clusterRef: {{name: sampled}}, topics: {{include: ['{hot}']}}, "
                f"balance: {{networkIn: true, tolerance: {TOLERANCE}}}, approval: Manual}}\n"
            ),
        )
        waiting = wait_phase(kubectl, operator, ns, "placementpolicy", "net", ("AwaitingApproval",), 60)
        plan_id = waiting["status"]["plan"]["id"]
        moving = waiting["status"]["plan"]["review"]["trafficChanging"]  # (kept by the CRD's schema)
        assert moving.startswith("broker ") and " in " in moving and " out " in moving, moving
        # two more looks of drifting rates, reconciles in between: the same plan (this drift is small
        # enough that planning afresh may give it too; tests/unit/reconcile/test_kept_plan.py has drift
        # that changes a fresh plan, and shows the reconcile keeps the shown one)
        shown = wait_traffic(kubectl, operator, ns, "sampled", looks=after["looks"] + 1, timeout=30)
        later = wait_traffic(kubectl, operator, ns, "sampled", looks=shown["looks"] + 1, timeout=30)
        drifting = [b["bytesInPerSec"] for b in later["brokers"]]
        assert drifting != [b["bytesInPerSec"] for b in shown["brokers"]]
        still = get(kubectl, ns, "placementpolicy", "net")["status"]
        assert still["phase"] == "AwaitingApproval" and still["plan"]["id"] == plan_id, (plan_id, still)

        # a restart (as a failover): the new process keeps the plan shown from the review ConfigMap's
        # keptPlan, planning nothing, through its first full reconciles
        operator.kill(signal.SIGTERM)
        operator.metrics_port = free_port()  # the new process's metrics: its plans and reconciles
        operator.start()
        deadline = time.monotonic() + 60
        while full_reconciles(operator, f"{ns}/sampled") < 2:
            assert time.monotonic() < deadline, operator.tail()
            time.sleep(1)
        assert not metric_samples(operator, "kafka_placement_planning_seconds_count")[0].value, (
            operator.tail()
        )
        still = get(kubectl, ns, "placementpolicy", "net")["status"]
        assert still["phase"] == "AwaitingApproval" and still["plan"]["id"] == plan_id, (plan_id, still)

        kubectl(
            "-n", ns, "patch", "placementpolicy", "net", "--type=merge",
            "-p", '{"spec": {"approval": "Automatic"}}',
        )  # fmt: skip
        done = wait_phase(kubectl, operator, ns, "placementpolicy", "net", ("Completed",), 90)
        assert done["status"]["plan"]["id"] == plan_id, done["status"]  # the plan shown is the one executed
        ended = get(kubectl, ns, "kafkacluster", "sampled")["status"]["traffic"]["sampledAt"]
        moved = wait_traffic(
            kubectl, operator, ns, "sampled", looks=later["looks"] + 1, timeout=30, newer=ended
        )
        assert max_mean(moved) <= 1 + TOLERANCE, moved  # measured from the brokers' offsets afterwards
        assert not producer.failed, producer.failed[:3]

        # a capacity no plan can meet (every broker's network in limited below what it takes in): the
        # policy fails Blocked, naming a broker and the numbers, and nothing moves
        kubectl(
            "-n", ns, "patch", "kafkacluster", "sampled", "--type=merge",
            "-p", '{"spec": {"capacity": {"default": {"networkInBytesPerSec": 1000}, "brokers": null}}}',
        )  # fmt: skip
        failed = wait_phase(kubectl, operator, ns, "placementpolicy", "net", ("Failed",), 60)
        blocked = {c["type"]: c for c in failed["status"]["conditions"]}["Blocked"]
        assert blocked["status"] == "True" and blocked["reason"] == "Infeasible", blocked
        message = failed["status"]["message"]
        limit = 0.8 * 1000 * len(kafka_rig.nodes) / 1000  # maxShare x 1000 B/s x brokers, in kB/s
        assert "[networkCapacity]" in message and f"({limit:.1f} kB/s)" in message, message
        # a daemon per sampling cluster: kopf logs nothing per look (a 1 s timer logged every tick), only
        # its end once, when the first process stopped
        assert operator.log.read_text(errors="replace").count("'sample_traffic' succeeded") <= 1
    finally:
        producer.close()
