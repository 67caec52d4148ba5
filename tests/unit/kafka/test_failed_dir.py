"""The dir of a replica on a failed log dir, which DescribeLogDirs does not list (kafka/types.py)."""

from __future__ import annotations

from kafka_placement.kafka.types import LogDirInfo, failed_dir_of


def one(path: str, online: bool = True) -> LogDirInfo:
    return LogDirInfo(2, path, None if online else "KAFKA_STORAGE_ERROR", 0, 0, None, ())


def test_an_out_of_sync_replica_missing_from_the_online_dirs_is_on_the_one_offline_dir() -> None:
    assert failed_dir_of([one("/d0"), one("/d1", online=False)], in_sync=False) == "/d1"


def test_otherwise_its_dir_stays_unknown() -> None:
    assert failed_dir_of([one("/d0"), one("/d1", online=False)], in_sync=True) is None  # not created yet
    assert failed_dir_of([one("/d0"), one("/d1")], in_sync=False) is None  # no failed dir: lagging
    two = [one("/d0", online=False), one("/d1", online=False)]
    assert failed_dir_of(two, in_sync=False) is None  # which of the two: Kafka does not say
    assert failed_dir_of([], in_sync=False) is None  # a broker not alive: its dirs were not read
