"""Healing a dead broker on the real Kafka rig: the time from the failure to the first move, and the copy
against the throttle-limited lower bound; Kafka's own ReassignPartitionsCommand on the same scenario.

    flock /tmp/rig-broker.lock .venv/bin/python tests/bench/run_heal_bench.py \
        [--partitions 60] [--mb 600] [--throttle 2500000] [--sides ours,kafka,operator] [--poll-seconds 1] \
        [--after 20]

Kills a broker: run it under `flock /tmp/rig-broker.lock` (the rig's other users take that lock before they
stop or kill one), when no tests run if you can. Needs the main Kafka rig (.rig/rig.json) and, for the
`kafka` side, Kafka's jars (tests/rig/kafka/fetch.sh); for the `operator` side, the k8s rig too (the
operator as a process heals the broker itself: `heal_by_operator`).

Per side: a fresh topic of N partitions, RF 2 over brokers 1-3 ([1,2], [2,3], [3,1], ...), so 2/3 of them
have a replica on broker 3, min.insync.replicas 1, holding MB megabytes of random (incompressible) values
written with acks=all. Then broker 3 is SIGKILLed (`kafka_rig.py stop-node --node 3 --kill`) and, once the
cluster has fenced it (before that a snapshot lists it as alive but unreachable, and `plan` refuses to
decommission it on a guess), healed as a user would:

    kafka-placement snapshot -o snap.json
    kafka-placement plan --snapshot snap.json --intents retire.yaml -o plan.json  # BrokerDecommission [3]
    ours:  kafka-placement execute --plan plan.json --throttle T --state state.json --wait
    kafka: ReassignPartitionsCommand --execute --throttle T, then --verify every second until it reports
           nothing in progress (which also removes the throttles)

The plan is restricted to the benchmark's topic (other users' topics on the rig are left alone). Times:
failure = the moment `stop-node --kill` is started (the SIGKILL follows within its start-up, so this
overstates the next two by a fraction of a second); first move = for ours the earliest in-flight entry of
the execution record (an entry is written just before its reassignment is sent; the record is read every
0.1 s), for Kafka's tool the exit of `--execute`; at target = the first time the metadata (read every
0.5 s) shows every plan partition at its target replicas with a full ISR; done = `execute --wait` exits,
or `--verify` reports nothing in progress.

Lower bound: every replica the plan adds is copied from the partition's one live replica (its leader
after the failure) onto the new broker; a broker's follower (inbound) and leader (outbound) replication
are each throttled at T and brokers copy in parallel, so no execution finishes the copy before max over
brokers of max(bytes in, bytes out) / T (bytes from the snapshot's partition sizes). Kafka measures the
quota over a window (11 x 1 s by default), so the first seconds may run above T. Broker 3 is restarted
afterwards (always) and the topic deleted. The section of docs/benchmarks.md is replaced (--output).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "bench"))

from run_exec_scale import write_section  # noqa: E402  (one writer of benchmark sections)

CLI = Path(sys.executable).parent / "kafka-placement"
RIG = [sys.executable, str(ROOT / "tests" / "rig" / "kafka_rig.py")]
SECTION = "## Healing a dead broker vs throttle-limited lower bound"
DEAD = 3
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


def rig() -> dict[str, Any]:
    path = Path(os.environ.get("KP_RIG_DIR", str(ROOT / ".rig"))) / "rig.json"
    if not path.exists():
        sys.exit(f"{path} not found: start the rig (tests/rig/kafka_rig.py up --name main)")
    doc: dict[str, Any] = json.loads(path.read_text())["kafka"]
    return doc


def admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


def run(cmd: list[str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd[:4])}... exit {out.returncode}: {out.stdout[-1500:]}{out.stderr[-1500:]}"
        )
    return out


def node(action: str, *extra: str) -> None:
    run([*RIG, action, "--name", "main", "--node", str(DEAD), *extra], timeout=300)


def restart_dead() -> None:
    """Start the killed broker again; a failure is reported, never raised (the caller's cleanup goes on)."""
    try:
        node("start-node")
    except Exception as e:
        print(f"restarting broker {DEAD} failed: {e}", file=sys.stderr)


def create_topic(
    bootstrap: str, name: str, partitions: int, assignment: list[list[int]] | None = None
) -> None:
    """A topic of ``partitions`` (RF 2 over brokers 1-3 round robin unless ``assignment`` is given), kept
    for good, until every partition has a leader and a full ISR."""
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    if assignment is None:
        assignment = [[i % 3 + 1, (i + 1) % 3 + 1] for i in range(partitions)]
    topic = NewTopic(
        name,
        num_partitions=partitions,
        replica_assignment=assignment,
        config={"min.insync.replicas": "1", "retention.ms": "-1", "segment.bytes": str(16 * 1024 * 1024)},
    )
    client = admin(bootstrap)
    client.create_topics([topic], request_timeout=60)[name].result(timeout=120)
    wait_healthy(client, name, partitions, 120)


def wait_healthy(client: Any, name: str, partitions: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = client.list_topics(topic=name, timeout=10).topics.get(name)
        if (
            md is not None
            and md.error is None
            and len(md.partitions) == partitions
            and all(p.leader >= 0 and len(p.isrs) == len(p.replicas) for p in md.partitions.values())
        ):
            return
        time.sleep(0.5)
    raise RuntimeError(f"topic {name} not healthy (leaders, full ISR) after {timeout:.0f}s")


def wait_fenced(bootstrap: str, broker: int, timeout: float = 120) -> None:
    """Until the cluster no longer counts ``broker`` alive (fenced or gone; DescribeCluster through
    kafka-python every 0.5 s, which lists fenced brokers as such): before that, a snapshot lists it as
    alive but unreachable and `plan` refuses to decommission it on a guess, as it should."""
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                brokers = client.describe_cluster()["brokers"]
                if not any(b["broker_id"] == broker and not b.get("is_fenced") for b in brokers):
                    return
            except Exception:  # a metadata hiccup right after the kill: ask again
                pass
            time.sleep(0.5)
    finally:
        client.close()
    raise RuntimeError(f"broker {broker} still alive in the cluster {timeout:.0f}s after the kill")


def produce(bootstrap: str, name: str, partitions: int, per_partition: int) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 20,
            "compression.type": "none",
            "queue.buffering.max.kbytes": 65536,
        }
    )
    size = 100_000
    values = [os.urandom(size) for _ in range(16)]
    k = 0
    for _ in range(max(1, per_partition // size)):
        for p in range(partitions):
            while True:
                try:
                    producer.produce(name, value=values[k % len(values)], partition=p)
                    break
                except BufferError:
                    producer.poll(0.1)
            k += 1
            producer.poll(0)
    if producer.flush(300) != 0:
        raise RuntimeError("producing the benchmark data did not finish")


def make_plan(bootstrap: str, name: str, work: Path) -> tuple[dict[str, Any], dict[str, Any], float, float]:
    """snapshot + plan through the CLI; returns (snapshot, plan restricted to ``name``, t snapshot done,
    t plan done)."""
    snap, intents, full, plan = (work / n for n in ("snap.json", "retire.yaml", "full.json", "plan.json"))
    intents.write_text(f"kind: BrokerDecommission\nspec: {{brokers: [{DEAD}]}}\n")
    run([str(CLI), "snapshot", "--bootstrap-server", bootstrap, "-o", str(snap)])
    t_snap = time.time()
    run([str(CLI), "plan", "--snapshot", str(snap), "--intents", str(intents), "-o", str(full)])
    doc = json.loads(full.read_text())
    doc["partitions"] = [e for e in doc["partitions"] if e["topic"] == name]
    plan.write_text(json.dumps(doc))
    t_plan = time.time()
    return json.loads(snap.read_text()), doc, t_snap, t_plan


def lower_bound(snap: dict[str, Any], plan: dict[str, Any], throttle: int) -> dict[str, Any]:
    """max over brokers of max(bytes received, bytes sent as the source) / T."""
    alive = {b["id"] for b in snap["brokers"] if b.get("alive", True)}
    parts = {(p["topic"], p["partition"]): p for p in snap["partitions"]}
    inbound: dict[int, int] = {}
    outbound: dict[int, int] = {}
    copied = 0
    for e in plan["partitions"]:
        p = parts[(e["topic"], e["partition"])]
        live = [r for r in p["replicas"] if r in alive]
        source = p["leader"] if p["leader"] in live else next(r for r in p.get("isr", live) if r in live)
        for b in set(e["replicas"]) - set(p["replicas"]):
            inbound[b] = inbound.get(b, 0) + p["sizeBytes"]
            outbound[source] = outbound.get(source, 0) + p["sizeBytes"]
            copied += p["sizeBytes"]
    load = {f"broker {b} in": v for b, v in inbound.items()} | {
        f"broker {b} out": v for b, v in outbound.items()
    }
    worst = max(load, key=lambda k: load[k])
    return {
        "bound": load[worst] / throttle,
        "bottleneck": worst,
        "maxBytes": load[worst],
        "copied": copied,
        "load": load,
        "deadAlive": DEAD in alive,
    }


class Watch(threading.Thread):
    """Polls the execution record (first in-flight entry) and the metadata (every plan partition at its
    target with a full ISR) until stopped."""

    def __init__(self, bootstrap: str, plan: dict[str, Any], state: Path | None) -> None:
        super().__init__(daemon=True)
        self.client = admin(bootstrap)
        self.targets = {(e["topic"], e["partition"]): e["replicas"] for e in plan["partitions"]}
        self.topic = plan["partitions"][0]["topic"]
        self.state = state
        self.first_move: float | None = None
        self.at_target: float | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        next_md = 0.0
        while not self.stop.is_set():
            if self.state is not None and self.first_move is None and self.state.exists():
                try:
                    rec = json.loads(self.state.read_text())
                    ats = [float(v["at"]) for v in rec.get("inFlight", {}).values()]
                    if ats:
                        self.first_move = min(ats)
                except (OSError, ValueError, KeyError):
                    pass
            now = time.time()
            if self.at_target is None and now >= next_md:
                next_md = now + 0.5
                try:
                    md = self.client.list_topics(topic=self.topic, timeout=5).topics[self.topic]
                    if all(
                        list(md.partitions[p].replicas) == r and len(md.partitions[p].isrs) == len(r)
                        for (_, p), r in self.targets.items()
                    ):
                        self.at_target = now
                except Exception:  # a metadata hiccup: read again
                    pass
            self.stop.wait(0.1)


class Healed(threading.Thread):
    """The operator side's "at target": polls the metadata (every 0.5 s) for the first moment every
    partition of the topic has its replication factor on live brokers (none on the dead one), all in sync."""

    def __init__(self, bootstrap: str, topic: str, rf: int = 2) -> None:
        super().__init__(daemon=True)
        self.client = admin(bootstrap)
        self.topic, self.rf = topic, rf
        self.at: float | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        while self.at is None and not self.stop.is_set():
            now = time.time()
            try:
                md = self.client.list_topics(topic=self.topic, timeout=5).topics[self.topic]
                if md.partitions and all(
                    len(p.replicas) == self.rf and DEAD not in p.replicas and len(p.isrs) == self.rf
                    for p in md.partitions.values()
                ):
                    self.at = now
            except Exception:  # a metadata hiccup: read again
                pass
            self.stop.wait(0.5)


def execute_ours(
    bootstrap: str, plan: Path, work: Path, throttle: int, poll_s: float, hold: bool = False
) -> dict[str, Any]:
    state = work / "state.json"
    watch = Watch(bootstrap, json.loads(plan.read_text()), state)
    watch.start()
    cmd = [
        str(CLI), "execute", "--bootstrap-server", bootstrap, "--plan", str(plan),
        "--throttle", str(throttle), "--state", str(state), "--wait", "--poll-seconds", str(poll_s),
        *(["--hold-achieved-rate"] if hold else []),
    ]  # fmt: skip
    started = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    done = time.time()
    time.sleep(0.6)  # let the watcher see the final metadata
    watch.stop.set()
    watch.join()
    record = json.loads(state.read_text()) if state.exists() else {}
    if proc.returncode != 0 or record.get("phase") != "Completed":
        raise RuntimeError(f"execute failed ({proc.returncode}): {proc.stdout[-1500:]}{proc.stderr[-1500:]}")
    verify = subprocess.run(
        [str(CLI), "verify", "--bootstrap-server", bootstrap, "--plan", str(plan)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if verify.returncode != 0:
        raise RuntimeError(f"verify failed: {verify.stdout}{verify.stderr}")
    return {
        "started": started,
        "firstMove": watch.first_move,
        "atTarget": watch.at_target,
        "done": done,
        "ticks": record["counters"]["ticks"],
    }


def clear_broker_throttles(bootstrap: str, throttle: int) -> list[int]:
    """Remove the replication throttle rates equal to ``throttle`` from the live brokers (one broker per
    call, as the API wants); returns the brokers that had them."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    client = admin(bootstrap)
    cleared = []
    for b in sorted(client.list_topics(timeout=10).brokers):
        res = ConfigResource("BROKER", str(b))
        try:
            cfg = client.describe_configs([res], request_timeout=10)[res].result(timeout=15)
        except Exception:  # the dead broker (still in the metadata until fenced)
            continue
        keys = [
            k
            for k in ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
            if k in cfg and cfg[k].value == str(throttle) and cfg[k].source == 2  # DYNAMIC_BROKER_CONFIG
        ]
        if keys:
            ops = [ConfigEntry(k, "", incremental_operation=AlterConfigOpType.DELETE) for k in keys]
            change = ConfigResource("BROKER", str(b), incremental_configs=ops)
            client.incremental_alter_configs([change])[change].result(timeout=30)
            cleared.append(b)
    return cleared


def execute_kafka(bootstrap: str, plan: Path, libs: str, throttle: int) -> dict[str, Any]:
    base = ["java", "-cp", f"{libs}/*", REASSIGN, "--bootstrap-server", bootstrap,
            "--reassignment-json-file", str(plan)]  # fmt: skip
    watch = Watch(bootstrap, json.loads(plan.read_text()), None)
    watch.start()
    started = time.time()
    out = subprocess.run(
        [*base, "--execute", "--throttle", str(throttle), "--timeout", "60000"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if out.returncode != 0:
        # Kafka's tool sets the throttle rates broker by broker before it submits anything; a dead broker
        # in the reassignment fails that step, and the rates already set on the live brokers stay.
        watch.stop.set()
        left = clear_broker_throttles(bootstrap, throttle)
        errors = [ln for ln in (out.stdout + out.stderr).splitlines() if ln.startswith("Error:")]
        raise RuntimeError(
            f"`--execute --throttle` exit {out.returncode}: {errors[0] if errors else out.stderr[-300:]} "
            f"(the rates it had set on brokers {left} were removed)"
        )
    first = time.time()
    verifies = 0
    while True:
        out = subprocess.run([*base, "--verify"], capture_output=True, text=True, timeout=300)
        verifies += 1
        if out.returncode == 0 and "in progress" not in out.stdout:
            break
        if time.time() - started > 3600:
            raise RuntimeError("Kafka's reassignment did not finish within an hour")
        time.sleep(1)
    done = time.time()
    time.sleep(0.6)
    watch.stop.set()
    watch.join()
    return {
        "started": started,
        "firstMove": first,
        "atTarget": watch.at_target,
        "done": done,
        "ticks": verifies,
    }


def one_side(side: str, kafka: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    bootstrap = str(kafka["bootstrapServers"])
    name = f"bench-heal-{side}-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, name, args.partitions)
    killed = False
    try:
        t0 = time.time()
        produce(bootstrap, name, args.partitions, args.mb * 1_000_000 // args.partitions)
        wait_healthy(admin(bootstrap), name, args.partitions, 300)
        print(f"[{side}] {args.mb} MB written in {time.time() - t0:.1f}s; killing broker {DEAD}", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            failure = time.time()
            if not args.no_kill:
                killed = True
                node("stop-node", "--kill")
            killed_at = time.time()
            if not args.no_kill:
                wait_fenced(bootstrap, DEAD)
            fenced = time.time()
            snap, plan, t_snap, t_plan = make_plan(bootstrap, name, work)
            if not plan["partitions"]:
                raise RuntimeError("the plan moves nothing of the benchmark topic")
            bound = lower_bound(snap, plan, args.throttle)
            print(
                f"[{side}] plan: {len(plan['partitions'])} moves, {bound['copied'] / 1e6:.1f} MB to copy, "
                f"bound {bound['bound']:.1f}s ({bound['bottleneck']})",
                flush=True,
            )
            if side.startswith("ours"):
                res = execute_ours(
                    bootstrap,
                    work / "plan.json",
                    work,
                    args.throttle,
                    args.poll_seconds,
                    side.endswith("-hold"),
                )
            else:
                res = execute_kafka(bootstrap, work / "plan.json", str(kafka["libsDir"]), args.throttle)
        first = res["firstMove"]
        row = {
            "side": side,
            "partitions": args.partitions,
            "moves": len(plan["partitions"]),
            "dataBytes": sum(p["sizeBytes"] for p in snap["partitions"] if p["topic"] == name),
            "throttle": args.throttle,
            "killS": killed_at - failure,
            "fencedS": fenced - failure,
            "snapshotS": t_snap - failure,
            "planS": t_plan - failure,
            "firstMoveS": (first - failure) if first else None,
            "copyS": res["done"] - first if first else None,
            "toTargetS": (res["atTarget"] - first) if first and res["atTarget"] else None,
            "execS": res["done"] - res["started"],
            "totalS": res["done"] - failure,
            "ticks": res["ticks"],
            **{k: bound[k] for k in ("bound", "bottleneck", "maxBytes", "copied", "deadAlive")},
        }
        print(f"[{side}] {json.dumps(row)}", flush=True)
        return row
    finally:
        if killed:
            restart_dead()
        try:
            client = admin(bootstrap)
            client.delete_topics([name], request_timeout=60)[name].result(timeout=120)
        except Exception as e:
            print(f"deleting {name} failed: {e}", file=sys.stderr)


def heal_by_operator(
    kafka: dict[str, Any], args: argparse.Namespace, side: str = "operator"
) -> dict[str, Any]:
    """The operator path: the operator (a process, as the e2e tests run it, with the default resync period)
    heals the dead broker itself (``selfHealing.brokerFailure``, approval Automatic, the same throttle).
    Times from the failure: the death listed in the status, the heal (a BrokerDecommission) created, its
    first move (the record's earliest in-flight entry), Completed. The bound is the copy the heal did: the
    partitions whose replicas changed between a snapshot before the kill and one after the heal."""
    from run_preempt_bench import Kube, rig_json, until
    from tests.e2e.conftest import Operator

    bootstrap = str(kafka["bootstrapServers"])
    name = f"bench-heal-operator-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, name, args.partitions)
    ns = f"bench-heal-{uuid.uuid4().hex[:6]}"
    kube = Kube(rig_json()["k8s"], ns)
    kube("apply", "-f", str(ROOT / "crds"), ns=False)
    kube("create", "namespace", ns, ns=False)
    killed = False
    with tempfile.TemporaryDirectory(prefix="kp-heal-") as tmp:
        work = Path(tmp)
        log = work / "operator.log"
        op = Operator(ns, kube.config, log, env={"KP_RESYNC_SECONDS": "60"})  # the default resync period
        try:
            produce(bootstrap, name, args.partitions, args.mb * 1_000_000 // args.partitions)
            wait_healthy(admin(bootstrap), name, args.partitions, 300)
            before = work / "before.json"
            run([str(CLI), "snapshot", "--bootstrap-server", bootstrap, "-o", str(before)])
            op.start()
            kube(
                "apply", "-f", "-",
                input=(
                    "apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {name: heal}\n"
                    f"spec: {{bootstrapServers: '{bootstrap}', throttleBytesPerSecond: {args.throttle}, "
                    + ("limits: {holdAchievedRate: true}, " if side.endswith("-hold") else "")
                    + f"selfHealing: {{brokerFailure: {{enabled: true, afterSeconds: {args.after}}}, "
                    "approval: Automatic}}\n"
                ),
            )  # fmt: skip

            def settled() -> bool:  # connected, and idle long enough for its reconciles to be quiet ones
                status = kube.get("kafkacluster", "heal").get("status") or {}
                return status.get("phase") == "Connected" and bool(status.get("brokers"))

            until("the KafkaCluster connected", settled, 120, log)
            time.sleep(10)
            failure = time.time()
            node("stop-node", "--kill")
            killed = True

            def dead_seen() -> float | None:
                status = kube.get("kafkacluster", "heal").get("status") or {}
                listed = any(d.get("id") == DEAD for d in status.get("deadBrokers") or ())
                return time.time() if listed else None

            dead_at = until("broker 3 listed dead", dead_seen, 180, log)

            def heal_made() -> tuple[float, str] | None:
                items = json.loads(kube("get", "brokerdecommissions", "-o", "json"))["items"]
                return (time.time(), items[0]["metadata"]["name"]) if items else None

            made, heal = until("the heal created", heal_made, 180 + args.after, log)

            def first_move() -> float | None:
                ats = [float(e["at"]) for e in (kube.record("heal").get("inFlight") or {}).values()]
                return min(ats) if ats else None

            first = until("the heal's first move", first_move, 300, log, every=0.1)
            healed = Healed(bootstrap, name)
            healed.start()

            def completed() -> float | None:
                phase = (kube.get("brokerdecommission", heal).get("status") or {}).get("phase")
                if phase in ("Failed", "Paused"):
                    raise RuntimeError(f"the heal is {phase}")
                return time.time() if phase == "Completed" else None

            done = until("the heal Completed", completed, 3600, log, every=0.5)
            healed.stop.set()
            healed.join()
            counters = kube.record("heal")["counters"]
            after = work / "after.json"
            run([str(CLI), "snapshot", "--bootstrap-server", bootstrap, "-o", str(after)])
            snap = json.loads(before.read_text())
            for b in snap["brokers"]:
                if b["id"] == DEAD:
                    b["alive"] = False  # the copy's sources: the live replicas after the failure
            now = {
                (p["topic"], p["partition"]): p["replicas"]
                for p in json.loads(after.read_text())["partitions"]
            }
            moved = [
                {
                    "topic": p["topic"],
                    "partition": p["partition"],
                    "replicas": now[(p["topic"], p["partition"])],
                }
                for p in snap["partitions"]
                if (p["topic"], p["partition"]) in now and now[(p["topic"], p["partition"])] != p["replicas"]
            ]
            if not moved or any(DEAD in e["replicas"] for e in moved) or counters["resubmitted"]:
                raise RuntimeError(f"checks failed: {len(moved)} partitions moved, counters {counters}")
            bound = lower_bound(snap, {"partitions": moved}, args.throttle)
            row = {
                "side": side,
                "partitions": args.partitions,
                "moves": len(moved),
                "throttle": args.throttle,
                "after": args.after,
                "deadSeenS": dead_at - failure,
                "healCreatedS": made - failure,
                "firstMoveS": first - failure,
                "copyS": done - first,
                "atTargetS": None if healed.at is None else healed.at - failure,
                "totalS": done - failure,
                "resubmitted": counters["resubmitted"],
                **{k: bound[k] for k in ("bound", "bottleneck", "maxBytes", "copied")},
            }
            print(f"[{side}] {json.dumps(row)}", flush=True)
            return row
        finally:
            if args.keep_log:
                Path(args.keep_log).write_bytes(log.read_bytes() if log.exists() else b"")
            if killed:
                restart_dead()
            try:
                kube("delete", "brokerdecommission", "--all", "--timeout=300s")
                kube("delete", "kafkacluster", "--all", "--timeout=120s")
            finally:
                op.kill(signal.SIGTERM)
                client = admin(bootstrap)
                client.delete_topics([name], request_timeout=60)[name].result(timeout=120)
                kube("delete", "namespace", ns, "--wait=false", ns=False)


def operator_table(rows: list[dict[str, Any]]) -> list[str]:
    """The operator path's rows: their own columns (no CLI snapshot or plan: the operator reads and plans)."""
    para = (
        "The operator path (`--sides operator`): the operator as a process (reconciling every 2 s, the "
        "default 60 s resync), a KafkaCluster with the same throttle and `selfHealing.brokerFailure` "
        "(afterSeconds below, approval Automatic) heals the broker itself: times from the failure (the "
        "start of `stop-node --kill`) to the death listed in `status.deadBrokers`, the heal created, its "
        "first move submitted, the heal Completed (checked against the cluster before it says so). The bound "
        "is the copy the heal made (the partitions whose replicas changed between snapshots before the kill "
        "and after the heal); at target = the first metadata read (every 0.5 s) showing every partition of "
        "the topic at RF 2 on live brokers, in sync. `from failure / bound` is (Completed - afterSeconds) / "
        "bound: the issue's measure; it includes Kafka's own fencing of the broker "
        "(broker.session.timeout.ms, 9 s on the rig). `operator-hold`: the KafkaCluster with "
        "`limits.holdAchievedRate: true` (the executor holds each broker's achieved rate at the "
        "throttle, execution/rate_watch.py)."
    )
    lines = [
        "",
        *textwrap.wrap(para, 110, break_on_hyphens=False),
        "",
        "| side | moves | MB copied | throttle MB/s | bottleneck | lower bound s | afterSeconds "
        "| dead listed s | heal created s | first move s | at target s | copy s | Completed s | copy / bound "
        "| from failure / bound | resubmitted |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['side']} | failed: {r['error'].replace('|', '/')} |" + " |" * 14)
            continue
        ratio, whole = r["copyS"] / r["bound"], (r["totalS"] - r["after"]) / r["bound"]
        lines.append(
            f"| {r['side']} | {r['moves']} | {r['copied'] / 1e6:.1f} | {r['throttle'] / 1e6:g} "
            f"| {r['bottleneck']} ({r['maxBytes'] / 1e6:.1f} MB) | {r['bound']:.1f} | {r['after']} "
            f"| {r['deadSeenS']:.1f} | {r['healCreatedS']:.1f} | {r['firstMoveS']:.1f} "
            f"| {fmt(r.get('atTargetS'))} | {r['copyS']:.1f} "
            f"| {r['totalS']:.1f} | {ratio:.2f} | {whole:.2f} | {r['resubmitted']} |"
        )
    return lines


def fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def report(rows: list[dict[str, Any]], command: str, others: str) -> str:
    day = datetime.date.today().isoformat()
    by_operator = [r for r in rows if r["side"].startswith("operator")]
    rows = [r for r in rows if not r["side"].startswith("operator")]
    r0 = next((r for r in rows if "error" not in r), None)
    if r0 is None:
        raise SystemExit("the CLI sides (ours, kafka) are the table's base: run at least one of them")
    paras = [
        f"A topic of {r0['partitions']} partitions, RF 2 over the main rig's brokers 1-3 (2 log dirs "
        f"each, one host), min.insync.replicas 1, {r0['dataBytes'] / 1e6:.0f} MB of random values; broker "
        f"{DEAD} is SIGKILLed, then `kafka-placement snapshot`, `plan` with a BrokerDecommission of it "
        "(restricted to the benchmark's topic) and the execution: ours = `kafka-placement execute "
        "--throttle T --wait`, Kafka = `ReassignPartitionsCommand --execute --throttle T` of the same "
        "plan, then `--verify` every second until nothing is in progress (a JVM each). Each side has its "
        f"own topic and its own kill; broker {DEAD} is restarted after each.",
        "Lower bound: each replica the plan adds is copied from the partition's live replica (its leader "
        "after the failure) to the new broker; follower (in) and leader (out) replication are each "
        "throttled at T per broker, so the copy cannot take less than max over brokers of max(bytes in, "
        "bytes out) / T. Times are from the failure (the start of `stop-node --kill`): fenced = when the "
        "cluster no longer counts the broker alive (DescribeCluster every 0.5 s; the snapshot is taken then: "
        "before, it lists the broker as alive but unreachable and `plan` refuses to act on a guess); "
        "snapshot and plan = when each CLI exited; first move = the execution record's earliest in-flight "
        "entry (ours; written "
        "just before the reassignment is sent) or `--execute`'s exit (Kafka's); copy = first move to the "
        "end of the execution (`execute --wait` exits; `--verify` reports nothing in progress); at target "
        "= first move to the first metadata read (every 0.5 s) showing every partition at its target "
        "with a full ISR.",
    ]
    lines = [SECTION, "", f"`{command}` (one run, {day}, {os.cpu_count()} cores; {others}).", ""]
    for para in paras:
        lines += [*textwrap.wrap(para, 110, break_on_hyphens=False), ""]
    lines += [
        "| side | moves | MB copied | throttle MB/s | bottleneck | lower bound s | fenced s | snapshot s "
        "| plan s | failure -> first move s | copy s | at target s | copy / bound | at target / bound "
        "| failure -> done s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['side']} | failed: {r['error'].replace('|', '/')} |" + " |" * 13)
            continue
        ratio = f"{r['copyS'] / r['bound']:.2f}" if r["copyS"] else "-"
        target = f"{r['toTargetS'] / r['bound']:.2f}" if r["toTargetS"] else "-"
        lines.append(
            f"| {r['side']} | {r['moves']} | {r['copied'] / 1e6:.1f} | {r['throttle'] / 1e6:g} "
            f"| {r['bottleneck']} ({r['maxBytes'] / 1e6:.1f} MB) | {r['bound']:.1f} "
            f"| {fmt(r.get('fencedS'))} | {r['snapshotS']:.1f} "
            f"| {r['planS']:.1f} | {fmt(r['firstMoveS'])} | {fmt(r['copyS'])} | {fmt(r['toTargetS'])} "
            f"| {ratio} | {target} | {r['totalS']:.1f} |"
        )
    if by_operator:
        lines += operator_table(by_operator)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=60, help="partitions of the topic (default 60)")
    ap.add_argument("--mb", type=int, default=600, help="MB written to the topic (default 600)")
    ap.add_argument("--throttle", type=int, default=2_500_000, help="bytes/s per broker (default 2500000)")
    ap.add_argument(
        "--sides",
        default="ours,kafka",
        help="any of ours, kafka, operator, comma separated (default ours,kafka)",
    )
    ap.add_argument("--after", type=int, default=20, help="the operator side's afterSeconds (default 20)")
    ap.add_argument("--poll-seconds", type=float, default=1.0, help="execute --poll-seconds (default 1)")
    ap.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"))
    ap.add_argument("--keep-log", default=None, help="copy the operator side's log to this file")
    ap.add_argument(
        "--no-kill", action="store_true", help="a trial: decommission broker 3 alive (nothing is killed)"
    )
    args = ap.parse_args(argv)
    kafka = rig()
    seen: set[str] = set()
    done = threading.Event()

    def sample() -> None:  # other users' test runs during the benchmark
        while not done.is_set():
            out = subprocess.run(["pgrep", "-af", "pytest"], capture_output=True, text=True).stdout
            seen.update(line for line in out.splitlines() if line.strip())
            done.wait(5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        rows = []
        for side in args.sides.split(","):
            try:
                rows.append(
                    heal_by_operator(kafka, args, side)
                    if side.startswith("operator")
                    else one_side(side, kafka, args)
                )
            except Exception as e:  # reported in the table; the other side still runs
                print(f"[{side}] failed: {e}", file=sys.stderr, flush=True)
                rows.append({"side": side, "error": " ".join(str(e).split())[:300]})
    finally:
        done.set()
    others = "other tests were running on the machine meanwhile" if seen else "no other tests running"
    for line in sorted(seen):
        print(f"seen meanwhile: {line}", file=sys.stderr)
    command = "python tests/bench/run_heal_bench.py " + " ".join(
        [
            f"--partitions {args.partitions}",
            f"--mb {args.mb}",
            f"--throttle {args.throttle}",
            f"--sides {args.sides}",
            *([f"--after {args.after}"] if "operator" in args.sides else []),
            f"--poll-seconds {args.poll_seconds:g}",
        ]
    )
    text = report(rows, command, others)
    print(text)
    write_section(text, Path(args.output), SECTION)
    return 0


if __name__ == "__main__":
    sys.exit(main())
