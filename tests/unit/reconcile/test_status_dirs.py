"""The KafkaCluster status's brokers and dirs are bounded in bytes whatever the cluster's size
(reconcile/status_dirs.py): a large JBOD cluster's status fits ``STATUS_BROKERS_BUDGET`` and still names
every offline and cordoned dir, and says what it left out. No rig."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kafka_placement.kafka.types import LogDirInfo
from kafka_placement.model.cluster_status import STATUS_BROKERS_BUDGET, ClusterStatus, check_patch
from kafka_placement.model.snapshot import Broker, ClusterSnapshot, LogDir, PartitionState
from kafka_placement.reconcile import status as st
from kafka_placement.reconcile.status_dirs import FULL_DIR_SHARE, StatusBroker, StatusDir, brokers_status

TB = 4 * 10**12


def jbod(brokers: int, dirs: int) -> ClusterSnapshot:
    """``brokers`` brokers with ``dirs`` dirs each (long paths, 12-digit byte counts, as a real cluster's);
    broker 7 has every dir offline, every 50th broker its dir 3 cordoned, every 100th its dir 5 91% full."""

    def one(b: int, d: int) -> LogDir:
        full = b % 100 == 0 and d == 5
        usable = int(TB * (0.09 if full else 0.6)) + b
        return LogDir(
            f"/var/lib/kafka/data-{d:02d}", TB, usable, cordoned=b % 50 == 0 and d == 3, online=b != 7
        )

    snap_brokers = tuple(
        Broker(b, f"/dc{b % 3}/rack-{b % 40:02d}", tuple(one(b, d) for d in range(dirs)))
        for b in range(brokers)
    )
    parts = tuple(
        PartitionState(
            f"topic-{b % 10}", b, (b, (b + 1) % brokers), ("/var/lib/kafka/data-00",) * 2, b, (b,), 10**9
        )
        for b in range(brokers)
    )
    return ClusterSnapshot(snap_brokers, parts)


def size(status: dict[str, Any]) -> int:
    return len(json.dumps(status, separators=(",", ":")).encode())


def listed(status: dict[str, Any]) -> set[tuple[int, str]]:
    return {(b["id"], d["path"]) for b in status["brokers"] for d in b.get("logDirs", ())}


@pytest.mark.parametrize(("brokers", "dirs"), [(1000, 16), (2000, 24)])
def test_a_large_jbod_status_is_under_the_budget_and_names_every_dir_to_see(brokers: int, dirs: int) -> None:
    snap = jbod(brokers, dirs)
    status = st.cluster_status(snap, 4)
    bounded = {k: status[k] for k in ("brokers", "dirTable")}
    assert size(bounded) <= STATUS_BROKERS_BUDGET
    assert size({"status": status}) <= STATUS_BROKERS_BUDGET + 100  # the rest: reassignmentsInFlight
    check_patch(status)  # the schema holds it
    assert ClusterStatus.parse(status).dir_table is not None

    shown = listed(status)
    offline = {(7, f"/var/lib/kafka/data-{d:02d}") for d in range(dirs)}
    cordoned = {(b, "/var/lib/kafka/data-03") for b in range(0, brokers, 50) if b != 7}
    full = {(b, "/var/lib/kafka/data-05") for b in range(0, brokers, 100)}
    assert offline | cordoned | full <= shown
    table = status["dirTable"]
    assert not table["complete"]
    assert (
        table["logDirsListed"] == len(shown)
        and table["logDirsListed"] + table["logDirsOmitted"] == brokers * dirs
    )
    assert table["brokersOmitted"] == brokers - len(status["brokers"])
    assert f"{len(shown)} of {brokers * dirs} log dirs listed" in table["message"]
    assert "kafka-placement snapshot" in table["message"] and len(table["message"]) <= 1000
    # the summary of a broker: its dirs' count and bytes summed, also when none of its dirs is listed
    by_id = {b["id"]: b for b in status["brokers"]}
    one = by_id[1]
    assert (
        "logDirs" not in one
        and one["logDirCount"] == dirs
        and one["usableBytes"] == dirs * (int(TB * 0.6) + 1)
    )
    assert by_id[7]["rack"] == "/dc1/rack-07" and len(by_id[7]["logDirs"]) == dirs


@pytest.mark.parametrize("brokers", [1000, 2000])
def test_every_broker_is_listed_up_to_2000(brokers: int) -> None:
    status = st.cluster_status(jbod(brokers, 16), 0)
    assert [b["id"] for b in status["brokers"]] == list(range(brokers))  # healing.named_in reads them
    assert status["dirTable"]["brokersOmitted"] == 0


def test_a_small_cluster_lists_every_dir_as_before() -> None:
    snap = jbod(40, 4)
    status = st.cluster_status(snap, 0)
    assert status["dirTable"] == {
        "complete": True,
        "logDirsListed": 160,
        "logDirsOmitted": 0,
        "brokersOmitted": 0,
    }
    assert all(len(b["logDirs"]) == 4 for b in status["brokers"])
    first = status["brokers"][0]["logDirs"][0]
    assert first == {
        "path": "/var/lib/kafka/data-00",
        "usedBytes": 2 * 10**9,  # its replicas: partitions 0 (on 0, 1) and 39 (on 39, 0)
        "totalBytes": TB,
        "usableBytes": int(TB * 0.6),
        "cordoned": False,
        "online": True,
    }


def test_when_even_the_dirs_to_see_do_not_fit_the_most_pressing_go_first() -> None:
    # every dir cordoned, broker 3's offline, one dir full: more than the budget holds
    rows = [
        StatusBroker(
            b,
            None,
            tuple(
                StatusDir(f"/kafka/dir-{d:03d}", 1, 100, 5 if d == 0 and b == 900 else 50, True, b != 3)
                for d in range(40)
            ),
        )
        for b in range(1000)
    ]
    status = brokers_status(rows)
    assert size(status) <= STATUS_BROKERS_BUDGET
    shown = listed(status)
    assert {(3, f"/kafka/dir-{d:03d}") for d in range(40)} <= shown  # offline first
    assert status["dirTable"]["logDirsOmitted"] > 0
    assert (
        "cordoned (39960)" in status["dirTable"]["message"]
        and "left out too" in status["dirTable"]["message"]
    )


def test_the_budget_holds_for_many_brokers_with_long_racks() -> None:
    rows = [
        StatusBroker(b, f"/region-{b}/zone-{b}/rack-{b}" * 3, (StatusDir("/d", 1, 2, 1, False, True),))
        for b in range(20000)
    ]
    status = brokers_status(rows)
    assert size(status) <= STATUS_BROKERS_BUDGET
    assert 0 < status["dirTable"]["brokersOmitted"] < 20000
    assert [b["id"] for b in status["brokers"]] == list(range(len(status["brokers"])))


def test_the_light_status_is_bounded_the_same_way() -> None:
    dirs = {
        b: tuple(
            LogDirInfo(b, f"/var/lib/kafka/data-{d:02d}", None, TB, TB // 2, d == 0 and b == 5, ())
            for d in range(16)
        )
        for b in range(1000)
    }
    status = st.light_cluster_status({b: f"/dc1/r{b % 9}" for b in range(1000)}, dirs, 2)
    assert size({k: status[k] for k in ("brokers", "dirTable")}) <= STATUS_BROKERS_BUDGET
    assert listed(status) == {(5, "/var/lib/kafka/data-00")} and status["reassignmentsInFlight"] == 2
    assert FULL_DIR_SHARE > 0.5  # half full is not listed
