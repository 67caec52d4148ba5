"""The executor's rate hold against the real rig (execution/rate_watch.py): `kafka-placement execute
--hold-achieved-rate` on the shape of a heal (brokers 1 and 2 each receive from the other and send to it),
throttled: each side measured on real DescribeLogDirs, Kafka's rates never set below the throttle nor above
1.5 times it, every rate removed at the end. tests/unit/execution/test_rate_watch.py covers the decisions;
docs/benchmarks.md measures what it gains (and that the copy stays at or above the throttle's bound).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.integration.test_executor import (
    RATES,
    Wait,
    gateway,  # noqa: F401  (the module's fixture)
    produce,
    run_cli,
    throttle_configs,
    throttles_back,
    write_plan,
)

from kafka_placement.execution.record_doc import MAX_HOLD_FACTOR
from kafka_placement.kafka.gateway import KafkaGateway
from kafka_placement.kafka.throttles import DIR_RATE

if TYPE_CHECKING:
    from conftest import KafkaRig, TopicFactory

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(300)]

T = 1_000_000  # bytes/s
PARTITIONS = 8
PER_PARTITION = 15_000_000  # 4 partitions of 15 MB into each of brokers 1 and 2: a bound of 60 s


def test_the_achieved_rate_is_held_at_the_throttle_within_bounds_and_nothing_is_left(
    gateway: KafkaGateway,  # noqa: F811
    kafka_rig: KafkaRig,
    new_topic: TopicFactory,
    kafka_wait: Wait,
    tmp_path: Path,
) -> None:
    # partitions led by 1 or 2 with a follower on 3; the plan moves each follower to the other of 1, 2
    assignment = [[1, 3] if p % 2 == 0 else [2, 3] for p in range(PARTITIONS)]
    topic = new_topic(assignment, config={"min.insync.replicas": "1"})
    produce(kafka_rig, topic, PARTITIONS, PER_PARTITION // 100_000, 100_000)
    before = throttle_configs(gateway, topic)
    plan = write_plan(
        tmp_path / "plan.json",
        [(topic, p, [a[0], 3 - a[0]], ["any", "any"]) for p, a in enumerate(assignment)],
    )
    state = tmp_path / "state.json"
    seen: set[tuple[str, str]] = set()
    stop = threading.Event()

    def watch() -> None:  # the rates Kafka shows on brokers 1 and 2 while the execution runs
        while not stop.is_set():
            try:
                now = throttle_configs(gateway, topic)
            except Exception:  # a slow answer: the next sample is taken
                continue
            seen.update((k, v) for k, v in now.items() if k.split(":")[0] in ("1", "2") and v and "rate" in k)
            stop.wait(0.5)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        out = run_cli(
            "execute", "--bootstrap-server", kafka_rig.bootstrap_servers, "--plan", str(plan),
            "--throttle", str(T), "--hold-achieved-rate", "--state", str(state), "--wait",
            "--poll-seconds", "1",
            timeout=240,
        )  # fmt: skip
    finally:
        stop.set()
        watcher.join(30)
        if not state.exists() or json.loads(state.read_text())["phase"] != "Completed":
            run_cli("cancel", "--state", str(state), "--wait", "--poll-seconds", "0.3", timeout=60)
    assert out.returncode == 0, out.stderr + out.stdout
    record: dict[str, Any] = json.loads(state.read_text())
    assert record["phase"] == "Completed" and record["counters"]["resubmitted"] == 0
    assert record["limits"]["holdRate"] is True
    sides = {(s["broker"], s["config"]): s for s in record["rate"]["sides"]}
    # both brokers receive and send: four sides, each measured on the real brokers' log dir sizes
    assert {(1, RATES[1]), (2, RATES[1]), (1, RATES[0]), (2, RATES[0])} <= set(sides), sides
    measured = [s for s in sides.values() if s["rate"] is not None]
    assert measured, sides
    assert all(s["target"] == T and 1.0 <= s["factor"] <= MAX_HOLD_FACTOR for s in sides.values()), sides
    # Kafka's rates: never below the throttle, never above the cap; a raised factor reached Kafka
    rates = {int(v) for k, v in seen if not k.endswith(DIR_RATE)}
    assert rates and all(T <= r <= MAX_HOLD_FACTOR * T for r in rates), rates
    raised = {round(T * s["factor"]) for s in sides.values() if s["factor"] > 1.0}
    assert raised <= rates | {T}, (raised, rates)
    assert record["rate"]["changes"] >= len([s for s in sides.values() if s["factor"] > 1.0])
    after = gateway.snapshot()
    for p, a in enumerate(assignment):
        assert after.partition(topic, p).replicas == (a[0], 3 - a[0])  # type: ignore[union-attr]
    throttles_back(gateway, topic, before, kafka_wait)
