"""End to end: a log dir of a live broker fails (ENOSPC on its own filesystem) and self-healing heals it.

Broker 2's ``data-1`` is made a 64 MiB tmpfs (broker 2 stopped, the dir's contents copied onto the tmpfs,
broker 2 started again: the rig itself is not restarted). A topic (RF 2, min ISR 1) gets broker 2's
replicas in ``data-1`` (every other replica there is moved to ``data-0`` first, so the heal moves only the
test's partitions), an idempotent acks=all producer writes to it, and a file fills the tmpfs: the next
appends fail with ENOSPC and Kafka marks ``data-1`` offline, broker 2 staying alive and serving
``data-0``. The operator, with ``selfHealing.logDirFailure: {enabled: true, afterSeconds: 5}`` and
approval Automatic, creates a draining LogDirCordon of that dir and executes it: the failed dir's
replicas are re-created on the other brokers (a failed dir cannot be copied from, so not on broker 2's
good dir), every partition has its two replicas in sync again, and every acknowledged record is read back
exactly once. ``finally`` always restores the rig: the heal deleted, broker 2 stopped, the tmpfs' contents
copied back onto the disk, unmounted, broker 2 started, the rig up, no mount left.

Needs root (mount); skipped otherwise. Cost: about 80 s (two restarts of broker 2, ~15 s each; the
failure seen and healed within ~30 s).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.conftest import KafkaRig, Operator, get, wait_phase
from tests.e2e.test_operator import apply
from tests.integration.conftest import wait_for
from tests.integration.test_executor_broker_down import rig_node

from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import KafkaGateway
from kafka_placement.model.snapshot import ClusterSnapshot

pytestmark = [pytest.mark.kafka, pytest.mark.k8s, pytest.mark.timeout(600)]

RIG_CLI = Path(__file__).resolve().parents[1] / "rig" / "kafka_rig.py"
BROKER = 2
LABEL = "kafkaplacement.io/created-by=self-healing"
ASSIGNMENT = [[BROKER, 1], [BROKER, 3], [1, BROKER]]  # broker 2 leads two partitions, follows one
VALUE = b"x" * 20_000  # larger than a page: an append past a full tmpfs needs a new page, and fails


def must(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, f"{proc.args}: {proc.stderr}{proc.stdout}"


def mounted(path: Path) -> bool:
    return any(line.split()[1] == str(path) for line in Path("/proc/mounts").read_text().splitlines())


def until(
    what: str,
    check: Callable[[], Any],
    op: Operator | None = None,
    timeout: float = 90,
    why: Callable[[], str] = lambda: "",
) -> Any:
    """``wait_for`` every 0.5 s, the operator's log added to what a timeout says."""

    def told() -> str:
        return why() + (f"\noperator log:\n{op.tail(60)}" if op is not None else "")

    return wait_for(what, check, timeout=timeout, every=0.5, why=told)


def cluster(name: str, bootstrap: str) -> str:
    return (
        f"apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {{name: {name}}}\n"
        f"spec:\n  bootstrapServers: '{bootstrap}'\n  selfHealing:\n"
        "    logDirFailure: {enabled: true, afterSeconds: 5}\n    approval: Automatic\n"
    )


def heals(kubectl: Any, ns: str) -> list[dict[str, Any]]:
    out = kubectl("-n", ns, "get", "logdircordons", "-l", LABEL, "-o", "json")
    items: list[dict[str, Any]] = json.loads(out.stdout)["items"]
    return items


class Records:
    """An idempotent acks=all producer that remembers what Kafka acknowledged."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.acked: set[bytes] = set()
        self.failed: list[str] = []
        self.sent = 0
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 120_000,
            }
        )

    def _done(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked.add(msg.key())
        else:
            self.failed.append(str(err))

    def send(self, n: int, partitions: int, value: bytes = b"v") -> None:
        for _ in range(n):
            key = uuid.uuid4().hex.encode()
            self.producer.produce(
                self.topic, key=key, value=value, partition=self.sent % partitions, on_delivery=self._done
            )
            self.sent += 1
            self.producer.poll(0)

    def flush(self, timeout: float = 120) -> None:
        left = self.producer.flush(timeout)
        assert left == 0, f"{left} records neither acknowledged nor failed within {timeout} s"


def read_back(bootstrap: str, topic: str, partitions: int) -> list[bytes]:
    """Every record's key, from the start of each partition to its end."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"kp-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
        }
    )
    try:
        ends = {
            p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)
        }
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        keys: list[bytes] = []
        at = dict.fromkeys(range(partitions), 0)
        deadline = time.monotonic() + 60
        while any(at[p] < ends[p] for p in at) and time.monotonic() < deadline:
            msg = c.poll(1.0)
            if msg is None or msg.error() is not None:
                continue
            key, number, offset = msg.key(), msg.partition(), msg.offset()
            assert key is not None and number is not None and offset is not None
            keys.append(key)
            at[number] = offset + 1
        assert all(at[p] >= ends[p] for p in at), f"read to {at}, the ends are {ends}"
        return keys
    finally:
        c.close()


