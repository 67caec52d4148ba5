"""Pre-emption at scale on the real rig: a heal supersedes a running rebalance of thousands of moves.

    flock /tmp/rig-broker.lock .venv/bin/python tests/bench/run_preempt_bench.py \
        [--partitions 3000] [--mb 300] [--throttle 2000000] [--per-broker 50] [--after 30]

Needs the main Kafka rig and the k8s rig (`make rig-up`); kills broker 3 (restarted afterwards, always),
so run it under `flock /tmp/rig-broker.lock` and when no tests run if you can.

A topic of N partitions with RF 2, every replica on brokers 1 and 2 ([1, 2], [2, 1], ...), holding MB
megabytes; the operator (a process, as the e2e tests run it) with a KafkaCluster (throttle T, at most
``--per-broker`` moves per broker, self-healing of a dead broker after ``--after`` seconds, approval
Automatic) and a PlacementPolicy balancing the topic over the three brokers: about 2N/3 moves, every one
to broker 3. Once a tenth of them are done, broker 3 is SIGKILLed: its moves in flight can never finish.
Measured: when the operator lists broker 3 dead, when the heal (a BrokerDecommission of broker 3) is
created, when it supersedes the rebalance (the execution record names a new plan), when the new plan's
first move is submitted (the earliest in-flight entry that the record did not adopt), and when the heal is
Completed. Checked, or the run fails: the superseded plan's moves in flight were adopted or re-targeted
(none cancelled: the record's ``cancels`` is 0), no move was submitted twice (``resubmitted`` 0), and a
fresh read shows no replica of the topic on broker 3 and every partition in sync. The section of
docs/benchmarks.md is replaced (--output).
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
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "bench"))

from run_exec_scale import write_section  # noqa: E402  (one writer of benchmark sections)
from run_heal_bench import admin, create_topic, node, produce  # noqa: E402

SECTION = "## Pre-emption at scale: a heal supersedes a running rebalance"
DEAD = 3


def rig_json() -> dict[str, Any]:
    path = Path(os.environ.get("KP_RIG_DIR", str(ROOT / ".rig"))) / "rig.json"
    if not path.exists():
        sys.exit(f"{path} not found: start the rig (make rig-up)")
    doc: dict[str, Any] = json.loads(path.read_text())
    if "kafka" not in doc or "k8s" not in doc:
        sys.exit("the main Kafka rig and the k8s rig must be up (make rig-up)")
    return doc


class Kube:
    """kubectl of the rig in one namespace."""

    def __init__(self, k8s: dict[str, Any], ns: str) -> None:
        self.bin, self.config, self.ns = str(Path(k8s["binDir"]) / "kubectl"), str(k8s["kubeconfig"]), ns

    def __call__(self, *args: str, input: str | None = None, ns: bool = True) -> str:
        cmd = [self.bin, "--kubeconfig", self.config, *(["-n", self.ns] if ns else []), *args]
        out = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=180)
        if out.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args[:3])}: {out.stderr.strip()[-800:]}")
        return out.stdout

    def get(self, kind: str, name: str) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self("get", kind, name, "-o", "json"))
        return found

    def record(self, cluster: str) -> dict[str, Any]:
        import base64
        import gzip

        from kafka_placement.reconcile.record_store import DOC_KEY, configmap_name

        out = subprocess.run(
            [self.bin, "--kubeconfig", self.config, "-n", self.ns, "get", "configmap",
             configmap_name(cluster), "-o", "json"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        if out.returncode != 0:
            return {}
        data = json.loads(out.stdout).get("binaryData", {}).get(DOC_KEY)
        doc: dict[str, Any] = json.loads(gzip.decompress(base64.b64decode(data))) if data else {}
        return doc


def until(what: str, check: Any, timeout: float, log: Path, every: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:]) if log.exists() else ""
            raise RuntimeError(f"{what}: not within {timeout:.0f} s\noperator log:\n{tail}")
        time.sleep(every)


def run_once(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from tests.e2e.conftest import Operator

    from kafka_placement.kafka.connection import ConnectionSettings
    from kafka_placement.kafka.gateway import KafkaGateway

    rig = rig_json()
    bootstrap = rig["kafka"]["bootstrapServers"]
    ns = f"bench-preempt-{uuid.uuid4().hex[:6]}"
    kube = Kube(rig["k8s"], ns)
    kube("apply", "-f", str(ROOT / "crds"), ns=False)
    kube("create", "namespace", ns, ns=False)
    topic = f"preempt-{uuid.uuid4().hex[:8]}"
    create_topic(
        bootstrap, topic, args.partitions, [[1, 2] if i % 2 else [2, 1] for i in range(args.partitions)]
    )
    produce(bootstrap, topic, args.partitions, args.mb * 1_000_000 // args.partitions)
    log = work / "operator.log"
    op = Operator(ns, kube.config, log)
    op.start()
    killed = False
    row: dict[str, Any] = {"partitions": args.partitions, "throttle": args.throttle, "after": args.after}
    try:
        kube(
            "apply", "-f", "-",
            input=(
                "apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {name: busy}\n"
                f"spec: {{bootstrapServers: '{bootstrap}', throttleBytesPerSecond: {args.throttle}, "
                f"limits: {{maxMovesPerBroker: {args.per_broker}, maxMovesInFlight: {args.per_broker}}}, "
                f"selfHealing: {{brokerFailure: {{enabled: true, afterSeconds: {args.after}}}, "
                "approval: Automatic}}\n---\n"
                "apiVersion: kafkaplacement.io/v1alpha1\nkind: PlacementPolicy\nmetadata: {name: spread}\n"
                f"spec: {{clusterRef: {{name: busy}}, topics: {{include: ['{topic}']}}, "
                "balance: {brokers: true, tolerance: 0.05}}\n"
            ),
        )  # fmt: skip

        def a_tenth_done() -> dict[str, Any] | None:
            d = kube.record("busy")
            moves = d.get("partitions", 0)
            return d if moves >= args.partitions // 2 and d.get("doneCount", 0) >= moves // 10 else None

        first = until("the rebalance a tenth done", a_tenth_done, 1800, log, every=1.0)
        row |= {"moves": first["partitions"], "doneAtKill": first["doneCount"]}
        row["inFlightAtKill"] = len(first.get("inFlight") or {})
        t0 = time.time()
        node("stop-node", "--kill")
        killed = True

        def dead_seen() -> float | None:
            status = kube.get("kafkacluster", "busy").get("status") or {}
            return time.time() if any(d.get("id") == DEAD for d in status.get("deadBrokers") or ()) else None

        row["deadSeenS"] = until("broker 3 listed dead", dead_seen, 120, log) - t0

        def heal_made() -> tuple[float, str] | None:
            items = json.loads(kube("get", "brokerdecommissions", "-o", "json"))["items"]
            return (time.time(), items[0]["metadata"]["name"]) if items else None

        made, heal = until("the heal created", heal_made, 120 + args.after, log)
        row["healCreatedS"] = made - t0

        def superseded() -> tuple[float, dict[str, Any]] | None:
            d = kube.record("busy")
            return (time.time(), d) if d.get("planId") != first["planId"] and d.get("superseded") else None

        at, new = until("the heal superseding the rebalance", superseded, 300, log)
        row["supersededS"] = at - t0
        (history,) = new["superseded"]
        row |= {
            "adopted": history["adopted"],
            "retargeted": history["retargeted"],
            "newMoves": new["partitions"],
        }

        def first_new_move() -> float | None:
            d = kube.record("busy")
            adopted = {int(i) for i in d.get("adopted") or {}}
            ats = [e["at"] for i, e in (d.get("inFlight") or {}).items() if int(i) not in adopted]
            submitted = d.get("counters", {}).get("submissions", 0)
            return min(ats) if ats else (time.time() if submitted else None)

        row["firstMoveS"] = until("the heal's first move", first_new_move, 300, log, every=0.1) - t0

        def completed() -> float | None:
            phase = (kube.get("brokerdecommission", heal).get("status") or {}).get("phase")
            if phase in ("Failed", "Paused"):
                raise RuntimeError(f"the heal is {phase}")
            return time.time() if phase == "Completed" else None

        row["healCompletedS"] = until("the heal Completed", completed, 3600, log, every=1.0) - t0
        final = kube.record("busy")
        counters = final["counters"]
        row |= {"resubmitted": counters["resubmitted"], "cancels": counters["cancels"]}
        with KafkaGateway(ConnectionSettings(bootstrap)) as gw:
            parts = [p for p in gw.snapshot().partitions if p.topic == topic]
        bad = [p.name for p in parts if DEAD in p.replicas or set(p.isr) != set(p.replicas)]
        row["badPartitions"] = len(bad)
        if counters["resubmitted"] or counters["cancels"] or bad or len(parts) != args.partitions:
            raise RuntimeError(f"checks failed: counters {counters}, {len(bad)} partitions wrong: {bad[:5]}")
    finally:
        if killed:
            node("start-node")
        try:
            kube("delete", "placementpolicy,brokerdecommission", "--all", "--timeout=300s")
            kube("delete", "kafkacluster", "--all", "--timeout=120s")
        finally:
            op.kill(signal.SIGTERM)
            client = admin(bootstrap)  # held: a client garbage-collected mid-call fails its futures
            client.delete_topics([topic], request_timeout=60)[topic].result(timeout=120)
            kube("delete", "namespace", ns, "--wait=false", ns=False)
    return row


def report(row: dict[str, Any], command: str) -> str:
    day = datetime.date.today().isoformat()
    para = " ".join(
        [
            f"A topic of {row['partitions']} partitions (RF 2, every replica on brokers 1 and 2) and a",
            f"PlacementPolicy balancing it over the main rig's three brokers: {row['moves']} moves, each",
            f"adding a replica on broker {DEAD}, under a {row['throttle'] / 1e6:g} MB/s throttle.",
            f"Broker {DEAD} is SIGKILLed once {row['doneAtKill']} moves are done",
            f"({row['inFlightAtKill']} in flight). Self-healing (afterSeconds {row['after']}, Automatic)",
            "creates a BrokerDecommission of it, which supersedes the rebalance: its moves in flight toward",
            "the dead broker are re-targeted (they could never finish: reverted by a KIP-455 cancel, then",
            "moved to the new plan's target), the others adopted; its moves not yet submitted are replaced.",
            "Times from the kill (the operator reads every 2 s, the poller",
            "every 0.2 s): the death seen (KRaft fences the broker first), the heal created, the record",
            "superseded, the heal's first move submitted, the heal Completed (a fresh read shows no replica",
            "on the broker).",
        ]
    )
    lines = [SECTION, "", f"`{command}` (one run, {day}, {os.cpu_count()} cores).", ""]
    lines += [*textwrap.wrap(para, 110, break_on_hyphens=False), ""]
    lines += [
        "| moves | done at kill | adopted | re-targeted | heal's plan moves | dead seen s | heal created s "
        "| superseded s | first move s | first move - afterSeconds s | heal Completed s | resubmitted "
        "| cancelled | partitions wrong |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        f"| {row['moves']} | {row['doneAtKill']} | {row['adopted']} | {row['retargeted']} "
        f"| {row['newMoves']} "
        f"| {row['deadSeenS']:.1f} | {row['healCreatedS']:.1f} | {row['supersededS']:.1f} "
        f"| {row['firstMoveS']:.1f} | {row['firstMoveS'] - row['deadSeenS'] - row['after']:.1f} "
        f"| {row['healCompletedS']:.1f} | {row['resubmitted']} | {row['cancels']} | {row['badPartitions']} |",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=3000, help="partitions of the topic (default 3000)")
    ap.add_argument("--mb", type=int, default=300, help="MB written to the topic (default 300)")
    ap.add_argument("--throttle", type=int, default=2_000_000, help="bytes/s per broker (default 2000000)")
    ap.add_argument("--per-broker", type=int, default=50, help="moves per broker at once (default 50)")
    ap.add_argument("--after", type=int, default=30, help="brokerFailure.afterSeconds (default 30)")
    ap.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"))
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kp-preempt-") as tmp:
        row = run_once(args, Path(tmp))
    command = (
        "flock /tmp/rig-broker.lock python tests/bench/run_preempt_bench.py "
        f"--partitions {args.partitions} --mb {args.mb} --throttle {args.throttle} "
        f"--per-broker {args.per_broker} --after {args.after}"
    )
    text = report(row, command)
    print(text)
    write_section(text, Path(args.output), SECTION)
    return 0


if __name__ == "__main__":
    sys.exit(main())
