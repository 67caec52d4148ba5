"""What can go wrong outside the planner when Spark plans, turned into clear, bounded errors.

- ``check_master``: a malformed ``--spark-master`` is bad input (exit 2); a standalone master
  (``spark://host:port[,host:port]``) that no TCP connection reaches is a failure (exit 1) found in
  seconds, before Spark spends a minute retrying its registration.
- ``ExecutorWatch``: on a cluster master, the job waits at most ``wait_s`` seconds for executors: none
  joining (no worker has the cores or memory asked for, or every worker was lost mid-job) cancels
  the job with that reason instead of Spark waiting forever.
- ``spark_failure``: an exception from the Spark job (py4j or pyspark's) becomes a ``PlacementError``
  saying what failed — an executor out of memory, the application stopped by the master, a task that
  failed on every attempt — with the first line of Spark's own reason, clipped. A worker lost
  mid-job is not an error: Spark runs the lost tasks again elsewhere and the plan is the same.

No plan is written on any of these errors: the CLI writes outputs only after planning succeeded.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from typing import Any

from ..model.errors import BadInputError, PlacementError
from ..model.jsonio import clip

LOCAL_MASTER = re.compile(r"local(\[(\*|[1-9][0-9]*)(,[1-9][0-9]*)?\])?|local-cluster\[[0-9, ]+\]")
OTHER_MASTERS = ("k8s://", "yarn", "mesos://")
CONNECT_TIMEOUT_S = 5.0
MEMORY_HINT = (
    "give executors more memory (--spark-conf spark.executor.memory=..., "
    "spark.executor.pyspark.memory=...) or split the work in more shards (--shards)"
)
_MEMORY_SIGNS = (
    "MemoryError",
    "java.lang.OutOfMemoryError",
    "exited with code 137",
    "exit code 137",
    "exited with code 52",
    "exit code 52",
    "Container killed",
    "Cannot allocate memory",
    "failed to map segment",
)


def standalone_addresses(master: str) -> list[tuple[str, int]]:
    """The ``host:port`` pairs of a ``spark://`` master URL; a malformed one is bad input."""
    pairs = []
    for item in master[len("spark://") :].split(","):
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise BadInputError(
                f"'{clip(master, 200)}' is not a Spark master URL: expected spark://HOST:PORT[,HOST:PORT]",
                "--spark-master",
            )
        pairs.append((host.strip("[]"), int(port)))
    return pairs


def validate_master(master: str) -> None:
    """Refuse a malformed master URL (bad input, exit 2) before anything is read or started."""
    if master.startswith("spark://"):
        standalone_addresses(master)
    elif not (LOCAL_MASTER.fullmatch(master) or master.startswith(OTHER_MASTERS)):
        raise BadInputError(
            f"'{clip(master, 200)}' is not a Spark master: expected local[N], local[*], spark://HOST:PORT, "
            "k8s://URL or yarn",
            "--spark-master",
        )


def check_master(master: str | None) -> None:
    """``validate_master``, then refuse a standalone master no TCP connection reaches (exit 1), quickly."""
    if master is None:  # spark-submit's own
        return
    validate_master(master)
    if not master.startswith("spark://"):
        return
    problems = []
    for host, port in standalone_addresses(master):
        try:
            with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
                return
        except OSError as e:
            problems.append(f"{host}:{port}: {e.strerror or e}")
    raise PlacementError(
        f"the Spark master {clip(master, 200)} is unreachable ({clip('; '.join(problems), 300)}): "
        "is it running and is --spark-master right?"
    )


def is_cluster(master: str) -> bool:
    return not master.startswith("local")


def _executors(sc: Any) -> int:
    """Executors registered with the driver, not counting the driver itself."""
    return max(0, len(sc._jsc.sc().statusTracker().getExecutorInfos()) - 1)


