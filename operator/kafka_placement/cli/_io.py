"""File I/O of the CLI: inputs read strictly, every output written through one atomic writer.

Inputs (``-`` = stdin) are regular UTF-8 files; a FIFO, device or directory is refused (exit 2).
Outputs (plan JSON or Parquet, summary, snapshot, CRD files) all go through ``write_outputs``: every
target is checked before anything is written (its directory exists and is writable; the target is
absent or a regular file, never a symlink, directory, FIFO or device; no two outputs name the same
file; at most one goes to stdout); then each is rendered into a temp file beside its target and
fsynced; only when all are ready are they renamed into place, so a command writes all of its outputs
or none. A failed rename puts back what the earlier renames replaced; temp files never survive.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model.documents import read_input_text
from ..model.errors import BadInputError, PlacementError
from ..model.plan import Plan
from ..model.snapshot import ClusterSnapshot
from ..spark.collector import collector_paused

STDOUT = "-"
# errors that say something about the path the user gave (exit 2); others (disk full, I/O) are exit 1
_PATH_ERRNOS = {
    errno.EACCES,
    errno.EPERM,
    errno.ENOENT,
    errno.ENOTDIR,
    errno.EISDIR,
    errno.EROFS,
    errno.ENAMETOOLONG,
    errno.ELOOP,
    errno.EEXIST,
    errno.ENXIO,
}


# ---- inputs ----------------------------------------------------------------------------------------


def read_text(path: str, what: str) -> str:
    """The text of an input file (``-`` = stdin), UTF-8; every failure names the file (exit 2)."""
    _named(path, what)
    if path != STDOUT:
        return read_input_text(path, what)
    try:
        return sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInputError(f"{what} is not UTF-8 text (byte {e.start})", "<stdin>") from None


def _named(path: str, what: str) -> None:
    if not path:
        raise BadInputError(f"an empty name is not a {what} file", f"--{what}")


def read_snapshot_arg(path: str) -> ClusterSnapshot:
    """A snapshot from a JSON file (``-`` = stdin) or a Parquet snapshot directory, read with Python's
    cyclic garbage collector paused (``spark.collector``: millions of objects at a million partitions)."""
    _named(path, "snapshot")
    with collector_paused():
        if path != STDOUT and Path(path).is_dir():
            from ..spark.io import read_snapshot

            return read_snapshot(Path(path))
        return ClusterSnapshot.loads(read_text(path, "snapshot"), source=path)


def read_plan(path: str) -> Plan:
    """A plan from a JSON file (``-`` = stdin) or a ``.parquet`` file."""
    from ..spark.io import is_parquet, read_plan_parquet

    _named(path, "plan")
    if is_parquet(path):
        return read_plan_parquet(Path(path))
    return Plan.loads(read_text(path, "plan"), source=path)


# ---- outputs ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Output:
    """One output of a command: ``flag`` names it in messages, ``path`` is a file or ``-`` (stdout).

    ``text`` is the content, or ``pieces`` gives it in pieces written one after the other (a document of
    a million partitions is never held whole), or ``write`` renders it into the (temp) file it is given."""

    flag: str
    path: str
    text: str | None = None
    write: Callable[[Path], None] | None = None
    pieces: Callable[[], Iterable[str]] | None = None

    @property
    def to_stdout(self) -> bool:
        return self.path == STDOUT

    def chunks(self) -> Iterator[str]:
        """The text (``text``, then ``pieces``), in the order written."""
        if self.text is not None:
            yield self.text
        if self.pieces is not None:
            yield from self.pieces()


def json_text(doc: Any) -> str:
    """Strict JSON (NaN or infinities are a bug, never written), one trailing newline."""
    return json.dumps(doc, indent=1, allow_nan=False) + "\n"


def json_output(flag: str, path: str | None, doc: Any) -> Output:
    return Output(flag, STDOUT if path is None else path, text=json_text(doc))


def plan_output(flag: str, path: str | None, plan: Plan) -> Output:
    """A plan as JSON, or as Parquet when ``path`` ends in .parquet."""
    from ..spark.io import is_parquet, write_plan_table

    if path is not None and path != STDOUT and is_parquet(path):
        return Output(flag, path, write=lambda tmp: write_plan_table(plan, tmp))
    return document_output(flag, path, plan.pieces)


def document_output(flag: str, path: str | None, pieces: Callable[[], Iterable[str]]) -> Output:
    """A JSON document's text, written entry by entry by its model in pieces (``Plan.pieces``,
    ``ClusterSnapshot.pieces``: ``json_text``'s text, without Python's indenting encoder), as an output."""
    return Output(flag, STDOUT if path is None else path, pieces=lambda: itertools.chain(pieces(), ("\n",)))


def snapshot_output(flag: str, path: str | None) -> list[tuple[str, str | None]]:
    """The files ``write_snapshot`` writes for ``path``, checked as far as they can be before the snapshot
    is taken (``check_outputs`` them with the command's other outputs): the JSON file (``-``/None =
    stdout), or the two files of a Parquet snapshot directory when ``path`` ends in ``.parquet`` (a new
    directory, or one whose files can be replaced; a file, link or device of that name is refused)."""
    from ..spark.io import BROKERS_FILE, PARTITIONS_FILE, is_parquet

    if path is None or path == STDOUT or not is_parquet(path):
        return [(flag, path)]
    d = Path(path)
    if d.is_dir() and not d.is_symlink():
        return [(flag, str(d / BROKERS_FILE)), (flag, str(d / PARTITIONS_FILE))]
    _check_target(flag, path)  # absent, in a writable directory (a link, FIFO or device: refused)
    if d.exists():
        raise BadInputError(f"{flag} ending in .parquet names a Parquet snapshot directory, not a file", path)
    return []


def write_snapshot(flag: str, path: str | None, snapshot: ClusterSnapshot) -> None:
    """``snapshot`` as JSON, or as a Parquet snapshot directory (``brokers.json`` and ``partitions.parquet``,
    what ``--snapshot`` reads in about half the time of the JSON file at a million partitions) when
    ``path`` ends in ``.parquet``: the directory is created if absent (and removed again if the write
    fails), its two files written all or none like any command's outputs."""
    from ..spark.io import BROKERS_FILE, PARTITIONS_FILE, write_brokers, write_partitions

    files = snapshot_output(flag, path)
    if files == [(flag, path)]:  # piece by piece: a million partitions' text is 245 MB
        write_outputs([document_output(flag, path, snapshot.pieces)])
        return
    assert path is not None
    d, created = prepare_dir(flag, path)
    try:
        write_outputs(
            [
                Output(flag, str(d / BROKERS_FILE), write=lambda tmp: write_brokers(snapshot, tmp)),
                Output(flag, str(d / PARTITIONS_FILE), write=lambda tmp: write_partitions(snapshot, tmp)),
            ]
        )
    except BaseException:
        if created:
            shutil.rmtree(d, ignore_errors=True)
        raise


