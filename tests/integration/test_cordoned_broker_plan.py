"""A broker whose every log dir is cordoned, on the real cluster: Kafka 4.4 (KAFKA-20832) refuses any
reassignment whose target names it, even one that keeps its replica; the planner moves a changed
partition's replica off such a broker (planning/state.py ``Eligibility.pins``), so the plan executes.

The cluster's refusal is shown first (a reassignment of a partition of brokers 1 and 3 to its own
replicas, refused once the controller knows the cordon), then `snapshot` -> `plan` -> `execute --wait`
through the CLI, as a user runs them: a policy that lowers the replication factor to 1 would keep broker
3's replica of [3, 1] (its leader; the old planner's target [3], refused) and keeps broker 1's instead.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import ConfigTarget, KafkaGateway

if TYPE_CHECKING:
    from conftest import KafkaRig, TopicFactory

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(240)]
CLI = str(Path(sys.executable).parent / "kafka-placement")
REFUSED = "INVALID_REPLICATION_ASSIGNMENT"  # (kafka-python drops the message: "... all its log
# directories are cordoned.")


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("-")[0].split(".")[:3])


def test_a_plan_moves_a_replica_off_a_wholly_cordoned_broker_and_kafka_takes_it(
    kafka_rig: KafkaRig, new_topic: TopicFactory, tmp_path: Path, kafka_wait: Callable[..., Any]
) -> None:
    if _release(kafka_rig.version) < (4, 4):
        pytest.skip(f"Kafka {kafka_rig.version} accepts such a reassignment (KAFKA-20832 is in 4.4)")
    topic = new_topic([[3, 1], [2, 3], [3, 2]])
    probe = new_topic([[1, 3]])
    dirs = list(kafka_rig.node(3).log_dirs)
    with KafkaGateway(ConnectionSettings(kafka_rig.bootstrap_servers)) as gw:
        gw.set_cordon(3, dirs, True)
        try:

            def refused() -> bool:  # its current replicas: nothing moves while the controller takes it
                errors = gw.alter_reassignments({(probe, 0): [1, 3]})
                return (probe, 0) in errors and errors[(probe, 0)].code == REFUSED

            kafka_wait("the controller refusing a reorder naming broker 3", refused, timeout=60)

            snap, plan = tmp_path / "snapshot.json", tmp_path / "plan.json"
            intents = tmp_path / "intents.yaml"
            intents.write_text(
                "kind: LogDirCordon\nspec: {broker: 3, logDirs: ['*'], drain: false}\n---\n"
                f"kind: PlacementPolicy\nspec: {{topics: {{include: [{topic}]}}, replicationFactor: 1}}\n"
            )
            bootstrap = ["--bootstrap-server", kafka_rig.bootstrap_servers]
            subprocess.run([CLI, "snapshot", *bootstrap, "-o", str(snap)], check=True, timeout=120)
            subprocess.run(
                [CLI, "plan", "--snapshot", str(snap), "--intents", str(intents), "-o", str(plan)],
                check=True,
                timeout=120,
            )
            targets = {
                p["partition"]: p["replicas"]
                for p in json.loads(plan.read_text())["partitions"]
                if p["topic"] == topic
            }
            assert targets == {0: [1], 1: [2], 2: [2]}, targets  # broker 3 kept nowhere
            state = ["--state", str(tmp_path / "state.json"), "--wait", "--poll-seconds", "1"]
            run = subprocess.run(
                [CLI, "execute", *bootstrap, "--plan", str(plan), *state],
                capture_output=True,
                text=True,
                timeout=180,
            )
            assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
            live = {k[1]: list(p.replicas) for k, p in gw.describe_partitions([topic]).items()}
            assert live == targets
            assert not gw.list_reassignments([(topic, n) for n in targets])
            rates = gw.describe_configs([ConfigTarget.broker(b) for b in (1, 2, 3)])
            assert not [
                (t, n)
                for t, cfg in rates.items()
                for n, v in cfg.items()
                if "throttled.rate" in n and v.is_dynamic
            ]
        finally:
            gw.set_cordon(3, dirs, False)
