"""A Spark standalone cluster on loopback for the rig: one master and two workers (one core and 1 GiB
each), started with the pyspark distribution's own launcher (``spark-class``), whose executors run a
Python that has only pyspark, pandas and pyarrow (a venv in the cache, built from PyPI with the versions
of the project's venv), not the project: the Spark engine has to ship its package to them.

    python tests/rig/spark_rig.py up | down | status [--rig-dir DIR]

``up`` writes key ``spark`` of ``<rig dir>/rig.json``: the master URL, the workers' Python and the pids.
The daemons' JVMs carry ``-Dkafka.placement.rig=<rig dir>/spark/<daemon>`` (``tests/rig/leftovers.py``
finds them); their executors exit with their worker. Ports are loopback-only and shifted by
``KP_RIG_PORT_OFFSET``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.rig.kafka_rig import (
    HOST,
    RigError,
    alive,
    busy_ports,
    port_free,
    reap,
    rig_entry,
    rig_json_locked,
    rig_parser,
    rig_pids,
    run_command,
    shifted,
    stop_pids,
)
from tests.rig.node_rig import cache_dir
from tests.rig.spark_cds import TEST_JVM_OPTS

KEY = "spark"
MASTER_PORT = shifted(27077)
MASTER_UI_PORT = shifted(27078)
WORKERS = (("worker-1", shifted(27079), shifted(27080)), ("worker-2", shifted(27081), shifted(27082)))
SPARE = ("worker-spare", shifted(27083), shifted(27084))  # started and killed by fault tests only
WORKER_CORES = 1
WORKER_MEMORY = "1g"
WORKER_PACKAGES = ("pyspark", "pandas", "pyarrow")  # what a Spark cluster's Python has; not the project
UP_TIMEOUT_S = 120.0


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def worker_python() -> Path:
    """A venv with only ``WORKER_PACKAGES`` (the project venv's versions), cached by those versions."""
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    pins = [f"{p}=={importlib.metadata.version(p)}" for p in WORKER_PACKAGES]
    key = hashlib.sha256(f"{base}|{sys.version}|{' '.join(pins)}".encode()).hexdigest()[:16]
    venv = cache_dir() / "spark-worker" / key
    python = venv / "bin" / "python"
    if (venv / ".complete").exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    started = time.monotonic()
    for cmd in ([str(base), "-m", "venv", str(venv)], [str(python), "-m", "pip", "install", "-q", *pins]):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
        if proc.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            raise RigError(f"spark rig: `{' '.join(cmd)}` failed:\n{proc.stderr[-2000:]}")
    (venv / ".complete").write_text(" ".join(pins) + "\n")
    print(
        f"spark rig: worker Python ({' '.join(pins)}) in {time.monotonic() - started:.0f}s", file=sys.stderr
    )
    return python


def state_dir(rig_dir: Path) -> Path:
    return rig_dir / "spark"


def read_entry(rig_dir: Path) -> dict[str, Any] | None:
    return rig_entry(rig_dir, KEY)


def daemon_env(state: Path, name: str) -> dict[str, str]:
    """A daemon's environment. Everything it and its executors write lives under ``state / name`` (removed
    with the rig): the shuffle and block dirs (``SPARK_LOCAL_DIRS``), the JVMs' temp files (lz4's native
    library, extracted to ``java.io.tmpdir``; executors inherit ``JAVA_TOOL_OPTIONS`` from their worker) and
    the Python workers' (``TMPDIR``). Left at their defaults they were in /tmp, and a worker stopped with
    the rig left them there after every run. The JVMs run the tests' options (client JIT, serial GC:
    tests/rig/spark_cds.py), as the tests' drivers do."""
    tmp = state / name / "tmp"
    for d in (tmp, state / name / "local"):
        d.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_LOCAL_IP=HOST,
        SPARK_LOG_DIR=str(state / "logs"),
        SPARK_LOCAL_DIRS=str(state / name / "local"),
        SPARK_DAEMON_MEMORY="256m",
        SPARK_DAEMON_JAVA_OPTS=f"-Dkafka.placement.rig={state / name}",
        SPARK_NO_DAEMONIZE="1",
        # (the daemons and the executors they start: the tests' JVM options, as their drivers')
        JAVA_TOOL_OPTIONS=f"-Djava.io.tmpdir={tmp} {TEST_JVM_OPTS}",
        TMPDIR=str(tmp),
    )
    return env


