#!/usr/bin/env python3
"""Compatibility smoke: the CLI against a real 3-node cluster of each Kafka release users run.

    python tests/compat/smoke.py                        # every version of VERSIONS, one after the other
    python tests/compat/smoke.py --versions 3.7.2 4.4.0 --json results.json --markdown table.md
    python tests/compat/smoke.py --versions --zookeeper-versions 3.9.2   # only 3.9.2 in ZooKeeper mode

For each version: fetch its jars (tests/rig/kafka/fetch.sh), bring up a cluster like the main one (3
combined broker+controller nodes, 2 log dirs each, racks; tests/rig/kafka_rig.py, a static quorum before
3.9; and each release of ZOOKEEPER_VERSIONS in ZooKeeper mode: a ZooKeeper server and 3 brokers with the
same dirs and racks, `kafka_rig.py up --zookeeper`), create a topic with data in both dirs of the brokers,
then run with the `kafka-placement` CLI:

    move    snapshot; plan a BrokerDecommission of broker 3 plus a draining LogDirCordon of a dir of
            broker 1 that holds replicas (a move between its dirs); execute --wait with a throttle;
            snapshot: nothing left on broker 3 nor on the dir, no throttle config left; verify. On 3.7
            and 3.8, whose brokers can lose the swap of a dir move's copy (docs/compatibility.md), an
            execution that names such a copy is cancelled and leaves no throttle (a pass that says so)
    cancel  execute one tick of a throttled plan (decommission broker 2), cancel --wait: the moves are
            reverted, no reassignment and no throttle config left
    cordon  native: the gateway cordons a dir (KIP-1066, cordoned.log.dirs; metadata.version 4.3-IV0+),
            the snapshot shows it and a new topic gets no replica there; older: the gateway's message.
            reactive: an empty replica on a cordoned dir is moved off (plan --reactive-cordon), any version
    dead    stop node 2, snapshot: broker 2 is reported not alive

then tear the cluster down. Each operation is pass / fail / n/a with the reason; a Python traceback in
any CLI output is a failure. The cluster uses its own state dir (--rig-dir, default
/tmp/kp-compat-rig) and ports (--base-port 19092, --controller-base-port 19192: outside the other rigs'
20000-33000 and below Linux's ephemeral range; in ZooKeeper mode the ZooKeeper server listens on the
controller base port), and is always torn down. Exit 0 iff nothing failed.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # run as a script: make `tests.rig` importable
    sys.path.insert(0, str(REPO_ROOT))

# the newest patch of each minor release Maven Central served on 2026-12-03
VERSIONS = ("3.7.2", "3.8.1", "3.9.2", "4.0.2", "4.1.2", "4.2.2", "4.3.2", "4.4.0")
# ... and in ZooKeeper mode (gone from 4.0 on: KIP-833): the last release that has it
ZOOKEEPER_VERSIONS = ("3.9.2",)
OPERATIONS = ("move", "cancel", "cordon", "dead")
CLI = str(Path(sys.executable).parent / "kafka-placement")
RIG = str(REPO_ROOT / "tests" / "rig" / "kafka_rig.py")
FETCH = str(REPO_ROOT / "tests" / "rig" / "kafka" / "fetch.sh")
THROTTLE_CONFIGS = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
)
TOPIC_THROTTLES = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
CORDON_METADATA_LEVEL = 30  # 4.3-IV0 (kafka_placement.kafka.types.CORDON_METADATA_LEVEL)


class Failed(Exception):
    """The operation failed: the message says how."""


class NotApplicable(Exception):
    """The version lacks what the operation needs: the message says what (and what Kafka/the CLI said)."""


@dataclass
class Outcome:
    status: str  # pass | fail | n/a
    detail: str
    seconds: float


@dataclass
class VersionResult:
    version: str
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    zookeeper: bool = False  # the release in ZooKeeper mode, not KRaft

    @property
    def label(self) -> str:
        """The row's name: ``3.9.2``, or ``3.9.2 (ZooKeeper)``."""
        return f"{self.version} (ZooKeeper)" if self.zookeeper else self.version

    @property
    def quorum(self) -> str:
        if self.zookeeper:
            return "ZooKeeper"
        return "static" if tuple(int(x) for x in self.version.split(".")[:2]) < (3, 9) else "dynamic"


