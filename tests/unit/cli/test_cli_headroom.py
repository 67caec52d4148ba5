"""``kafka-placement plan`` and the disk headroom (issue 53): the roomy case plans under the limit, the
tight case exits 3 naming the fullest dir, ``--max-disk-share`` is range-checked (exit 2 naming the flag),
and a snapshot whose usable bytes exceed its volume exits 2 naming the broker and dir."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.unit.planning.headroom_cases import DECOMMISSION_4, GB, case, roomy, tight

from kafka_placement.cli import main


def files(tmp_path: Path, snapshot: dict[str, Any]) -> tuple[str, str]:
    snap, intents = tmp_path / "snapshot.json", tmp_path / "intents.yaml"
    snap.write_text(json.dumps(snapshot))
    intents.write_text(DECOMMISSION_4)
    return str(snap), str(intents)


def plan(tmp_path: Path, snapshot: dict[str, Any], *extra: str) -> int:
    snap, intents = files(tmp_path, snapshot)
    argv = ["plan", "--snapshot", snap, "--intents", intents, "-o", str(tmp_path / "plan.json")]
    return main([*argv, "--summary", str(tmp_path / "summary.json"), *extra])


def test_the_roomy_case_plans_every_dir_under_the_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert plan(tmp_path, roomy().to_json()) == 0
    err = capsys.readouterr().err
    assert "disk headroom: no log dir above 85.0% of its volume; fullest after the plan: broker" in err
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert all(d["shareAfter"] <= 0.85 for d in summary["diskHeadroom"]["dirs"])
    assert summary["bytesToMove"] == 60 * GB


def test_the_tight_case_exits_3_naming_the_fullest_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert plan(tmp_path, tight().to_json()) == 3
    err = capsys.readouterr().err
    assert "[dir-capacity] no plan keeps every log dir within maxDiskShare 0.85" in err
    assert "placed so far, broker 1 /d0, is 90.0% full (limit 85.0%)" in err
    assert not (tmp_path / "plan.json").exists() and "Traceback" not in err


def test_the_flag_sets_the_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert plan(tmp_path, roomy().to_json(), "--max-disk-share", "0.6") == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["diskHeadroom"]["maxDiskShare"] == 0.6
    assert all(d["shareAfter"] <= 0.6 for d in summary["diskHeadroom"]["dirs"])
    assert "above 60.0% of its volume" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0.49", "0.99", "1", "nan", "inf", "abc", "", "0x1"])
def test_a_share_outside_its_bounds_or_not_a_number_exits_2_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        plan(tmp_path, roomy().to_json(), "--max-disk-share", value)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--max-disk-share" in err and "0.5 to 0.98" in err


def test_usable_above_total_exits_2_naming_the_broker_and_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = case({"/d0": 100 * GB, "/d1": 40 * GB}, {"/d0": 0, "/d1": 0}, 3)
    doc["brokers"][2]["logDirs"][0]["usableBytes"] = 101 * GB
    assert plan(tmp_path, doc) == 2
    err = capsys.readouterr().err
    assert "broker 3 log dir '/d0'" in err and "usableBytes 101000000000 exceeds totalBytes" in err


def test_an_intents_capacity_document_sets_the_limit(tmp_path: Path) -> None:
    snap, intents = files(tmp_path, roomy().to_json())
    Path(intents).write_text("capacity: {maxDiskShare: 0.7}\n---\n" + DECOMMISSION_4)
    out = str(tmp_path / "plan.json")
    argv = [
        "plan",
        "--snapshot",
        snap,
        "--intents",
        intents,
        "-o",
        out,
        "--summary",
        str(tmp_path / "s.json"),
    ]
    assert main(argv) == 0
    assert json.loads((tmp_path / "s.json").read_text())["diskHeadroom"]["maxDiskShare"] == 0.7
