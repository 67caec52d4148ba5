"""The Spark engine's failure handling that needs no Spark cluster: the master's URL is checked before
Spark starts (malformed: exit 2; a standalone master nobody listens on: exit 1 in seconds, with real
sockets), and Spark's exceptions are told apart (out of memory, stopped application, a task failing on
every attempt). The same errors from real Spark are in tests/integration/test_spark_standalone.py."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from pyspark.errors import PySparkRuntimeError

from kafka_placement.cli import main
from kafka_placement.model.errors import BadInputError, PlacementError
from kafka_placement.spark.failures import check_master, first_reason, spark_failure, standalone_addresses


@pytest.mark.parametrize(
    "master",
    [
        "local",
        "local[1]",
        "local[*]",
        "local[2,3]",
        "local-cluster[2,1,1024]",
        "k8s://https://h:6443",
        "yarn",
    ],
)
def test_well_formed_masters_pass(master: str) -> None:
    check_master(master)


@pytest.mark.parametrize(
    "master", ["", "locale", "local[0]", "local[x]", "spark://", "spark://h", "spark://h:0", "spark://h:99999",
               "spark://:7077", "spark://h:7077,", "http://h:7077", "x" * 10_000],
)  # fmt: skip
def test_malformed_masters_are_bad_input(master: str) -> None:
    with pytest.raises(BadInputError) as e:
        check_master(master)
    assert e.value.location == "--spark-master"
    assert len(e.value.message) < 600


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.timeout(60)  # a refused connection ends the check at once; only a hang would reach this
def test_an_unreachable_standalone_master_fails_fast() -> None:
    port = free_port()
    with pytest.raises(PlacementError) as e:
        check_master(f"spark://127.0.0.1:{port}")
    assert not isinstance(e.value, BadInputError) and e.value.exit_code == 1
    assert f"127.0.0.1:{port}" in e.value.message and "unreachable" in e.value.message
    assert "Connection refused" in e.value.message  # the reason, not a connect timeout


def test_one_listening_master_of_several_is_enough() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        check_master(f"spark://127.0.0.1:{free_port()},127.0.0.1:{port}")
    assert standalone_addresses("spark://a:1,[::1]:2") == [("a", 1), ("::1", 2)]


def test_the_cli_refuses_a_bad_master_before_reading_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = ["--snapshot", str(tmp_path / "none.json"), "--intents", str(tmp_path / "none.yaml")]
    code = main(
        ["plan", *files, "--engine", "spark", "--spark-master", "spark://h", "-o", str(tmp_path / "p")]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--spark-master" in err and "spark://h" in err
    assert not (tmp_path / "p").exists()


def test_bad_spark_conf_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["plan", "--snapshot", "s", "--intents", "i", "-o", "p", "--spark-conf", "no-equals-sign"])
    assert e.value.code == 2 and "KEY=VALUE" in capsys.readouterr().err


TRACE = """An exception was thrown from the Python worker. Please see the stack trace below.
Traceback (most recent call last):
  File "/w/pyspark/worker.py", line 1, in main
    process()
{last}
"""


def test_an_executor_out_of_memory_says_so_and_what_to_do() -> None:
    error = spark_failure(
        PySparkRuntimeError(TRACE.format(last="MemoryError: cannot allocate")), "spark://m:1"
    )
    assert "ran out of memory" in error.message and "spark.executor.memory" in error.message
    assert "MemoryError: cannot allocate" in error.message and error.exit_code == 1


def test_a_task_failing_every_attempt_names_spark_s_reason() -> None:
    text = ("Job aborted due to stage failure: Task 3 in stage 7.0 failed 4 times, most recent failure: ...\n"
            + TRACE.format(last="ValueError: bad shard"))  # fmt: skip
    error = spark_failure(PySparkRuntimeError(text), "spark://m:1")
    assert "failed 4 times" in error.message and "ValueError: bad shard" in error.message


def test_a_stopped_application_and_bounded_messages() -> None:
    error = spark_failure(
        PySparkRuntimeError("Cannot call methods on a stopped SparkContext." + "x" * 99_999), "m"
    )
    assert "was stopped" in error.message and len(error.message) < 1500


def test_our_own_bugs_are_not_dressed_as_spark_failures() -> None:
    with pytest.raises(KeyError):
        raise spark_failure(KeyError("topic"), "spark://m:1")
    assert first_reason("\n\n") == ""


def test_root_cause_is_the_last_caused_by_line() -> None:
    from kafka_placement.spark.failures import root_cause

    text = (
        "org.apache.spark.SparkException: External scheduler cannot be instantiated\n"
        "Caused by: java.lang.reflect.InvocationTargetException\n"
        "Caused by: java.net.UnknownHostException: kubernetes.default.svc\n"
    )
    assert root_cause(text) == "Caused by: java.net.UnknownHostException: kubernetes.default.svc"
    assert root_cause("ValueError: x\n") == "ValueError: x"