def snapshot(bootstrap: str) -> ClusterSnapshot:
    with KafkaGateway(ConnectionSettings(bootstrap_servers=bootstrap)) as gw:
        return gw.snapshot()


def dir_online(bootstrap: str, path: str) -> bool | None:
    snap = snapshot(bootstrap)
    broker = snap.broker(BROKER)
    if broker is None or not broker.alive:
        return None
    return next((d.online for d in broker.log_dirs if d.path == path), None)


def copy(src: Path, dst: Path, check: bool = True) -> bool | None:
    """The contents of ``src`` into the existing dir ``dst``, sparse files kept sparse (Kafka preallocates
    10 MiB index files), but for the logs of deleted topics (``*-delete``: Kafka removes them anyway; some
    tests leave large ones). On any error: fails the test, or with ``check=False`` returns None."""
    names = [e.name for e in src.iterdir() if not e.name.endswith("-delete")]
    proc = subprocess.run(
        ["cp", "-a", "--sparse=always", *names, f"{dst}/"],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=120,
    )
    ok = (
        proc.returncode == 0
        and (dst / "meta.properties").read_bytes() == (src / "meta.properties").read_bytes()
    )
    assert ok or not check, f"copying {src} to {dst}: {proc.stderr}"
    return True if ok else None


def settle(boot: str, topic: str | None, good: Path, bad: Path) -> None:
    """Broker 2's replicas of ``topic`` in ``bad`` and all its others in ``good`` (AlterReplicaLogDirs),
    waiting until they are there."""
    with KafkaGateway(ConnectionSettings(bootstrap_servers=boot)) as gw:

        def placed() -> bool:
            snap = gw.snapshot()
            moves = {}
            for p in snap.partitions:
                for b, d in zip(p.replicas, p.log_dirs, strict=True):
                    want = str(bad) if p.topic == topic else str(good)
                    if b == BROKER and d != want and (d is not None or p.topic == topic):
                        moves[(p.topic, p.partition, b)] = want
            if moves:
                gw.alter_replica_log_dirs(moves)
            return not moves

        until(f"broker {BROKER}'s replicas of {topic} alone in {bad.name}", placed, timeout=120)