# ---------------------------------------------------------------------------------------- running


def env() -> dict[str, str]:
    """The environment of every subprocess: the checkout's own operator code on PYTHONPATH."""
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT / "operator"), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    return out


def run(
    cmd: Sequence[str],
    timeout: float = 300,
    check: bool = True,
    stop_when: Callable[[], bool] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a command; a traceback in its output is a failure, and so is a non-zero exit when ``check``.
    ``stop_when`` (asked every second): once true, the command is interrupted (SIGINT, as Ctrl-C) and
    that is a failure, as its running out of ``timeout`` is."""
    with subprocess.Popen(
        list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env()
    ) as child:
        deadline = time.monotonic() + timeout
        why = ""
        while True:
            try:
                out, err = child.communicate(timeout=min(1.0, max(deadline - time.monotonic(), 0.01)))
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    why = f"did not end within {timeout:.0f}s"
                elif stop_when is not None and stop_when():
                    why = "was stopped: what it waits on will not come"
                else:
                    continue
            child.send_signal(signal.SIGINT)  # what it printed until then says where it stood
            try:
                out, err = child.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
                out, err = child.communicate()
            raise Failed(f"`{short(cmd)}` {why}: {tail(out + err, 12)}")
    proc = subprocess.CompletedProcess(list(cmd), child.returncode, out, err)
    out = proc.stdout + proc.stderr
    if "Traceback (most recent call last)" in out:
        raise Failed(f"`{short(cmd)}` printed a Python traceback:\n{tail(out, 30)}")
    if check and proc.returncode != 0:
        raise Failed(f"`{short(cmd)}` exited {proc.returncode}: {tail(out, 6)}")
    return proc


def short(cmd: Sequence[str]) -> str:
    words = [Path(w).name if w in (CLI, RIG, FETCH, sys.executable) else w for w in cmd]
    return " ".join(words)[:200]


def tail(text: str, lines: int) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def cli(*args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run([CLI, *args], timeout=timeout, check=check)


def wait_for(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise Failed(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.5)


# ---------------------------------------------------------------------------------------- the cluster


@dataclass
class Cluster:
    name: str
    rig_dir: Path
    work: Path
    bootstrap: str = ""
    entry: dict[str, Any] = field(default_factory=dict)
    version: str = ""

    @property
    def lost_swaps(self) -> bool:
        """Its brokers can lose the swap of a dir move's copy (Kafka 3.7 and 3.8)."""
        from tests.rig.kafka_rig import version_key

        return version_key(self.version) < (3, 9)

    def log_dirs(self, broker: int) -> list[str]:
        node = next(n for n in self.entry["nodes"] if int(n["id"]) == broker)
        return [str(d) for d in node["logDirs"]]

    def admin(self) -> Any:
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})

    def snapshot(self, name: str) -> dict[str, Any]:
        path = self.work / f"{name}.json"
        cli("snapshot", "--bootstrap-server", self.bootstrap, "-o", str(path), timeout=120)
        data: dict[str, Any] = json.loads(path.read_text())
        return data


def replicas_on(snap: dict[str, Any], broker: int, log_dir: str | None = None, topic: str = "") -> list[str]:
    """'topic-partition' of every replica on ``broker`` (in ``log_dir``; of ``topic``)."""
    out = []
    for p in snap["partitions"]:
        if topic and p["topic"] != topic:
            continue
        for b, d in zip(p["replicas"], p.get("logDirs") or [None] * len(p["replicas"]), strict=True):
            if b == broker and (log_dir is None or d == log_dir):
                out.append(f"{p['topic']}-{p['partition']}")
    return out


