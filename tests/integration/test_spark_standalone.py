"""The Spark engine on a real Spark standalone cluster (tests/rig/spark_rig.py: a master and two
workers on loopback, their executors in other JVMs running a Python that has only pyspark, pandas and
pyarrow). The engine ships the project to them; the plans equal the local engine's where one shard
plans (a small repair) and the in-process sharded pipeline's otherwise, within 1% of the local bytes.

One driver process runs every case (a SparkSession per process), as a user's `plan --engine spark
--spark-master spark://...` would; its executors report their Python and where they imported the
project from. Needs `make rig-up` (the Spark rig is part of it). Nothing is mocked.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.bench.generator import scenario
from tests.integration.conftest import spark_driver_env

from kafka_placement.model.intents import Intents
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.optimizer import compute_plan
from kafka_placement.planning.sharding import sharded_optimize

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "testdata" / "golden"

DRIVER = """
import json, sys
from pathlib import Path
from kafka_placement.model.intents import Intents
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.optimizer import compute_plan
from kafka_placement.spark.engines import EngineSettings, SparkOptimizer, spark_session

master, cases_dir, out = sys.argv[1:4]
spark = spark_session(master, "1g")
sc = spark.sparkContext

def where(_):
    import sys as s
    import kafka_placement
    return (s.executable, kafka_placement.__file__)

executors = sorted(set(sc.parallelize(range(8), 8).map(where).collect()))
results = {}
for case in sorted(Path(cases_dir).iterdir()):
    snap = ClusterSnapshot.loads((case / "snapshot.json").read_text())
    intents = Intents.loads((case / "intents.yaml").read_text())
    with SparkOptimizer(EngineSettings("spark", master=master), spark) as optimizer:
        # the plan, and its summary tallied on the workers
        result = compute_plan(snap, intents, optimizer=optimizer.optimize, measure=optimizer.measure)
    local = compute_plan(snap, intents, optimizer=lambda s, i: result.plan)
    results[case.name] = {"planId": result.plan.plan_id, "bytes": result.summary.bytes_to_move,
                          "shards": optimizer.reports[0]["shards"],
                          "summaryAsLocal": result.summary == local.summary,
                          "hardViolationsAfter": result.summary.hard_violations_after}
Path(out).write_text(json.dumps({"master": sc.master, "executors": executors, "results": results}))
spark.stop()
"""


@functools.cache
def cases() -> dict[str, tuple[ClusterSnapshot, Intents, str]]:
    out = {}
    for name in ("all", "decommission", "drain", "rack-repair", "scale-out"):
        text = (GOLDEN / name / "intents.yaml").read_text()
        snap = ClusterSnapshot.loads((GOLDEN / name / "snapshot.json").read_text())
        out[name] = (snap, Intents.loads(text), text)
    for name in ("all", "scale-out"):
        snap, text = scenario(name, brokers=24, partitions=6000, topics=40, seed=11)
        out[f"{name}-6000"] = (snap, Intents.loads(text), text)
    return out


@pytest.fixture(scope="module")
def standalone_run(spark_entry: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("standalone")
    for name, (snap, _, text) in cases().items():
        (root / "cases" / name).mkdir(parents=True)
        (root / "cases" / name / "snapshot.json").write_text(snap.dumps())
        (root / "cases" / name / "intents.yaml").write_text(text)
    env = spark_driver_env(spark_entry)  # the workers' Python, as on a real cluster
    out = root / "out.json"
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, spark_entry["master"], str(root / "cases"), str(out)],
        capture_output=True, text=True, env=env, timeout=1500, cwd=root,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def test_executors_run_the_workers_python_and_the_shipped_package(
    standalone_run: dict[str, Any], spark_entry: dict[str, Any]
) -> None:
    assert standalone_run["master"] == spark_entry["master"]
    executors = standalone_run["executors"]
    assert {python for python, _ in executors} == {spark_entry["workerPython"]}
    for _, package in executors:  # from the zip the driver shipped, not the repo or an install
        assert "kafka_placement.zip" in package and not package.startswith(str(ROOT)), package


@pytest.mark.parametrize("name", list(cases()))
def test_the_plan_is_the_local_engines_or_the_sharded_pipelines(
    standalone_run: dict[str, Any], name: str
) -> None:
    snap, intents, _ = cases()[name]
    got = standalone_run["results"][name]
    local = compute_plan(snap, intents)
    assert got["hardViolationsAfter"] == 0
    assert got["summaryAsLocal"]  # tallied by the workers' tasks, the same summary as in one process
    if got["shards"] == 1:  # a small repair: exactly the local engine's plan
        assert got["planId"] == local.plan.plan_id
    else:  # the same pipeline in one process, and within 1% of the local engine's bytes
        assert got["planId"] == sharded_optimize(snap, intents.enforced_only(), got["shards"]).plan_id
        assert got["bytes"] <= 1.01 * local.summary.bytes_to_move