def start(state: Path, name: str, args: Sequence[str]) -> subprocess.Popen[bytes]:
    (state / name).mkdir(parents=True, exist_ok=True)
    with open(state / f"{name}.log", "wb") as out:
        proc = subprocess.Popen(
            [str(spark_home() / "bin" / "spark-class"), *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=state / name,
            env=daemon_env(state, name),
            start_new_session=True,
        )
    (state / f"{name}.pid").write_text(f"{proc.pid}\n")
    return proc


def start_worker(state: Path, name: str, port: int, ui: int) -> subprocess.Popen[bytes]:
    """A worker of the rig's master (``WORKER_CORES``, ``WORKER_MEMORY``), marked like the others."""
    return start(
        state,
        name,
        ["org.apache.spark.deploy.worker.Worker", "--host", HOST, "--port", str(port),
         "--webui-port", str(ui), "--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY,
         "--work-dir", str(state / name / "work"), f"spark://{HOST}:{MASTER_PORT}"],
    )  # fmt: skip


def master_status() -> dict[str, Any]:
    with urllib.request.urlopen(f"http://{HOST}:{MASTER_UI_PORT}/json/", timeout=3) as r:
        body: dict[str, Any] = json.loads(r.read())
    return body


def master_answer() -> dict[str, Any] | None:
    """``master_status``, or None when the master's UI did not answer in time: what a poll reads (on a
    loaded machine, a JVM starting beside it, the UI answered a read after its 3 s, and a test that polled
    with ``master_status`` failed on that one read)."""
    with contextlib.suppress(OSError, ValueError):
        return master_status()
    return None


def ports() -> list[int]:
    return [MASTER_PORT, MASTER_UI_PORT, *(p for _, port, ui in (*WORKERS, SPARE) for p in (port, ui))]


def daemon_pids(state: Path) -> dict[int, str]:
    """The rig's daemons still alive, by the marker on their command line (not only the pid files)."""
    return {pid: Path(marker).name for pid, marker in rig_pids(state).items()}


def teardown(rig_dir: Path, timeout: float) -> list[str]:
    state = state_dir(rig_dir)
    workers = [p for p, d in daemon_pids(state).items() if d != "master"]
    stop_pids(workers, timeout)  # workers first: they stop their executors
    stop_pids(list(daemon_pids(state)), timeout)
    reap()
    problems = []
    busy = busy_ports(ports())
    if busy:
        problems.append(f"ports still in use: {busy}")
    left = daemon_pids(state)
    if left:
        problems.append(f"processes still running: {sorted(left)}")
    shutil.rmtree(state, ignore_errors=True)
    with rig_json_locked(rig_dir) as data:
        data.pop(KEY, None)
    return problems


def cmd_up(args: Any) -> int:
    rig_dir = Path(args.rig_dir).resolve()
    state = state_dir(rig_dir)
    entry = read_entry(rig_dir)
    if entry and all(alive(int(p)) for p in entry["pids"].values()):
        print(f"spark rig already up: {entry['master']}")
        return 0
    if entry or state.exists():
        teardown(rig_dir, args.stop_timeout)
    busy = [p for p in ports() if not port_free(p)]
    if busy:
        raise RigError(
            f"spark rig: ports in use on {HOST}: {busy} (another rig? KP_RIG_PORT_OFFSET shifts them)"
        )
    python = worker_python()
    started = time.monotonic()
    procs: dict[str, subprocess.Popen[bytes]] = {}
    master = f"spark://{HOST}:{MASTER_PORT}"
    try:
        state.mkdir(parents=True)
        procs["master"] = start(
            state,
            "master",
            ["org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(MASTER_PORT),
             "--webui-port", str(MASTER_UI_PORT)],
        )  # fmt: skip
        for name, port, ui in WORKERS:
            procs[name] = start_worker(state, name, port, ui)
        deadline = time.monotonic() + UP_TIMEOUT_S
        seen = ""
        while True:
            dead = [n for n, p in procs.items() if p.poll() is not None]
            if dead:
                tail = (state / f"{dead[0]}.log").read_text(errors="replace")[-2000:]
                raise RigError(f"spark rig: {dead[0]} exited:\n{tail}")
            with contextlib.suppress(OSError, ValueError):
                status = master_status()
                seen = f"{status.get('aliveworkers')} of {len(WORKERS)} workers alive"
                if status.get("aliveworkers") == len(WORKERS):
                    break
            if time.monotonic() > deadline:
                raise RigError(
                    f"spark rig: not up within {UP_TIMEOUT_S:.0f}s ({seen or 'master not answering'})"
                )
            time.sleep(0.5)
        entry = {
            "master": master,
            "masterUi": f"http://{HOST}:{MASTER_UI_PORT}",
            "workerPython": str(python),
            "workers": len(WORKERS),
            "coresPerWorker": WORKER_CORES,
            "memoryPerWorker": WORKER_MEMORY,
            "stateDir": str(state),
            "pids": {n: p.pid for n, p in procs.items()},
            "logs": {n: str(state / f"{n}.log") for n in procs},
        }
        with rig_json_locked(rig_dir) as data:
            data[KEY] = entry
    except BaseException:
        print("spark rig: up failed; stopping what was started", file=sys.stderr)
        teardown(rig_dir, 10)
        raise
    print(
        f"spark rig up in {time.monotonic() - started:.1f}s: master {master}, {len(WORKERS)} workers x "
        f"{WORKER_CORES} core / {WORKER_MEMORY}, worker Python {python} (written to {rig_dir / 'rig.json'} "
        f"key '{KEY}')"
    )
    return 0


def cmd_down(args: Any) -> int:
    rig_dir = Path(args.rig_dir).resolve()
    had = read_entry(rig_dir) is not None or state_dir(rig_dir).exists()
    problems = teardown(rig_dir, args.stop_timeout)
    if problems:
        raise RigError("spark rig: " + "; ".join(problems))
    print("spark rig " + ("down" if had else "was not up"))
    return 0


def cmd_status(args: Any) -> int:
    entry = read_entry(Path(args.rig_dir).resolve())
    if not entry:
        print("spark rig: not up")
        return 1
    pids = {n: alive(int(p)) for n, p in entry["pids"].items()}
    try:
        workers = f"{master_status().get('aliveworkers')} workers alive"
    except (OSError, ValueError) as e:
        workers = f"master UI not answering: {e}"
    print(f"spark rig: {entry['master']}, {workers}")
    for n, ok in pids.items():
        print(f"  {n} pid {entry['pids'][n]} {'alive' if ok else 'DEAD'}")
    return 0 if all(pids.values()) else 1


def parser() -> Any:
    p, sub, common = rig_parser("spark_rig.py", __doc__)
    for name, func, text in (
        ("up", cmd_up, "start the master and two workers, wait until both workers are registered"),
        ("down", cmd_down, "stop the workers (and their executors), then the master; free the ports"),
        ("status", cmd_status, "print the master URL and whether each daemon is alive"),
    ):
        sub.add_parser(name, parents=[common], help=text).set_defaults(func=func)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(parser(), argv, "spark rig")


if __name__ == "__main__":
    sys.exit(main())
