#!/usr/bin/env python3
"""Where `make test`'s CPU goes, test by test: an opt-in pytest plugin and its summary.

`make test` is CPU-bound on this 2-core machine (its wall follows the CPU its lanes spend;
docs/benchmarks.md), so what a test costs is its CPU, not its wall. With ``KP_TEST_CPU=DIR`` set, every
pytest of the run (unit workers and each lane: tests/conftest.py registers this module as a plugin then)
appends a line per test to ``DIR/<lane>-<pid>.tsv``: the test's id, its wall seconds and its CPU seconds by
kind, where its CPU is

- ``pytest``: the pytest process itself (the sampler's own thread left out);
- ``children``: the processes it started and reaped during the test (operators, CLIs, the Spark JVMs
  they start), from ``RUSAGE_CHILDREN``; a process still running when the test ends counts in the test
  that reaps it;
- the processes that are not its descendants but belong to its lane: their command line holds the lane's
  rig dir (``$KP_RIG_DIR``: the brokers, kube-apiserver, etcd, Spark's master and workers) or this pytest's
  ``--basetemp`` (clusters a test brings up itself), sampled every second (a process counts all its CPU
  when first seen), by kind: ``kafka`` (brokers, ZooKeeper), ``k8s`` (apiserver, etcd), ``spark`` (JVMs),
  ``java``, ``python`` and ``other``; and the processes those start (Spark's executors' Python workers),
  by their own kind.

A process seen by neither (a short one outside the tree, the node's kubelet and containers) is not counted;
each line also has the machine's busy CPU seconds during the test (``/proc/stat``), which is the test's
own whole cost when one lane runs alone (a single test file, say).

    KP_TEST_CPU=/tmp/cpu make test
    python tests/rig/cpu_per_test.py summary /tmp/cpu     # per lane, per file and the costliest tests
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import resource
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

ENV = "KP_TEST_CPU"
PERIOD_S = 1.0
HZ = os.sysconf("SC_CLK_TCK")


def kind(cmd: str) -> str:
    """The kind of a lane process by its command line."""
    if "kafka.Kafka" in cmd or "ZooKeeperServerMain" in cmd:
        return "kafka"
    if "kube-apiserver" in cmd or "etcd" in cmd:
        return "k8s"
    if "java" in cmd:
        return "spark" if "spark" in cmd else "java"
    return "python" if "python" in cmd else "other"


def read_procs() -> dict[int, tuple[int, float, str]]:
    """pid -> (parent pid, CPU seconds so far, start time) of every process."""
    out: dict[int, tuple[int, float, str]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        rest = stat.rsplit(")", 1)[1].split()
        out[int(name)] = (int(rest[1]), (int(rest[11]) + int(rest[12])) / HZ, rest[19])
    return dict(sorted(out.items(), key=lambda kv: int(kv[1][2])))  # parents before their children


def machine_busy() -> float:
    """The machine's busy CPU seconds since boot, every core: user, nice, system, irq and softirq time (not
    idle, iowait, nor the time a hypervisor stole)."""
    user, nice, system, _idle, _iowait, irq, softirq = (
        int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]
    )
    return (user + nice + system + irq + softirq) / HZ


def cmdline(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").replace("\0", " ")
    except OSError:
        return None


class Sampler:
    """The CPU of the lane's processes outside this process's tree, summed since the last ``take``."""

    def __init__(self, keys: Sequence[str], me: int | None = None) -> None:
        self.keys = [k for k in keys if k]
        self.me = os.getpid() if me is None else me
        self.seen: dict[tuple[int, str], tuple[float, str | None]] = {}  # (pid, start) -> (cpu, kind)
        self.acc: collections.Counter[str] = collections.Counter()
        self.lock = threading.Lock()
        self.own_cpu = 0.0  # the sampling thread's CPU (counted in this process's rusage)

    def _descends(self, pid: int, procs: dict[int, tuple[int, float, str]]) -> bool:
        for _ in range(64):
            if pid == self.me:
                return True
            if pid <= 1 or pid not in procs:
                return False
            pid = procs[pid][0]
        return False

    def sample(self) -> None:
        procs = read_procs()
        with self.lock:
            for pid, (ppid, cpu, start) in procs.items():
                key = (pid, start)
                if pid == self.me or self._descends(pid, procs):
                    continue  # counted by rusage; a process that leaves the tree counts from then, whole
                prev = self.seen.get(key)
                if prev is None:
                    cmd = cmdline(pid)
                    if cmd is None:
                        continue
                    parent = self.seen.get((ppid, procs[ppid][2])) if ppid in procs else None
                    lane = any(k in cmd for k in self.keys) or (parent is not None and parent[1] is not None)
                    what = kind(cmd) if lane else None
                    self.seen[key] = (cpu, what)
                    if what is not None:
                        self.acc[what] += cpu
                    continue
                self.seen[key] = (cpu, prev[1])
                if prev[1] is not None:
                    self.acc[prev[1]] += cpu - prev[0]

    def take(self) -> dict[str, float]:
        with self.lock:
            out = dict(self.acc)
            self.acc.clear()
        return out

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(PERIOD_S):
            t0 = time.thread_time()
            with contextlib.suppress(Exception):  # a measurement never fails a test
                self.sample()
            self.own_cpu += time.thread_time() - t0


def own_cpu() -> tuple[float, float]:
    """(this process's CPU, its reaped children's) in seconds."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


