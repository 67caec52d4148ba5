"""The operator executing a 20,000-move decommission on the rig, SIGKILLed mid-way and restarted, against
Kafka's own ReassignPartitionsCommand on the same moves.

    nice -n 5 .venv/bin/python tests/bench/run_operator_exec.py [--partitions 20000] [--kill-at 0.4]
        [--retired 4,5] [--throttle 52428800] [-o docs/benchmarks.md | --no-doc]

Needs the main Kafka rig and the k8s rig under ``$KP_RIG_DIR`` (default ``.rig``), e.g.

    export KP_RIG_DIR=$PWD/.rig-h2 KP_RIG_PORT_OFFSET=2000
    bash scripts/rig.sh up k8s
    sudo sysctl -w vm.max_map_count=262144
    KP_KAFKA_HEAP=1536m .venv/bin/python tests/rig/kafka_rig.py up --name main --nodes 5 --dirs 1

Five nodes, not the main rig's three: every partition that moves keeps a replica on a retired broker, and
one broker holding N replicas keeps N log segments open (one file each), so with this machine's 20,000
open files per process (the hard limit; not raisable here) no single broker can hold 20,000 replicas.
Two retired brokers of 10,000 replicas each (RF 2, the other replica on brokers 1-3) give 20,000 moves and
leave brokers 1-3 at about 13,300 replicas each. One log dir per node, so Kafka's tool gets the very
moves the operator executed (with two, the plan names dirs and Kafka's tool fails on thousands of
AlterReplicaLogDirs: tests/bench/run_exec_scale.py).

1. Topics of 2,000 partitions (``--partitions`` in all), RF 2, partition i on [retired[i % 2], (i // 2) %
   3 + 1] (the retired replica leads half of them), three records each.
2. The operator as a process (``kafka-placement operator --namespace NS``, as tests/e2e/conftest.py runs
   it, with its defaults: reconcile every 5 s, leader election on) against the rig's apiserver; a
   KafkaCluster (``throttleBytesPerSecond``) and a BrokerDecommission of the retired brokers (approval
   Automatic). Every second: the intent's phase and ``status.progress``, the execution record (its
   ConfigMap: done, submissions, in flight), the operator's RSS, each broker's open files.
3. Once the record shows ``--kill-at`` of the moves done, SIGKILL (the process group) and start a new
   operator at once; it takes the Lease once the dead one's expires and resumes from the record. Gap =
   the kill to the restarted operator's first save of the record, its first new submission, and
   ``status.progress`` moving again.
4. At Completed, against the record and Kafka: the record's submissions = the plan's moves, none
   resubmitted, each partition's submission count exactly 1; every plan partition where the plan says
   (replica order too); no replica on a retired broker; no reassignment in flight; no throttle config
   (broker rates, claims, topic throttled-replica lists) within 30 s; the operator's log: phase
   transitions outside the table (tests/e2e/transitions.py), tracebacks. The decommission is deleted (its
   finalizer lifts the cordons), then the KafkaCluster, and the operator stopped (SIGTERM).
5. The topics deleted, identical ones created under new names, and the operator's executed plan (topics
   renamed, dirs ``any``) given to ``ReassignPartitionsCommand --execute --throttle`` (the same rate),
   timed until ``--verify`` no longer reports a reassignment in progress (verify also removes its
   throttles); the same Kafka checks; the topics deleted.

Results replace this script's section of docs/benchmarks.md, with the command.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import gzip
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from tests.bench.run_exec_scale import PER_TOPIC, kafka_libs  # noqa: E402
from tests.bench.run_operator_path import install_crds  # noqa: E402
from tests.bench.run_spread import write_section  # noqa: E402
from tests.e2e.transitions import outside_the_table  # noqa: E402

from kafka_placement.kafka.connection import ConnectionSettings  # noqa: E402
from kafka_placement.kafka.gateway import CORDON_CONFIG, KafkaGateway  # noqa: E402
from kafka_placement.kafka.throttles import CLAIM_PREFIX  # noqa: E402
from kafka_placement.kafka.types import ConfigTarget  # noqa: E402
from kafka_placement.model.crd_parts import GROUP, PLURALS, VERSION  # noqa: E402
from kafka_placement.reconcile.record_store import DOC_KEY, configmap_name  # noqa: E402

HEADING = "## The operator executing 20,000 moves"
CLI = Path(sys.executable).parent / "kafka-placement"
CLUSTER = "bench"
INTENT = "retire"
BROKER_THROTTLE_KEYS = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
)
TOPIC_THROTTLE_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)


# ---- the rig and Kafka ----------------------------------------------------------------------------------


def rig() -> dict[str, Any]:
    path = Path(os.environ.get("KP_RIG_DIR", str(ROOT / ".rig"))) / "rig.json"
    if not path.exists():
        sys.exit(f"{path} not found: start the rig (see this script's docstring)")
    doc: dict[str, Any] = json.loads(path.read_text())
    if "kafka" not in doc or "k8s" not in doc:
        sys.exit(f"{path} lacks the main Kafka rig or the k8s rig")
    return doc


def assignment(i: int, retired: tuple[int, ...]) -> list[int]:
    dec, keep = retired[i % len(retired)], (i // 2) % 3 + 1
    return [dec, keep] if (i // 6) % 2 == 0 else [keep, dec]


def create_topics(bootstrap: str, prefix: str, n: int, retired: tuple[int, ...]) -> list[str]:
    """``n`` partitions over topics of PER_TOPIC (``assignment``), three records each; returns the names
    once every partition has its leader and a full ISR."""
    from confluent_kafka import KafkaException, Producer
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [f"{prefix}-{k}" for k in range((n + PER_TOPIC - 1) // PER_TOPIC)]
    counts = [min(PER_TOPIC, n - k * PER_TOPIC) for k in range(len(names))]
    for k, (name, count) in enumerate(zip(names, counts, strict=True)):
        first = k * PER_TOPIC
        topic = NewTopic(
            name,
            num_partitions=count,
            replica_assignment=[assignment(i, retired) for i in range(first, first + count)],
        )
        admin.create_topics([topic], request_timeout=300)[name].result(timeout=600)
    deadline = time.monotonic() + 900
    for name, count in zip(names, counts, strict=True):
        while True:
            try:
                md = admin.list_topics(topic=name, timeout=60).topics[name]
                if len(md.partitions) == count and all(
                    len(p.isrs) == 2 and p.leader >= 0 for p in md.partitions.values()
                ):
                    break
            except Exception as e:  # a busy rig answers late: look again within the deadline
                log(f"topic {name}: {e}")
            if time.monotonic() > deadline:
                sys.exit(f"topic {name} did not become healthy")
            time.sleep(2)
    log(f"{n} partitions healthy; producing")
    # acks=1: with acks=all, 20,000 partitions' first records waited on the followers' fetches for more
    # than the request timeout on this 2-core rig, and the retries made it crawl (under 100 partitions a
    # minute); the records only give each partition a few bytes to copy
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "acks": 1, "log_level": 3})
    failed: list[tuple[str, int, str]] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failed.append((msg.topic(), msg.partition(), str(err)))

    todo = [(name, p) for name, count in zip(names, counts, strict=True) for p in range(count)] * 3
    for attempt in range(6):  # a broker behind on the metadata log answers "unknown partition" for a while
        for name, p in todo:
            try:
                producer.produce(name, value=os.urandom(200), partition=p, on_delivery=delivered)
            except KafkaException as e:  # the producer's metadata does not know the topic yet
                failed.append((name, p, str(e)))
            producer.poll(0)
        left = producer.flush(600)
        if left:
            sys.exit(f"{left} records not acknowledged")
        if not failed:
            return names
        log(f"{len(failed)} records failed ({failed[0][2]}): again in 10 s")
        todo, failed[:] = [(t, p) for t, p, _ in failed], []
        time.sleep(10 * (attempt + 1))
    sys.exit("records kept failing")


def delete_topics(bootstrap: str, names: list[str]) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.delete_topics(names, request_timeout=300).values():
        f.result(timeout=600)
    deadline = time.monotonic() + 600
    while set(names) & set(admin.list_topics(timeout=60).topics):
        if time.monotonic() > deadline:
            sys.exit(f"topics {names} still listed 10 minutes after their deletion")
        time.sleep(2)


def gateway(bootstrap: str) -> KafkaGateway:
    return KafkaGateway(ConnectionSettings(bootstrap_servers=bootstrap, request_timeout_s=120))


def configs_left(
    bootstrap: str, brokers: list[int], topics: list[str], cordons: bool = False
) -> dict[str, str]:
    """Throttle configs (broker rates and claims, topic throttled-replica lists), with ``cordons`` the
    dynamic cordons too."""
    found: dict[str, str] = {}
    with gateway(bootstrap) as gw:
        for b in brokers:
            target = ConfigTarget.broker(b)
            for key, entry in gw.describe_configs([target])[target].items():
                cordon = cordons and key == CORDON_CONFIG and entry.source.startswith("DYNAMIC")
                if (key in BROKER_THROTTLE_KEYS or cordon) and entry.value not in (None, ""):
                    found[f"broker {b} {key}"] = str(entry.value)[:80]
                elif key.startswith(CLAIM_PREFIX):
                    found[f"broker {b} {key}"] = "claimed"
        targets = [ConfigTarget.topic(t) for t in topics]
        for target, entries in gw.describe_configs(targets).items():
            for key in TOPIC_THROTTLE_KEYS:
                entry = entries.get(key)
                if entry is not None and entry.value not in (None, ""):
                    found[f"topic {target.name} {key}"] = str(entry.value)[:80]
    return found


def wait_no_configs(bootstrap: str, brokers: list[int], topics: list[str], timeout: float = 30) -> tuple:
    """(seconds until no throttle config was left, or None; what was left at the end)."""
    started = time.monotonic()
    while True:
        left = configs_left(bootstrap, brokers, topics)
        if not left:
            return time.monotonic() - started, {}
        if time.monotonic() - started > timeout:
            return None, left
        time.sleep(1)


def kafka_checks(
    bootstrap: str, brokers: list[int], topics: list[str], retired: tuple[int, ...], targets: dict
) -> dict[str, Any]:
    """Placement against the plan's targets, replicas on retired brokers, reassignments in flight."""
    with gateway(bootstrap) as gw:
        snap = gw.snapshot()
        in_flight = gw.list_reassignments()
    ours = [p for p in snap.partitions if p.topic in set(topics)]
    exact = sum(1 for p in ours if targets.get((p.topic, p.partition)) == tuple(p.replicas))
    as_set = sum(1 for p in ours if set(targets.get((p.topic, p.partition), ())) == set(p.replicas))
    on_retired = sum(1 for p in ours if set(p.replicas) & set(retired))
    out = {
        "partitions": len(ours),
        "atTargetExact": exact,
        "atTargetAsSet": as_set,
        "onRetired": on_retired,
        "reassignmentsInFlight": len(in_flight),
        "underReplicated": sum(1 for p in ours if len(p.isr) < len(p.replicas)),
    }
    seconds, left = wait_no_configs(bootstrap, brokers, topics)
    out["configsClearedS"], out["configsLeft"] = seconds, left
    return out


