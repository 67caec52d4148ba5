"""Execution at scale: (a) a many-small-partitions decommission on the real rig, `kafka-placement execute`
with its defaults vs Kafka's own ReassignPartitionsCommand on the same plan; (b) an executor tick's CPU
time and the bytes it saves vs plan size, 1,000 moves in flight, against a recorded Kafka.

    .venv/bin/python tests/bench/run_exec_scale.py [--part rig,tick] [--partitions 10000]
                                                   [--plans 10000,100000,1000000] [--ticks 20]

(a) needs the main Kafka rig (.rig/rig.json) and Kafka's jars (tests/rig/kafka/fetch.sh). It creates N
partitions in topics of 2,000 (RF 2 over brokers 1-3, a few records each), plans a BrokerDecommission of
broker 3 with `kafka-placement plan` restricted to those topics, and times `execute --wait` (defaults:
safety gate and limits on) until it exits; then second, identical topics and the same moves through
`ReassignPartitionsCommand --execute`, timed until `--verify` no longer reports a reassignment in progress.
Both are reported as seconds per move. Topics are deleted afterwards.

(b) builds plans of P partitions (1,000 partitions per topic) against ``exec_recorded.RecordedKafka``,
starts an execution (validation, a full read, is timed once), then runs ticks in which Kafka finishes 100
moves between ticks and the executor keeps 1,000 in flight, and reports the median tick CPU time and the
bytes written per save. The Kafka side is recorded, so this part measures the executor only.

Results go to docs/benchmarks.md (the section is replaced), with the command.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "operator"))
sys.path.insert(0, str(ROOT / "tests" / "bench"))

from exec_recorded import MemoryStore, RecordedKafka  # noqa: E402

from kafka_placement.execution import executor  # noqa: E402
from kafka_placement.execution.record import Execution  # noqa: E402

CLI = Path(sys.executable).parent / "kafka-placement"
SECTION = "## Execution at scale"


# ---- (a) the rig ------------------------------------------------------------------------------------


def rig() -> dict[str, Any]:
    path = Path(os.environ.get("KP_RIG_DIR", str(ROOT / ".rig"))) / "rig.json"
    if not path.exists():
        sys.exit(f"{path} not found: start the rig (make rig-up)")
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def kafka_libs() -> str:
    out = subprocess.run(["bash", str(ROOT / "tests/rig/kafka/fetch.sh")], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(out.stderr)
    return out.stdout.strip().splitlines()[-1]


PER_TOPIC = 2000  # the KRaft controller refuses one request that creates much more than 10k records


def topic_names(prefix: str, n: int) -> list[str]:
    return [f"{prefix}-{k}" for k in range((n + PER_TOPIC - 1) // PER_TOPIC)]


def create_topics(bootstrap: str, prefix: str, n: int) -> list[str]:
    """``n`` partitions over topics of PER_TOPIC, RF 2 over brokers 1-3, a few records each."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = topic_names(prefix, n)
    for k, name in enumerate(names):
        count = min(PER_TOPIC, n - k * PER_TOPIC)
        assignment = [[i % 3 + 1, (i + 1) % 3 + 1] for i in range(k * PER_TOPIC, k * PER_TOPIC + count)]
        topic = NewTopic(name, num_partitions=count, replica_assignment=assignment)
        admin.create_topics([topic], request_timeout=120)[name].result(timeout=300)
        deadline = time.monotonic() + 300
        while True:  # every partition has a leader and a full ISR
            md = admin.list_topics(topic=name, timeout=30).topics[name]
            if len(md.partitions) == count and all(
                len(p.isrs) == 2 and p.leader >= 0 for p in md.partitions.values()
            ):
                break
            if time.monotonic() > deadline:
                sys.exit(f"topic {name} did not become healthy")
            time.sleep(1)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
        for p in range(count):
            for _ in range(3):
                producer.produce(name, value=os.urandom(200), partition=p)
            producer.poll(0)
        producer.flush(120)
    return names


def delete_topics(bootstrap: str, names: list[str]) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until every result is in
    for f in admin.delete_topics(names).values():
        f.result(timeout=120)


