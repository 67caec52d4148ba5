"""PEM material from Kubernetes Secrets as files for the Kafka clients, without leaking one per reconcile.

librdkafka and Python's ssl module read CA bundles, client certificates and keys from files. Each distinct
content gets one file, named by its SHA-256, mode 0600, in the user's private directory (0700, owned by
this user, under the temp dir: an emptyDir in the chart; ``kube.key_files.in_private_dir``): every reconcile
of the same Secret reuses the same file, a rotated Secret gets a new one, and files nobody has used for
``STALE_S`` are removed. Nothing secret is ever logged; the file name reveals nothing but a hash.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from pathlib import Path

from ..kube.key_files import in_private_dir

STALE_S = 24 * 3600.0  # unused (not touched by a reconcile) this long: removed


def pem_file(content: str) -> str:
    """The path of a 0600 file holding ``content``: the same path for the same content, written once."""
    return in_private_dir(lambda directory: _write(directory, content.encode()))


def _write(directory: Path, data: bytes) -> str:
    """``pem_file`` in ``directory`` (the user's private directory)."""
    path = directory / f"{hashlib.sha256(data).hexdigest()[:32]}.pem"
    if path.exists():
        os.utime(path)  # in use: not stale
    else:
        tmp = directory / f".{path.name}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    _prune(directory, keep=path)
    return str(path)


def _prune(directory: Path, keep: Path) -> None:
    """Remove PEM files not used for ``STALE_S`` (rotated Secrets, deleted clusters)."""
    cutoff = time.time() - STALE_S
    for f in directory.iterdir():
        if f != keep and f.suffix in (".pem", ".tmp"):
            with contextlib.suppress(OSError):
                if f.stat().st_mtime < cutoff:
                    f.unlink()