def check_outputs(outputs: Sequence[tuple[str, str | None]]) -> None:
    """Refuse (exit 2) unless every ``(flag, path)`` can be written: see the module docstring.

    Called before a command's work (so a bad ``-o`` fails fast) and again by ``write_outputs``."""
    seen: dict[str, str] = {}
    to_stdout: list[str] = []
    for flag, path in outputs:
        if path is None or path == STDOUT:
            to_stdout.append(flag)
            continue
        target = _check_target(flag, path)
        key = os.path.normcase(str(target))
        if key in seen:
            raise BadInputError(f"{flag} and {seen[key]} name the same file", path)
        seen[key] = flag
    if len(to_stdout) > 1:
        raise BadInputError(f"only one output can go to stdout, not {' and '.join(to_stdout)}", STDOUT)


def _check_target(flag: str, path: str) -> Path:
    """The target's absolute path (its directory resolved) after checking it can be replaced."""
    if not path or path.endswith(os.sep) or Path(path).name in ("", ".", ".."):
        raise BadInputError(f"{flag} must name a file", path or "''")
    given = Path(path)
    try:
        parent = given.parent.resolve(strict=True)
    except (FileNotFoundError, NotADirectoryError):
        raise BadInputError(f"{flag}: directory {given.parent} does not exist", path) from None
    except (OSError, RuntimeError) as e:  # RuntimeError: a symlink loop on older Pythons
        raise BadInputError(f"{flag}: cannot use directory {given.parent}: {e}", path) from None
    if not parent.is_dir():
        raise BadInputError(f"{flag}: {given.parent} is not a directory", path)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise BadInputError(f"{flag}: directory {given.parent} is not writable", path)
    target = parent / given.name
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return target
    except OSError as e:
        raise BadInputError(f"{flag}: cannot check the target: {e.strerror or e}", path) from None
    if stat.S_ISLNK(mode):
        raise BadInputError(f"{flag} is a symbolic link; name the file itself", path)
    if stat.S_ISDIR(mode):
        raise BadInputError(f"{flag} is a directory, not a file", path)
    if not stat.S_ISREG(mode):
        raise BadInputError(f"{flag} is not a regular file (a FIFO, socket or device)", path)
    return target