class Recorder:
    """The plugin: one line per test to ``<dir>/<lane>-<pid>.tsv``."""

    def __init__(self, out_dir: Path, lane: str, keys: Sequence[str]) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        self.file = (out_dir / f"{lane}-{os.getpid()}.tsv").open("a")
        self.sampler = Sampler(keys)
        self.stop = threading.Event()
        self.sampler.sample()
        self.sampler.take()  # what ran before the first test is nobody's
        threading.Thread(target=self.sampler.run, args=(self.stop,), daemon=True).start()

    def measure(self, nodeid: str) -> Iterator[None]:
        self.sampler.sample()
        self.sampler.take()
        (me0, kids0), own0, t0, busy0 = own_cpu(), self.sampler.own_cpu, time.monotonic(), machine_busy()
        yield
        self.sampler.sample()
        lane = self.sampler.take()
        (me1, kids1), own1, busy = own_cpu(), self.sampler.own_cpu, machine_busy() - busy0
        parts = {"pytest": max(me1 - me0 - (own1 - own0), 0.0), "children": kids1 - kids0, **lane}
        cells = " ".join(f"{k}={v:.2f}" for k, v in sorted(parts.items()) if v >= 0.005)
        wall, cpu = time.monotonic() - t0, sum(parts.values())
        self.file.write(f"{nodeid}\t{wall:.2f}\t{cpu:.2f}\t{cells}\t{busy:.2f}\n")
        self.file.flush()

    def close(self) -> None:
        self.stop.set()
        self.file.close()


# ------------------------------------------------------------ the hooks (tests/conftest.py registers them)

_RECORDER: Recorder | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _RECORDER
    out = os.environ.get(ENV)
    if not out or _RECORDER is not None:
        return
    rig_dir = os.environ.get("KP_RIG_DIR", "")
    lane = Path(rig_dir).name.lstrip(".") if rig_dir else "unit"
    base = config.option.basetemp
    # (a trailing slash: the node lane's `.rig` must not match the other lanes' `.rig-kafka`)
    keys = [f"{rig_dir.rstrip('/')}/" if rig_dir else "", f"{Path(base).resolve()}/" if base else ""]
    _RECORDER = Recorder(Path(out), lane, keys)


def pytest_unconfigure(config: pytest.Config) -> None:
    global _RECORDER
    if _RECORDER is not None:
        _RECORDER.close()
        _RECORDER = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if _RECORDER is None:
        yield
        return
    yield from _RECORDER.measure(item.nodeid)


# ----------------------------------------------------------------------------- the summary


def read_rows(out_dir: Path) -> Iterable[tuple[str, str, float, float, dict[str, float], float]]:
    """(lane, test id, wall, cpu, cpu by kind, the machine's busy CPU) of every line under ``out_dir``."""
    for f in sorted(out_dir.glob("*.tsv")):
        lane = f.stem.rsplit("-", 1)[0]
        for line in f.read_text().splitlines():
            cells = line.split("\t")
            if len(cells) not in (4, 5):
                continue
            parts = dict((kv.split("=", 1)[0], float(kv.split("=", 1)[1])) for kv in cells[3].split())
            busy = float(cells[4]) if len(cells) == 5 else float("nan")
            yield lane, cells[0], float(cells[1]), float(cells[2]), parts, busy


def summary(out_dir: Path, top: int) -> str:
    rows = list(read_rows(out_dir))
    if not rows:
        return f"no measurements under {out_dir}"
    lines = ["CPU s by lane (tests, wall s of its tests, CPU s, by kind):"]
    lanes: dict[str, list[Any]] = {}
    files: dict[tuple[str, str], list[float]] = {}
    for lane, test, wall, cpu, parts, _ in rows:
        acc = lanes.setdefault(lane, [0, 0.0, 0.0, collections.Counter()])
        acc[0] += 1
        acc[1] += wall
        acc[2] += cpu
        acc[3].update(parts)
        f = files.setdefault((lane, test.split("::", 1)[0]), [0.0, 0.0, 0.0])
        f[0] += 1
        f[1] += wall
        f[2] += cpu
    for lane, (n, wall, cpu, parts) in sorted(lanes.items(), key=lambda kv: -kv[1][2]):
        kinds = ", ".join(f"{k} {v:.0f}" for k, v in parts.most_common())
        lines.append(f"  {lane:10} {n:5d} {wall:8.0f} {cpu:8.0f}   {kinds}")
    lines.append(f"the {top} costliest files (lane, tests, wall s, CPU s):")
    for (lane, path), (n, wall, cpu) in sorted(files.items(), key=lambda kv: -kv[1][2])[:top]:
        lines.append(f"  {lane:10} {n:5.0f} {wall:8.0f} {cpu:8.0f}   {path}")
    lines.append(f"the {top} costliest tests (lane, wall s, CPU s, the machine's busy CPU s meanwhile):")
    for lane, test, wall, cpu, _, busy in sorted(rows, key=lambda r: -r[3])[:top]:
        lines.append(f"  {lane:10} {wall:8.1f} {cpu:8.1f} {busy:8.1f}   {test}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("summary", help="per lane, per file and the costliest tests")
    s.add_argument("dir", type=Path)
    s.add_argument("--top", type=int, default=20)
    args = parser.parse_args(argv)
    print(summary(args.dir, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