def create_topic(
    cluster: Cluster, topic: str, partitions: int, assignment: list[list[int]] | None = None
) -> None:
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    new = (
        NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment)
        if assignment
        else NewTopic(topic, num_partitions=partitions, replication_factor=2)
    )
    admin = cluster.admin()  # held until the answer: a client dropped early never answers its futures
    for future in admin.create_topics([new], request_timeout=30).values():
        future.result(timeout=60)

    def everywhere() -> bool:
        snap = cluster.snapshot(f"wait-{topic}")
        found = [p for p in snap["partitions"] if p["topic"] == topic]
        return len(found) == partitions and all(None not in (p.get("logDirs") or [None]) for p in found)

    wait_for(f"topic {topic} on every replica", everywhere)


def produce(cluster: Cluster, topic: str, partitions: int, per_partition_bytes: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 20, "acks": "all"})
    value = os.urandom(10_000)
    for partition in range(partitions):
        for _ in range(per_partition_bytes // len(value)):
            while True:
                try:
                    producer.produce(topic, value=value, partition=partition)
                    break
                except BufferError:
                    producer.poll(0.2)
            producer.poll(0)
    if producer.flush(60) != 0:
        raise Failed(f"producing to {topic}: messages left unsent after 60s")


def throttles_left(cluster: Cluster, topics: Sequence[str]) -> list[str]:
    """Throttle configs set on a broker or a topic (none should outlive an execution)."""
    from confluent_kafka.admin import ConfigResource  # type: ignore[attr-defined]

    admin = cluster.admin()
    resources = [ConfigResource("broker", str(n["id"])) for n in cluster.entry["nodes"]]
    resources += [ConfigResource("topic", t) for t in topics]
    left = []
    for res in resources:  # one per call: a DescribeConfigs names at most one broker
        try:
            configs = admin.describe_configs([res], request_timeout=20)[res].result(timeout=30)
        except Exception as e:  # a stopped broker: its configs cannot be read
            left.append(f"{res.name}: not readable ({e})")
            continue
        for name in (*THROTTLE_CONFIGS, *TOPIC_THROTTLES):
            entry = configs.get(name)
            if entry is not None and entry.value and not entry.is_default:
                left.append(f"{res.name} {name}={entry.value}")
    return left


def no_throttle_left(cluster: Cluster, after: str, timeout: float = 60.0) -> None:
    """Every broker shows no throttle config (``throttles_left``) within ``timeout`` seconds of ``after``
    (an execute or a cancel that saw them removed): a topic's configs are read through any broker, which
    answers from its own copy of the metadata, and a broker behind on it (a loaded machine, a dir thread
    that failed) shows a removed throttle a while longer (one run read it just after the execute)."""
    left: list[str] = []

    def gone() -> bool:
        left[:] = throttles_left(cluster, [DATA_TOPIC])
        return not left

    try:
        wait_for(f"no throttle config left after {after}", gone, timeout=timeout)
    except Failed:
        raise Failed(f"throttle configs left {timeout:.0f} s after {after}: {left}") from None


def reassignments(cluster: Cluster) -> int:
    """Partitions Kafka is reassigning (ListPartitionReassignments, kafka-python)."""
    from kafka import KafkaAdminClient

    admin: Any = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=15000)
    try:
        return len(admin.list_partition_reassignments())
    finally:
        admin.close()


def metadata_level(cluster: Cluster) -> str:
    """The finalized metadata.version level, or ``none (ZooKeeper mode)``."""
    from kafka_placement.kafka.connection import ConnectionSettings
    from kafka_placement.kafka.gateway import KafkaGateway

    with KafkaGateway(ConnectionSettings(bootstrap_servers=cluster.bootstrap)) as gw:
        level = gw.metadata_level()
    return "none (ZooKeeper mode)" if level is None else str(level)


# ---------------------------------------------------------------------------------------- operations

DATA_TOPIC = "compat-data"
DATA_PARTITIONS = 8


