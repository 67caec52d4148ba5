"""Class data sharing (CDS) for the rig's Kafka JVMs: a broker's start spends a third of its CPU loading
and verifying Kafka's classes (a 3-node cluster's ``up``: about 13.5 s of CPU without an archive, 9 s with
one, on this project's 2-core machine), and ``make test`` starts a hundred or so brokers side by side on
saturated cores. A dynamic archive of the classes a broker loaded (JDK 13+: ``-XX:ArchiveClassesAtExit``,
written when the JVM exits normally) is mapped by every later JVM of the same JDK and classpath
(``-XX:SharedArchiveFile``) instead.

One archive per JDK and classpath (Kafka's jars of a release, the broker plugin's when on the path), in
the cache outside the repo (``$KP_CACHE/kafka/cds``). While none exists, the first node of a cluster
started writes one at its exit, under a name of its own (a ``.training-`` file; its node dir remembers
it); a stop that ended the JVM normally (SIGTERM, controlled shutdown) then renames it into place, a
SIGKILL discards it. A cluster's teardown stops that broker first and waits for it (up to
``TRAINEE_STOP_S``) even when asked to kill at once (the compatibility smoke's): once per JDK and
release. A JVM of another JDK build or classpath warns on its stdout and runs without the
archive (the JDK checks both), so a stale archive costs only its saving."""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from tests.rig.cache import cache_dir

TRAINING_NOTE = "cds-training"  # in a node dir: the path of the archive its JVM writes at exit
STALE_TRAINING_S = 3600.0  # a training file older than this is a JVM's that never exited normally
TRAINEE_STOP_S = 30.0  # a cluster's teardown gives its training broker this long to exit normally


def archives_dir() -> Path:
    return cache_dir() / "kafka" / "cds"


def archive_for(java: str, classpath: Sequence[Path]) -> Path:
    """The archive's path for this JDK and classpath (``archive_name``)."""
    return archives_dir() / archive_name(java, classpath)


def archive_name(java: str, classpath: Sequence[Path]) -> str:
    """An archive's file name for this JDK (its binary's real path and change time) and classpath (each
    entry's jars: name, size and change time; a directory stands for its ``*.jar``)."""
    h = hashlib.sha256()
    binary = Path(java).resolve()
    h.update(f"{binary}:{binary.stat().st_mtime_ns}\n".encode())
    for entry in classpath:
        jars = sorted(entry.glob("*.jar")) if entry.is_dir() else [entry]
        for jar in jars:
            st = jar.stat()
            h.update(f"{jar}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return f"{h.hexdigest()[:20]}.jsa"


def options(java: str, classpath: Sequence[Path], home: Path, train: bool) -> list[str]:
    """The JVM options of a JVM whose node dir is ``home``: the archive when there is one; else, with
    ``train``, write one at exit (under a training name ``settle`` renames into place)."""
    try:
        archive = archive_for(java, classpath)
    except OSError:  # (a jar gone: the JVM will say so itself)
        return []
    if archive.is_file():
        return [f"-XX:SharedArchiveFile={archive}"]
    if not train:
        return []
    archive.parent.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for old in archive.parent.glob(f"{archive.stem}.training-*.jsa"):
        with contextlib.suppress(OSError):
            if now - old.stat().st_mtime > STALE_TRAINING_S:
                old.unlink()
    training = archive.with_name(f"{archive.stem}.training-{uuid.uuid4().hex[:8]}.jsa")
    (home / TRAINING_NOTE).write_text(f"{training}\n{archive}\n")
    return [f"-XX:ArchiveClassesAtExit={training}"]


def training(home: Path) -> bool:
    """Whether the JVM of node dir ``home`` writes an archive at its exit."""
    return (home / TRAINING_NOTE).is_file()


def settle(home: Path, clean: bool) -> None:
    """After the JVM of node dir ``home`` ended: its training archive, if any, is renamed into place
    when it exited normally (``clean``: it was not SIGKILLed), else removed."""
    note = home / TRAINING_NOTE
    try:
        training, archive = (Path(p) for p in note.read_text().split())
    except (OSError, ValueError):
        return
    note.unlink()
    with contextlib.suppress(OSError):
        if clean and training.stat().st_size > 0:
            os.replace(training, archive)
        else:
            training.unlink()
