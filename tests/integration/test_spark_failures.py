"""The Spark engine when the Spark cluster fails, on the rig's real standalone cluster (tests/rig/
spark_rig.py): a clear, bounded error and no plan file, or a retried task and the right plan — never a
wrong plan.

- the master unreachable: exit 1 in seconds, naming the address;
- no executor can start (executors ask for more memory than any worker has): exit 1 after
  ``--spark-executor-wait``, saying so, and the application leaves the master;
- an executor out of memory (its Python workers limited by ``spark.executor.pyspark.memory`` to half of
  what they need): exit 1, "ran out of memory" and what to raise;
- a worker killed (with its executor) while its task runs: Spark runs the task again on the other
  workers and the plan is the one the same pipeline computes in one process.

Needs `make rig-up` (the Spark rig is part of it). Nothing is mocked.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.bench.generator import scenario
from tests.integration.conftest import spark_driver_env
from tests.rig import spark_rig

from kafka_placement.model.intents import Intents
from kafka_placement.planning.sharding import sharded_optimize

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "testdata" / "golden"
CLI = [str(Path(sys.executable).parent / "kafka-placement")]


def plan_cli(
    entry: dict[str, Any],
    tmp: Path,
    master: str,
    *extra: str,
    case: Path = GOLDEN / "decommission",
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """``plan --engine spark`` against ``master``; a run still going after ``timeout`` s fails the test."""
    try:
        return subprocess.run(
            [*CLI, "plan", "--snapshot", str(case / "snapshot.json"), "--intents", str(case / "intents.yaml"),
             "--engine", "spark", "--spark-master", master, "-o", str(tmp / "plan.json"),
             "--summary", str(tmp / "summary.json"), *extra],
            capture_output=True, text=True, env=spark_driver_env(entry), timeout=timeout, cwd=tmp,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"plan --engine spark --spark-master {master} still running after {timeout:g} s")


def error_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.startswith("kafka-placement plan:")]
    assert len(lines) == 1, proc.stderr[-3000:]
    return lines[0]


def assert_no_outputs(tmp: Path) -> None:
    assert not (tmp / "plan.json").exists() and not (tmp / "summary.json").exists()


def test_an_unreachable_master_fails_in_seconds(spark_entry: dict[str, Any], tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # refused by the check of the master, before Spark starts: the reason is in the message
    proc = plan_cli(spark_entry, tmp_path, f"spark://127.0.0.1:{port}", timeout=60)
    line = error_line(proc)
    assert proc.returncode == 1 and "unreachable" in line and f"127.0.0.1:{port}" in line, line
    assert "Connection refused" in line and len(line) < 1000, line
    assert_no_outputs(tmp_path)


def test_no_executor_can_start(spark_entry: dict[str, Any], tmp_path: Path) -> None:
    memory = "2g"  # more than any worker has (spark_rig.WORKER_MEMORY)
    proc = plan_cli(
        spark_entry, tmp_path, spark_entry["master"],
        "--spark-conf", f"spark.executor.memory={memory}", "--spark-executor-wait", "10",
    )  # fmt: skip
    line = error_line(proc)
    assert proc.returncode == 1 and "no Spark executor joined within 10s" in line, line
    assert f"spark.executor.memory={memory}" in line and len(line) < 1000
    assert_no_outputs(tmp_path)
    deadline = time.monotonic() + 30  # the driver is gone, and so is its application
    while (status := spark_rig.master_answer()) is None or status.get("activeapps"):
        assert time.monotonic() < deadline, status
        time.sleep(0.5)


def import_footprint_mb(python: str) -> int:
    """Address space (VmPeak) a worker's Python needs to import pyspark and pyarrow (the engine's tasks
    exchange Arrow batches: no pandas)."""
    code = "import pyspark, pyarrow; print(open('/proc/self/status').read())"
    status = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout
    peak_kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmPeak:"))
    return peak_kb // 1024


def test_an_executor_out_of_memory(spark_entry: dict[str, Any], tmp_path: Path) -> None:
    # the executors' Python workers get a quarter of the address space that importing their libraries
    # takes (spark.executor.pyspark.memory is an RLIMIT_AS), well below what a worker maps once started,
    # so every task runs out of memory (a MemoryError or a shared object that cannot be mapped). By hand,
    # half of it (a little above a started worker's size) let every plan through since the shards stopped
    # importing pandas (before, it failed only while a shard's rows were converted to pandas).
    limit = import_footprint_mb(spark_entry["workerPython"]) // 4
    proc = plan_cli(
        spark_entry, tmp_path, spark_entry["master"],
        "--spark-conf", f"spark.executor.pyspark.memory={limit}m", "--spark-conf", "spark.task.maxFailures=2",
    )  # fmt: skip
    line = error_line(proc)
    assert proc.returncode == 1 and "ran out of memory" in line and "spark.executor.memory" in line, line
    assert "failed 2 times" not in line  # the memory, not the retries, is what the user must fix
    assert len(line) < 2000 and len(proc.stderr) < 64_000
    assert_no_outputs(tmp_path)


# the name of the shards' stage: the one that collects in spark/engines.py
SHARDS_STAGE = r"collect at .*spark/engines[.]py:[0-9]+$"

KILLER = """
import json, os, re, signal, sys, threading, time
from pathlib import Path
from kafka_placement.model.intents import Intents
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.optimizer import compute_plan
from kafka_placement.spark.engines import EngineSettings, SparkOptimizer, spark_session