def op_move(cluster: Cluster) -> str:
    s0 = cluster.snapshot("move-before")
    spread = {b: {d for d in cluster.log_dirs(b) if replicas_on(s0, b, d)} for b in (1, 2, 3)}
    if not any(len(ds) == 2 for ds in spread.values()):
        raise Failed(f"the data is not spread over both dirs of any broker: {spread}")
    counts = {d: len(replicas_on(s0, 1, d, DATA_TOPIC)) for d in cluster.log_dirs(1)}
    cordoned = max(counts, key=lambda d: counts[d])
    if not counts[cordoned]:
        raise Failed("broker 1 holds no replica of the data topic")
    intents = cluster.work / "move.yaml"
    intents.write_text(
        "kind: BrokerDecommission\nspec: {brokers: [3]}\n---\n"
        f"kind: LogDirCordon\nspec: {{broker: 1, logDirs: ['{cordoned}'], drain: true}}\n"
    )
    plan, summary = cluster.work / "move-plan.json", cluster.work / "move-summary.json"
    cli("plan", "--snapshot", str(cluster.work / "move-before.json"), "--intents", str(intents),
        "-o", str(plan), "--summary", str(summary))  # fmt: skip
    moves = json.loads(plan.read_text())["partitions"]
    started = time.monotonic()
    state = cluster.work / "move-state.json"
    execute = [CLI, "execute", "--bootstrap-server", cluster.bootstrap, "--plan", str(plan), "--throttle",
               "50000000", "--state", str(state), "--wait", "--poll-seconds", "0.5"]  # fmt: skip
    try:
        # on 3.7 and 3.8 the execution waits on a lost swap until cancelled: stopped (SIGINT, its record
        # saved) once its record names one, not left to run out its time (up to 4 minutes of the lane)
        run(execute, timeout=LOST_SWAP_S if cluster.lost_swaps else 600,
            stop_when=(lambda: _names_lost_swap(state)) if cluster.lost_swaps else None)  # fmt: skip
    except Failed:
        said = lost_swap(cluster, state)
        if said is None:
            raise
        return said
    took = time.monotonic() - started
    s1 = cluster.snapshot("move-after")
    left3, left_dir = replicas_on(s1, 3), replicas_on(s1, 1, cordoned)
    if left3 or left_dir:
        raise Failed(f"left after execute: on broker 3 {left3}, on broker 1's {cordoned} {left_dir}")
    no_throttle_left(cluster, "the execute")
    cli("verify", "--bootstrap-server", cluster.bootstrap, "--plan", str(plan))
    return (
        f"{len(moves)} partitions moved in {took:.0f}s ({counts[cordoned]} replicas off "
        f"{Path(cordoned).name} of broker 1); broker 3 and the dir empty, no throttle left, verify 0"
    )


LOST_SWAP_S = 240  # on 3.7 and 3.8: the executor names a copy not swapped in after 60 s (promotion.py)
LOST_SWAP = "not swapped in by Kafka"


def _names_lost_swap(state: Path) -> bool:
    """Whether the execution's record (the CLI's state file) names a copy Kafka has not swapped in."""
    try:
        return LOST_SWAP in (json.loads(state.read_text()).get("lastError") or "")
    except (OSError, ValueError):  # (not written yet, or read mid-write)
        return False


def lost_swap(cluster: Cluster, state: Path) -> str | None:
    """On Kafka 3.7 and 3.8, whose brokers can lose the swap of a dir move's copy (docs/compatibility.md,
    Kafka's defect): when the execution names such a copy in its last error, the execution is cancelled
    and no throttle may be left; what was met is the outcome's detail. None: not that."""
    if not cluster.lost_swaps or not state.is_file():
        return None
    said = json.loads(state.read_text()).get("lastError") or ""
    if LOST_SWAP not in said:
        return None
    cli("cancel", "--state", str(state), "--wait", "--poll-seconds", "0.5", timeout=120)
    no_throttle_left(cluster, "the cancel of a lost swap")
    return f"Kafka's defect met and named by the executor ({said[:200]}); cancelled, no throttle left"


