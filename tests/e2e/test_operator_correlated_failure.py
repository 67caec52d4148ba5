"""End to end on a five-broker cluster: two brokers dying at once are a correlated failure (nothing is
healed until one is back); a second broker dying while the first one's heal runs is healed with it.

A cluster of its own (``kafka_rig.py up --name five``: five combined broker+controller nodes, so two can
die and the quorum of three stays) and one operator. The KafkaCluster has ``selfHealing.brokerFailure``
with ``afterSeconds: 5``, ``settleSeconds: 5`` (a broker back counts after 5 s) and
``maxConcurrentBrokerHeals: 1`` (approval Manual: a heal waits, nothing moves). Brokers 4 and 5 are
SIGKILLed together: both are listed in ``status.deadBrokers``, the SelfHealing condition says
``CorrelatedFailure`` with a Warning Event, and no heal is created past the delay (a storm of moves
during an outage is worse than waiting). Broker 5 is restarted: one broker is down, within the limit,
and broker 4 gets its heal.

The second test (``maxConcurrentBrokerHeals: 2``, approval Automatic, a low throttle): broker 5 is killed
and its heal executes; broker 4 is killed while it does. Broker 4's heal, as urgent as the running one,
supersedes it by a re-plan of both (moves in flight kept; those toward broker 4 re-targeted); both heals
complete, every partition is at RF 3 on the live brokers and in sync, no move was sent twice, and every
record a producer had acknowledged throughout is read back exactly once.

Cost: about a minute and a half each (five JVMs start on two cores; each death is seen once the controller
fences the broker), the second about two more for its moves; the cluster is always stopped (``finally``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.conftest import Operator, get
from tests.e2e.test_operator import apply, execution_record, fill
from tests.e2e.test_operator_self_healing import LABEL, dead_brokers, heals, until
from tests.integration.conftest import create_topics_everywhere, read_to_end, wait_for

from kafka_placement.model.self_healing import parse_time

pytestmark = [pytest.mark.kafka, pytest.mark.k8s, pytest.mark.timeout(480)]

RIG_CLI = Path(__file__).resolve().parents[1] / "rig" / "kafka_rig.py"
NAME = "five"
BASE = 29892 + int(os.environ.get("KP_RIG_PORT_OFFSET", "0"))  # brokers BASE+i, controllers BASE+100+i
BOOTSTRAP = ",".join(f"127.0.0.1:{BASE + i}" for i in range(5))


def rig(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(RIG_CLI), *args, "--name", NAME],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def five() -> Any:
    """The five-node cluster, up for this test only."""
    up = rig("up", "--nodes", "5", "--dirs", "1", "--base-port", str(BASE), timeout=420)
    assert up.returncode == 0, up.stderr + up.stdout
    try:
        yield BOOTSTRAP
    finally:
        down = rig("down")
        assert down.returncode == 0, down.stderr + down.stdout


def condition(kubectl: Any, ns: str) -> dict[str, Any]:
    status = get(kubectl, ns, "kafkacluster", NAME).get("status") or {}
    return next((c for c in status.get("conditions") or () if c.get("type") == "SelfHealing"), {})


def test_two_brokers_down_at_once_heal_nothing_until_one_is_back(
    operator: Operator, kubectl: Any, k8s_namespace: str, five: str
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    ns = k8s_namespace
    admin = AdminClient({"bootstrap.servers": five, "socket.connection.setup.timeout.ms": 5000})
    topic = NewTopic("spread", num_partitions=4, replica_assignment=[[4, 5], [5, 1], [1, 4], [2, 3]])
    create_topics_everywhere(admin, [topic], five)  # BOOTSTRAP names all five brokers
    apply(
        kubectl,
        ns,
        f"apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {{name: {NAME}}}\n"
        f"spec:\n  bootstrapServers: '{five}'\n  selfHealing:\n"
        "    brokerFailure: {enabled: true, afterSeconds: 5, settleSeconds: 5}\n"
        "    approval: Manual\n    maxConcurrentBrokerHeals: 1\n",
    )
    until(
        "the KafkaCluster connected",
        lambda: (get(kubectl, ns, "kafkacluster", NAME).get("status") or {}).get("phase") == "Connected",
        operator,
    )
    cpu_before, killed_at = operator.cpu_seconds(), time.monotonic()
    for node in (4, 5):
        stop = rig("stop-node", "--node", str(node), "--kill")
        assert stop.returncode == 0, stop.stderr + stop.stdout

    both = until(
        "brokers 4 and 5 listed dead",
        lambda: (lambda d: d if sorted(e["id"] for e in d) == [4, 5] else None)(
            dead_brokers(kubectl, ns, NAME)
        ),
        operator,
    )
    cond = until(
        "the correlated failure in the SelfHealing condition",
        lambda: (lambda c: c if c.get("reason") == "CorrelatedFailure" else None)(condition(kubectl, ns)),
        operator,
        timeout=30,
    )
    assert cond["status"] == "False" and "[4, 5]" in cond["message"], cond
    # past both heals' due time and a few reconciles (every 2 s): still no heal
    due = max(parse_time(e["since"], "since") for e in both) + 5
    time.sleep(max(0.0, due - time.time()) + 8)
    assert heals(kubectl, ns) == []
    assert condition(kubectl, ns).get("reason") == "CorrelatedFailure"
    # two brokers dead, still listed until fenced: reconciling costs the operator a fraction of a core, not
    # a core spinning on librdkafka's reconnects to a dead "controller" (kafka/clients.py ``_connected``)
    busy = (operator.cpu_seconds() - cpu_before) / (time.monotonic() - killed_at)
    print(f"operator CPU while two brokers were dead: {busy:.0%} of a core")
    assert busy < 0.25, f"the operator used {busy:.0%} of a core while two brokers were dead"
    events = kubectl(
        "-n", ns, "get", "events", "--field-selector", f"involvedObject.name={NAME}", "-o", "json"
    )
    warned = [e for e in json.loads(events.stdout)["items"] if e["reason"] == "CorrelatedFailure"]
    assert warned and warned[0]["type"] == "Warning", warned

    # broker 5 back: one broker down, within the limit: broker 4 is healed (the heal waits for approval)
    start = rig("start-node", "--node", "5")
    assert start.returncode == 0, start.stderr + start.stdout
    (heal,) = until("a heal of broker 4", lambda: heals(kubectl, ns), operator, timeout=120)
    assert heal["spec"]["brokers"] == [4]
    assert heal["metadata"]["labels"]["kafkaplacement.io/created-by"] == LABEL.split("=")[1]
    until(
        "the heal awaiting approval",
        lambda: (
            (get(kubectl, ns, "brokerdecommission", heal["metadata"]["name"]).get("status") or {}).get(
                "phase"
            )
            == "AwaitingApproval"
        ),
        operator,
        timeout=120,
    )
    until(  # the status the reconcile that made the heal writes after it (a read once could come first)
        "only broker 4 listed dead",
        lambda: [e["id"] for e in dead_brokers(kubectl, ns, NAME)] == [4],
        operator,
        timeout=60,
    )


def test_a_broker_dying_while_another_is_healed_is_healed_with_it(
    operator: Operator, kubectl: Any, k8s_namespace: str, five: str
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
    from tests.integration.test_dead_broker import PARTITIONS, Producer

    from kafka_placement.kafka.connection import ConnectionSettings
    from kafka_placement.kafka.gateway import KafkaGateway

    ns, topic = k8s_namespace, "twice"
    admin = AdminClient({"bootstrap.servers": five, "socket.connection.setup.timeout.ms": 5000})
    assignment = [[1 + (p + i) % 5 for i in range(3)] for p in range(PARTITIONS)]  # 18 per broker
    # min ISR 1: writable with one replica left (4 and 5 both dead)
    new = NewTopic(topic, PARTITIONS, replica_assignment=assignment, config={"min.insync.replicas": "1"})
    create_topics_everywhere(admin, [new], five)
    fill(five, topic, 9_000, 2_000)  # 600 kB per partition: broker 5's heal runs for tens of seconds
    apply(
        kubectl,
        ns,
        f"apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {{name: {NAME}}}\n"
        f"spec:\n  bootstrapServers: '{five}'\n  throttleBytesPerSecond: 100000\n  selfHealing:\n"
        "    brokerFailure: {enabled: true, afterSeconds: 5, settleSeconds: 5}\n"
        "    approval: Automatic\n    maxConcurrentBrokerHeals: 2\n",
    )
    until(
        "the KafkaCluster connected",
        lambda: (get(kubectl, ns, "kafkacluster", NAME).get("status") or {}).get("phase") == "Connected",
        operator,
    )

    def heal_of(broker: int) -> dict[str, Any] | None:
        return next((h for h in heals(kubectl, ns) if h["spec"]["brokers"] == [broker]), None)

    def phase(heal: dict[str, Any]) -> str | None:
        return (get(kubectl, ns, "brokerdecommission", heal["metadata"]["name"]).get("status") or {}).get(
            "phase"
        )

    def why() -> str:
        out = kubectl("-n", ns, "get", "brokerdecommissions", "-o", "json")
        statuses = [(i["metadata"]["name"], i.get("status")) for i in json.loads(out.stdout)["items"]]
        doc = execution_record(kubectl, ns, NAME)
        brief = {
            k: doc.get(k) for k in ("planId", "phase", "lastError", "inFlight", "superseded", "counters")
        }
        return f"heals: {statuses}\nrecord: {brief}\n{operator.tail()}"

    producer = Producer(five, topic)
    producer.thread.start()
    try:
        until("records acknowledged before the first crash", lambda: len(producer.acked) >= 2_000, operator)
        assert rig("stop-node", "--node", "5", "--kill").returncode == 0
        first = until("broker 5's heal", lambda: heal_of(5), operator, timeout=120)
        wait_for(
            "broker 5's heal executing, moves in flight",
            lambda: phase(first) == "Executing" and bool(execution_record(kubectl, ns, NAME).get("inFlight")),
            120,
            why=why,
        )
        running = execution_record(kubectl, ns, NAME)
        assert rig("stop-node", "--node", "4", "--kill").returncode == 0
        second = until("broker 4's heal", lambda: heal_of(4), operator, timeout=120)

        def superseded() -> dict[str, Any] | None:
            doc = execution_record(kubectl, ns, NAME)
            return doc if doc.get("planId") != running["planId"] and doc.get("superseded") else None

        after = wait_for("broker 4's heal superseding broker 5's", superseded, 120, why=why)
        assert running["planId"] in [h["planId"] for h in after["superseded"]], after["superseded"]
        for heal in (first, second):
            wait_for(
                f"heal {heal['metadata']['name']} Completed",
                lambda heal=heal: phase(heal) == "Completed",
                360,
                why=why,
            )
        final = execution_record(kubectl, ns, NAME)
        assert final["counters"]["resubmitted"] == 0, final["counters"]  # no move sent twice
        producer.finish()
        assert not producer.failed, producer.failed[:5]

        def healed() -> bool:  # in sync: followers that caught up join the ISR moments later
            with KafkaGateway(ConnectionSettings(five)) as gw:
                after = [p for p in gw.snapshot().partitions if p.topic == topic]
            return len(after) == PARTITIONS and all(
                sorted(p.replicas) == [1, 2, 3] and set(p.isr) == {1, 2, 3} for p in after
            )

        wait_for("every partition at RF 3 on brokers 1-3 and in sync", healed, 90, why=why)
        values = [v for rs in read_to_end(five, topic, PARTITIONS).values() for _, _, v in rs]
        numbered = [int(v) for v in values if v and v.isdigit()]  # the fill's records carry no number
        assert len(numbered) == len(set(numbered)), "a record was read twice"
        assert producer.acked <= set(numbered), f"{len(producer.acked - set(numbered))} acknowledged lost"
    finally:
        producer.stop.set()