def in_kafka(bootstrap: str, into: dict[str, Any]) -> None:
    """The reassignments Kafka has in flight (read right after the kill, beside the sampling)."""
    t = time.time()
    try:
        with gateway(bootstrap) as gw:
            into["kafkaInFlight"] = len(gw.list_reassignments())
        into["kafkaInFlightReadS"] = time.time() - t
    except Exception as e:
        into["kafkaInFlight"] = f"unread: {e}"


# ---- Kubernetes and the operator ----------------------------------------------------------------------


class Operator:
    """``kafka-placement operator --namespace NS`` as a child process with its defaults (metrics off)."""

    def __init__(self, ns: str, kubeconfig: str, log_path: Path) -> None:
        self.ns, self.kubeconfig, self.log = ns, kubeconfig, log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.hwm_kb = 0

    def start(self) -> None:
        env = {**os.environ, "KUBECONFIG": self.kubeconfig}
        out = self.log.open("ab")
        self.proc = subprocess.Popen(
            [str(CLI), "operator", "--namespace", self.ns, "--metrics-port", "0"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        self.hwm_kb = 0

    def sample(self) -> tuple[int, int]:
        """(RSS, peak RSS) in kB of the process now; the peak is kept until the next start."""
        if self.proc is None:
            return 0, self.hwm_kb
        try:
            text = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return 0, self.hwm_kb
        rss = re.search(r"VmRSS:\s+(\d+)", text)
        hwm = re.search(r"VmHWM:\s+(\d+)", text)
        self.hwm_kb = max(self.hwm_kb, int(hwm.group(1)) if hwm else 0)
        return (int(rss.group(1)) if rss else 0), self.hwm_kb

    def stop(self, sig: int = signal.SIGKILL) -> int:
        """Signal the process group; returns the peak RSS (kB) seen last."""
        self.sample()
        peak = self.hwm_kb
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(30)
        self.proc = None
        return peak


class Kube:
    def __init__(self, kubeconfig: str) -> None:
        from kubernetes import client, config

        api = config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)

    def create(self, ns: str, kind: str, name: str, spec: dict[str, Any]) -> None:
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": kind, "metadata": {"name": name}, "spec": spec}
        self.custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURALS[kind], body)

    def get(self, ns: str, kind: str, name: str) -> dict[str, Any]:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            body: dict[str, Any] = self.custom.get_namespaced_custom_object(
                GROUP, VERSION, ns, PLURALS[kind], name
            )
            return body
        except (ApiException, HTTPError):
            return {}

    def delete(self, ns: str, kind: str, name: str, timeout: float = 180) -> float | None:
        """Delete and wait until gone: the seconds it took, None if it was still there at ``timeout``."""
        started = time.monotonic()
        self.custom.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURALS[kind], name)
        while self.get(ns, kind, name):
            if time.monotonic() - started > timeout:
                return None
            time.sleep(1)
        return time.monotonic() - started

    def record(self, ns: str) -> dict[str, Any]:
        """The execution record's progress document ({} if none yet)."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            cm = self.core.read_namespaced_config_map(configmap_name(CLUSTER, "execution"), ns)
        except (ApiException, HTTPError):
            return {}
        data = (cm.binary_data or {}).get(DOC_KEY)
        doc: dict[str, Any] = json.loads(gzip.decompress(base64.b64decode(data))) if data else {}
        return doc


def executed_plan(kubeconfig: str, ns: str) -> Any:
    """The plan of the cluster's execution record, read through the operator's own store."""
    from kafka_placement.execution.record import Execution
    from kafka_placement.kube.gateway import KubeGateway, load_config
    from kafka_placement.reconcile.record_store import ConfigMapStore

    store = ConfigMapStore(KubeGateway(load_config(kubeconfig)), ns, CLUSTER, {})
    execution = Execution.load(store)
    assert execution is not None
    return execution.plan.plan


class OpenFiles(threading.Thread):
    """Each broker JVM's open files, sampled every few seconds: the peak per broker."""

    def __init__(self, pids: dict[int, int]) -> None:
        super().__init__(daemon=True)
        self.pids, self.peak = pids, dict.fromkeys(pids, 0)
        self.base = {node: self.count(pid) for node, pid in pids.items()}
        self.stopping = threading.Event()

    @staticmethod
    def count(pid: int) -> int:
        try:
            return len(os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            return 0

    def wait_released(self, above: int = 500, timeout: float = 300) -> float:
        """Until every broker holds at most ``above`` files more than at the start (a deleted topic's
        logs stay open until Kafka's file.delete.delay.ms, 60 s, has passed); the seconds waited."""
        started = time.monotonic()
        while any(self.count(pid) > self.base[node] + above for node, pid in self.pids.items()):
            if time.monotonic() - started > timeout:
                break
            time.sleep(2)
        return time.monotonic() - started

    def run(self) -> None:
        while not self.stopping.is_set():
            for node, pid in self.pids.items():
                self.peak[node] = max(self.peak[node], self.count(pid))
            self.stopping.wait(5)


# ---- the operator's run ----------------------------------------------------------------------------------


def run_operator(
    args: argparse.Namespace, bootstrap: str, kubeconfig: str, topics: list[str], work: Path
) -> dict[str, Any]:
    retired = tuple(int(b) for b in args.retired.split(","))
    kube = Kube(kubeconfig)
    ns = f"kp-bench-exec-{uuid.uuid4().hex[:6]}"
    kube.core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    op = Operator(ns, kubeconfig, work / "operator.log")
    op.start()
    try:
        return _drive(args, op, kube, ns, bootstrap, kubeconfig, topics, retired)
    finally:
        op.stop(signal.SIGKILL)  # only when something failed: the run stops it itself


def _drive(
    args: argparse.Namespace,
    op: Operator,
    kube: Kube,
    ns: str,
    bootstrap: str,
    kubeconfig: str,
    topics: list[str],
    retired: tuple[int, ...],
) -> dict[str, Any]:
    kube.create(
        ns, "KafkaCluster", CLUSTER, {"bootstrapServers": bootstrap, "throttleBytesPerSecond": args.throttle}
    )
    time.sleep(2)
    started = time.time()
    kube.create(ns, "BrokerDecommission", INTENT, {"clusterRef": {"name": CLUSTER}, "brokers": list(retired)})
    log(f"operator {op.proc.pid if op.proc else '?'} in {ns}; decommission of {retired} applied")
    samples: list[dict[str, Any]] = []
    r: dict[str, Any] = {"namespace": ns}
    executing_at = kill = None
    first_save = first_submit = progress_moved = None
    phases: list[tuple[float, str]] = []
    while True:
        now = time.time()
        status = kube.get(ns, "BrokerDecommission", INTENT).get("status") or {}
        rec = kube.record(ns)
        rss, _ = op.sample()
        phase = status.get("phase", "")
        prog = status.get("progress") or {}
        counters = rec.get("counters") or {}
        s = {
            "t": round(now - started, 1),
            "phase": phase,
            "done": prog.get("partitionsDone"),
            "total": prog.get("partitionsTotal"),
            "recPhase": rec.get("phase"),
            "recDone": rec.get("doneCount"),
            "submissions": counters.get("submissions"),
            "inFlight": len(rec.get("inFlight") or {}),
            "updatedAt": rec.get("updatedAt"),
            "rssKb": rss,
        }
        samples.append(s)
        if not phases or phases[-1][1] != phase:
            phases.append((s["t"], phase))
            log(f"phase {phase} at {s['t']} s: {prog.get('summary')}")
        if phase == "Executing" and executing_at is None:
            executing_at = now
        if len(samples) % 15 == 0:
            log(f"{s}")
        total = rec.get("partitions") or 0
        # killed with moves in flight: the tick that counts a wave done saves before it submits the next
        moving = rec.get("phase") in ("Moving", "Paused", "Throttling") and s["inFlight"] > 0
        if kill is None and total and moving and (rec.get("doneCount") or 0) >= args.kill_at * total:
            peak = op.stop(signal.SIGKILL)
            killed_at = time.time()
            op.start()
            kill = {"at": killed_at, "t": killed_at - started, "peakKb": peak, "restartedAt": time.time(),
                    "record": {k: s[k] for k in ("recDone", "submissions", "inFlight", "recPhase")},
                    "status": {k: s[k] for k in ("done", "total", "phase")}}  # fmt: skip
            threading.Thread(target=in_kafka, args=(bootstrap, kill), daemon=True).start()
            pid = op.proc.pid if op.proc else "?"
            log(f"SIGKILL at {kill['t']:.1f} s: {kill['record']}; restarted as {pid}")
        elif kill is not None:
            if first_save is None and (rec.get("updatedAt") or 0) > kill["at"]:
                first_save = now
                log(f"first save of the restarted operator {now - kill['at']:.1f} s after the kill")
            if first_submit is None and (counters.get("submissions") or 0) > kill["record"]["submissions"]:
                first_submit = now
                log(f"first new submission {now - kill['at']:.1f} s after the kill")
            if progress_moved is None and (prog.get("partitionsDone") or 0) > (kill["status"]["done"] or 0):
                progress_moved = now
        if phase == "Completed" and (rec.get("phase") == "Completed"):
            break
        if phase == "Failed" or rec.get("phase") in ("Failed", "Cancelled"):
            r["failure"] = {"status": status, "recordPhase": rec.get("phase"), "error": rec.get("lastError")}
            log(f"FAILED: {r['failure']}")
            break
        if now - started > args.timeout:
            r["failure"] = {"timeout": args.timeout, "status": status}
            log("timed out")
            break
        time.sleep(1)
    done_at = time.time()
    final = kube.record(ns)
    r.update(
        startedAt=started,
        totalS=done_at - started,
        planningS=(executing_at - started) if executing_at else None,
        executingS=(done_at - executing_at) if executing_at else None,
        kill=kill,
        firstSaveS=(first_save - kill["at"]) if kill and first_save else None,
        firstSubmitS=(first_submit - kill["at"]) if kill and first_submit else None,
        progressMovedS=(progress_moved - kill["at"]) if kill and progress_moved else None,
        phases=phases,
        samples=samples,
        record={
            k: final.get(k)
            for k in ("phase", "partitions", "doneCount", "counters", "planId", "createdAt", "finishedAt")
        },
        status=kube.get(ns, "BrokerDecommission", INTENT).get("status") or {},
    )
    # the record's per-partition submission counts
    from kafka_placement.execution.record import unpack

    submits = unpack(final.get("submits") or "", final.get("partitions") or 0, "record")
    r["submitCounts"] = {str(c): submits.count(c) for c in sorted(set(submits))}
    plan = executed_plan(kubeconfig, ns)
    r["planMoves"] = len(plan.partitions)
    r["plan"] = plan
    brokers = [n["id"] for n in rig()["kafka"]["nodes"]]
    targets = {p.key: tuple(p.replicas) for p in plan.partitions}
    log("checking against Kafka")
    r["kafka"] = kafka_checks(bootstrap, brokers, topics, retired, targets)
    log(f"checks: {r['kafka']}")
    # the decommission's finalizer lifts the cordons; then the cluster; then the operator stops
    r["deleteIntentS"] = kube.delete(ns, "BrokerDecommission", INTENT)
    r["deleteClusterS"] = kube.delete(ns, "KafkaCluster", CLUSTER)
    r["peakKbSecond"] = op.stop(signal.SIGTERM)
    r["peakKbFirst"] = kill["peakKb"] if kill else None
    text = op.log.read_text(errors="replace")
    r["outsideTable"] = outside_the_table(text)
    r["tracebacks"] = text.count("Traceback (most recent call last)")
    errors = [line for line in text.splitlines() if " ERROR " in line or "[ERROR" in line]
    temporary = [e for e in errors if "failed temporarily" in e]  # kopf retries the handler
    r["temporaryErrors"] = len(temporary)
    errors = [e for e in errors if e not in temporary]
    r["errorLines"], r["errorSamples"] = len(errors), [e[:300] for e in (errors or temporary)[:10]]
    r["afterDeletion"] = configs_left(bootstrap, brokers, topics, cordons=True)
    return r


# ---- Kafka's tool -------------------------------------------------------------------------------------


def run_kafka_tool(
    args: argparse.Namespace, bootstrap: str, plan: Any, topics: list[str], new: list[str], work: Path
) -> dict[str, Any]:
    libs = kafka_libs()
    rename = dict(zip(topics, new, strict=True))
    doc = plan.to_json()
    for e in doc["partitions"]:
        e["topic"] = rename[e["topic"]]
        e["log_dirs"] = ["any"] * len(e["replicas"])
    path = work / "kafka-plan.json"
    path.write_text(json.dumps(doc))
    tool = ["java", "-cp", f"{libs}/*", "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
            "--bootstrap-server", bootstrap]  # fmt: skip
    base = [*tool, "--reassignment-json-file", str(path)]
    # the KRaft controller takes at most 10,000 records in one operation: a request of 20,000 moves had
    # its last 10,000 refused (UNKNOWN_SERVER_ERROR), so the moves go in chunks, the later --additional
    parts = doc["partitions"]
    started = time.monotonic()
    for c, at in enumerate(range(0, len(parts), args.kafka_chunk)):
        chunk = work / f"kafka-plan-{c}.json"
        chunk.write_text(json.dumps({"version": 1, "partitions": parts[at : at + args.kafka_chunk]}))
        extra = ["--additional"] if c else []
        out = subprocess.run(
            [*tool, "--reassignment-json-file", str(chunk), "--execute", *extra,
             "--throttle", str(args.throttle), "--timeout", "600000"],
            capture_output=True,
            text=True,
        )  # fmt: skip
        (work / f"kafka-execute-{c}.out").write_text(out.stdout + out.stderr)
        if out.returncode != 0:
            errors = sum(1 for line in out.stdout.splitlines() if ": The server experienced" in line)
            where = work / f"kafka-execute-{c}.out"
            sys.exit(f"--execute failed ({errors} partitions refused; {where}): {out.stderr[-800:]}")
    submitted = time.monotonic() - started
    log(f"Kafka's tool submitted {len(doc['partitions'])} moves in {submitted:.1f} s")
    verifies = 0
    while True:
        out = subprocess.run([*base, "--verify"], capture_output=True, text=True)
        verifies += 1
        if "in progress" not in out.stdout and out.returncode == 0:
            break
        if time.monotonic() - started > args.timeout:
            sys.exit("Kafka's reassignment did not finish in time")
        time.sleep(1)
    seconds = time.monotonic() - started
    log(f"Kafka's tool: done in {seconds:.1f} s ({verifies} --verify runs)")
    return {"seconds": seconds, "submitS": submitted, "verifies": verifies, "moves": len(doc["partitions"])}


# ---- report --------------------------------------------------------------------------------------------


def steps_of(samples: list[dict[str, Any]]) -> str:
    seen = [s["submissions"] for s in samples if s["submissions"] is not None]
    steps = [b - a for a, b in itertools.pairwise(seen) if b != a]
    return ", ".join(str(x) for x in steps)


def section(r: dict[str, Any], k: dict[str, Any], meta: dict[str, Any]) -> list[str]:
    moves = r["planMoves"]
    kill = r["kill"] or {}
    rec = r["record"]
    counters = rec.get("counters") or {}

    def secs(x: float | None) -> str:
        return "-" if x is None else f"{x:.1f}"

    ours_exec = r["executingS"]
    lines = [
        HEADING,
        "",
        f"`{meta['command']}` (one run, {meta['when']}, commit {meta['commit']}, {os.cpu_count()} cores, "
        f"load average {meta['load']:.1f} at the start). The rig: Kafka {meta['kafkaVersion']} KRaft, "
        f"{meta['nodes']} combined broker+controller nodes of one log dir each, heap {meta['heap']}, "
        "vm.max_map_count 262144 (raised from 65530 by this run's author; the brokers' index maps), and the "
        "k8s rig's kube-apiserver, on the same host. Why five nodes: a broker keeps each replica's log "
        "segment open, and this machine allows 20,000 open files per process (a hard limit that cannot be "
        "raised here), so one broker cannot hold the 20,000 replicas of a one-broker decommission: two "
        f"retired brokers ({meta['retired']}) hold 10,000 each (RF 2, the other replica on brokers 1-3), "
        "20,000 moves in all.",
        "",
        f"{meta['partitions']} partitions in topics of {PER_TOPIC}, three records of 200 bytes each. The "
        "operator ran as a process (`kafka-placement operator --namespace NS`, its defaults: reconcile "
        "every 5 s, leader election on, limits of the KafkaCluster's defaults) against the apiserver; a "
        f"KafkaCluster with `throttleBytesPerSecond: {meta['throttle']}` and a BrokerDecommission of brokers "
        f"{meta['retired']} (approval Automatic). When its execution record showed {meta['killAt']:.0%} of "
        "the moves done it was SIGKILLed and a new operator started at once (it waits for the dead one's "
        "Lease to expire, then resumes from the record). Kafka's tool: the topics deleted, identical ones "
        "created under new names, the plan the operator executed (dirs `any`; one dir per broker, so the "
        "same moves) given to `ReassignPartitionsCommand --execute --throttle "
        f"{meta['throttle']}`, timed until `--verify` reports no reassignment in progress.",
        "",
        "| who | moves | wall s | s/move | planning s | executing s | restart gap s |",
        "|---|---|---|---|---|---|---|",
        f"| operator (with the restart) | {moves} | {r['totalS']:.1f} | {r['totalS'] / moves:.4f} "
        f"| {secs(r['planningS'])} | {secs(ours_exec)} | {secs(r['firstSubmitS'])} |",
        f"| Kafka's tool | {k['moves']} | {k['seconds']:.1f} | {k['seconds'] / k['moves']:.4f} | - "
        f"| {k['seconds']:.1f} | - |",
        "",
        "Operator wall = the BrokerDecommission applied to Completed on both the intent and its record; "
        "planning = applied to the first Executing seen (snapshot, plan, review, record); executing = the "
        "rest, the restart included"
        + (
            f" (executing vs Kafka's tool: {ours_exec / k['seconds']:.2f}x; operator per move while "
            f"executing {ours_exec / moves:.4f} s)"
            if ours_exec
            else ""
        )
        + f". Kafka's tool's --execute call itself took {k['submitS']:.1f} s, then {k['verifies']} "
        "`--verify` runs (one JVM each).",
        "",
        f"The restart: SIGKILL at {kill.get('t', 0):.1f} s with the record at "
        f"{(kill.get('record') or {}).get('recDone')} done, {(kill.get('record') or {}).get('submissions')} "
        f"submitted, {(kill.get('record') or {}).get('inFlight')} in flight; Kafka: "
        f"{kill.get('kafkaInFlight')} reassignments in flight (read within "
        f"{kill.get('kafkaInFlightReadS') or 0:.1f} s of the kill); status.progress "
        f"{(kill.get('status') or {}).get('done')}/{(kill.get('status') or {}).get('total')}; the new "
        f"process started at once; its first save of the record {secs(r['firstSaveS'])} s after the kill, "
        f"its first new submission {secs(r['firstSubmitS'])} s after, status.progress moving again "
        f"{secs(r['progressMovedS'])} s after (the Lease's 15 s expiry is part of it). Peak RSS of the "
        f"operator: {(r['peakKbFirst'] or 0) / 1024:.0f} MB (the first process), "
        f"{(r['peakKbSecond'] or 0) / 1024:.0f} MB (the restarted one). Peak open files per broker: "
        f"{meta.get('openFiles', 'not sampled')}.",
        "",
        "Checks, the operator's run: record "
        f"{rec.get('phase')}, {rec.get('doneCount')}/{rec.get('partitions')} done, submissions "
        f"{counters.get('submissions')}, resubmitted {counters.get('resubmitted')}, refused "
        f"{counters.get('refused')}, unsent {counters.get('unsent')}, conflicts {counters.get('conflicts')}; "
        f"per-partition submission counts {r['submitCounts']} (count: partitions); Kafka: "
        f"{r['kafka']['atTargetExact']}/{r['kafka']['partitions']} partitions exactly where the plan says "
        f"({r['kafka']['atTargetAsSet']} as sets), {r['kafka']['onRetired']} with a replica on a retired "
        f"broker, {r['kafka']['reassignmentsInFlight']} reassignments in flight, "
        f"{r['kafka']['underReplicated']} under-replicated, throttle configs "
        + (
            f"gone {r['kafka']['configsClearedS']:.1f} s after Completed"
            if r["kafka"]["configsClearedS"] is not None
            else f"LEFT: {r['kafka']['configsLeft']}"
        )
        + f"; after the decommission's deletion ({secs(r['deleteIntentS'])} s) and the cluster's: "
        f"{r['afterDeletion'] or 'no throttle or cordon config'}; the operator's log: "
        f"{len(r['outsideTable'])} phase transitions outside the table, {r['tracebacks']} tracebacks, "
        f"{r['errorLines']} ERROR lines besides {r['temporaryErrors']} of kopf's handler retries "
        "(`failed temporarily`).",
        "",
        f"Checks, Kafka's tool: {k['kafka']['atTargetExact']}/{k['kafka']['partitions']} at the plan's "
        f"targets, {k['kafka']['onRetired']} on a retired broker, {k['kafka']['reassignmentsInFlight']} in "
        "flight, throttle configs "
        + (
            f"gone {k['kafka']['configsClearedS']:.1f} s after the last --verify"
            if k["kafka"]["configsClearedS"] is not None
            else f"LEFT: {k['kafka']['configsLeft']}"
        )
        + ".",
        "",
        "Submissions, as the record's count grew from one sample to the next (a step = the moves one tick "
        f"submitted): {steps_of(r['samples'])}.",
        "",
        "Progress of the operator's run (status.progress and the record, sampled every second; every "
        "tenth of the moves):",
        "",
        "| t s | phase | status done | record done | submitted | in flight | operator RSS MB |",
        "|---|---|---|---|---|---|---|",
    ]
    step, last = max(moves // 10, 1), -1
    for s in r["samples"]:
        mark = (s["recDone"] or 0) // step
        if mark != last or s is r["samples"][-1] or (kill and abs(s["t"] - kill.get("t", -9)) < 1.01):
            last = mark
            lines.append(
                f"| {s['t']:.0f} | {s['phase']} | {s['done']} | {s['recDone']} | {s['submissions']} "
                f"| {s['inFlight']} | {s['rssKb'] / 1024:.0f} |"
            )
    lines.append("")
    return lines


def kafka_step(
    args: argparse.Namespace,
    bootstrap: str,
    nodes: list[dict[str, Any]],
    retired: tuple[int, ...],
    plan: Any,
    topics: list[str],
    n: int,
    work: Path,
) -> dict[str, Any]:
    """Kafka's tool on ``plan``: identical topics created under new names, the moves run and timed, where
    Kafka put every partition checked, the topics deleted."""
    log(f"creating {n} partitions for Kafka's tool")
    new = create_topics(bootstrap, f"bench-opexec-kt-{uuid.uuid4().hex[:6]}", n, retired)
    k = run_kafka_tool(args, bootstrap, plan, topics, new, work)
    rename = dict(zip(topics, new, strict=True))
    targets = {(rename[p.topic], p.partition): tuple(p.replicas) for p in plan.partitions}
    k["kafka"] = kafka_checks(bootstrap, [node["id"] for node in nodes], new, retired, targets)
    log(f"Kafka's tool checks: {k['kafka']}")
    delete_topics(bootstrap, new)
    return k


def kafka_only(args: argparse.Namespace) -> None:
    """Kafka's tool alone on a plan file written by a run (its topics recreated under new names)."""
    from kafka_placement.model.plan import Plan

    doc = rig()
    bootstrap, nodes = doc["kafka"]["bootstrapServers"], doc["kafka"]["nodes"]
    retired = tuple(int(b) for b in args.retired.split(","))
    plan = Plan.loads(Path(args.kafka_plan).read_text())
    topics = sorted({p.topic for p in plan.partitions}, key=lambda t: int(t.rsplit("-", 1)[1]))
    n = sum(1 for _ in plan.partitions)
    work = Path(tempfile.mkdtemp(prefix="kp-opexec-"))
    log(f"work dir {work}")
    k = kafka_step(args, bootstrap, nodes, retired, plan, topics, n, work)
    if args.json:
        Path(args.json).write_text(json.dumps({"kafka": k}, default=str))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=20000)
    ap.add_argument("--kill-at", type=float, default=0.4)
    ap.add_argument("--retired", default="4,5")
    ap.add_argument("--throttle", type=int, default=52_428_800)
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "benchmarks.md"))
    ap.add_argument("--no-doc", action="store_true")
    ap.add_argument("--json", default=None, help="also write the raw measurements here")
    ap.add_argument("--kafka-plan", default=None, help="Kafka's tool alone on this plan's moves")
    ap.add_argument("--kafka-chunk", type=int, default=10000, help="moves per --execute of Kafka's tool")
    ap.add_argument("--from-json", default=None, help="write the section from a run's --json, run nothing")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the operator process is stopped on exit
    if args.from_json:  # several files: merged, the later's keys win (an operator run, a Kafka-only run)
        raw = {}
        for name in args.from_json.split(","):
            raw.update(json.loads(Path(name).read_text()))
        lines = section(raw["operator"], raw["kafka"], raw["meta"])
        print("\n".join(lines))
        if not args.no_doc:
            write_section(Path(args.output), lines, HEADING)
        return
    if args.kafka_plan:
        kafka_only(args)
        return
    doc = rig()
    bootstrap, kubeconfig = doc["kafka"]["bootstrapServers"], doc["k8s"]["kubeconfig"]
    nodes = doc["kafka"]["nodes"]
    retired = tuple(int(b) for b in args.retired.split(","))
    if not set(retired) <= {n["id"] for n in nodes} or len(nodes) - len(retired) < 3:
        sys.exit(f"the rig's brokers {[n['id'] for n in nodes]}: need {retired} and brokers 1-3 besides")
    meta: dict[str, Any] = {
        "command": "tests/bench/run_operator_exec.py " + " ".join(sys.argv[1:]),
        "when": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "load": os.getloadavg()[0],
        "kafkaVersion": doc["kafka"].get("version"),
        "nodes": len(nodes),
        "heap": os.environ.get("KP_KAFKA_HEAP", "as started (KP_KAFKA_HEAP of the rig's start)"),
        "retired": list(retired),
        "partitions": args.partitions,
        "throttle": args.throttle,
        "killAt": args.kill_at,
    }
    pids = {}
    for n in nodes:
        pids[n["id"]] = n["pid"]
        heap = re.search(r"-Xmx(\S+)", Path(f"/proc/{n['pid']}/cmdline").read_text().replace("\0", " "))
        meta["heap"] = heap.group(1) if heap else meta["heap"]
    files = OpenFiles(pids)
    files.start()
    install_crds(kubeconfig)
    work = Path(tempfile.mkdtemp(prefix="kp-opexec-"))  # kept: the operator's log, the plan given to Kafka
    log(f"work dir {work}")
    log(f"creating {args.partitions} partitions")
    t = time.monotonic()
    topics = create_topics(bootstrap, f"bench-opexec-{uuid.uuid4().hex[:6]}", args.partitions, retired)
    log(f"created in {time.monotonic() - t:.0f} s")
    r = run_operator(args, bootstrap, kubeconfig, topics, work)
    if r.get("failure"):
        sys.exit(f"the operator's run failed: {r['failure']} (its log: {work / 'operator.log'})")
    plan = r.pop("plan")
    log("deleting the operator's topics")
    delete_topics(bootstrap, topics)
    log(f"the deleted logs released after {files.wait_released():.0f} s")
    if args.json:  # the operator's part, kept should the rest fail
        Path(args.json).write_text(json.dumps({"operator": r, "meta": meta}, default=str))
    k = kafka_step(args, bootstrap, nodes, retired, plan, topics, args.partitions, work)
    files.stopping.set()
    meta["openFiles"] = ", ".join(f"{b}: {c}" for b, c in sorted(files.peak.items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"operator": r, "kafka": k, "meta": meta}, default=str))
    lines = section(r, k, meta)
    print("\n".join(lines))
    if not args.no_doc:
        write_section(Path(args.output), lines, HEADING)


if __name__ == "__main__":
    main()
