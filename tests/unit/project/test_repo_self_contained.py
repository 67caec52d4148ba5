"""The repository stands on its own: no file names an absolute path of the machine it was written on,
and nothing points at design documents outside the repo (docs/architecture.md is the project's own)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
THIS = Path(__file__).resolve()

# absolute paths that only exist on a developer's or CI machine (a conventional path such as
# /var/lib/kafka/data-0 in an example is fine: users edit it)
MACHINE_PATHS = re.compile(
    r"(?<![\w.~-])(?:/work/|/root/|/home/[A-Za-z0-9_.-]+/|/Users/[A-Za-z0-9_.-]+/|/tmp/[^\s'\"`)]*kpo)"
)
OUTSIDE_DOCS = re.compile(r"\.\./shared/|DESIGN\.md")


def tracked_text_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    files = []
    for name in out.stdout.decode().split("\0"):
        path = ROOT / name
        if name and path.is_file() and not path.is_symlink() and path.resolve() != THIS:
            data = path.read_bytes()
            if b"\0" not in data[:8192]:
                files.append(path)
    return files


def test_no_file_names_an_absolute_path_of_this_machine() -> None:
    hits = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()[:120]}"
        for p in tracked_text_files()
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
        if MACHINE_PATHS.search(line)
    ]
    assert not hits, "machine-specific absolute paths:\n" + "\n".join(hits)


def test_the_pattern_catches_machine_paths_and_spares_conventional_ones() -> None:
    for bad in (
        "/work/main/.rig/kafka-main/node-1/data-0",
        "/root/.cache/x",
        "/home/alice/kpo",
        "/tmp/x/kpo-1",
    ):
        assert MACHINE_PATHS.search(f"logDirs: [{bad}]"), bad
    for fine in ("/var/lib/kafka/data-0", "/data/d0", "~/.cache/kafka-placement", "$HOME/work/x", "/tmp"):
        assert not MACHINE_PATHS.search(f"path: {fine}"), fine


def test_docs_point_inside_the_repo() -> None:
    hits = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in tracked_text_files()
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
        if OUTSIDE_DOCS.search(line)
    ]
    assert not hits, "references to documents outside the repo:\n" + "\n".join(hits)
    readme = (ROOT / "README.md").read_text()
    assert "(docs/architecture.md)" in readme and (ROOT / "docs" / "architecture.md").is_file()
    assert "## Execution record" in (ROOT / "docs" / "architecture.md").read_text()
