"""The Kafka releases users run, one test per release (and 3.9.2 in ZooKeeper mode too; not the rig's own,
4.4.0, on which every other test runs), in `make test`'s ``compat`` lane (tests/rig/lanes.py): each brings
a 3-node cluster of that release up with the smoke's data topic (tests/compat/smoke.py), then

- the operator's connect-and-plan: the operator as a process against the lane's kube-apiserver, a
  KafkaCluster connected with every broker listed, a Manual BrokerDecommission of broker 3 planned and
  AwaitingApproval with its estimate, nothing submitted to Kafka, no traceback in its log;
- the CLI's operations on the same cluster, in the smoke's order: move (a decommission with a dir move,
  executed and verified, no throttle left), cancel, cordon (native from 4.3, reactive on every release),
  dead (a stopped broker reported not alive);

and tears it down (under a minute and a half a release). The rolling restarts of every broker under a
running operator take minutes a release and run only with KP_COMPAT=1 (docs/compatibility.md):

    scripts/rig.sh up k8s && .venv/bin/python -m pytest tests/compat -q          # the lane's tests
    KP_COMPAT=1 .venv/bin/python -m pytest tests/compat -q -k rolling            # the rolling restarts
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from tests.compat import smoke
from tests.e2e.conftest import Operator, get
from tests.rig.kafka_rig import DEFAULT_KAFKA_VERSION, version_key

pytestmark = [pytest.mark.compat]
OPT_IN = pytest.mark.skipif(os.environ.get("KP_COMPAT") != "1", reason="minutes a release: KP_COMPAT=1")


# every release in KRaft but the rig's own (the whole suite runs on it: DEFAULT_KAFKA_VERSION), and those
# of ZOOKEEPER_VERSIONS in ZooKeeper mode too
RELEASES = [pytest.param(v, False, id=v) for v in smoke.VERSIONS if v != DEFAULT_KAFKA_VERSION] + [
    pytest.param(v, True, id=f"{v}-zookeeper") for v in smoke.ZOOKEEPER_VERSIONS
]


def args_of(tmp_path_factory: pytest.TempPathFactory) -> argparse.Namespace:
    return smoke.default_args(str(tmp_path_factory.mktemp("rig")), str(tmp_path_factory.mktemp("work")))


@contextlib.contextmanager
def seeded_cluster(
    version: str, tmp_path_factory: pytest.TempPathFactory, zookeeper: bool = False
) -> Iterator[smoke.Cluster]:
    """A 3-node cluster of ``version`` with the smoke's data topic (smoke.seeded), torn down after; the
    test fails, saying why, when it did not come up."""
    result = smoke.VersionResult(version, zookeeper=zookeeper)
    with smoke.seeded(version, args_of(tmp_path_factory), result) as cluster:
        assert cluster is not None, {op: o.detail for op, o in result.outcomes.items()}
        yield cluster


@pytest.mark.parametrize(("version", "zookeeper"), RELEASES)
def test_the_operator_and_the_cli_work_on_kafka(
    version: str,
    zookeeper: bool,
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with seeded_cluster(version, tmp_path_factory, zookeeper) as cluster:
        connects_and_plans(cluster, operator, kubectl, k8s_namespace)
        outcomes = {op: smoke.attempt(lambda op=op: smoke.OPS[op](cluster)) for op in smoke.OPERATIONS}
    failed = {op: o.detail for op, o in outcomes.items() if o.status == "fail"}
    assert not failed, failed
    assert outcomes["move"].status == outcomes["dead"].status == "pass", outcomes
    assert "reactive" in outcomes["cordon"].detail, outcomes["cordon"]  # every release
    native = version_key(version) >= (4, 3) and not zookeeper  # KIP-1066 (metadata.version 4.3-IV0)
    assert ("native: n/a" not in outcomes["cordon"].detail) == native, outcomes["cordon"]


def connects_and_plans(cluster: smoke.Cluster, operator: Operator, kubectl: Any, ns: str) -> None:
    """The operator connects to the cluster and plans a Manual decommission of broker 3, moving nothing."""
    manifest = (
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {name: compat}\n"
        f"spec: {{bootstrapServers: '{cluster.bootstrap}', throttleBytesPerSecond: 10000000}}\n---\n"
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: BrokerDecommission\nmetadata: {name: retire-3}\n"
        "spec: {clusterRef: {name: compat}, brokers: [3], approval: Manual}\n"
    )
    kubectl("-n", ns, "apply", "-f", "-", input=manifest)
    # the intent's status and the KafkaCluster's are written apart: both waited for, on a loaded machine
    deadline = time.monotonic() + 120
    while True:
        status = get(kubectl, ns, "brokerdecommission", "retire-3").get("status") or {}
        kc = get(kubectl, ns, "kafkacluster", "compat").get("status") or {}
        listed = sorted(b["id"] for b in kc.get("brokers") or ())
        ready = status.get("phase") == "AwaitingApproval" and kc.get("phase") == "Connected" and listed
        if ready or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert status.get("phase") == "AwaitingApproval", (status, operator.tail())
    plan = status["plan"]
    assert plan["moves"] > 0 and plan["estimate"]["seconds"] > 0, plan
    assert listed == [1, 2, 3], kc
    assert kc.get("phase") == "Connected", kc
    assert "Traceback" not in operator.tail(400), operator.tail(60)
    assert smoke.reassignments(cluster) == 0  # nothing moved before approval
    kubectl("-n", ns, "delete", "brokerdecommission", "retire-3", "--wait=true", "--timeout=60s")
    kubectl("-n", ns, "delete", "kafkacluster", "compat", "--wait=true", "--timeout=60s")


ROLLS = 2  # rounds of restarting every broker in turn


def _whole_cluster_restart(rig: list[str], read: Any) -> list[str]:
    """Stop every node at once, then start them all at once (each start waits for a quorum: the others
    start beside it), reading the KafkaCluster throughout: the phases it went through."""
    import subprocess
    import threading

    phases: list[str] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            status = read().get("status") or {}
            if status.get("phase") and (not phases or phases[-1] != status["phase"]):
                phases.append(status["phase"])
            time.sleep(0.5)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        for verb, timeout in (("stop-node", 120), ("start-node", 240)):
            procs = [
                subprocess.Popen([sys.executable, rig[0], verb, *rig[1:], "--node", n], env=smoke.env())
                for n in ("1", "2", "3")
            ]
            assert all(p.wait(timeout=timeout) == 0 for p in procs), verb
            time.sleep(6)  # reconciles against the cluster stopped (then just started)
    finally:
        done.set()
        watcher.join(timeout=10)
    return phases


@OPT_IN
@pytest.mark.parametrize("version", ["4.0.2", "4.4.0"])
def test_the_operator_survives_rolling_restarts_of_every_broker(
    version: str,
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Each broker stopped and started in turn, twice, while the operator reconciles the cluster every
    2 s (DescribeCluster, DescribeLogDirs, DescribeConfigs to brokers stopping and starting: where
    librdkafka 2.16 once aborted a process, issue 55), then the whole cluster at once: the operator
    process is alive throughout, says the cluster is Unreachable while it is down and Connected with every
    broker once they are back, and its log has no traceback or assertion."""
    ns = k8s_namespace
    with seeded_cluster(version, tmp_path_factory) as cluster:
        manifest = (
            "apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {name: rolled}\n"
            f"spec: {{bootstrapServers: '{cluster.bootstrap}'}}\n"
        )
        kubectl("-n", ns, "apply", "-f", "-", input=manifest)

        def connected() -> bool:
            kc = get(kubectl, ns, "kafkacluster", "rolled").get("status") or {}
            listed = sorted(b["id"] for b in kc.get("brokers") or ())
            gone = kc.get("unreachableBrokers") or kc.get("deadBrokers")
            return kc.get("phase") == "Connected" and listed == [1, 2, 3] and not gone

        smoke.wait_for("the KafkaCluster connected", connected, 120)
        rig = [smoke.RIG, "--name", cluster.name, "--rig-dir", str(cluster.rig_dir)]
        for _ in range(ROLLS):
            for node in ("1", "2", "3"):
                smoke.run([sys.executable, rig[0], "stop-node", *rig[1:], "--node", node], timeout=120)
                time.sleep(4)  # reconciles against a cluster missing that broker
                smoke.run([sys.executable, rig[0], "start-node", *rig[1:], "--node", node], timeout=180)
                assert operator.proc is not None and operator.proc.poll() is None, operator.tail(80)
        smoke.wait_for("every broker back, none unreachable or dead", connected, 180)
        assert operator.proc is not None and operator.proc.poll() is None, operator.tail(80)
        # the whole cluster restarted at once (an outage, a full upgrade): while every broker is stopped or
        # fenced the cluster is Unreachable (kafka/gateway.py _describe_cluster: an answer listing no live
        # broker is no verdict), and the operator lives through it
        phases = _whole_cluster_restart(rig, lambda: get(kubectl, ns, "kafkacluster", "rolled"))
        assert "Unreachable" in phases, phases
        smoke.wait_for("every broker back after the whole cluster restarted", connected, 180)
        assert operator.proc is not None and operator.proc.poll() is None, operator.tail(80)
        log = operator.tail(100_000)
        assert "Traceback" not in log and "Assertion" not in log, log[-5000:]
        kubectl("-n", ns, "delete", "kafkacluster", "rolled", "--wait=true", "--timeout=60s")