master, case, spare_pid, spare_port, shards, out, stage = sys.argv[1:8]
spark = spark_session(master, "1g")
sc = spark.sparkContext
tracker = sc.statusTracker()
deadline = time.monotonic() + 120
while len(sc._jsc.sc().statusTracker().getExecutorInfos()) < 4:  # the driver and three executors
    assert time.monotonic() < deadline, "three executors did not join"
    time.sleep(0.2)

def executor_of_spare():
    for pid in os.listdir("/proc"):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "CoarseGrainedExecutorBackend" in cmd and f"Worker@127.0.0.1:{spare_port}" in cmd:
            return int(pid)
    return None

killed = {}
SHARDS = re.compile(stage)

def kill_when_every_executor_is_busy():
    while not killed:
        for stage in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage)
            # the shards' tasks (the stage that collects in spark/engines.py), all three executors busy
            if info is not None and SHARDS.match(info.name) and info.numActiveTasks >= 3:
                executor = executor_of_spare()
                os.kill(int(spare_pid), signal.SIGKILL)
                if executor:
                    os.kill(executor, signal.SIGKILL)
                killed.update(stage=stage, name=info.name, activeTasks=info.numActiveTasks,
                              executor=executor, jobs=list(tracker.getActiveJobsIds()))
                return
        time.sleep(0.01)

threading.Thread(target=kill_when_every_executor_is_busy, daemon=True).start()
snap = ClusterSnapshot.loads((Path(case) / "snapshot.json").read_text())
intents = Intents.loads((Path(case) / "intents.yaml").read_text())
optimizer = SparkOptimizer(EngineSettings("spark", master=master, shards=int(shards)), spark)
result = compute_plan(snap, intents, optimizer=optimizer.optimize)
alive = len(sc._jsc.sc().statusTracker().getExecutorInfos()) - 1
Path(out).write_text(json.dumps({"planId": result.plan.plan_id, "killed": killed, "executorsAfter": alive,
                                 "hardViolationsAfter": result.summary.hard_violations_after}))
spark.stop()
"""


def test_a_worker_killed_mid_job_costs_a_retry_not_the_plan(
    spark_entry: dict[str, Any], tmp_path: Path
) -> None:
    snap, text = scenario("all", brokers=24, partitions=6000, topics=40, seed=11)
    case = tmp_path / "case"
    case.mkdir()
    (case / "snapshot.json").write_text(snap.dumps())
    (case / "intents.yaml").write_text(text)
    state = Path(spark_entry["stateDir"])
    name, port, ui = spark_rig.SPARE
    spare = spark_rig.start_worker(state, name, port, ui)
    try:
        deadline = time.monotonic() + 120
        while (spark_rig.master_answer() or {}).get("aliveworkers") != spark_entry["workers"] + 1:
            assert spare.poll() is None and time.monotonic() < deadline, "the spare worker did not join"
            time.sleep(0.5)
        shards = 24
        proc = subprocess.run(
            [sys.executable, "-c", KILLER, spark_entry["master"], str(case), str(spare.pid), str(port),
             str(shards), str(tmp_path / "out.json"), SHARDS_STAGE],
            capture_output=True, text=True, env=spark_driver_env(spark_entry), timeout=900, cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-4000:]
    finally:
        if spare.poll() is None:
            spare.kill()
        spare.wait(30)
    got = json.loads((tmp_path / "out.json").read_text())
    killed = got["killed"]
    assert killed and killed["executor"] and killed["jobs"], got  # the shard job ran on all three
    assert re.match(SHARDS_STAGE, killed["name"]) and killed["activeTasks"] >= 3
    assert spare.returncode is not None and got["executorsAfter"] == spark_entry["workers"]
    assert got["hardViolationsAfter"] == 0
    assert got["planId"] == sharded_optimize(snap, Intents.loads(text).enforced_only(), shards).plan_id
