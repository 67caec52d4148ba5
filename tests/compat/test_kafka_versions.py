"""The compatibility smoke (tests/compat/smoke.py) as a test, one per Kafka version (and 3.9.2 in ZooKeeper
mode too): each brings a 3-node cluster of that release up, runs the CLI's move, cancel, cordon and
dead-broker checks on it and tears it down (about a minute each); and the operator's connect-and-plan on
each (the operator as a process against
the rig's kube-apiserver: a KafkaCluster connected with every broker listed, a Manual BrokerDecommission
planned, AwaitingApproval with its estimate, nothing moved; about 40 s each). Not part of `make test` (its
lanes run tests/integration and tests/e2e only) and skipped unless KP_COMPAT=1; the operator's tests need
the k8s rig (`scripts/rig.sh up k8s`):

    KP_COMPAT=1 .venv/bin/python -m pytest tests/compat -q -m compat
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

pytestmark = [
    pytest.mark.compat,
    pytest.mark.skipif(os.environ.get("KP_COMPAT") != "1", reason="the compatibility smoke: KP_COMPAT=1"),
]


# every release in KRaft, and those of ZOOKEEPER_VERSIONS in ZooKeeper mode too
RELEASES = [pytest.param(v, False, id=v) for v in smoke.VERSIONS] + [
    pytest.param(v, True, id=f"{v}-zookeeper") for v in smoke.ZOOKEEPER_VERSIONS
]


@pytest.mark.parametrize(("version", "zookeeper"), RELEASES)
def test_the_cli_works_on_kafka(
    version: str, zookeeper: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    result = smoke.smoke_version(version, args_of(tmp_path_factory), zookeeper)
    failed = {op: o.detail for op, o in result.outcomes.items() if o.status == "fail"}
    assert not failed, failed


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
def test_the_operator_connects_and_plans_on_kafka(
    version: str,
    zookeeper: bool,
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    ns = k8s_namespace
    with seeded_cluster(version, tmp_path_factory, zookeeper) as cluster:
        manifest = (
            "apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {name: compat}\n"
            f"spec: {{bootstrapServers: '{cluster.bootstrap}', throttleBytesPerSecond: 10000000}}\n---\n"
            "apiVersion: kafkaplacement.io/v1alpha1\nkind: BrokerDecommission\nmetadata: {name: retire-3}\n"
            "spec: {clusterRef: {name: compat}, brokers: [3], approval: Manual}\n"
        )
        kubectl("-n", ns, "apply", "-f", "-", input=manifest)
        deadline = time.monotonic() + 120
        while True:
            status = get(kubectl, ns, "brokerdecommission", "retire-3").get("status") or {}
            if status.get("phase") == "AwaitingApproval" or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert status.get("phase") == "AwaitingApproval", (status, operator.tail())
        plan = status["plan"]
        assert plan["moves"] > 0 and plan["estimate"]["seconds"] > 0, plan
        kc = get(kubectl, ns, "kafkacluster", "compat").get("status") or {}
        assert sorted(b["id"] for b in kc.get("brokers") or ()) == [1, 2, 3], kc
        assert kc.get("phase") == "Connected", kc
        assert "Traceback" not in operator.tail(400), operator.tail(60)
        assert smoke.reassignments(cluster) == 0  # nothing moved before approval
        kubectl("-n", ns, "delete", "brokerdecommission", "retire-3", "--wait=true", "--timeout=60s")
        kubectl("-n", ns, "delete", "kafkacluster", "compat", "--wait=true", "--timeout=60s")


ROLLS = 2  # rounds of restarting every broker in turn


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
    librdkafka 2.16 once aborted a process, issue 55): the operator process is alive throughout, says
    the cluster is Connected with every broker once they are back, and its log has no traceback or
    assertion."""
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
        log = operator.tail(100_000)
        assert "Traceback" not in log and "Assertion" not in log, log[-5000:]
        kubectl("-n", ns, "delete", "kafkacluster", "rolled", "--wait=true", "--timeout=60s")
