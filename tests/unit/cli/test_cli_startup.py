"""The CLI starts fast: building the parser and every ``--help`` import no heavy module (the planner's
engines, the executor, the Kafka gateway, pydantic, the Kafka clients, Spark...); a command imports its
implementation when it runs. Also: every sub-command's ``--help`` works, and the defaults the flags show
are the implementations' (they are read from light modules now, not from the implementations)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_placement.cli import build_parser, main

# imported by no parser and no --help; each one costs tens to hundreds of milliseconds
HEAVY = (
    "kafka_placement.execution.executor",
    "kafka_placement.execution.record_doc",
    "kafka_placement.planning.optimizer",
    "kafka_placement.spark.engines",
    "kafka_placement.kafka.gateway",
    "kafka_placement.kube.gateway",
    "kafka_placement.model.crd_schema",
    "kafka_placement.handlers",
    "kafka_placement.cli.planning_cmds",
    "kafka_placement.cli.kafka_cmds",
    "kafka_placement.cli.operator_cmds",
    "kafka_placement.cli._io",
    "pydantic",
    "confluent_kafka",
    "kafka",  # kafka-python
    "pyspark",
    "pyarrow",
    "kopf",
    "kubernetes",
)


def _commands() -> list[str]:
    sub = next(a for a in build_parser()._actions if isinstance(a.choices, dict))
    assert isinstance(sub.choices, dict)
    return list(sub.choices)


# `driver` passes every argument to spark-submit (prefix "+", no -h): it has no help of its own
HELPED = [c for c in _commands() if c != "driver"]

_PROBE = """
import json, sys
from kafka_placement.cli import build_parser, main
build_parser()
loaded = {"parser": sorted(m for m in HEAVY if m in sys.modules)}
for argv in [["--help"], *[[c, "--help"] for c in HELPED], ["plan"]]:
    try:
        main(argv)
        code = None
    except SystemExit as e:
        code = e.code
    loaded[" ".join(argv)] = [code, sorted(m for m in HEAVY if m in sys.modules)]
print(json.dumps(loaded))
"""


def test_parser_and_help_import_nothing_heavy() -> None:
    code = f"HEAVY = {HEAVY!r}\nHELPED = {HELPED!r}\n{_PROBE}"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = json.loads(proc.stdout.splitlines()[-1])
    assert loaded.pop("parser") == []
    assert loaded.pop("plan") == [2, []]  # a usage error (missing --snapshot) imports nothing either
    assert loaded == {" ".join(k): [0, []] for k in [["--help"], *[[c, "--help"] for c in HELPED]]}, (
        "a --help imported a heavy module or did not exit 0"
    )


def test_the_probe_can_fail() -> None:
    """The probe sees a heavy module when one is imported (so an empty answer above means something)."""
    probe = _PROBE.replace("build_parser()", "build_parser(); import kafka_placement.execution.executor", 1)
    code = f"HEAVY = {HEAVY!r}\nHELPED = []\n{probe}"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = json.loads(proc.stdout.splitlines()[-1])
    heavy = {"kafka_placement.execution.executor", "kafka_placement.kafka.gateway", "pydantic"}
    assert heavy <= set(loaded["parser"])


GOLDEN = Path(__file__).resolve().parents[2] / "testdata" / "golden" / "decommission"


def test_plan_imports_no_executor_kafka_or_spark(tmp_path: Path) -> None:
    """`plan` (local engine) runs the planner only: not `report`'s copy model (the execution record's
    pydantic models), no Kafka or Kubernetes gateway, no Spark."""
    argv = ["plan", "--snapshot", str(GOLDEN / "snapshot.json"), "--intents", str(GOLDEN / "intents.yaml")]
    argv += ["-o", str(tmp_path / "plan.json")]
    absent = [m for m in HEAVY if not m.startswith(("kafka_placement.spark.", "kafka_placement.planning."))]
    absent.remove("kafka_placement.cli.planning_cmds")
    absent.remove("kafka_placement.cli._io")
    code = (
        "import json, sys\nfrom kafka_placement.cli import main\n"
        f"code = main({argv!r})\nprint(json.dumps([code, sorted(m for m in {absent!r} if m in sys.modules)]))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.splitlines()[-1]) == [0, []]
    assert json.loads((tmp_path / "plan.json").read_text())["partitions"]


@pytest.mark.parametrize("command", HELPED)
def test_every_help_exits_0(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: kafka-placement {command} ")


def test_top_level_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert all(f"    {c} " in out for c in _commands())


def test_plan_help_keeps_the_percent_of_the_effort_text(capsys: pytest.CaptureFixture[str]) -> None:
    """The effort description says "within 0.5% of the optimum": argparse %-formats help strings, so an
    unescaped % made `plan --help` fail (TypeError, exit 1)."""
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "within 0.5% of the optimum" in out and "Default: Balanced." in out


def _parse(*argv: str) -> dict[str, object]:
    return vars(build_parser().parse_args(list(argv)))


def test_execute_defaults_are_the_executors() -> None:
    from kafka_placement.execution.executor import Limits

    limits = Limits()
    args = _parse("execute", "--plan", "p.json")
    assert args["max_moves_per_broker"] == limits.max_moves_per_broker
    assert args["max_moves"] == limits.max_moves
    assert args["max_reapplies"] == limits.max_reapplies
    assert args["reapply_window_seconds"] == limits.reapply_window_s
    assert args["max_disk_share"] == limits.max_disk_share
    report = _parse("report", "--snapshot", "s", "--plan", "p", "-o", "r.html")
    assert report["execute_max_moves_per_broker"] == limits.max_moves_per_broker
    assert report["execute_max_moves"] == limits.max_moves


def test_plan_defaults_are_the_engines() -> None:
    from kafka_placement.spark.engines import EngineSettings
    from kafka_placement.spark.k8s import SparkK8sSettings

    engine = EngineSettings()
    args = _parse("plan", "--snapshot", "s", "--intents", "i")
    assert (args["engine"], args["spark_master"], args["shards"]) == (
        engine.engine,
        engine.master,
        engine.shards,
    )
    assert args["spark_executor_wait"] == engine.executor_wait_s
    k8s = SparkK8sSettings(namespace="default", image="i", exchange_claim="c", exchange_dir=Path("/x"))
    assert args["spark_launcher"] == k8s.launcher
    assert args["spark_executors"] == k8s.executor_instances
    assert args["spark_memory"] == k8s.executor_memory == k8s.driver_memory
    assert args["spark_service_account"] == k8s.service_account
    assert args["exchange_mount"] == k8s.exchange_mount
    assert args["spark_timeout"] == k8s.timeout_s