def op_cancel(cluster: Cluster) -> str:
    s0 = cluster.snapshot("cancel-before")
    before = {(p["topic"], p["partition"]): p["replicas"] for p in s0["partitions"]}
    intents = cluster.work / "cancel.yaml"
    intents.write_text("kind: BrokerDecommission\nspec: {brokers: [2]}\n")
    plan = cluster.work / "cancel-plan.json"
    cli("plan", "--snapshot", str(cluster.work / "cancel-before.json"), "--intents", str(intents),
        "-o", str(plan))  # fmt: skip
    state = cluster.work / "cancel-state.json"
    for _ in range(5):  # ticks until Kafka reassigns (1 KB/s: nothing finishes before the cancel)
        cli("execute", "--bootstrap-server", cluster.bootstrap, "--plan", str(plan), "--throttle", "1000",
            "--state", str(state), timeout=120)  # fmt: skip
        if reassignments(cluster):
            break
        time.sleep(1)
    in_flight = reassignments(cluster)
    if not in_flight:
        raise Failed("no reassignment in flight after 5 ticks of execute")
    throttled = throttles_left(cluster, [DATA_TOPIC])
    if not throttled:
        raise Failed("a throttled execution set no throttle config")
    cli("cancel", "--bootstrap-server", cluster.bootstrap, "--state", str(state), "--wait",
        "--poll-seconds", "0.5", timeout=300)  # fmt: skip
    status = cli("status", "--state", str(state), "--bootstrap-server", cluster.bootstrap, check=False)
    wait_for("no reassignment left", lambda: reassignments(cluster) == 0, 30)
    s1 = cluster.snapshot("cancel-after")
    after = {(p["topic"], p["partition"]): p["replicas"] for p in s1["partitions"]}
    changed = [f"{t}-{p}" for (t, p), r in before.items() if sorted(after.get((t, p), [])) != sorted(r)]
    if changed:
        raise Failed(f"not reverted by the cancel: {changed}")
    no_throttle_left(cluster, "the cancel")
    phase = ""
    with contextlib.suppress(json.JSONDecodeError, AttributeError):
        phase = str(json.loads(status.stdout).get("phase", ""))
    return f"{in_flight} reassignments in flight cancelled, replicas as before, no throttle left" + (
        f"; status phase {phase}" if phase else ""
    )


