"""``kafka-placement report``: one self-contained HTML file, bad input exits 2 naming the file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafka_placement.cli import main

GOLDEN = Path(__file__).resolve().parents[2] / "testdata" / "golden"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def args(name: str, *extra: str) -> list[str]:
    d = GOLDEN / name
    return ["report", "--snapshot", str(d / "snapshot.json"), "--plan", str(d / "plan.json"), *extra]


def test_report_writes_one_html_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.html"
    code, _, err = run(
        capsys, *args("all", "--intents", str(GOLDEN / "all" / "intents.yaml"), "-o", str(out))
    )
    assert code == 0, err
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "the least any plan must copy" in page
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temp file left


def test_report_estimates_the_execution_at_the_throttle_given(capsys: pytest.CaptureFixture[str]) -> None:
    """The page says how long `execute` would take (the copy model, execution/copy_model.py), at the
    `--throttle` given or, without one, at an assumed rate that it names as such."""
    code, page, err = run(capsys, *args("drain", "-o", "-"))
    assert code == 0, err
    assert '<p id="estimate"><b>Estimated duration</b>' in page and "(no throttle is set)" in page
    code, slow, err = run(capsys, *args("drain", "--throttle", "1000", "--hold-achieved-rate", "-o", "-"))
    assert code == 0, err
    said = re.search(r'<p id="estimate">.*?</p>', slow)
    assert said is not None and "at 1000 B/s per broker" in said[0] and "no throttle" not in said[0], said
    with pytest.raises(SystemExit) as refused:  # argparse's usage error
        main(args("drain", "--throttle", "0", "-o", "-"))
    assert refused.value.code == 2 and "--throttle: must be from 1" in capsys.readouterr().err


def minutes_said(page: str) -> int:
    """The estimated duration the page states (``3 h 25 min``, ``12 min``), in minutes."""
    found = re.search(r"Estimated duration</b> (?:(\d+) h )?(\d+) min", page)
    assert found is not None, page[:2000]
    return int(found[1] or 0) * 60 + int(found[2])


def test_report_estimates_with_the_moves_in_flight_execute_would_be_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`execute`'s own limits on moves in flight reach the estimate: one move at a time takes longer
    than execute's defaults; out-of-range values are refused as `execute` refuses them."""
    base = ("--throttle", "1000", "--hold-achieved-rate", "-o", "-")
    code, default, err = run(capsys, *args("decommission", *base))
    assert code == 0, err
    code, serial, err = run(
        capsys,
        *args("decommission", "--execute-max-moves", "1", "--execute-max-moves-per-broker", "1", *base),
    )
    assert code == 0, err
    assert minutes_said(serial) > minutes_said(default)
    with pytest.raises(SystemExit) as refused:
        main(args("drain", "--execute-max-moves", "0", "-o", "-"))
    assert refused.value.code == 2 and "--execute-max-moves: must be from 1" in capsys.readouterr().err


def test_report_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *args("drain", "-o", "-"))
    assert code == 0, err
    assert out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("--plan", "missing.json"), "plan file not found"),
        (("--snapshot", "missing.json"), "snapshot file not found"),
        (("--plan", "PLAN_OF_ANOTHER"), "does not exist in the cluster"),
        (("--intents", "BAD_INTENTS"), "bad.yaml"),
        (("-o", "NO_DIR"), "does not exist"),
    ],
)
def test_bad_input_exits_2_and_leaves_the_output_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: tuple[str, str], message: str
) -> None:
    out = tmp_path / "report.html"
    out.write_text("old")
    (tmp_path / "bad.yaml").write_text("kind: BrokerDecommission\nspec: {brokers: [999]}\n")
    values = {
        "PLAN_OF_ANOTHER": str(tmp_path / "other.json"),
        "BAD_INTENTS": str(tmp_path / "bad.yaml"),
        "NO_DIR": str(tmp_path / "nowhere" / "r.html"),
        "missing.json": str(tmp_path / "missing.json"),
    }
    (tmp_path / "other.json").write_text(
        '{"version": 1, "partitions": '
        '[{"topic": "nope", "partition": 0, "replicas": [1], "log_dirs": ["any"]}]}'
    )
    argv = args("decommission", "--intents", str(GOLDEN / "decommission" / "intents.yaml"), "-o", str(out))
    flag, value = change
    argv[argv.index(flag) + 1] = values.get(value, value)
    code, _, err = run(capsys, *argv)
    assert code == 2, err
    assert message in err and "Traceback" not in err
    assert out.read_text() == "old"


def test_report_counts_kafkas_own_time_per_move_as_given(capsys: pytest.CaptureFixture[str]) -> None:
    """`--kafka-ms-per-move` (what the operator measures into a KafkaCluster's status.kafkaWork) reaches
    the estimate: 137 moves whose bytes copy in seconds at this throttle take about 2 min at a second of
    Kafka's own work each; without it the page names the 8 ms it assumes; out of range is refused."""
    from kafka_placement.cli.planning_args import KAFKA_MS_PER_MOVE
    from kafka_placement.execution.copy_model import PER_MOVE_RANGE

    assert tuple(1000 * s for s in PER_MOVE_RANGE) == KAFKA_MS_PER_MOVE  # (one range, in two units)
    base = ("--throttle", str(10**11), "--hold-achieved-rate", "-o", "-")
    code, assumed, err = run(capsys, *args("all", *base))
    assert code == 0, err
    said = re.search(r'<p id="estimate"><b>[^<]*</b> (\d+ s) at .*?</p>', assumed)
    assert said is not None and said[1] == "5 s", assumed[:2000]
    assert "Kafka's own work at 8 ms a move (assumed)" in said[0]
    code, given, err = run(capsys, *args("all", "--kafka-ms-per-move", "1000", *base))
    assert code == 0, err
    assert minutes_said(given) == 2 and "Kafka's own work at 1000 ms a move." in given
    with pytest.raises(SystemExit) as refused:
        main(args("all", "--kafka-ms-per-move", "0.4", "-o", "-"))
    told = capsys.readouterr().err
    assert refused.value.code == 2 and "--kafka-ms-per-move: must be from 0.5 to 1000" in told