def test_a_failed_log_dir_of_a_live_broker_is_drained_to_other_brokers(
    operator: Operator, kubectl: Any, k8s_namespace: str, kafka_rig: KafkaRig, new_topic: Any
) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs for the failing log dir needs root")
    ns, name, boot = k8s_namespace, "dirfailure", kafka_rig.bootstrap_servers
    good, bad = (Path(p) for p in kafka_rig.node(BROKER).log_dirs)
    aside = bad.with_name(bad.name + ".kp-aside")  # the dir's contents while the tmpfs is mounted
    back = bad.with_name(bad.name + ".kp-back")  # the tmpfs' contents on the way back to the disk
    filler = bad / "kp-filler"
    assert not mounted(bad) and not aside.exists() and not back.exists(), "left over from an earlier run"
    started = time.monotonic()
    down = tmpfs = served = False  # served: Kafka ran on the tmpfs, its contents are the newest
    try:
        # 1. broker 2's data-1 becomes its own small filesystem, with the same contents: its replicas go
        # to data-0 first (a small copy; Kafka's sparse 10 MiB indexes would fill the tmpfs)
        settle(boot, topic=None, good=good, bad=bad)
        must(rig_node("stop-node", kafka_rig, BROKER))
        down = True
        aside.mkdir()
        for entry in bad.iterdir():
            entry.rename(aside / entry.name)
        mount = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(bad)], capture_output=True, text=True
        )
        if mount.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs on {bad}: {mount.stderr.strip()}")
        tmpfs = True
        copy(aside, bad)
        must(rig_node("start-node", kafka_rig, BROKER))
        down = False
        served = True
        print(f"log dir failure e2e: {bad.name} on tmpfs, broker up at {time.monotonic() - started:.0f} s")

        # 2. a topic with broker 2's replicas in data-1, nothing else there; records written
        topic = new_topic(ASSIGNMENT, config={"min.insync.replicas": "1"})
        settle(boot, topic=topic, good=good, bad=bad)
        records = Records(boot, topic)
        records.send(300, len(ASSIGNMENT))
        records.flush()
        assert len(records.acked) == 300 and not records.failed, records.failed[:3]

        # 3. the filesystem fills up: the next appends fail and Kafka marks the dir offline
        with filler.open("wb") as f:
            chunk = b"\0" * (1 << 20)
            try:
                while True:
                    f.write(chunk)
                    f.flush()
            except OSError:
                pass
        records.send(60, len(ASSIGNMENT), VALUE)
        until(
            f"{bad} offline on live broker {BROKER}", lambda: dir_online(boot, str(bad)) is False, timeout=60
        )
        assert dir_online(boot, str(good)) is True
        records.flush()
        records.send(100, len(ASSIGNMENT))  # the cluster still takes writes: broker 2's good dir, the others
        records.flush()
        failed_at = time.monotonic()
        print(f"log dir failure e2e: {bad} offline after {failed_at - started:.0f} s")

        # 4. the operator heals it, with no user action
        apply(kubectl, ns, cluster(name, boot))
        (heal,) = until("a self-healing LogDirCordon", lambda: heals(kubectl, ns), operator, timeout=90)
        spec = heal["spec"]
        assert (spec["broker"], spec["logDirs"], spec["drain"]) == (BROKER, [str(bad)], True)
        assert spec["approval"] == "Automatic" and spec["clusterRef"] == {"name": name}
        heal_name = heal["metadata"]["name"]

        def healed() -> bool:
            snap = snapshot(boot)
            mine = [p for p in snap.partitions if p.topic == topic]
            return len(mine) == len(ASSIGNMENT) and all(
                len(p.replicas) == 2
                and set(p.isr) == set(p.replicas)
                and BROKER not in p.replicas
                and None not in p.log_dirs
                for p in mine
            )

        until(
            "every partition of the topic with 2 in-sync replicas off the failed dir", healed, operator, 180
        )
        print(f"log dir failure e2e: healed {time.monotonic() - failed_at:.0f} s after the failure")
        # the executor's completion check finds every moved partition at its target
        wait_phase(kubectl, operator, ns, "logdircordon", heal_name, ("Completed",), timeout=60)

        def offline() -> list[tuple[Any, ...]]:  # the cluster's status, written after its intents' ones
            status = get(kubectl, ns, "kafkacluster", name).get("status") or {}
            return [(e["broker"], e["path"], e.get("heal")) for e in status.get("offlineLogDirs") or []]

        until(
            "the failed dir and its heal in status.offlineLogDirs",
            lambda: offline() == [(BROKER, str(bad), heal_name)],
            operator,
            30,
            why=lambda: str(offline()),
        )
        assert dir_online(boot, str(good)) is True  # broker 2 still serves its good dir

        # 5. nothing acknowledged was lost, nothing doubled
        keys = read_back(boot, topic, len(ASSIGNMENT))
        missing = records.acked - set(keys)
        doubled = len(keys) - len(set(keys))
        assert not missing and not doubled, f"{len(missing)} acknowledged records lost, {doubled} read twice"
        print(
            f"log dir failure e2e: {len(records.acked)} records read back, {time.monotonic() - started:.0f} s"
        )
    finally:
        kubectl("-n", ns, "delete", "logdircordons", "-l", LABEL, "--timeout=60s", check=False)
        kubectl("-n", ns, "delete", "kafkacluster", name, "--timeout=60s", check=False)
        if not down:
            stopped = rig_node("stop-node", kafka_rig, BROKER)
            down = stopped.returncode == 0 or "already stopped" in stopped.stderr
        copied = None
        if down and tmpfs:
            filler.unlink(missing_ok=True)
            if served:
                back.mkdir()
                copied = copy(bad, back, check=False)
            subprocess.run(["umount", str(bad)], check=True, timeout=60)
        if down and copied is None and aside.exists():  # the contents from before (Kafka catches up)
            shutil.rmtree(back, ignore_errors=True)
            for entry in aside.iterdir():
                entry.rename(bad / entry.name)
            aside.rmdir()
        elif down and copied is not None:
            for entry in back.iterdir():
                entry.rename(bad / entry.name)
            back.rmdir()
            shutil.rmtree(aside)
        restarted = rig_node("start-node", kafka_rig, BROKER)
        assert restarted.returncode == 0 or "already running" in restarted.stderr, restarted.stderr
        status = subprocess.run(
            [sys.executable, str(RIG_CLI), "status", "--name", kafka_rig.name], capture_output=True, text=True
        )
        assert status.returncode == 0 and ": up " in status.stdout, status.stdout + status.stderr
        assert not mounted(bad), f"{bad} is still mounted"
        assert copied or not served, (
            f"the tmpfs' contents could not be copied back: {bad} has those from before"
        )