def op_cordon(cluster: Cluster) -> str:
    from kafka_placement.kafka.connection import ConnectionSettings
    from kafka_placement.kafka.gateway import KafkaGateway
    from kafka_placement.kafka.types import CordonUnsupportedError

    target = cluster.log_dirs(2)[0]
    level = metadata_level(cluster)
    parts = []
    with KafkaGateway(ConnectionSettings(bootstrap_servers=cluster.bootstrap)) as gw:
        try:
            gw.set_cordon(2, [target], True)
            native = True
        except CordonUnsupportedError as e:
            native = False
            parts.append(f"native: n/a (metadata level {level}): gateway says: {e}")
    if native:
        snap = cluster.snapshot("cordon-native")
        flags = {d["path"]: d["cordoned"] for b in snap["brokers"] if b["id"] == 2 for d in b["logDirs"]}
        if not flags.get(target):
            raise Failed(f"cordoned {target} on broker 2 but the snapshot says {flags}")
        create_topic(cluster, "compat-native", 4, [[2, 1]] * 4)
        snap = cluster.snapshot("cordon-native-topic")
        on = replicas_on(snap, 2, target, "compat-native")
        with KafkaGateway(ConnectionSettings(bootstrap_servers=cluster.bootstrap)) as gw:
            gw.set_cordon(2, [target], False)
        if on:
            raise Failed(f"Kafka put new replicas on the cordoned dir: {on}")
        parts.append(f"native (level {level}): snapshot shows the dir cordoned, 4 new replicas kept off it")
    # reactive: an empty replica on a cordoned dir is moved off by the plan
    topic = "compat-reactive"
    create_topic(cluster, topic, 1, [[2, 1]])
    snap = cluster.snapshot("reactive-before")
    if not replicas_on(snap, 2, target, topic):
        from kafka import KafkaAdminClient
        from kafka.structs import TopicPartitionReplica

        admin: Any = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=15000)
        try:
            admin.alter_replica_log_dirs({TopicPartitionReplica(topic, 0, 2): target})
        finally:
            admin.close()
        wait_for(
            "the empty replica on the cordoned dir",
            lambda: bool(replicas_on(cluster.snapshot("reactive-before"), 2, target, topic)),
        )
    intents = cluster.work / "reactive.yaml"
    intents.write_text(f"kind: LogDirCordon\nspec: {{broker: 2, logDirs: ['{target}']}}\n")
    plan = cluster.work / "reactive-plan.json"
    cli("plan", "--snapshot", str(cluster.work / "reactive-before.json"), "--intents", str(intents),
        "--reactive-cordon", "-o", str(plan))  # fmt: skip
    moved = [f"{p['topic']}-{p['partition']}" for p in json.loads(plan.read_text())["partitions"]]
    if f"{topic}-0" not in moved:
        raise Failed(f"plan --reactive-cordon did not move {topic}-0 off the cordoned dir (plan: {moved})")
    cli("execute", "--bootstrap-server", cluster.bootstrap, "--plan", str(plan),
        "--state", str(cluster.work / "reactive-state.json"), "--wait", "--poll-seconds", "0.5")  # fmt: skip
    if replicas_on(cluster.snapshot("reactive-after"), 2, target, topic):
        raise Failed(f"{topic}-0 still on the cordoned dir after execute")
    parts.append("reactive: the empty replica on the cordoned dir moved off (plan --reactive-cordon)")
    return "; ".join(parts)


def op_dead(cluster: Cluster) -> str:
    run([sys.executable, RIG, "stop-node", "--name", cluster.name, "--node", "2",
         "--rig-dir", str(cluster.rig_dir)], timeout=60)  # fmt: skip
    started = time.monotonic()
    seen: dict[str, Any] = {}

    def reported_dead() -> bool:
        seen.update(cluster.snapshot("dead"))
        return any(b["id"] == 2 and b.get("alive", True) is False for b in seen["brokers"])

    wait_for("broker 2 reported not alive", reported_dead, 60)
    lost = replicas_on(seen, 2)
    return (
        f"broker 2 reported alive=false {time.monotonic() - started:.1f}s after it stopped "
        f"({len(lost)} replicas on it listed, dirs unknown)"
    )


OPS: dict[str, Callable[[Cluster], str]] = {
    "move": op_move,
    "cancel": op_cancel,
    "cordon": op_cordon,
    "dead": op_dead,
}


# ---------------------------------------------------------------------------------------- a version


def attempt(fn: Callable[[], str]) -> Outcome:
    started = time.monotonic()
    try:
        detail = fn()
        status = "pass"
    except NotApplicable as e:
        status, detail = "n/a", str(e)
    except Failed as e:
        status, detail = "fail", str(e)
    except Exception as e:  # the smoke's own or a client library's: say where
        status = "fail"
        detail = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=6)}"
    return Outcome(status, detail, round(time.monotonic() - started, 1))


