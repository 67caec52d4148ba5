"""Fuzz suite, part 2: hostile *paths* for the inputs and outputs of ``plan``, ``evaluate``, ``place``
and ``crds``: missing dirs, directories, FIFOs, devices, symlinks, the same file twice. Every case is
exit 2 naming the path or flag, leaves every target as it was, and never blocks on a FIFO.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.unit.fuzz_support import GOLDEN, check_contract, listing, run_cli, run_cli_process

from kafka_placement.cli import _io

pytestmark = pytest.mark.timeout(60)

D = GOLDEN / "drain"


def commands(out: Path) -> dict[str, list[str]]:
    """Each command with every input valid; ``OUT`` marks the output flag's value."""
    s, i, p = str(D / "snapshot.json"), str(D / "intents.yaml"), str(D / "plan.json")
    o = str(out / "plan.json")
    summary = str(out / "summary.json")
    return {
        "plan": ["plan", "--snapshot", s, "--intents", i, "--summary", summary, "-o", "OUT"],
        "plan-summary": ["plan", "--snapshot", s, "--intents", i, "-o", o, "--summary", "OUT"],
        "evaluate": ["evaluate", "--snapshot", s, "--plan", p, "-o", "OUT"],
        "place": [
            *("place", "--snapshot", s, "--topic", "new", "--partitions", "2"),
            *("--replication-factor", "2", "-o", "OUT"),
        ],
    }


def _missing_dir(d: Path) -> str:
    return str(d / "missing" / "x.json")


def _directory(d: Path) -> str:
    (d / "adir").mkdir()
    return str(d / "adir")


def _fifo(d: Path) -> str:
    os.mkfifo(d / "fifo")
    return str(d / "fifo")


def _symlink_elsewhere(d: Path) -> str:
    (d / "elsewhere").mkdir()
    (d / "elsewhere" / "precious.json").write_text("keep me\n")
    (d / "link.json").symlink_to(d / "elsewhere" / "precious.json")
    return str(d / "link.json")


def _dangling_symlink(d: Path) -> str:
    (d / "dangling.json").symlink_to(d / "nowhere" / "x.json")
    return str(d / "dangling.json")


def _file_as_parent(d: Path) -> str:
    (d / "afile").write_text("x\n")
    return str(d / "afile" / "x.json")


def _trailing_slash(d: Path) -> str:
    return str(d / "newdir") + "/"


def _empty(_: Path) -> str:
    return ""


def _long_name(d: Path) -> str:
    return str(d / ("n" * 300 + ".json"))


def _device(_: Path) -> str:
    return "/dev/null"


def _same_as_other_output(d: Path) -> str:
    return "SAME"


BAD_OUTPUTS: dict[str, Callable[[Path], str]] = {
    "missing-dir": _missing_dir,
    "directory": _directory,
    "fifo": _fifo,
    "symlink-elsewhere": _symlink_elsewhere,
    "dangling-symlink": _dangling_symlink,
    "file-as-parent": _file_as_parent,
    "trailing-slash": _trailing_slash,
    "empty": _empty,
    "long-name": _long_name,
    "device": _device,
    "same-file": _same_as_other_output,
}


