"""Baseline: the assignment Apache Kafka's own ``kafka-reassign-partitions.sh --generate`` computes.

Runs Kafka's code (the jars ``tests/rig/kafka/fetch.sh`` downloads) through the tiny
``java/KafkaGenerate.java`` main, without a cluster. In Kafka 4.3, ``--generate`` builds one ``UsableBroker``
per ``--broker-list`` broker (with its rack unless ``--disable-rack-aware``; it refuses when only some brokers
have racks) and places every partition of every listed topic from scratch with the KRaft controller's
``StripedReplicaPlacer``; the current placement contributes only each topic's partition count and replication
factor. ``KafkaGenerate.java`` documents the exact code path.

The real tool's placer uses an unseeded ``Random``; by default we seed it (``seed=0``) so benchmarks are
reproducible. ``seed=None`` calls the tool's own private ``calculateAssignment`` (unseeded, like the tool).

The compiled class lives in ``$KP_CACHE/bench-java/<kafka version>`` (``KP_CACHE`` defaults to
``~/.cache/kafka-placement``), outside the repo, recompiled only when the ``.java`` source is newer.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

from kafka_placement.model.plan import ANY_DIR, PartitionTarget, Plan
from kafka_placement.model.snapshot import ClusterSnapshot

ROOT = Path(__file__).resolve().parents[2]
FETCH_SH = ROOT / "tests" / "rig" / "kafka" / "fetch.sh"
JAVA_SRC = Path(__file__).resolve().parent / "java" / "KafkaGenerate.java"
MAIN_CLASS = "KafkaGenerate"
TIMEOUT_S = 600

Assignment = dict[tuple[str, int], tuple[int, ...]]


def kp_cache() -> Path:
    return Path(os.environ.get("KP_CACHE") or Path.home() / ".cache" / "kafka-placement")


@functools.cache
def libs_dir() -> Path:
    """The Kafka libs dir: the cached one if complete, else what ``fetch.sh`` downloads (once a process)."""
    version = os.environ.get("KAFKA_VERSION", "4.4.0")  # fetch.sh's default
    cached = kp_cache() / "kafka" / version / "libs"
    if (cached / ".complete").is_file():
        return cached
    if not FETCH_SH.is_file():
        raise RuntimeError(f"Kafka jars not in {cached} and {FETCH_SH} is missing")
    try:
        proc = subprocess.run(["bash", str(FETCH_SH)], capture_output=True, text=True, timeout=1800)
    except subprocess.TimeoutExpired as e:
        raise RuntimeError(f"{FETCH_SH} timed out fetching the Kafka jars") from e
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        raise RuntimeError(f"Kafka jars missing: `bash {FETCH_SH}` failed (exit {proc.returncode}):\n{tail}")
    libs = Path(lines[-1])
    if not any(libs.glob("kafka-tools-*.jar")) or not any(libs.glob("kafka-metadata-*.jar")):
        raise RuntimeError(f"Kafka jars missing: no kafka-tools/kafka-metadata jar in {libs} ({FETCH_SH})")
    return libs


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(
            f"{name} not found on PATH: the Kafka --generate baseline needs a Java 17+ JDK "
            "(Debian: apt-get install openjdk-17-jdk-headless)"
        )
    return path


def classes_dir(libs: Path | None = None) -> Path:
    """Where ``KafkaGenerate.class`` is, compiling it first if it is missing or older than its source."""
    libs = libs or libs_dir()
    out = kp_cache() / "bench-java" / libs.parent.name
    cls = out / f"{MAIN_CLASS}.class"
    if cls.is_file() and cls.stat().st_mtime >= JAVA_SRC.stat().st_mtime:
        return out
    javac = _tool("javac")
    out.parent.mkdir(parents=True, exist_ok=True)
    # Compile into a fresh dir and rename it into place, so concurrent callers never see half a compile.
    tmp = Path(tempfile.mkdtemp(prefix=f".{libs.parent.name}.", dir=out.parent))
    tmp.chmod(0o755)
    try:
        proc = subprocess.run(
            [javac, "-nowarn", "-d", str(tmp), "-cp", f"{libs}/*", str(JAVA_SRC)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"javac {JAVA_SRC.name} against {libs} failed:\n{proc.stderr.strip()[-2000:]}")
        old = out.with_name(out.name + f".old.{os.getpid()}")
        if out.exists():
            out.rename(old)
        try:
            tmp.rename(out)
        except OSError:
            if not (out / f"{MAIN_CLASS}.class").is_file():  # lost a race only if the winner's copy is there
                raise
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _topic_shapes(snapshot: ClusterSnapshot, topics: Iterable[str] | None) -> list[tuple[str, int, int]]:
    """(topic, partition count, replication factor) per topic, as generateAssignment derives them."""
    parts: dict[str, list[tuple[int, int]]] = {}
    for p in snapshot.partitions:
        parts.setdefault(p.topic, []).append((p.partition, len(p.replicas)))
    wanted = sorted(parts) if topics is None else list(topics)
    shapes = []
    for t in wanted:
        if t not in parts:
            raise ValueError(f"topic {t!r} is not in the snapshot")
        ps = sorted(parts[t])
        if [n for n, _ in ps] != list(range(len(ps))):
            raise ValueError(f"topic {t!r}: partitions are not 0..{len(ps) - 1}; --generate would renumber")
        shapes.append((t, len(ps), ps[0][1]))
    return shapes


def kafka_generate_assignment(
    snapshot: ClusterSnapshot,
    brokers: Iterable[int],
    *,
    topics: Iterable[str] | None = None,
    rack_aware: bool = True,
    seed: int | None = 0,
) -> Assignment:
    """Each partition's replicas as ``--generate --broker-list <brokers>`` proposes them."""
    ids = sorted(set(brokers))
    if not ids:
        raise ValueError("empty broker list")
    lines = []
    if seed is not None:
        lines.append(f"seed {seed}")
    lines.append(f"rackaware {int(rack_aware)}")
    for b in ids:
        broker = snapshot.broker(b)
        if broker is None:
            raise ValueError(f"broker {b} is not in the snapshot")
        rack = broker.rack or "-"
        if any(c.isspace() for c in rack):
            raise ValueError(f"broker {b}: rack {rack!r} contains whitespace")
        lines.append(f"broker {b} {rack}")
    shapes = _topic_shapes(snapshot, topics)
    lines.extend(f"topic {t} {n} {rf}" for t, n, rf in shapes)

    libs = libs_dir()
    classes = classes_dir(libs)
    cmd = [_tool("java"), "-XX:+UseSerialGC", "-cp", f"{libs}/*{os.pathsep}{classes}", MAIN_CLASS]
    try:
        proc = subprocess.run(
            cmd, input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=TIMEOUT_S
        )
    except subprocess.TimeoutExpired as e:
        raise RuntimeError(f"KafkaGenerate timed out after {TIMEOUT_S}s") from e
    if proc.returncode != 0:
        msg = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"KafkaGenerate failed (exit {proc.returncode}): {msg}")

    out: Assignment = {}
    for line in proc.stdout.splitlines():
        topic, part, reps = line.split(" ")
        out[(topic, int(part))] = tuple(int(x) for x in reps.split(","))
    expected = sum(n for _, n, _ in shapes)
    if len(out) != expected:
        raise RuntimeError(f"KafkaGenerate returned {len(out)} partitions, expected {expected}")
    return out


def kafka_generate_plan(
    snapshot: ClusterSnapshot,
    brokers: Iterable[int],
    *,
    topics: Iterable[str] | None = None,
    rack_aware: bool = True,
    seed: int | None = 0,
) -> Plan:
    """What ``--generate`` proposes, as a Plan of only the partitions whose replica list or order changes."""
    proposed = kafka_generate_assignment(snapshot, brokers, topics=topics, rack_aware=rack_aware, seed=seed)
    targets = []
    for key, reps in proposed.items():
        current = snapshot.partition(*key)
        if current is None or current.replicas != reps:
            targets.append(PartitionTarget(key[0], key[1], reps, (ANY_DIR,) * len(reps)))
    return Plan.of(targets)
