"""The executor watches the disks while it moves, on Kafka: a dir that really fills (its own filesystem).

The rig's ``disk`` cluster (``kafka_rig.py up --name disk``: two nodes x two dirs, node 2's second dir a
64 MiB tmpfs of its own, up for this test only) moves a 24 MiB partition from broker 1 into that small
dir through ``kafka-placement execute`` (throttled to 1 MiB/s, ``--max-disk-share 0.5``: limit 50%, hard
stop 75%), while a producer writes into a topic of the same dir at about 4 MiB/s until the filesystem is
81% full (past the hard stop, never full). The executor holds the move (broker 2's follower throttle down
to a trickle) before the dir passes the hard stop; the moving replica hardly grows while held; the dir
never goes offline (DescribeLogDirs, sampled all along) and every acknowledged record reads back. Then the
producer's topic is deleted (room returns: under the limit), the hold is released, the move completes,
nothing was submitted twice or reverted, and no throttle is left.

Cost: about 60 s (two JVMs start and stop, about 20 s of it; 24 MiB written and moved at 1 MiB/s, about
45 MiB produced into the small dir and read back).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.integration.conftest import create_topics_everywhere, read_to_end, wait_for

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(300)]

RIG_CLI = Path(__file__).resolve().parents[1] / "rig" / "kafka_rig.py"
CLI = Path(sys.executable).parent / "kafka-placement"
NAME = "disk"
MIB = 1 << 20
SHARE = 0.5  # the execution's maxDiskShare: hard stop 0.75 (planning/headroom.py)
HARD_STOP = 0.75
PRODUCE_UNTIL = 0.81  # the producer stops once the small dir is this full: past the hard stop, not full
RATE = 4 * MIB  # bytes/s the producer writes
MOVING_MIB = 24
RECORD_BYTES = 1024
SEGMENT = {"segment.bytes": str(MIB)}


def rig(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(RIG_CLI), *args, "--name", NAME], capture_output=True, text=True, timeout=timeout
    )


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=180)
    assert not check or done.returncode == 0, done.stderr + done.stdout
    return done


@pytest.fixture(scope="module")
def disk() -> Iterator[dict[str, Any]]:
    """The disk cluster's rig.json entry (bootstrap servers, the small dir), up for this module only."""
    if os.geteuid() != 0:
        pytest.fail("the disk rig mounts a tmpfs: run as root (the rig and CI do)")
    up = rig("up")
    try:
        assert up.returncode == 0, up.stderr + up.stdout
        status = rig("status", "--json")
        assert status.returncode == 0, status.stderr + status.stdout
        yield dict(json.loads(status.stdout))
    finally:
        down = rig("down")
        assert down.returncode == 0, down.stderr + down.stdout


def used(path: str) -> tuple[int, int]:
    """(used, total) bytes of the filesystem of ``path``, as the broker's DescribeLogDirs sees it."""
    st = os.statvfs(path)
    total = st.f_blocks * st.f_frsize
    return total - st.f_bavail * st.f_frsize, total


def held_dirs(state: Path) -> list[dict[str, Any]]:
    try:
        return list(json.loads(state.read_text()).get("disk", {}).get("held", []))
    except (OSError, ValueError):  # not written yet
        return []


def replica_bytes(small: str, topic: str) -> int:
    """The bytes the moving partition's replica holds in the small dir (allocated, like the volume)."""
    d = Path(small) / f"{topic}-0"
    return sum(f.stat().st_blocks * 512 for f in d.iterdir()) if d.is_dir() else 0


@dataclass
class Watch:
    """What a thread samples every 0.25 s: the small dir's usage, whether the record holds it, whether
    the broker reports it offline, the moving replica's bytes."""

    samples: list[tuple[float, float, bool, int]] = field(default_factory=list)  # t, share, held, replica
    offline: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)


def watch(servers: str, small: str, state: Path, topic: str, w: Watch) -> None:
    from kafka_placement.kafka.connection import ConnectionSettings
    from kafka_placement.kafka.gateway import KafkaGateway

    gw = KafkaGateway(ConnectionSettings(servers))
    last_dirs = 0.0
    try:
        while not w.stop.is_set():
            now = time.monotonic()
            u, total = used(small)
            w.samples.append((now, u / total, bool(held_dirs(state)), replica_bytes(small, topic)))
            if now - last_dirs >= 1.0:
                last_dirs = now
                for d in gw.describe_log_dirs([2]).get(2, ()):
                    if d.path == small and not d.online:
                        w.offline.append(f"{d.path}: {d.error}")
            time.sleep(0.25)
    finally:
        gw.close()


def produce_until_full(servers: str, topic: str, small: str) -> set[int]:
    """Write sequence-numbered records at ``RATE`` until the small dir is ``PRODUCE_UNTIL`` full; returns
    the sequence numbers acknowledged (acks=all)."""
    from confluent_kafka import Producer

    acked: set[int] = set()

    def done(err: Any, msg: Any) -> None:
        if err is None:
            acked.add(int.from_bytes(msg.value()[:8], "big"))

    producer = Producer({"bootstrap.servers": servers, "acks": "all", "linger.ms": 5})
    filler = b"x" * (RECORD_BYTES - 8)
    started = time.monotonic()
    seq = 0
    while used(small)[0] < PRODUCE_UNTIL * used(small)[1] and time.monotonic() - started < 90:
        for _ in range(128):  # 128 KiB, then keep to RATE
            producer.produce(topic, seq.to_bytes(8, "big") + filler, on_delivery=done)
            seq += 1
        producer.flush(30)
        ahead = seq * RECORD_BYTES / RATE - (time.monotonic() - started)
        if ahead > 0:
            time.sleep(ahead)
    assert producer.flush(60) == 0
    return acked