def snapshot_tree(d: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every entry under ``d`` with its type and (regular files) content, to prove nothing changed."""
    out: dict[str, tuple[int, bytes | None]] = {}
    for root, dirs, files in os.walk(d):
        for name in dirs + files:
            p = Path(root) / name
            st = os.lstat(p)
            content = p.read_bytes() if p.is_file() and not p.is_symlink() else None
            out[str(p.relative_to(d))] = (st.st_mode, content)
    return out


@pytest.mark.parametrize("kind", sorted(BAD_OUTPUTS))
@pytest.mark.parametrize("command", ["plan", "plan-summary", "evaluate", "place"])
def test_bad_output_paths_are_refused_before_anything_is_written(
    tmp_path: Path, command: str, kind: str
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    if kind == "same-file" and command in ("evaluate", "place"):
        pytest.skip("these commands have one output")
    target = BAD_OUTPUTS[kind](out)
    if target == "SAME":  # the other output's file, spelled differently
        target = str(out / ".." / "out" / ("summary.json" if command == "plan" else "plan.json"))
    argv = [target if a == "OUT" else a for a in commands(out)[command]]
    before = snapshot_tree(tmp_path)
    run = run_cli(argv)
    check_contract(
        run, names=["-o", "--summary", target], outdir=out, before=listing(out), codes=frozenset({2})
    )
    assert snapshot_tree(tmp_path) == before, "a target or its neighbours changed"


@pytest.mark.parametrize("kind", ["fifo", "directory", "device", "missing", "symlink-loop", "empty"])
@pytest.mark.parametrize("role", ["--snapshot", "--intents", "--plan"])
def test_bad_input_paths_are_bad_input_and_never_block(tmp_path: Path, role: str, kind: str) -> None:
    bad = {
        "fifo": lambda: (os.mkfifo(tmp_path / "fifo"), str(tmp_path / "fifo"))[1],
        "directory": lambda: ((tmp_path / "d").mkdir(), str(tmp_path / "d"))[1],
        "device": lambda: "/dev/zero",
        "missing": lambda: str(tmp_path / "missing.json"),
        "symlink-loop": lambda: ((tmp_path / "loop").symlink_to(tmp_path / "loop"), str(tmp_path / "loop"))[
            1
        ],
        "empty": lambda: "",
    }[kind]()
    s, i = str(D / "snapshot.json"), str(D / "intents.yaml")
    if role == "--plan":
        argv = ["evaluate", "--snapshot", s, "--plan", bad, "-o", str(tmp_path / "m.json")]
    else:
        args = {"--snapshot": s, "--intents": i, role: bad}
        argv = [
            "plan",
            "--snapshot",
            args["--snapshot"],
            "--intents",
            args["--intents"],
            "-o",
            str(tmp_path / "p.json"),
        ]
    before = listing(tmp_path)
    run = run_cli(argv)
    check_contract(run, names=[bad or "''", role], outdir=tmp_path, before=before, codes=frozenset({2}))


def test_a_fifo_input_does_not_block_the_real_command(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "snap.fifo")
    run = run_cli_process(
        ["plan", "--snapshot", "snap.fifo", "--intents", str(D / "intents.yaml"), "-o", "p.json"],
        cwd=tmp_path,
        timeout=30,
    )
    assert run.code == 2 and "snap.fifo" in run.err and "not a regular file" in run.err, run.err
    assert listing(tmp_path) == {"snap.fifo"}


# ---- crds -o DIR: every file or none ---------------------------------------------------------------


def test_crds_writes_every_file_into_a_new_or_symlinked_dir(tmp_path: Path) -> None:
    assert run_cli(["crds", "-o", str(tmp_path / "new")]).code == 0
    names = listing(tmp_path / "new")
    assert len(names) == 4 and all(n.endswith(".yaml") for n in names)
    (tmp_path / "link").symlink_to(tmp_path / "new")
    assert run_cli(["crds", "-o", str(tmp_path / "link")]).code == 0
    assert listing(tmp_path / "new") == names


@pytest.mark.parametrize("obstacle", ["directory", "fifo", "symlink"])
def test_crds_writes_none_when_one_target_cannot_be_written(tmp_path: Path, obstacle: str) -> None:
    out = tmp_path / "crds"
    assert run_cli(["crds", "-o", str(out)]).code == 0
    names = sorted(listing(out))
    for n in names:
        (out / n).write_text(f"old {n}\n")
    blocked = out / names[-1]
    blocked.unlink()
    if obstacle == "directory":
        blocked.mkdir()
    elif obstacle == "fifo":
        os.mkfifo(blocked)
    else:
        blocked.symlink_to(tmp_path)
    before = snapshot_tree(tmp_path)
    run = run_cli(["crds", "-o", str(out)])
    assert run.code == 2 and names[-1] in run.err, run.err
    assert snapshot_tree(tmp_path) == before


@pytest.mark.parametrize("where", ["missing/deeper", "afile"])
def test_crds_refuses_an_unusable_dir_and_creates_nothing(tmp_path: Path, where: str) -> None:
    (tmp_path / "afile").write_text("x\n")
    before = snapshot_tree(tmp_path)
    run = run_cli(["crds", "-o", str(tmp_path / where)])
    assert run.code == 2 and str(tmp_path / where) in run.err, run.err
    assert snapshot_tree(tmp_path) == before


def test_a_failed_rename_restores_what_was_replaced_and_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "crds"
    assert run_cli(["crds", "-o", str(out)]).code == 0
    for n in listing(out):
        (out / n).write_text(f"old {n}\n")
    before = snapshot_tree(tmp_path)
    real_replace, calls = os.replace, []

    def failing_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        calls.append(dst)
        if len(calls) == 3:  # the third CRD file: two are already in place
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(_io.os, "replace", failing_replace)
    run = run_cli(["crds", "-o", str(out)])
    monkeypatch.undo()
    assert run.code == 1 and "No space left on device" in run.err, run.err
    assert snapshot_tree(tmp_path) == before, "not all-or-none, or a temp/backup file was left"


def test_summary_and_output_naming_the_same_file_are_refused(tmp_path: Path) -> None:
    s, i = str(D / "snapshot.json"), str(D / "intents.yaml")
    for o, summary in (("x.json", "./x.json"), ("-", "-"), (str(tmp_path / "x.json"), "x.json")):
        run = run_cli_process(
            ["plan", "--snapshot", s, "--intents", i, "-o", o, "--summary", summary], cwd=tmp_path
        )
        assert run.code == 2 and ("same file" in run.err or "stdout" in run.err), run.err
        assert listing(tmp_path) == set()


def test_plan_writes_nothing_when_the_summary_cannot_be_written(tmp_path: Path) -> None:
    s, i = str(D / "snapshot.json"), str(D / "intents.yaml")
    missing = str(tmp_path / "no" / "s.json")
    run = run_cli(
        ["plan", "--snapshot", s, "--intents", i, "-o", str(tmp_path / "p.json"), "--summary", missing]
    )
    assert run.code == 2 and "--summary" in run.err, run.err
    assert listing(tmp_path) == set()


# ---- `snapshot -o NAME.parquet`: a Parquet snapshot directory --------------------------------------


def _parquet_file(d: Path) -> str:
    (d / "x.parquet").write_text("keep me\n")
    return str(d / "x.parquet")


def _parquet_link_to_dir(d: Path) -> str:
    (d / "elsewhere").mkdir()
    (d / "link.parquet").symlink_to(d / "elsewhere")
    return str(d / "link.parquet")


def _parquet_with_a_dir_inside(d: Path) -> str:
    (d / "s.parquet" / "partitions.parquet").mkdir(parents=True)
    (d / "s.parquet" / "brokers.json").write_text("old\n")
    return str(d / "s.parquet")


BAD_PARQUET = {
    "a file": _parquet_file,
    "a link to a dir": _parquet_link_to_dir,
    "a dir in the way": _parquet_with_a_dir_inside,
    "missing parent": lambda d: str(d / "missing" / "s.parquet"),
    "parent a file": lambda d: (d / "afile").write_text("x\n") and str(d / "afile" / "s.parquet"),
}


@pytest.mark.parametrize("kind", sorted(BAD_PARQUET))
def test_snapshot_refuses_a_parquet_target_it_cannot_write_before_connecting(
    tmp_path: Path, kind: str
) -> None:
    target = BAD_PARQUET[kind](tmp_path)
    before = snapshot_tree(tmp_path)
    # port 9 (discard): nothing listens; a refusal of -o comes before any connection is tried
    run = run_cli(["snapshot", "--bootstrap-server", "127.0.0.1:9", "-o", target])
    assert run.code == 2 and "-o" in run.err and target.split("/")[-1] in run.err, run.err
    assert snapshot_tree(tmp_path) == before


def test_a_parquet_snapshot_directory_is_written_replaced_and_read_back(tmp_path: Path) -> None:
    from kafka_placement.model.snapshot import ClusterSnapshot

    snap = ClusterSnapshot.loads((D / "snapshot.json").read_text())
    target = tmp_path / "s.parquet"
    _io.write_snapshot("-o", str(target), snap)
    assert listing(target) == {"brokers.json", "partitions.parquet"}
    assert _io.read_snapshot_arg(str(target)) == snap
    other = ClusterSnapshot(snap.brokers, snap.partitions[:3], snap.cluster_id)
    _io.write_snapshot("-o", str(target), other)  # a second snapshot replaces the first's two files
    assert listing(target) == {"brokers.json", "partitions.parquet"}
    assert _io.read_snapshot_arg(str(target)) == other
    _io.write_snapshot("-o", str(tmp_path / "s.json"), snap)  # any other name: the JSON file
    assert ClusterSnapshot.loads((tmp_path / "s.json").read_text()) == snap


def test_a_failed_parquet_snapshot_write_leaves_no_new_dir_and_the_old_files_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kafka_placement.model.errors import PlacementError
    from kafka_placement.model.snapshot import ClusterSnapshot
    from kafka_placement.spark import io as spark_io

    snap = ClusterSnapshot.loads((D / "snapshot.json").read_text())
    kept = tmp_path / "kept.parquet"
    _io.write_snapshot("-o", str(kept), snap)

    def full(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(spark_io, "write_partitions", full)
    before = snapshot_tree(tmp_path)
    for target in (tmp_path / "new.parquet", kept):
        with pytest.raises(PlacementError, match="No space left on device"):
            _io.write_snapshot("-o", str(target), snap)
        assert snapshot_tree(tmp_path) == before, "a new dir, a temp file or a half-written snapshot stayed"