def write_outputs(outputs: Sequence[Output]) -> None:
    """Write every output, or none of them (see the module docstring)."""
    check_outputs([(o.flag, o.path) for o in outputs])
    files = [o for o in outputs if not o.to_stdout]
    staged: list[tuple[Output, Path, Path]] = []  # (output, target, temp file)
    try:
        for o in files:
            target = _check_target(o.flag, o.path)
            staged.append((o, target, _stage(o, target)))
        _commit([(target, tmp) for _, target, tmp in staged])
    except BaseException:
        for _, _, tmp in staged:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
        raise
    for o in outputs:
        if o.to_stdout:
            sys.stdout.writelines(o.chunks())
            sys.stdout.flush()


def _file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _stage(o: Output, target: Path) -> Path:
    """The output rendered into a fsynced temp file in the target's directory."""
    try:
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as e:
        raise _write_error(o, e) from None
    tmp = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.writelines(o.chunks())
        if o.write is not None:
            o.write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, _file_mode())
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise _write_error(o, e) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def _commit(staged: Sequence[tuple[Path, Path]]) -> None:
    """Rename every temp file onto its target; on failure restore the targets already replaced."""
    backups: list[tuple[Path, Path | None]] = []  # (target, hard link to its old content or None)
    try:
        for target, tmp in staged:
            backups.append((target, _backup(target)))
            os.replace(tmp, target)
    except OSError as e:
        for target, backup in reversed(backups[:-1] if backups else []):
            with contextlib.suppress(OSError):
                if backup is not None:
                    os.replace(backup, target)
                else:
                    target.unlink(missing_ok=True)
        _drop([b for _, b in backups])
        raise _write_error(None, e, str(backups[-1][0]) if backups else "") from None
    _drop([b for _, b in backups])
    for directory in {t.parent for t, _ in staged}:
        _fsync_dir(directory)


def _backup(target: Path) -> Path | None:
    """A hard link to the target's current content (None when there is none or links are not supported)."""
    if not target.exists():
        return None
    backup = target.with_name(f".{target.name}.{os.getpid()}.bak")
    try:
        backup.unlink(missing_ok=True)
        os.link(target, backup)
    except OSError:
        return None
    return backup


def _drop(paths: Sequence[Path | None]) -> None:
    for p in paths:
        if p is not None:
            with contextlib.suppress(OSError):
                p.unlink(missing_ok=True)


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_error(o: Output | None, e: OSError, path: str = "") -> PlacementError:
    where = o.path if o is not None else path
    what = f"cannot write {o.flag}" if o is not None else "cannot write"
    reason = e.strerror or str(e)
    if e.errno in _PATH_ERRNOS:
        return BadInputError(f"{what}: {reason}", where)
    return PlacementError(f"{where}: {what}: {reason}")


def write_json(path: str | None, doc: Any, flag: str = "-o") -> None:
    """One JSON output, atomically (``-``/None = stdout)."""
    write_outputs([json_output(flag, path, doc)])


def existing_dir(flag: str, path: str) -> Path:
    """A directory that must exist already and be writable (a mounted volume): exit 2 naming ``flag``
    otherwise, so the command fails before it contacts anything."""
    d = Path(path)
    if not d.is_dir():
        what = "is not a directory" if d.exists() or d.is_symlink() else "does not exist"
        raise BadInputError(f"{path} {what}", flag)
    if not os.access(d, os.W_OK | os.X_OK):
        raise BadInputError(f"directory {path} is not writable", flag)
    return d


def prepare_dir(flag: str, path: str) -> tuple[Path, bool]:
    """An output directory: existing, or created now when its parent exists (``created`` is True then,
    so the caller can remove it again if writing fails)."""
    d = Path(path)
    if d.is_symlink() and not d.is_dir():
        raise BadInputError(f"{flag} is a symbolic link to something that is not a directory", path)
    if d.exists():
        if not d.is_dir():
            raise BadInputError(f"{flag} is not a directory", path)
        return d, False
    if not d.parent.is_dir():
        raise BadInputError(f"{flag}: directory {d.parent} does not exist", path)
    try:
        d.mkdir()
    except OSError as e:
        raise _write_error(Output(flag, path), e) from None
    return d, True
