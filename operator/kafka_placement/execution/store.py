"""Where execution records live: the storage contract and the CLI's file store.

A record has two parts (``execution/record.py`` owns their schema): a small mutable *progress document*
and immutable *blobs* (the plan, stored once under its content address, and the execution's baseline).
A store deals in bytes only:

- ``load()`` returns the progress document and remembers the revision it read;
- ``save(doc)`` is a compare-and-swap against that revision: if anyone else wrote in between it raises
  ``RecordConflict`` and writes nothing, so two writers can never silently overwrite each other. The
  caller reloads and decides again (a tick is stateless, so the next tick is the retry);
- ``put_blob(name, data)`` stores an immutable blob of any size (split as the medium needs) and is
  idempotent; ``get_blob(name)`` returns it or None; ``prune_blobs(keep)`` drops blobs not in ``keep``.

``FileStore`` keeps the document in one file (written atomically: temp file + fsync + rename) with
blobs beside it in ``<file>.blobs/``; the revision is the file's identity (inode, mtime, size: every
atomic write makes a new inode), checked under an exclusive ``flock`` of ``<file>.lock``. The
operator's store keeps the same parts in ConfigMaps (``reconcile/record_store.py``).
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from ..model.errors import BadInputError, PlacementError

BLOB_NAME = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$")
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024  # a progress document is KBs; refuse to parse anything absurd


class RecordConflict(PlacementError):
    """Someone else wrote the record since it was read: nothing was written; reload and decide again."""

    reason = "RecordConflict"


class Store(Protocol):
    """The durable home of one execution record (see the module docstring)."""

    @property
    def where(self) -> str:
        """A human name of the record's location, used in error messages."""
        ...

    def load(self) -> bytes | None: ...

    def save(self, doc: bytes) -> None: ...

    def put_blob(self, name: str, data: bytes) -> None: ...

    def get_blob(self, name: str) -> bytes | None: ...

    def has_blob(self, name: str) -> bool:
        """Whether blob ``name`` is stored whole (a cut put is not), without reading its content."""
        ...

    def prune_blobs(self, keep: set[str]) -> None: ...


def check_blob_name(name: str) -> str:
    if not BLOB_NAME.match(name):
        raise ValueError(f"invalid blob name {name[:80]!r}: lowercase letters, digits, '.', '-' (<= 63)")
    return name


class FileStore:
    """An execution record in a JSON file (``path``), blobs in ``path.blobs/``, cancel requests in
    ``path.cancel`` (a file of its own, so no writer of the record loses it)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._revision: tuple[int, int, int] | None = None  # identity of the file last read or written

    @property
    def where(self) -> str:
        return str(self.path)

    @property
    def blob_dir(self) -> Path:
        return self.path.with_name(self.path.name + ".blobs")

    @property
    def cancel_marker(self) -> Path:
        return self.path.with_name(self.path.name + ".cancel")

    def check_usable(self, *, write: bool) -> None:
        """Refuse (``BadInputError`` naming the path, exit 2) a location this store cannot use, before
        any work: the record a directory, FIFO or device, or unreadable; with ``write``, also its
        directory missing or not writable (the record is replaced there: temp file, lock, blobs)."""
        where = str(self.path)
        if self.path.name in ("", ".", "..") or where.endswith(os.sep):
            raise BadInputError("the execution state must name a file", where or "''")
        try:
            mode: int | None = self.path.stat().st_mode
        except FileNotFoundError:
            mode = None
        except OSError as e:
            raise BadInputError(f"cannot use the execution state: {e.strerror or e}", where) from None
        if mode is not None:
            if stat.S_ISDIR(mode):
                raise BadInputError("the execution state is a directory, not a file", where)
            if not stat.S_ISREG(mode):
                raise BadInputError(
                    "the execution state is not a regular file (a FIFO, socket or device)", where
                )
            if not os.access(self.path, os.R_OK):
                raise BadInputError("the execution state is not readable", where)
        if not write:
            return
        parent = self.path.parent
        if not parent.is_dir():
            what = "is not a directory" if parent.exists() else "does not exist"
            raise BadInputError(f"the execution state's directory {parent} {what}", where)
        if not os.access(parent, os.W_OK | os.X_OK):
            raise BadInputError(f"the execution state's directory {parent} is not writable", where)

    # ---- cancel requests from another process ------------------------------------------------------

    def request_cancel(self) -> None:
        try:
            self.cancel_marker.write_text(f"{time.time()}\n", encoding="utf-8")
        except OSError as e:
            raise PlacementError(f"cannot write {self.cancel_marker}: {e.strerror}") from None

    def cancel_requested(self) -> bool:
        return self.cancel_marker.exists()

    def clear_cancel(self) -> None:
        self.cancel_marker.unlink(missing_ok=True)

    # ---- the progress document ---------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        lock = self.path.with_name(self.path.name + ".lock")
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise PlacementError(f"cannot open the lock file {lock}: {e.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _identity(self) -> tuple[int, int, int] | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise BadInputError(f"cannot read the execution state: {e.strerror}", str(self.path)) from None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def load(self) -> bytes | None:
        try:
            if self.path.exists() and not self.path.is_file():
                raise BadInputError("not a regular file", str(self.path))
            with self.path.open("rb") as f:
                st = os.fstat(f.fileno())
                data = f.read(MAX_DOCUMENT_BYTES + 1)
        except FileNotFoundError:
            self._revision = None
            return None
        except OSError as e:
            raise BadInputError(f"cannot read the execution state: {e.strerror}", str(self.path)) from None
        if len(data) > MAX_DOCUMENT_BYTES:
            raise BadInputError(
                f"the execution state is larger than {MAX_DOCUMENT_BYTES} bytes", str(self.path)
            )
        self._revision = (st.st_ino, st.st_mtime_ns, st.st_size)
        return data

    def save(self, doc: bytes) -> None:
        with self._locked():
            if self._identity() != self._revision:
                raise RecordConflict(
                    f"{self.path} was changed by another process since it was read; nothing was written"
                )
            _atomic_write(self.path, doc)
            self._revision = self._identity()

    # ---- blobs -------------------------------------------------------------------------------------

    def put_blob(self, name: str, data: bytes) -> None:
        path = self.blob_dir / f"{check_blob_name(name)}.gz"
        if path.exists():
            return
        try:
            self.blob_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise PlacementError(f"cannot create {self.blob_dir}: {e.strerror}") from None
        _atomic_write(path, gzip.compress(data, compresslevel=6))

    def has_blob(self, name: str) -> bool:
        return (self.blob_dir / f"{check_blob_name(name)}.gz").is_file()  # written whole (atomic rename)

    def get_blob(self, name: str) -> bytes | None:
        path = self.blob_dir / f"{check_blob_name(name)}.gz"
        try:
            return gzip.decompress(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            raise BadInputError(f"cannot read blob {name}: {e}", str(self.blob_dir)) from None

    def prune_blobs(self, keep: set[str]) -> None:
        if not self.blob_dir.is_dir():
            return
        for path in self.blob_dir.glob("*.gz"):
            if path.name[: -len(".gz")] not in keep:
                path.unlink(missing_ok=True)


def _atomic_write(path: Path, data: bytes) -> None:
    parent = path.parent if str(path.parent) else Path(".")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise PlacementError(f"cannot write {path}: {e.strerror}") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
