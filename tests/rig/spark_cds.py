"""Class data sharing (CDS) for the Spark drivers the tests start on this machine: ``kafka-placement plan
--engine spark`` of a golden scenario spends about 11 s of CPU with the tests' JVM options, 8 s with a
dynamic archive of the classes a driver loads (measured on this project's 2-core machine, most of it the
driver's start), and ``make test`` starts dozens of drivers on saturated cores (the engine's tests, the
CLI's ``--engine spark``, Spark standalone's drivers).

``python tests/rig/spark_cds.py`` (``make rig-build``) writes the archive once per JDK and venv, in the venv
(``.venv/spark-cds``, named by ``tests/rig/jvm_cds.archive_name`` from the JDK binary and pyspark's jars):
the JDK maps an archive only for the very jars it was written with (their paths, sizes and times), so one
written for another checkout's venv would never serve, and the cache outside the repo would only grow. One
driver, started by pyspark's own ``spark-submit`` as pyspark starts the tests' drivers (same launcher, same
classpath), runs the project's Spark engine on a golden scenario and writes the classes it loaded at its
exit (``-XX:ArchiveClassesAtExit``, under a name of its own, renamed into place once the driver exited
normally). ``options()`` (tests/conftest.py adds them to ``SPARK_SUBMIT_OPTS``) names the archive when it
exists, with the JVM's CDS messages off: a JVM that cannot use it (another classpath) runs without it
instead of writing a warning on the driver's stdout, which is the CLI's.
Executors of the standalone rig and of pods (other classpaths and images) are not concerned.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.rig.jvm_cds import archive_name

ROOT = Path(__file__).resolve().parents[2]
# the tests' Spark JVMs (tests/conftest.py): client JIT only, serial collector: a JVM that lives seconds to a
# minute spends about a third less CPU (docs/benchmarks.md, "make test and set-up times")
TEST_JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData"
QUIET = "-Xlog:cds*=off"  # (also what a JVM says when it cannot map the archive)
TRAINING_JOB = """
import sys
from kafka_placement.cli import run
sys.argv = ["kafka-placement", "plan", "--engine", "spark", "--spark-master", "local[1]", *sys.argv[1:]]
run()
"""


def spark_home() -> Path:
    """The pyspark distribution of this Python (its ``jars`` and ``bin/spark-submit``), found without
    importing it (every test process asks)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise OSError("no pyspark")
    return Path(spec.origin).resolve().parent


def java() -> str | None:
    """The ``java`` Spark's launcher runs (``bin/spark-class``: ``$JAVA_HOME/bin/java``, else the PATH's)."""
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else shutil.which("java")


def archive() -> Path | None:
    """Where the drivers' archive is (or would be) for this JDK and this venv's pyspark; None without
    either."""
    binary = java()
    if binary is None:
        return None
    try:
        return Path(sys.prefix) / "spark-cds" / archive_name(binary, [spark_home() / "jars"])
    except OSError:
        return None


def options() -> list[str]:
    """The JVM options that map the drivers' archive ([] until ``train`` wrote it)."""
    found = archive()
    return ["-XX:SharedArchiveFile=" + str(found), QUIET] if found is not None and found.is_file() else []


def train(jvm_options: str, timeout: float = 600.0) -> Path:
    """Write the drivers' archive unless it exists; returns its path. Raises RuntimeError if the training
    driver fails (no archive is left then)."""
    found = archive()
    if found is None:
        raise RuntimeError("spark_cds: no java (JAVA_HOME or PATH) or no pyspark jars")
    if found.is_file():
        return found
    found.parent.mkdir(parents=True, exist_ok=True)
    training = found.with_name(f"{found.stem}.training-{uuid.uuid4().hex[:8]}.jsa")
    scenario = ROOT / "tests" / "testdata" / "golden" / "all"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    try:
        with tempfile.TemporaryDirectory(prefix="kp-spark-cds-") as tmp:
            job = Path(tmp) / "train.py"
            job.write_text(TRAINING_JOB)
            cmd = [
                str(spark_home() / "bin" / "spark-submit"),
                "--master", "local[1]",
                "--conf", "spark.ui.enabled=false",
                "--driver-java-options", f"{jvm_options} -XX:ArchiveClassesAtExit={training} {QUIET}",
                str(job),
                "--snapshot", str(scenario / "snapshot.json"),
                "--intents", str(scenario / "intents.yaml"),
                "-o", str(Path(tmp) / "plan.json"),
            ]  # fmt: skip
            done = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True, timeout=timeout)
            if done.returncode != 0 or not (Path(tmp) / "plan.json").is_file():
                tail = done.stderr[-2000:]
                raise RuntimeError(f"spark_cds: the training driver failed ({done.returncode}): {tail}")
        if not training.is_file() or training.stat().st_size == 0:
            raise RuntimeError(f"spark_cds: the training driver wrote no archive at {training}")
        os.replace(training, found)
        return found
    finally:
        with contextlib.suppress(OSError):
            training.unlink()


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main() -> int:
    # a stopped `make test` (or `make rig-build`): the training driver is killed, and its temp dir and
    # half-written archive removed, on the way out (a signal's default action would leave both)
    signal.signal(signal.SIGTERM, _terminated)
    try:
        path = train(TEST_JVM_OPTS)
    except (RuntimeError, subprocess.TimeoutExpired) as e:  # the drivers start without it: slower, not wrong
        print(f"{e}\nspark_cds: no archive: the tests' Spark drivers start without one", file=sys.stderr)
        return 0
    print(f"spark_cds: the Spark drivers' archive is {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
