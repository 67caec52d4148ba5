"""What a Spark executor imports to run the engine's shard and tally functions needs nothing of the
project's dependencies but pyspark, pandas and pyarrow (a cluster's workers have those, not PyYAML, kopf,
kubernetes or the Kafka clients); tests/integration/test_spark_standalone.py runs it on such workers."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
ON_WORKERS = {"pyspark", "pandas", "pyarrow"}
IMPORT_NAMES = {"pyyaml": "yaml", "confluent-kafka": "confluent_kafka", "kafka-python": "kafka",
                "prometheus-client": "prometheus_client"}  # fmt: skip


def absent_on_workers() -> list[str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = [d.split(">")[0].split("=")[0].split("<")[0].strip().lower() for d in deps]
    return sorted(IMPORT_NAMES.get(n, n.replace("-", "_")) for n in names if n not in ON_WORKERS)


def test_the_task_functions_and_their_arguments_import_without_the_other_dependencies() -> None:
    blocked = absent_on_workers()
    assert "yaml" in blocked and "kopf" in blocked and "confluent_kafka" in blocked
    code = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError("not on a Spark worker: " + name)
sys.meta_path.insert(0, Block())
import pickle
import kafka_placement.spark.engines as engines
from kafka_placement.model.intents import BrokerDecommission, Intents
from kafka_placement.planning.sharding import plan_shard, merge_and_balance
from kafka_placement.planning.plan_quality import Scope, Tally
import kafka_placement.spark.tally
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


def test_the_block_is_real() -> None:
    code = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {absent_on_workers()!r}:
            raise ImportError("not on a Spark worker: " + name)
sys.meta_path.insert(0, Block())
import kafka_placement.cli.kafka_cmds
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "not on a Spark worker" in proc.stderr, proc.stderr[-2000:]