@contextlib.contextmanager
def seeded(version: str, args: argparse.Namespace, result: VersionResult) -> Iterator[Cluster | None]:
    """A cluster of ``version`` (in ZooKeeper mode when ``result.zookeeper``) with the data topic
    (outcomes ``fetch``, ``up`` and ``seed`` in ``result``; None when one failed), always torn down."""
    mode = "-zk" if result.zookeeper else ""
    name = f"compat-{version.replace('.', '-')}{mode}"
    cluster = Cluster(name, Path(args.rig_dir), Path(args.work) / f"{version}{mode}", version=version)
    shutil.rmtree(cluster.work, ignore_errors=True)  # state files of an earlier run's cluster
    cluster.work.mkdir(parents=True)
    fetch_env = {"KAFKA_VERSION": version}
    fetch = attempt(lambda: tail(run(["env", *(f"{k}={v}" for k, v in fetch_env.items()), "bash", FETCH],
                                     timeout=900).stderr, 1))  # fmt: skip
    result.outcomes["fetch"] = fetch
    up_cmd = [sys.executable, RIG, "up", "--name", name, "--rig-dir", str(cluster.rig_dir),
              "--kafka-version", version, "--base-port", str(args.base_port),
              "--controller-base-port", str(args.controller_base_port),
              *(["--zookeeper"] if result.zookeeper else [])]  # fmt: skip
    try:
        if fetch.status == "pass":
            result.outcomes["up"] = attempt(lambda: tail(run(up_cmd, timeout=300).stdout, 1))
        if result.outcomes.get("up", Outcome("fail", "", 0)).status != "pass":
            yield None
            return
        entry = json.loads((cluster.rig_dir / "rig.json").read_text())[f"kafka-{name}"]
        cluster.entry, cluster.bootstrap = entry, entry["bootstrapServers"]

        def seed() -> str:
            create_topic(cluster, DATA_TOPIC, DATA_PARTITIONS)
            produce(cluster, DATA_TOPIC, DATA_PARTITIONS, args.partition_bytes)
            return f"{DATA_TOPIC}: {DATA_PARTITIONS} partitions x RF 2, {args.partition_bytes} B each"

        result.outcomes["seed"] = attempt(seed)
        yield cluster if result.outcomes["seed"].status == "pass" else None
        result.notes += unknown_settings(cluster)
    finally:
        # SIGKILL at once: the cluster and its data are thrown away (a graceful stop took ~6 s a release)
        down = run([sys.executable, RIG, "down", "--name", name, "--rig-dir", str(cluster.rig_dir),
                    "--stop-timeout", "0"], timeout=120, check=False)  # fmt: skip
        if down.returncode != 0:
            result.notes.append(f"rig down failed: {tail(down.stdout + down.stderr, 3)}")


def smoke_version(version: str, args: argparse.Namespace, zookeeper: bool = False) -> VersionResult:
    result = VersionResult(version, zookeeper=zookeeper)
    started = time.monotonic()
    with seeded(version, args, result) as cluster:
        for op in OPERATIONS:
            if cluster is None:
                break
            result.outcomes[op] = attempt(lambda op=op: OPS[op](cluster))  # type: ignore[misc]
    for op in OPERATIONS:
        result.outcomes.setdefault(op, Outcome("fail", "not run: the cluster did not come up", 0))
    result.seconds = round(time.monotonic() - started, 1)
    return result


def unknown_settings(cluster: Cluster) -> list[str]:
    """Settings of server.properties the brokers said they do not know (Kafka warns, and runs)."""
    found: set[str] = set()
    for node in cluster.entry.get("nodes", []):
        log = Path(str(node["serverLog"]))
        if log.exists():
            for line in log.read_text(errors="replace").splitlines():
                if "isn't a known config" in line or "were supplied but are not used" in line:
                    found.add(line.split("] ", 1)[-1][:160])
    return [f"broker log: {x}" for x in sorted(found)]


def default_args(rig_dir: str, work: str) -> argparse.Namespace:
    """The smoke's arguments as the compat tests run it: the default ports (KP_COMPAT_BASE_PORT and
    KP_COMPAT_CONTROLLER_BASE_PORT move them), 2 MB per partition."""
    return argparse.Namespace(
        rig_dir=rig_dir,
        work=work,
        base_port=int(os.environ.get("KP_COMPAT_BASE_PORT", "19092")),
        controller_base_port=int(os.environ.get("KP_COMPAT_CONTROLLER_BASE_PORT", "19192")),
        partition_bytes=2_000_000,
    )


# ---------------------------------------------------------------------------------------- report