def plan_for(bootstrap: str, topics: list[str], work: Path) -> Path:
    snap, intents, full, plan = (
        work / f"{topics[0]}.{n}" for n in ("snap.json", "yaml", "full.json", "plan.json")
    )
    for cmd in (
        ["snapshot", "--bootstrap-server", bootstrap, "-o", str(snap)],
        ["plan", "--snapshot", str(snap), "--intents", str(intents), "-o", str(full)],
    ):
        intents.write_text("kind: BrokerDecommission\nspec: {brokers: [3]}\n")
        out = subprocess.run([str(CLI), *cmd], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(out.stderr)
    entries = [e for e in json.loads(full.read_text())["partitions"] if e["topic"] in topics]
    for e in entries:  # Kafka's tool timed out moving 6,666 replicas into named dirs on this rig (its
        e["log_dirs"] = ["any"] * len(e["replicas"])  # AlterReplicaLogDirs call): brokers pick, both sides
    plan.write_text(json.dumps({"version": 1, "partitions": entries}))
    return plan


def run_ours(bootstrap: str, plan: Path, work: Path, limits: list[str]) -> float:
    started = time.monotonic()
    out = subprocess.run(
        [str(CLI), "execute", "--bootstrap-server", bootstrap, "--plan", str(plan), "--wait",
         "--state", str(work / "state.json"), *limits],
        capture_output=True, text=True,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    if out.returncode != 0:
        sys.exit(out.stderr[-3000:])
    counters = json.loads((work / "state.json").read_text()).get("counters", {})
    print(f"ours: ticks {counters.get('ticks')}, refills {counters.get('refills')}", file=sys.stderr)
    return elapsed


def run_kafka(bootstrap: str, plan: Path, libs: str) -> float:
    base = ["java", "-cp", f"{libs}/*", "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
            "--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan)]  # fmt: skip
    started = time.monotonic()
    out = subprocess.run([*base, "--execute", "--timeout", "300000"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(out.stdout[-2000:] + out.stderr[-2000:])
    while True:
        out = subprocess.run([*base, "--verify"], capture_output=True, text=True)
        if "in progress" not in out.stdout and out.returncode == 0:
            return time.monotonic() - started
        if time.monotonic() - started > 3600:
            sys.exit("Kafka's reassignment did not finish within an hour")
        time.sleep(1)


def part_rig(n: int, sides: list[str], limits: list[str]) -> dict[str, Any]:
    bootstrap = rig()["kafka"]["bootstrapServers"]
    libs = kafka_libs()
    moves = sum(1 for i in range(n) if 3 in (i % 3 + 1, (i + 1) % 3 + 1))
    row: dict[str, Any] = {"partitions": n, "moves": moves}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for who in sides:
            topics = create_topics(bootstrap, f"bench-scale-{who}-{uuid.uuid4().hex[:6]}", n)
            try:
                plan = plan_for(bootstrap, topics, work)
                seconds = (
                    run_ours(bootstrap, plan, work, limits)
                    if who == "ours"
                    else run_kafka(bootstrap, plan, libs)
                )
            finally:
                delete_topics(bootstrap, topics)
            row[f"{who}_s"] = seconds
            print(f"{who}: {moves} moves in {seconds:.1f}s", file=sys.stderr, flush=True)
    row["ratio"] = row["ours_s"] / row["kafka_s"] if {"ours_s", "kafka_s"} <= row.keys() else None
    return row


# ---- (b) tick cost -----------------------------------------------------------------------------------


def part_tick(partitions: int, ticks: int) -> dict[str, Any]:
    kafka = RecordedKafka(brokers=30, topics=max(partitions // 1000, 1), per_topic=1000, finish_per_tick=100)
    plan = kafka.plan(partitions // 3)  # a third of the partitions move
    store = MemoryStore()
    limits = executor.Limits(max_moves=1000, max_moves_per_broker=1000)
    t0 = time.process_time()
    ex = Execution.create(store, plan, limits=limits, cluster_id="recorded")
    ex.save()
    executor.tick(kafka, ex, limits)  # type: ignore[arg-type]  # validation (a full read) + first batch
    start_s = time.process_time() - t0
    cpu: list[float] = []
    saved: list[int] = []
    for _ in range(ticks):
        kafka.advance()
        before = len(store.saves)
        t = time.process_time()
        executor.tick(kafka, ex, limits)  # type: ignore[arg-type]
        cpu.append(time.process_time() - t)
        saved += store.saves[before:]
    assert len(ex.doc.in_flight) == 1000, len(ex.doc.in_flight)
    return {
        "partitions": partitions,
        "moves": len(plan.partitions),
        "start_s": start_s,
        "tick_s": statistics.median(cpu),
        "tick_max_s": max(cpu),
        "save_bytes": int(statistics.median(saved)),
        "saves_per_tick": len(saved) / ticks,
        "blob_bytes": sum(len(b) for b in store.blobs.values()),
    }


# ---- report ------------------------------------------------------------------------------------------


def cell(row: dict[str, Any], key: str, digits: int, per: int = 1) -> str:
    """A table cell: ``row[key] / per`` with ``digits`` decimals, "-" for a side not run."""
    value = row.get(key)
    return "-" if value is None else f"{value / per:.{digits}f}"


def report(rig_row: dict[str, Any] | None, tick_rows: list[dict[str, Any]], command: str) -> str:
    day = datetime.date.today().isoformat()
    lines = [SECTION, "", f"`{command}` (one run, {day}, 2 cores).", ""]
    if rig_row:
        lines += [
            "(a) Decommission of broker 3 holding many small partitions (3-node rig, RF 2, a few records "
            "each): `kafka-placement execute --wait` with its defaults (safety gate on, 1,000 moves per "
            "broker, 1,250 in the cluster, bytes per broker capped) vs Kafka's own "
            "`ReassignPartitionsCommand --execute` of the same plan, timed until `--verify` reports no "
            "reassignment in progress. The plan's log dirs are left to the brokers (`any`) for both: with "
            "6,666 named dirs Kafka's tool failed (its AlterReplicaLogDirs call timed out on this rig).",
            "",
            "| partitions | moves | ours s | Kafka s | ours s/move | Kafka s/move | ratio |",
            "|---|---|---|---|---|---|---|",
            f"| {rig_row['partitions']} | {rig_row['moves']} | {cell(rig_row, 'ours_s', 1)} "
            f"| {cell(rig_row, 'kafka_s', 1)} | {cell(rig_row, 'ours_s', 4, rig_row['moves'])} "
            f"| {cell(rig_row, 'kafka_s', 4, rig_row['moves'])} | {cell(rig_row, 'ratio', 2)} |",
            "",
        ]
    if tick_rows:
        lines += [
            "(b) One executor tick vs plan size, 1,000 moves in flight, Kafka finishing 100 between ticks "
            "(a recorded Kafka: `tests/bench/exec_recorded.py`; the executor's own CPU only). Start = "
            "creating the record, storing plan and baseline blobs, validating (a full read) and the first "
            "tick, once per execution. Save bytes = the progress document written per save (the plan is "
            "never rewritten).",
            "",
            "| plan partitions | moves | start CPU s | tick CPU s (median) | tick CPU s (max) "
            "| bytes per save | saves per tick | blobs bytes (once) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in tick_rows:
            lines.append(
                f"| {r['partitions']} | {r['moves']} | {r['start_s']:.2f} | {r['tick_s']:.3f} | "
                f"{r['tick_max_s']:.3f} | {r['save_bytes']} | {r['saves_per_tick']:.1f} | {r['blob_bytes']} |"
            )
        lines.append("")
    return "\n".join(lines)


def write_section(text: str, path: Path, section: str = SECTION) -> None:
    """Replace ``section`` (up to the next ``## `` heading) of the document at ``path`` by ``text``, or
    append ``text`` when the document has no such section."""
    doc = path.read_text() if path.exists() else ""
    if section in doc:
        head, _, rest = doc.partition(section)
        tail = rest.split("\n## ", 1)
        doc = head + text + ("\n## " + tail[1] if len(tail) > 1 else "")
    else:
        doc = doc.rstrip() + "\n\n" + text
    path.write_text(doc)


def command_line(script: str) -> str:
    """The command that ran ``script`` (a file of tests/bench), with its arguments, as a section quotes it."""
    return " ".join(["python", f"tests/bench/{script}", *sys.argv[1:]])


def publish(text: str, output: str, section: str, print_only: bool) -> None:
    """A benchmark's section: printed (``--print``), or written in place of ``section`` in ``output``."""
    if print_only:
        print(text)
    else:
        write_section(text, Path(output), section)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", default="rig,tick")
    ap.add_argument("--partitions", type=int, default=10000)
    ap.add_argument("--plans", default="10000,100000,1000000")
    ap.add_argument("--ticks", type=int, default=20)
    ap.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"))
    ap.add_argument("--sides", default="ours,kafka", help="(a): ours, kafka or both")
    ap.add_argument("--limits", default="", help='(a): extra `execute` flags ("--max-moves 2000")')
    args = ap.parse_args(argv)
    parts = set(args.part.split(","))
    sides, limits = args.sides.split(","), args.limits.split()
    rig_row = part_rig(args.partitions, sides, limits) if "rig" in parts else None
    tick_rows = []
    if "tick" in parts:
        for size in (int(s) for s in args.plans.split(",")):
            tick_rows.append(part_tick(size, args.ticks))
            print(tick_rows[-1], file=sys.stderr, flush=True)
    command = "tests/bench/run_exec_scale.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = report(rig_row, tick_rows, command.strip())
    print(text)
    write_section(text, Path(args.output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