def test_a_move_into_a_filling_dir_is_held_before_the_hard_stop_and_completes_when_room_returns(
    disk: dict[str, Any], tmp_path: Path
) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

    SET = AlterConfigOpType.SET

    servers = str(disk["bootstrapServers"])
    small = str(disk["smallDir"]["path"])
    assert small in disk["nodes"][1]["logDirs"]
    admin = AdminClient({"bootstrap.servers": servers})
    create_topics_everywhere(
        admin,
        [
            NewTopic("moving", 1, replica_assignment=[[1]], config=SEGMENT),
            # segments past retention are deleted at once (the rig checks retention every second)
            NewTopic("filling", 1, replica_assignment=[[2]], config={**SEGMENT, "file.delete.delay.ms": "0"}),
        ],
        servers,
    )
    producer = Producer({"bootstrap.servers": servers, "acks": "all", "linger.ms": 20})
    for i in range(MOVING_MIB * MIB // RECORD_BYTES):
        producer.produce("moving", i.to_bytes(8, "big") + b"m" * (RECORD_BYTES - 8))
        if i % 1000 == 999:
            producer.poll(0)
    assert producer.flush(60) == 0

    def plan(name: str, topic: str) -> Path:
        target = {"topic": topic, "partition": 0, "replicas": [2], "log_dirs": [small]}
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"version": 1, "partitions": [target]}))
        return path

    # the producer's partition into the small dir while it is empty (a move between broker 2's dirs)
    placed = plan("place", "filling")
    cli("execute", "--bootstrap-server", servers, "--plan", str(placed), "--state", str(tmp_path / "p.json"),
        "--wait", "--poll-seconds", "0.5")  # fmt: skip
    base, total = used(small)
    assert base < 0.2 * total, (base, total)

    state = tmp_path / "state.json"
    moved = plan("move", "moving")
    out = (tmp_path / "execute.log").open("w")
    execute = subprocess.Popen(
        [str(CLI), "execute", "--bootstrap-server", servers, "--plan", str(moved), "--state", str(state),
         "--wait", "--poll-seconds", "0.5", "--throttle", str(MIB), "--max-disk-share", str(SHARE)],
        stdout=out, stderr=subprocess.STDOUT,
    )  # fmt: skip
    w = Watch()
    sampler = threading.Thread(target=watch, args=(servers, small, state, "moving", w), daemon=True)
    sampler.start()
    try:
        acked = produce_until_full(servers, "filling", small)
        # held: the record names the small dir, and the moving replica hardly grows over a few seconds
        held = wait_for("the move to be held", lambda: held_dirs(state), timeout=30)
        assert [(h["broker"], h["path"]) for h in held] == [(2, small)], held
        assert held[0]["partitions"] == ["moving-0"]
        before = replica_bytes(small, "moving")
        time.sleep(4)
        grown = replica_bytes(small, "moving") - before
        assert grown <= 2 * MIB, grown  # a trickle: at most a fetch or two, not 4 s at 1 MiB/s
        assert execute.poll() is None  # held, not failed
        # every acknowledged record reads back, from the dir that was never full
        records = read_to_end(servers, "filling", 1, timeout=120)[0]
        seqs = {int.from_bytes(v[:8], "big") for _, _, v in records if v is not None}
        assert acked and acked <= seqs, (len(acked), len(seqs))
        # room returns: retention of the producer's topic cut to 1 MiB, the dir falls under the limit, the
        # move goes on
        shrink = ConfigResource(ConfigResource.Type.TOPIC, "filling")
        shrink.add_incremental_config(ConfigEntry("retention.bytes", str(MIB), incremental_operation=SET))
        admin.incremental_alter_configs([shrink])[shrink].result(timeout=60)
        code = execute.wait(timeout=150)
    finally:
        w.stop.set()
        sampler.join(timeout=30)
        if execute.poll() is None:
            execute.kill()
        out.close()
    log = (tmp_path / "execute.log").read_text()
    assert code == 0 and "[Completed]" in log, log[-3000:]

    shares = [s for _, s, _, _ in w.samples]
    first_past = next((t for t, s, _, _ in w.samples if s > HARD_STOP), None)
    first_held = next((t for t, _, h, _ in w.samples if h), None)
    peak = max(shares)
    during = [r for _, _, h, r in w.samples if h]
    print(
        f"disk watch: base {base / total:.3f}, peak {peak:.3f} of {total / MIB:.0f} MiB, first held at share "
        f"{next(s for _, s, h, _ in w.samples if h):.3f}, past the hard stop "
        f"{'never' if first_past is None else f'{first_past - (first_held or 0):+.2f}s after the hold'}, "
        f"held for {len(during) * 0.25:.1f}s, the moving replica grew {grown} B in the 4 s looked at and "
        f"{max(during) - during[0]} B in the whole hold ({during[0]} B when it began)"
    )
    assert not w.offline, w.offline  # the dir never went offline
    assert peak < 0.95, peak  # never full
    assert first_held is not None and first_past is not None  # the producer took it past the hard stop
    assert first_held <= first_past  # the move was held before the dir passed the hard stop
    record = json.loads(state.read_text())
    counters, disk_doc = record["counters"], record["disk"]
    assert counters["submissions"] == 1 and counters["resubmitted"] == 0 and counters["cancels"] == 0
    assert disk_doc["holds"] >= 1 and disk_doc["held"] == [] and disk_doc["rates"] == []
    assert record["limits"]["maxDiskShare"] == SHARE
    assert record["throttles"] == {"brokers": [], "topics": []}
    # at its target in the small dir, no throttle left behind
    assert (
        cli("verify", "--bootstrap-server", servers, "--plan", str(moved), "--state", str(state)).returncode
        == 0
    )
