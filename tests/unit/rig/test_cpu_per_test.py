"""CPU per test (tests/rig/cpu_per_test.py): a test's reaped children and the lane's processes outside its
tree are counted, an unrelated process is not, and the summary adds them up. Small Python children that
burn a known amount of CPU; one child pytest with the plugin on."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.rig import cpu_per_test

BURN = (
    "import sys, time\n"
    "end = time.process_time() + float(sys.argv[1])\n"
    "while time.process_time() < end: pass\n"
)  # (burns the CPU seconds of its first argument)


def detached(seconds: float, *marker: str) -> int:
    """A process outside this one's tree (its parent exits at once) burning ``seconds`` of CPU; its pid."""
    out = subprocess.run(
        ["sh", "-c", '"$0" -c "$1" "$2" "$3" >/dev/null 2>&1 & echo $!', sys.executable, BURN, str(seconds),
         *marker],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return int(out.stdout)


def wait_gone(pid: int) -> None:
    """Until ``pid`` has exited (a zombie, or reaped: its /proc entry may vanish between any two reads)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return
        if ") Z " in stat:
            return
        time.sleep(0.05)


def test_the_lanes_processes_outside_the_tree_are_counted_by_kind_and_others_not(tmp_path: Path) -> None:
    key = f"{tmp_path}/rig/"
    sampler = cpu_per_test.Sampler([key])
    sampler.sample()
    ours = detached(0.4, f"{key}kafka-main")  # a "python" process of the lane
    other = detached(0.4, str(tmp_path / "elsewhere"))
    time.sleep(0.1)
    sampler.sample()  # first seen mid-run: all its CPU so far counts
    wait_gone(ours)
    wait_gone(other)
    sampler.sample()
    counted = sampler.take()
    assert set(counted) == {"python"}, counted
    assert 0.3 <= counted["python"] <= 0.75, counted  # its 0.4 s of CPU and its start, once (twice: 0.9)
    assert sampler.take() == {}


def test_a_child_of_a_lane_process_is_the_lanes_whatever_its_command_line(tmp_path: Path) -> None:
    """As a Spark executor's Python workers: started by a lane process, with no rig dir in their command."""
    key = f"{tmp_path}/rig/"
    done = tmp_path / "burnt"
    child = BURN + f"open({str(done)!r}, 'w').close()\ntime.sleep(60)\n"
    parent = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {child!r}, '0.4'])\n"
    sampler = cpu_per_test.Sampler([key])
    out = subprocess.run(
        ["sh", "-c", '"$0" -c "$1" "$2" >/dev/null 2>&1 & echo $!', sys.executable, parent, f"{key}executor"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    lane_parent = int(out.stdout)
    try:
        deadline = time.monotonic() + 30
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        sampler.sample()
        counted = sampler.take()
    finally:
        subprocess.run(["pkill", "-P", str(lane_parent)], check=False)
        wait_gone(lane_parent)
    assert set(counted) == {"python"}, counted
    # the child's 0.4 s and the two starts, as /proc counts them: in clock ticks, each process's rounded
    # down (0.39 seen on a fast machine, whose starts took less than a tick); without the child, under 0.1
    assert 0.35 <= counted["python"] <= 1.5, counted


def test_a_test_s_children_and_own_cpu_are_written_per_test(tmp_path: Path) -> None:
    (tmp_path / "test_burn.py").write_text(
        "import subprocess, sys\n"
        f"BURN = {BURN!r}\n"
        "def test_child():\n"
        "    subprocess.run([sys.executable, '-c', BURN, '0.4'], check=True)\n"
        "def test_nothing():\n"
        "    pass\n"
    )
    out = tmp_path / "cpu"
    env = {**os.environ, cpu_per_test.ENV: str(out), "KP_RIG_DIR": str(tmp_path / ".rig-lane")}
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.rig.cpu_per_test",
         str(tmp_path / "test_burn.py"), f"--basetemp={tmp_path / 'base'}", f"--rootdir={tmp_path}"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {r[1].split("::")[1]: r for r in cpu_per_test.read_rows(out)}
    assert set(rows) == {"test_child", "test_nothing"}, rows
    lane, _, _, cpu, parts, busy = rows["test_child"]
    assert lane == "rig-lane"
    assert 0.3 <= parts["children"] <= 1.5, parts  # the burn and the child's start
    assert abs(cpu - sum(parts.values())) < 0.05
    assert busy >= 0.3, busy  # the machine was at least as busy as the burn
    assert rows["test_nothing"][4].get("children", 0.0) == 0.0
    assert "the 20 costliest tests" in cpu_per_test.summary(out, 20)


def test_the_summary_adds_up_lanes_and_files(tmp_path: Path) -> None:
    (tmp_path / "kafka-1.tsv").write_text(
        "tests/a.py::t1\t10.0\t5.00\tkafka=3.00 pytest=2.00\n"
        "tests/a.py::t2\t4.0\t1.00\tchildren=1.00\t3.50\n"
        "a torn line\n"
    )
    (tmp_path / "unit-2.tsv").write_text("tests/unit/b.py::t\t1.0\t0.50\tpytest=0.50\n")
    text = cpu_per_test.summary(tmp_path, 5)
    assert "  kafka          2       14        6   kafka 3, pytest 2, children 1" in text
    assert "  kafka          2       14        6   tests/a.py" in text
    assert text.index("tests/a.py::t1") < text.index("tests/a.py::t2")
    assert "      4.0      1.0      3.5   tests/a.py::t2" in text  # the machine's busy CPU when recorded
    assert cpu_per_test.summary(tmp_path / "none", 5).startswith("no measurements")
