"""The Spark engine on real PySpark (local[2]): parity with the local engine, the spark-submit job,
Parquet snapshots, and a clear error without Java."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.bench.generator import scenario
from tests.unit.planning.test_metrics_tally import random_plan

from kafka_placement.model.errors import InfeasibleError
from kafka_placement.model.intents import Intents
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning import batching
from kafka_placement.planning.optimizer import compute_plan, summarize
from kafka_placement.planning.plan_quality import Scope
from kafka_placement.planning.sharding import sharded_optimize
from kafka_placement.spark.engines import EngineSettings, SparkOptimizer, spark_session
from kafka_placement.spark.io import read_plan_parquet, read_snapshot, write_parquet

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "testdata" / "golden"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = spark_session("local[2]", "2g")
    yield session


def cases() -> list[tuple[str, ClusterSnapshot, Intents]]:
    out = []
    for name in ("all", "decommission", "drain", "rack-repair", "scale-out"):
        snap = ClusterSnapshot.loads((GOLDEN / name / "snapshot.json").read_text())
        out.append((name, snap, Intents.loads((GOLDEN / name / "intents.yaml").read_text())))
    for name in ("all", "scale-out"):
        snap, text = scenario(name, brokers=24, partitions=6000, topics=40, seed=11)
        out.append((f"{name}-6000", snap, Intents.loads(text)))
    # the optional fields reach the Spark tasks: KIP-1023's untiered bytes (what a move copies) and traffic
    name, snap, intents = out[1]
    parts = tuple(
        replace(
            p,
            untiered_bytes=p.size_bytes // (2 + i % 3),
            bytes_in_per_sec=float(1000 * (i % 7)),
            read_fanout=i % 3,
        )
        if i % 4
        else p
        for i, p in enumerate(snap.partitions)
    )
    out.append((f"{name}-tiered-traffic", replace(snap, partitions=parts), intents))
    return out


@pytest.mark.parametrize("case", cases(), ids=lambda c: c[0])
def test_spark_plan_is_valid_and_within_5_percent_of_local(
    spark: Any, case: tuple[str, ClusterSnapshot, Intents]
) -> None:
    _, snap, intents = case
    local = compute_plan(snap, intents).summary.to_json()
    with SparkOptimizer(EngineSettings("spark", shards=6), spark) as optimizer:
        result = compute_plan(snap, intents, optimizer=optimizer.optimize)
        again = compute_plan(snap, intents, optimizer=optimizer.optimize)
    s = result.summary.to_json()
    assert s["hardViolationsAfter"] == 0 and s["violationsAfter"]["rackSpread"] == 0
    assert s["bytesToMove"] <= 1.05 * local["bytesToMove"]
    for mine, theirs in zip(s["goals"], local["goals"], strict=True):  # every goal local meets, spark meets
        assert mine["met"] or not theirs["met"], (mine, theirs)
    assert again.plan.plan_id == result.plan.plan_id  # deterministic across Spark runs
    # the tally found no rule broken after the merge that reconciled only the shards' results
    assert [r["hardViolationsAfterMerge"] for r in optimizer.reports] == [0, 0]
    assert [r["seconds"]["reconcileAll"] for r in optimizer.reports] == [0.0, 0.0]
    # Spark's analysis and shards give exactly the plan of the same pipeline run in one process.
    assert result.plan == sharded_optimize(snap, intents.enforced_only(), 6)


@pytest.mark.parametrize("case", cases(), ids=lambda c: c[0])
def test_the_summary_tallied_in_spark_tasks_is_the_local_summary(
    spark: Any, case: tuple[str, ClusterSnapshot, Intents]
) -> None:
    _, snap, intents = case
    cached = spark.sparkContext._jsc.sc().getPersistentRDDs().size()
    optimizer = SparkOptimizer(EngineSettings("spark", shards=4), spark, max_moves_per_broker=2)
    try:
        mine = {"measure": optimizer.measure, "batches": optimizer.batches}
        result = compute_plan(snap, intents, max_moves_per_broker=2, optimizer=optimizer.optimize, **mine)
        # the same plan, in process
        local = compute_plan(snap, intents, max_moves_per_broker=2, optimizer=lambda s, i: result.plan)
        assert result.summary == local.summary and result.summary.partitions_changed > 0
        enforced = intents.enforced_only()
        plan, elig = optimizer.optimize(snap, enforced), Scope.of(snap, enforced).elig
        # its batches were ordered beside the job that tallied it, once; other limits are ordered anew
        assert optimizer.batches(snap, plan, elig, 2) is optimizer.batches(snap, plan, elig, 2)
        assert optimizer.batches(snap, plan, elig, 1) == batching.batches(snap, plan, elig, 1)
        # A plan that breaks rules and overfills dirs: every counter counts, the batches are the same.
        bad = random_plan(random.Random(5), snap)
        spread = summarize(snap, enforced, bad, 3, measure=optimizer.measure)
        assert spread == summarize(snap, enforced, bad, 3) and spread.partitions_changed > 0
    finally:
        optimizer.close()
    assert optimizer.reports[0]["seconds"]["summary"] >= 0
    assert spark.sparkContext._jsc.sc().getPersistentRDDs().size() == cached  # close released the snapshot


@pytest.mark.parametrize("name", ["decommission", "rack-repair"])
def test_with_shards_by_the_work_a_small_repair_gets_the_local_engines_plan(spark: Any, name: str) -> None:
    snap = ClusterSnapshot.loads((GOLDEN / name / "snapshot.json").read_text())
    intents = Intents.loads((GOLDEN / name / "intents.yaml").read_text())
    with SparkOptimizer(EngineSettings("spark"), spark) as optimizer:  # shards: 0, chosen by the work
        result = compute_plan(snap, intents, optimizer=optimizer.optimize)
    local = compute_plan(snap, intents)
    assert 0 < optimizer.reports[0]["partitionsToRepair"] <= 1000 and optimizer.reports[0]["shards"] == 1
    assert not local.plan.empty and result.plan == local.plan


def test_spark_submit_runs_the_job_on_a_parquet_snapshot_and_writes_a_parquet_plan(tmp_path: Path) -> None:
    d = GOLDEN / "decommission"
    snap = ClusterSnapshot.loads((d / "snapshot.json").read_text())
    write_parquet(snap, tmp_path / "snap")
    assert read_snapshot(tmp_path / "snap") == snap
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = subprocess.run(
        [
            str(BIN / "spark-submit"),
            "--master",
            "local[2]",
            "--conf",
            "spark.driver.host=127.0.0.1",
            str(ROOT / "operator" / "kafka_placement" / "spark" / "job.py"),
            "--snapshot",
            str(tmp_path / "snap"),
            "--intents",
            str(d / "intents.yaml"),
            "-o",
            str(tmp_path / "plan.parquet"),
            "--summary",
            str(tmp_path / "summary.json"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    plan = read_plan_parquet(tmp_path / "plan.parquet")  # a large cluster's plan, as Parquet
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["engine"] == "spark" and summary["hardViolationsAfter"] == 0
    on_nine = sum(1 for p in snap.partitions if 9 in p.replicas)  # the decommissioned broker
    sharding = summary["sharding"]
    assert sharding["partitionsToRepair"] == sharding["byRule"]["decommissioned"] == on_nine
    assert 0 < on_nine < sharding["partitions"] == len(snap.partitions)
    assert summary["bytesToMove"] == summary["lowerBoundBytes"] and not plan.empty


def test_spark_engine_without_java_says_so(tmp_path: Path) -> None:
    d = GOLDEN / "decommission"
    python_dir = str(Path(shutil.which("python3") or sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = f"{BIN}:{python_dir}:/nonexistent"
    assert shutil.which("java", path=env["PATH"]) is None
    proc = subprocess.run(
        [
            str(BIN / "kafka-placement"),
            "plan",
            "--snapshot",
            str(d / "snapshot.json"),
            "--intents",
            str(d / "intents.yaml"),
            "--engine",
            "spark",
            "-o",
            str(tmp_path / "p.json"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 1 and "needs Java 17" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "p.json").exists()


def test_an_infeasible_shard_in_spark_names_the_partition_and_rule(spark: Any) -> None:
    # RF 3 on three brokers, one decommissioned: no shard can place its partitions.
    doc = {
        "version": 1,
        "brokers": [{"id": b, "rack": None, "logDirs": [{"path": "/d"}]} for b in (1, 2, 3)],
        "partitions": [
            {"topic": "t", "partition": n, "replicas": [1, 2, 3], "logDirs": ["/d"] * 3, "sizeBytes": 10}
            for n in range(12)
        ],
    }
    snap = ClusterSnapshot.from_json(doc)
    wanted = Intents.loads("kind: BrokerDecommission\nspec: {brokers: [2]}\n")
    with (
        SparkOptimizer(EngineSettings("spark", shards=4), spark) as optimizer,
        pytest.raises(InfeasibleError) as err,
    ):
        compute_plan(snap, wanted, optimizer=optimizer.optimize)
    assert err.value.rule == "replication-factor" and err.value.partition.startswith("t-")
    assert "other shards found" in err.value.detail  # 12 partitions over 4 shards: every shard fails


def test_the_cli_starts_spark_beside_the_read_and_plans_as_the_local_engine(tmp_path: Path) -> None:
    d = GOLDEN / "rack-repair"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    plans = {}
    for engine in ("local", "spark"):
        proc = subprocess.run(
            [str(BIN / "kafka-placement"), "plan", "--snapshot", str(d / "snapshot.json"),
             "--intents", str(d / "intents.yaml"), "--engine", engine, "--spark-master", "local[2]",
             "-o", str(tmp_path / f"{engine}.json"), "--summary", str(tmp_path / f"{engine}-summary.json")],
            capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        plans[engine] = json.loads((tmp_path / f"{engine}.json").read_text())
    summary = json.loads((tmp_path / "spark-summary.json").read_text())
    assert summary["engine"] == "spark" and summary["sharding"]["shards"] == 1  # a small repair: one shard
    assert summary["sharding"]["seconds"]["session"] == 0.0  # started while the files were read
    assert plans["spark"] == plans["local"] and plans["local"]["partitions"]
