"""End to end: a broker the operator cannot reach, while the cluster keeps it alive and in sync, is
*unreachable*, never dead: no heal, no move, and it clears once the operator reaches it again.

A cluster of its own (``kafka_rig.py up --name reach``: three nodes, each with a second plaintext listener
on 127.0.0.1 at its broker port + 1000 that only the operator uses, as an operator reaches brokers over
their pod network). The KafkaCluster's bootstrap names those listeners, with ``selfHealing.brokerFailure``
(``afterSeconds: 5``, approval Automatic: a heal would move at once). A packet filter rule
(tests/rig/packet_filter.py) then refuses the operator's connections to broker 3's listener for 40 s,
eight times ``afterSeconds``: the brokers replicate over their own listener, so broker 3 stays registered
and in every ISR. The status lists it in ``unreachableBrokers`` with the BrokersReachable condition False;
no ``deadBrokers`` entry, no heal, no reassignment at any time. Once the rule is removed the entry goes and
the condition is True again. While it holds, topics' configs read through those listeners (the min-ISR
gate's read) are answered at once: they are sent to a broker that answered, never to the metadata's
"controller" (KRaft names a random live broker, here the cut one a third of the time; kafka/configs.py).

Cost: about three minutes (three JVMs start and stop, the 40 s hold, the reconciles that wait on the broker
the operator cannot reach); the cluster and the rule are always removed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.conftest import Operator, get
from tests.e2e.test_operator import apply, fill
from tests.e2e.test_operator_self_healing import dead_brokers, heals, until
from tests.integration.conftest import create_topics_everywhere
from tests.rig import packet_filter

pytestmark = [pytest.mark.kafka, pytest.mark.k8s, pytest.mark.timeout(420)]

RIG_CLI = Path(__file__).resolve().parents[1] / "rig" / "kafka_rig.py"
NAME = "reach"
BASE = 27692 + int(os.environ.get("KP_RIG_PORT_OFFSET", "0"))  # brokers BASE+i, controllers BASE+100+i
BROKERS = ",".join(f"127.0.0.1:{BASE + i}" for i in range(3))  # the brokers' own listener
OPERATOR_PORTS = [BASE + 1000 + i for i in range(3)]  # the second listener (kafka_rig POD_PORT_SHIFT)
CUT = 3
HOLD_S = 40
ROUTED_READS = 6  # fresh clients reading a topic's configs while cut: 1 - (2/3)**6 = 91% hit the cut one


def rig(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(RIG_CLI), *args, "--name", NAME], capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def reach() -> Any:
    """The three-node cluster with a listener for the operator, up for this test only."""
    why = packet_filter.usable()
    if why is not None:
        pytest.skip(why)
    up = rig(
        "up",
        "--nodes",
        "3",
        "--dirs",
        "1",
        "--base-port",
        str(BASE),
        "--pod-address",
        "127.0.0.1",
        timeout=420,
    )
    assert up.returncode == 0, up.stderr + up.stdout
    try:
        yield BROKERS
    finally:
        down = rig("down")
        assert down.returncode == 0, down.stderr + down.stdout


def status(kubectl: Any, ns: str) -> dict[str, Any]:
    got: dict[str, Any] = get(kubectl, ns, "kafkacluster", NAME).get("status") or {}
    return got


def reachable(kubectl: Any, ns: str) -> dict[str, Any]:
    conditions = status(kubectl, ns).get("conditions") or ()
    return next((c for c in conditions if c.get("type") == "BrokersReachable"), {})


def test_a_broker_the_operator_cannot_reach_is_unreachable_never_dead(
    operator: Operator, kubectl: Any, k8s_namespace: str, reach: str
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    from kafka_placement.kafka.connection import ConnectionSettings
    from kafka_placement.kafka.gateway import KafkaGateway

    ns, topic = k8s_namespace, "cut"
    admin = AdminClient({"bootstrap.servers": reach, "socket.connection.setup.timeout.ms": 5000})
    assignment = [[1 + p % 3, 1 + (p + 1) % 3] for p in range(6)]  # four of six on broker 3
    create_topics_everywhere(admin, [NewTopic(topic, 6, replica_assignment=assignment)], reach)
    fill(reach, topic, 3_000)
    operator_bootstrap = ",".join(f"127.0.0.1:{p}" for p in OPERATOR_PORTS)
    apply(
        kubectl,
        ns,
        f"apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {{name: {NAME}}}\n"
        f"spec:\n  bootstrapServers: '{operator_bootstrap}'\n  selfHealing:\n"
        "    brokerFailure: {enabled: true, afterSeconds: 5, settleSeconds: 5}\n    approval: Automatic\n",
    )
    until(
        "the KafkaCluster connected, every broker listed",
        lambda: sorted(b["id"] for b in status(kubectl, ns).get("brokers") or ()) == [1, 2, 3],
        operator,
        timeout=120,
    )

    def in_sync() -> bool:  # read over the brokers' own listener, which the rule does not touch
        with KafkaGateway(ConnectionSettings(reach)) as gw:
            parts = [p for p in gw.snapshot().partitions if p.topic == topic]
            moving = gw.list_reassignments()
        assert not moving, f"a reassignment was submitted: {moving}"
        return len(parts) == 6 and all(set(p.isr) == set(p.replicas) for p in parts)

    assert in_sync()
    with packet_filter.refused(OPERATOR_PORTS[CUT - 1]):
        cut_at = time.monotonic()
        until(
            f"broker {CUT} listed unreachable",
            lambda: [u["id"] for u in status(kubectl, ns).get("unreachableBrokers") or ()] == [CUT],
            operator,
            timeout=120,
        )
        cond = reachable(kubectl, ns)
        assert cond.get("status") == "False" and cond.get("reason") == "BrokersUnreachable", cond
        for _ in range(ROUTED_READS):  # each client's metadata names a random live broker "controller"
            with KafkaGateway(ConnectionSettings(operator_bootstrap)) as gw:
                assert CUT not in gw.describe_log_dirs(), "the cut broker answered"
                gw._attempts = 1  # one try: a read sent to the cut broker would time out and fail here
                assert gw.min_insync_replicas([topic]) == {topic: 1}
        while time.monotonic() - cut_at < HOLD_S:  # eight times afterSeconds: never dead, never healed
            assert not dead_brokers(kubectl, ns, NAME), status(kubectl, ns)
            assert heals(kubectl, ns) == [], heals(kubectl, ns)
            time.sleep(2)
        assert in_sync(), "broker 3 left the ISR: the cluster, not only the operator, lost it"
        self_healing = next(
            (c for c in status(kubectl, ns).get("conditions") or () if c.get("type") == "SelfHealing"), {}
        )
        assert self_healing.get("reason") == "NoFailure", self_healing
    until(
        f"broker {CUT} reachable again",
        lambda: (
            not status(kubectl, ns).get("unreachableBrokers")
            and reachable(kubectl, ns).get("status") == "True"
        ),
        operator,
        timeout=120,
    )
    assert not dead_brokers(kubectl, ns, NAME) and heals(kubectl, ns) == []
    assert in_sync()
