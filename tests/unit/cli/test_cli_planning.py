"""The planner's CLI: ``plan``, ``evaluate``, ``place`` — outputs, exit codes and error messages."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_placement.cli import main
from kafka_placement.model.plan import Plan

GOLDEN = Path(__file__).resolve().parents[2] / "testdata" / "golden"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_plan_writes_kafka_reassignment_json_and_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = GOLDEN / "decommission"
    code, _, err = run(
        capsys,
        "plan",
        "--snapshot",
        str(d / "snapshot.json"),
        "--intents",
        str(d / "intents.yaml"),
        "-o",
        str(tmp_path / "plan.json"),
        "--summary",
        str(tmp_path / "summary.json"),
    )
    assert code == 0, err
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["version"] == 1 and set(plan["partitions"][0]) == {
        "topic",
        "partition",
        "replicas",
        "log_dirs",
    }
    assert Plan.from_json(plan) == Plan.loads((d / "plan.json").read_text())
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["planId"] == Plan.from_json(plan).plan_id and summary["batches"]["count"] >= 1
    assert f"plan {summary['planId']}" in err

    code, out, _ = run(
        capsys,
        "evaluate",
        "--snapshot",
        str(d / "snapshot.json"),
        "--plan",
        str(tmp_path / "plan.json"),
        "--intents",
        str(d / "intents.yaml"),
    )
    assert code == 0
    metrics = json.loads(out)
    assert metrics["bytesToMove"] == summary["bytesToMove"] and metrics["hardViolationsAfter"] == 0


def test_evaluate_without_intents_reports_movement_only(capsys: pytest.CaptureFixture[str]) -> None:
    d = GOLDEN / "drain"
    code, out, _ = run(
        capsys, "evaluate", "--snapshot", str(d / "snapshot.json"), "--plan", str(d / "plan.json")
    )
    assert code == 0
    metrics = json.loads(out)
    assert metrics["lowerBoundBytes"] is None and metrics["intraBrokerMoves"] > 0


@pytest.mark.parametrize(
    ("snapshot", "intents", "code", "message"),
    [
        ("missing.json", "i.yaml", 2, "missing.json: snapshot file not found"),
        ("bad.json", "i.yaml", 2, "bad.json: not valid JSON"),
        ("dup.json", "i.yaml", 2, "partitions[0] (t-0).replicas: duplicate replica in [1, 1]"),
        ("ok.json", "unknown.yaml", 2, "unknown broker 42; the cluster has brokers [1, 2, 3]"),
        ("ok.json", "infeasible.yaml", 3, "[t-0] [replication-factor] replication factor 3 needs 3 brokers"),
        ("unreachable.json", "i.yaml", 2, "broker(s) 3 are alive but did not answer"),
    ],
)
def test_bad_input_exits_2_and_infeasible_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], snapshot: str, intents: str, code: int, message: str
) -> None:
    brokers = [{"id": b, "rack": None, "logDirs": [{"path": "/d"}]} for b in (1, 2, 3)]
    ok = {
        "version": 1,
        "brokers": brokers,
        "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 3]}],
    }
    dup = {
        "version": 1,
        "brokers": brokers,
        "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1]}],
    }
    (tmp_path / "ok.json").write_text(json.dumps(ok))
    (tmp_path / "dup.json").write_text(json.dumps(dup))
    (tmp_path / "bad.json").write_text("{not json")
    unreachable = {**ok, "unreachableBrokers": [3]}  # alive, its dirs not read: never planned from
    (tmp_path / "unreachable.json").write_text(json.dumps(unreachable))
    (tmp_path / "i.yaml").write_text("")
    (tmp_path / "unknown.yaml").write_text("kind: BrokerDecommission\nspec: {brokers: [42]}\n")
    (tmp_path / "infeasible.yaml").write_text("kind: BrokerDecommission\nspec: {brokers: [3]}\n")
    rc, _, err = run(
        capsys,
        "plan",
        "--snapshot",
        str(tmp_path / snapshot),
        "--intents",
        str(tmp_path / intents),
        "-o",
        str(tmp_path / "plan.json"),
    )
    assert rc == code
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "plan.json").exists()  # nothing half-written


def test_place_assigns_new_partitions(capsys: pytest.CaptureFixture[str]) -> None:
    d = GOLDEN / "decommission"
    code, out, err = run(
        capsys,
        "place",
        "--snapshot",
        str(d / "snapshot.json"),
        "--intents",
        str(d / "intents.yaml"),
        "--topic",
        "fresh",
        "--partitions",
        "6",
        "--replication-factor",
        "3",
    )
    assert code == 0, err
    plan = Plan.from_json(json.loads(out))
    assert out == plan.dumps() + "\n"  # (written to stdout piece by piece: the file's very text)
    decommissioned = 9
    assert len(plan.partitions) == 6
    assert all(len(set(t.replicas)) == 3 and decommissioned not in t.replicas for t in plan.partitions)


def test_console_script_reports_user_errors_without_traceback(tmp_path: Path) -> None:
    exe = shutil.which("kafka-placement", path=str(Path(sys.executable).parent))
    assert exe is not None
    proc = subprocess.run(
        [exe, "plan", "--snapshot", str(tmp_path / "nope.json"), "--intents", "x.yaml"],
        capture_output=True,
        text=True,
    )
    assert (
        proc.returncode == 2 and "snapshot file not found" in proc.stderr and "Traceback" not in proc.stderr
    )


def test_large_cluster_files_parquet_snapshot_in_parquet_plan_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kafka_placement.model.snapshot import ClusterSnapshot
    from kafka_placement.spark.io import write_parquet

    d = GOLDEN / "decommission"
    write_parquet(ClusterSnapshot.loads((d / "snapshot.json").read_text()), tmp_path / "snap")
    out = tmp_path / "plan.parquet"
    snap, intents = str(tmp_path / "snap"), str(d / "intents.yaml")
    code, _, err = run(capsys, "plan", "--snapshot", snap, "--intents", intents, "-o", str(out))
    assert code == 0, err
    assert out.read_bytes()[:4] == b"PAR1"
    expected = Plan.loads((d / "plan.json").read_text())
    code, evaluated, err = run(capsys, "evaluate", "--snapshot", str(d / "snapshot.json"), "--plan", str(out))
    assert code == 0, err
    assert json.loads(evaluated)["planId"] == expected.plan_id

    from kafka_placement.spark.io import read_plan_parquet

    assert read_plan_parquet(out) == expected
    (tmp_path / "bad.parquet").write_text("not parquet")
    code, _, err = run(
        capsys, "evaluate", "--snapshot", str(d / "snapshot.json"), "--plan", str(tmp_path / "bad.parquet")
    )
    assert code == 2 and "not a readable Parquet plan" in err