def markdown(results: Sequence[VersionResult], command: str) -> str:
    cell = {"pass": "pass", "fail": "**fail**", "n/a": "n/a"}
    lines = [
        f"Produced by `{command}` on {datetime.date.today().isoformat()}.",
        "",
        "| Kafka | quorum | " + " | ".join(OPERATIONS) + " | time |",
        "|---|---|" + "---|" * len(OPERATIONS) + "---|",
    ]
    for r in results:
        row = [r.label, r.quorum]
        for op in OPERATIONS:
            o = r.outcomes[op]
            text = cell[o.status]
            if op == "cordon" and o.status == "pass":
                text = "pass: native" if o.detail.startswith("native (") else "pass: reactive (native n/a)"
            row.append(text + (f" ({o.seconds:.0f}s)" if o.status != "fail" else ""))
        row.append(f"{r.seconds:.0f}s")
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    for r in results:
        lines.append(f"**{r.label}**")
        lines.append("")
        for op, o in r.outcomes.items():
            first = o.detail.replace("\n", " ").replace("|", "\\|")[:600]
            lines.append(f"- {op}: {o.status} — {first}")
        lines += [f"- note: {n}" for n in r.notes]
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    p.add_argument(
        "--versions",
        nargs="*",
        default=list(VERSIONS),
        help="Kafka versions in KRaft (default: all; none: pass the flag alone)",
    )
    p.add_argument(
        "--zookeeper-versions",
        nargs="*",
        default=list(ZOOKEEPER_VERSIONS),
        help=f"Kafka versions run in ZooKeeper mode too (default: {' '.join(ZOOKEEPER_VERSIONS)}; none: "
        "pass the flag alone)",
    )
    p.add_argument("--rig-dir", default="/tmp/kp-compat-rig", help="the clusters' state dir")
    p.add_argument("--work", default="/tmp/kp-compat-work", help="snapshots, plans, state files")
    p.add_argument("--base-port", type=int, default=19092)
    p.add_argument("--controller-base-port", type=int, default=19192)
    p.add_argument("--partition-bytes", type=int, default=2_000_000, help="data per partition (2 MB)")
    p.add_argument("--json", help="write the results as JSON here")
    p.add_argument("--markdown", help="write the results table (Markdown) here")
    args = p.parse_args(argv)
    results = []
    runs = [(v, False) for v in args.versions] + [(v, True) for v in args.zookeeper_versions]
    for version, zookeeper in runs:
        print(f"compat: Kafka {version}{' (ZooKeeper)' if zookeeper else ''} ...", flush=True)
        r = smoke_version(version, args, zookeeper)
        version = r.label
        results.append(r)
        summary = ", ".join(
            f"{op} {r.outcomes[op].status}" for op in ("fetch", "up", *OPERATIONS) if op in r.outcomes
        )
        print(f"compat: Kafka {version}: {summary} ({r.seconds:.0f}s)", flush=True)
        for op, o in r.outcomes.items():
            if o.status != "pass":
                print(f"  {op}: {o.status}: {o.detail}", flush=True)
    command = (
        "python tests/compat/smoke.py"
        + (  # the arguments that differ from the defaults
            f" --versions {' '.join(args.versions)}".rstrip() if list(args.versions) != list(VERSIONS) else ""
        )
        + (
            f" --zookeeper-versions {' '.join(args.zookeeper_versions)}".rstrip()
            if list(args.zookeeper_versions) != list(ZOOKEEPER_VERSIONS)
            else ""
        )
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                [
                    {
                        "version": r.version,
                        "zookeeper": r.zookeeper,
                        "seconds": r.seconds,
                        "notes": r.notes,
                        "outcomes": {k: vars(v) for k, v in r.outcomes.items()},
                    }
                    for r in results
                ],
                indent=2,
            )
            + "\n"
        )
    table = markdown(results, command)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")
    print(table)
    return 0 if all(o.status != "fail" for r in results for o in r.outcomes.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
