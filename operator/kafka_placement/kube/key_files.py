"""Where the Kubernetes client's key files go: a directory of this process that no crash leaves behind.

The Kubernetes client (and kopf's login through it) needs a kubeconfig's inline ``client-key-data``,
``client-certificate-data`` and ``certificate-authority-data`` as files: it writes each to a temp file
that only its exit handler removes, so an operator or CLI run out of a cluster and then SIGKILLed (an OOM
kill, a crash, a laptop's `kill -9`) left its private key in /tmp for good. Here they go to a directory
of this process, ``kube-<pid>-<start time>`` under the user's private directory (``private_dir``: 0700,
owned by this user, refused otherwise; the PEM files of Kafka's Secrets live there too,
reconcile/secret_files.py; both written through ``in_private_dir``); it is removed at a normal exit (the
user's directory too once empty), and every process that loads a kubeconfig first removes those of
processes that no longer run (``sweep``).
In a pod (the service account's files) nothing is written.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..model.errors import PlacementError

PREFIX = "kube-"
_OWN: Path | None = None
T = TypeVar("T")


def private_dir() -> Path:
    """The private directory of this user's key files (created 0700; refused if anyone else could use it)."""
    path = Path(tempfile.gettempdir()) / f"kafka-placement-{os.getuid()}"
    try:
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=0o700)
        info = path.lstat()
    except OSError as e:
        raise PlacementError(f"cannot make {path}, the directory of this user's key files: {e}") from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise PlacementError(
            f"{path} must be a directory owned by uid {os.getuid()} with mode 0700 (it holds TLS keys); "
            "remove it and let the operator create it"
        )
    return path


def in_private_dir(use: Callable[[Path], T]) -> T:
    """``use(private_dir())``, once more if the directory vanished meanwhile: another process's exit removes
    the user's directory when it is empty (``remove``), possibly between its making here and its use (the
    first file written into it). Any other error, or a second disappearance, is raised."""
    base = private_dir()
    try:
        return use(base)
    except FileNotFoundError:
        if base.exists():
            raise
    return use(private_dir())


def _start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks after boot; None: no such process)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def process_dir() -> Path:
    """This process's directory for the client's key files (0700), made after the directories of dead
    processes are swept, removed at this process's normal exit with the user's directory if nothing else
    is left in it (``remove``)."""
    global _OWN
    if _OWN is None:
        name = f"{PREFIX}{os.getpid()}-{_start_time(os.getpid())}"

        def make(base: Path) -> Path:
            sweep(base)
            (base / name).mkdir(mode=0o700, exist_ok=True)
            return base / name

        try:
            own = in_private_dir(make)
        except FileNotFoundError as e:
            raise PlacementError(f"cannot make this process's key directory: {e}") from None
        _OWN = own
        atexit.register(remove, own)  # after the client's own handler (registered later)
    return _OWN


def remove(own: Path) -> None:
    """Remove a process's directory, and the user's directory above it once nothing else is in it (no
    other process's, no PEM file of reconcile/secret_files.py): a run leaves nothing in the temp dir."""
    shutil.rmtree(own, ignore_errors=True)
    with contextlib.suppress(OSError):
        own.parent.rmdir()


def sweep(base: Path) -> list[Path]:
    """Remove the directories of processes that no longer run (a SIGKILL skipped their exit); returns them."""
    gone = []
    for d in base.glob(f"{PREFIX}*"):
        pid, _, started = d.name.removeprefix(PREFIX).partition("-")
        if pid.isdigit() and _start_time(int(pid)) == started:
            continue  # still running
        shutil.rmtree(d, ignore_errors=True)
        gone.append(d)
    return gone


def remove_own() -> None:
    """``remove`` this process's directory now (an exit that skips the exit handlers: ``os._exit``)."""
    if _OWN is not None:
        remove(_OWN)