class ExecutorWatch:
    """Cancels the running Spark jobs when no executor has been registered for ``wait_s`` seconds.

    ``reason`` says why it cancelled (None while it has not); ``spark_failure`` reports that reason
    instead of Spark's "job cancelled". Used as a context manager around the Spark actions.
    """

    def __init__(self, sc: Any, wait_s: float, poll_s: float = 1.0) -> None:
        self.sc = sc
        self.wait_s = wait_s
        self.poll_s = poll_s
        self.reason: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="executor-watch", daemon=True)

    def __enter__(self) -> ExecutorWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        seen = time.monotonic()
        had = False
        while not self._stop.wait(self.poll_s):
            try:
                if self.reason:  # a job submitted after the cancel would wait for executors too
                    self.sc.cancelAllJobs()
                    continue
                count = _executors(self.sc)
            except Exception:  # the context stopped: the job's own error says why
                return
            if count:
                seen, had = time.monotonic(), True
                continue
            if time.monotonic() - seen >= self.wait_s:
                self.reason = (
                    f"every Spark executor was lost and none came back within {self.wait_s:.0f}s"
                    if had
                    else f"no Spark executor joined within {self.wait_s:.0f}s: no worker of "
                    f"{self.sc.master} has the free cores and memory this application asks for "
                    f"(spark.executor.memory={self.sc.getConf().get('spark.executor.memory', '1g')})"
                )
                self.sc.cancelAllJobs()


def is_spark_error(e: BaseException) -> bool:
    try:
        from py4j.protocol import Py4JError
        from pyspark.errors import PySparkException
    except ImportError:  # pragma: no cover - pyspark is a dependency
        return False
    return isinstance(e, (Py4JError, PySparkException))


def first_reason(text: str) -> str:
    """The most telling line of a Spark error: a ``Caused by:`` (or a SparkException other than "Job
    aborted") line, else the last line naming a Python exception, else the first line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    python = [line for line in lines if re.match(r"^[A-Za-z_.]*(Error|Exception)\b.*:", line)]
    for line in lines:
        if line.startswith(("Caused by:", "org.apache.spark.SparkException:")) and "Job aborted" not in line:
            return line
    return python[-1] if python else (lines[0] if lines else "")


def root_cause(text: str) -> str:
    """The last ``Caused by:`` line of a Java stack (where a failure started, e.g. an unknown host), else
    ``first_reason``."""
    causes = [line.strip() for line in text.splitlines() if line.strip().startswith("Caused by:")]
    return causes[-1] if causes else first_reason(text)


def spark_failure(e: BaseException, master: str, watch: ExecutorWatch | None = None) -> PlacementError:
    """The ``PlacementError`` for an exception raised by Spark (py4j's or pyspark's); any other
    exception is re-raised as it is (a bug of ours stays an unexpected failure)."""
    if isinstance(e, PlacementError) or not is_spark_error(e):
        raise e
    if watch is not None and watch.reason:
        return PlacementError(f"the Spark job on {clip(master, 200)} was cancelled: {watch.reason}")
    text = str(e)
    reason = clip(first_reason(text), 600)
    if any(sign in text for sign in _MEMORY_SIGNS):
        return PlacementError(
            f"a Spark executor ran out of memory planning on {clip(master, 200)} ({reason}): {MEMORY_HINT}"
        )
    if "stopped SparkContext" in text or "All masters are unresponsive" in text:
        return PlacementError(
            f"the Spark application on {clip(master, 200)} was stopped before the plan was done "
            f"(the master did not accept it or went away): {reason}"
        )
    failed = re.search(r"Task \S+ in stage \S+ failed (\d+) times", text)
    if failed:
        return PlacementError(
            f"a Spark task failed {failed.group(1)} times on {clip(master, 200)}, so the job was "
            f"aborted: {reason}"
        )
    return PlacementError(f"the Spark job on {clip(master, 200)} failed: {type(e).__name__}: {reason}")


__all__ = [
    "ExecutorWatch",
    "check_master",
    "first_reason",
    "is_cluster",
    "is_spark_error",
    "spark_failure",
    "standalone_addresses",
    "validate_master",
]
