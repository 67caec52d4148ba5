"""End to end: disk pressure is healed like a failure, on a dir that really fills (its own filesystem).

The rig's ``disk`` cluster (two nodes x two dirs, node 2's second dir a 64 MiB tmpfs: test_disk_watch.py's
fixture) and one operator. The other dirs sit on the machine's own filesystem, whatever its usage: the
pressure threshold (``aboveShare``) is set a few points above that usage (the test is skipped on a
machine whose disk is more than 85% full), and ``capacity.maxDiskShare`` to 0.98 so that the host disk
may receive. Four partitions of one topic are placed in the small dir and filled until it is 4 points
above the threshold; the KafkaCluster declares ``selfHealing.diskPressure`` (``afterSeconds: 5``, approval
Automatic). The dir is listed in ``status.pressuredLogDirs``, alone; a heal is created (a LogDirCordon of
the dir with ``relieveBelowShare`` five points under the threshold, labelled ``created-by:
self-healing``); its plan moves the fewest bytes to broker 2's other dir (a local copy: no replica leaves
broker 2) and completes; once Kafka has deleted the moved replicas' old files (``file.delete.delay.ms``,
60 s) the dir is under the heal's share, the heal is retired (deleted: the dir is
not cordoned any more) and the entry goes; every acknowledged record reads back exactly once.

Cost: about two minutes (two JVMs start and stop, about 50 MiB written and read back, a
minute of Kafka's delayed file deletion).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.conftest import Operator, get
from tests.e2e.test_operator import apply
from tests.e2e.test_operator_self_healing import heals, until
from tests.integration.conftest import create_topics_everywhere, read_to_end
from tests.integration.test_disk_watch import RECORD_BYTES, SEGMENT, cli, disk, used

pytestmark = [pytest.mark.kafka, pytest.mark.k8s, pytest.mark.timeout(360)]

__all__ = ["disk"]  # the rig's disk cluster, up for this module (a fixture of test_disk_watch.py)

NAME, TOPIC = "disk", "pressed"
PARTITIONS = 4


def test_a_dir_above_its_share_is_relieved_by_a_heal_that_is_retired_once_under(
    operator: Operator, kubectl: Any, k8s_namespace: str, disk: dict[str, Any], tmp_path: Path
) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    from kafka_placement.kafka.connection import ConnectionSettings
    from kafka_placement.kafka.gateway import CORDON_CONFIG, ConfigTarget, KafkaGateway

    ns = k8s_namespace
    servers, small = str(disk["bootstrapServers"]), str(disk["smallDir"]["path"])
    admin = AdminClient({"bootstrap.servers": servers})
    create_topics_everywhere(
        admin, [NewTopic(TOPIC, PARTITIONS, replica_assignment=[[2]] * PARTITIONS, config=SEGMENT)], servers
    )
    placed = tmp_path / "place.json"  # every partition into the small dir while it is empty
    targets = [
        {"topic": TOPIC, "partition": p, "replicas": [2], "log_dirs": [small]} for p in range(PARTITIONS)
    ]
    placed.write_text(json.dumps({"version": 1, "partitions": targets}))
    cli("execute", "--bootstrap-server", servers, "--plan", str(placed), "--state", str(tmp_path / "p.json"),
        "--wait", "--poll-seconds", "0.5")  # fmt: skip
    host_dir = next(d for d in disk["nodes"][1]["logDirs"] if d != small)
    host, host_total = used(host_dir)
    above = max(0.6, round(host / host_total + 0.03, 2))  # the host disk is not under pressure itself
    if above > 0.88:
        pytest.skip(f"the machine's disk is {host / host_total:.0%} full: no threshold fits beside it")
    relief = round(above - 0.05, 4)
    producer = Producer({"bootstrap.servers": servers, "acks": "all", "linger.ms": 20})
    acked: set[int] = set()

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            acked.add(int.from_bytes(msg.value()[:8], "big"))

    sent, deadline = 0, time.monotonic() + 120
    while used(small)[0] < (above + 0.04) * used(small)[1]:
        assert time.monotonic() < deadline, "the small dir did not fill within 120 s"
        for _ in range(1024):  # 1 MiB per round, over the four partitions
            value = sent.to_bytes(8, "big") + b"p" * (RECORD_BYTES - 8)
            producer.produce(TOPIC, value, partition=sent % PARTITIONS, on_delivery=delivered)
            sent += 1
        assert producer.flush(60) == 0
    assert len(acked) == sent
    full, total = used(small)
    assert full < 0.95 * total, f"the small dir is {full / total:.0%} full"

    apply(
        kubectl,
        ns,
        f"apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {{name: {NAME}}}\n"
        f"spec:\n  bootstrapServers: '{servers}'\n  capacity: {{maxDiskShare: 0.98}}\n  selfHealing:\n"
        f"    diskPressure: {{enabled: true, aboveShare: {above}, afterSeconds: 5}}\n"
        "    approval: Automatic\n",
    )

    def entries() -> list[dict[str, Any]]:
        return list(
            (get(kubectl, ns, "kafkacluster", NAME).get("status") or {}).get("pressuredLogDirs") or []
        )

    (entry,) = until("the small dir listed under pressure", entries, operator, timeout=120)
    assert (entry["broker"], entry["path"]) == (2, small) and entry["usedPercent"] >= 100 * above, entry

    def heal() -> list[dict[str, Any]]:
        out = kubectl("-n", ns, "get", "logdircordons", "-l", "kafkaplacement.io/created-by=self-healing",
                      "-o", "json")  # fmt: skip
        return list(json.loads(out.stdout)["items"])

    (made,) = until("a disk-pressure heal", heal, operator, timeout=60)
    name = made["metadata"]["name"]
    assert made["spec"]["broker"] == 2 and made["spec"]["logDirs"] == [small], made["spec"]
    assert made["spec"]["relieveBelowShare"] == relief and not made["spec"].get("drain"), made["spec"]

    def phase() -> str | None:
        got = get(kubectl, ns, "logdircordon", name)
        return (got.get("status") or {}).get("phase") if got else "Deleted"

    seen: set[str | None] = set()

    def relieved() -> bool:
        seen.add(phase())
        return "Completed" in seen or "Deleted" in seen

    until("the heal Completed", relieved, operator, timeout=180)
    assert "Failed" not in seen, seen
    # Kafka deletes a moved replica's old log file.delete.delay.ms (60 s) after the move: room returns then
    until(
        f"the small dir under {relief:.0%}",
        lambda: used(small)[0] < relief * used(small)[1],
        operator,
        timeout=120,
    )
    until("the heal retired (deleted)", lambda: not heal(), operator, timeout=60)
    until("the pressure entry gone", lambda: not entries(), operator, timeout=60)
    assert heals(kubectl, ns) == []  # no BrokerDecommission either

    with KafkaGateway(ConnectionSettings(servers)) as gw:
        target = ConfigTarget.broker(2)
        deadline = time.monotonic() + 30
        while (cordon := gw.describe_configs([target])[target].get(CORDON_CONFIG)) and cordon.value:
            assert time.monotonic() < deadline, f"broker 2 still cordons {cordon.value}"
            time.sleep(1)
        parts = [p for p in gw.snapshot().partitions if p.topic == TOPIC]
    assert all(p.replicas == (2,) for p in parts), parts  # moved between broker 2's dirs only
    assert any(d != small for p in parts for d in p.log_dirs), parts
    values = [v for rs in read_to_end(servers, TOPIC, PARTITIONS).values() for _, _, v in rs]
    numbers = [int.from_bytes(v[:8], "big") for v in values if v]
    assert len(numbers) == len(set(numbers)), "a record was read twice"
    assert acked <= set(numbers), f"{len(acked - set(numbers))} acknowledged records lost"
    assert os.path.ismount(small)
