"""``kafka-placement plan --effort`` (model/effort.py): Fast plans with the greedy goals alone, the default
(Balanced) and Exhaustive run the exact program on a small cluster; an unknown effort exits 2 naming the
flag and its choices. The Spark job takes the same flag."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.bench.generator import cluster

from kafka_placement.cli import main
from kafka_placement.spark import job

POLICY = (
    "kind: PlacementPolicy\nspec:\n  topics: {include: ['*']}\n"
    "  rackAwareness: {separator: /, levels: 2}\n  balance: {brokers: true}\n"
)


def plan(tmp_path: Path, *extra: str) -> int:
    snap, intents = tmp_path / "snapshot.json", tmp_path / "intents.yaml"
    snapshot = cluster(brokers=4, partitions=24, topics=4, rf=3, dcs=2, racks_per_dc=2, seed=3, dirs=2)
    snap.write_text(json.dumps(snapshot.to_json()))
    intents.write_text(POLICY)
    argv = ["plan", "--snapshot", str(snap), "--intents", str(intents), "-o", str(tmp_path / "plan.json")]
    return main([*argv, "--summary", str(tmp_path / "summary.json"), *extra])


def moved(tmp_path: Path) -> int:
    return int(json.loads((tmp_path / "summary.json").read_text())["bytesToMove"])


def test_fast_copies_more_than_the_default_and_exhaustive_no_more(tmp_path: Path) -> None:
    assert plan(tmp_path, "--effort", "Fast") == 0
    fast = moved(tmp_path)
    assert plan(tmp_path) == 0
    balanced = moved(tmp_path)
    assert plan(tmp_path, "--effort", "Exhaustive") == 0
    exhaustive = moved(tmp_path)
    assert exhaustive <= balanced < fast


@pytest.mark.parametrize("value", ["fast", "Slow", ""])
def test_an_unknown_effort_exits_2_naming_the_flag(
    tmp_path: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        plan(tmp_path, "--effort", value)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--effort" in err and "Fast" in err and "Exhaustive" in err and "Traceback" not in err
    assert not (tmp_path / "plan.json").exists()


def test_the_spark_job_refuses_an_unknown_effort(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        job.main(["--snapshot", "s", "--intents", "i", "-o", "o", "--effort", "fast"])
    assert e.value.code == 2 and "--effort" in capsys.readouterr().err
