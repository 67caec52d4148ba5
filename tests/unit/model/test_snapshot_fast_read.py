"""The snapshot's fast read of a partition (model/snapshot.py ``_fast_partition``) is the precise parser's
answer, never another: for any partition object, when the fast read gives a partition the precise parser
gives the same one (and raises nothing); when the precise parser refuses it, the fast read gives nothing,
so the error named is the precise parser's. Objects drawn valid and then spoiled field by field (a wrong
type, out of range, an unknown broker or dir, a leader or ISR member not a replica, an unknown field, NaN,
bools for ints, unhashable values). And the fast read is taken for the valid case (else the check above
would hold with a fast read that never answers)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_placement.model.errors import BadInputError
from kafka_placement.model.snapshot import (
    Broker,
    ClusterSnapshot,
    LogDir,
    PartitionState,
    _fast_partition,
    _parse_partition,
)

BROKERS = {b: Broker(b, f"r{b}", (LogDir(f"/d{b}/a"), LogDir(f"/d{b}/b"))) for b in (1, 2, 3, 4)}
PATHS = {b.id: {d: d for d in b.dir_paths} for b in BROKERS.values()}
IDS = {b: b for b in BROKERS}


def fast(obj: dict[str, Any]) -> PartitionState | None:
    return _fast_partition(obj, PATHS, {}, IDS)


ODD = st.sampled_from(
    [None, True, False, -1, 0, 1, 5, 2**31, 2**63, 2**64, -(2**63) - 1, 1.5, -0.0, math.nan, math.inf, "",
     "any", "x", "/d1/a", "/d2/b", [], [1], [[1]], {}, {"a": 1}, "a" * 250, ".", "..", "t.-_9"]
)  # fmt: skip


@st.composite
def partitions(draw: Any) -> dict[str, Any]:
    """A valid partition object, then up to three fields replaced (or dropped, or added) by odd values."""
    replicas = draw(st.lists(st.sampled_from(sorted(BROKERS)), min_size=1, max_size=4, unique=True))
    obj: dict[str, Any] = {
        "topic": draw(st.sampled_from(["t", "orders.v1", "a-b_c"])),
        "partition": draw(st.integers(0, 2**31 - 1)),
        "replicas": replicas,
    }
    if draw(st.booleans()):
        obj["logDirs"] = [draw(st.sampled_from([None, "any", *PATHS[b]])) for b in replicas]
    if draw(st.booleans()):
        obj["leader"] = draw(st.sampled_from([None, -1, *replicas]))
    if draw(st.booleans()):
        obj["isr"] = draw(st.lists(st.sampled_from(replicas), max_size=4))
    for name, values in (
        ("sizeBytes", st.integers(0, 2**63 - 1)),
        ("bytesInPerSec", st.one_of(st.none(), st.floats(0, 1e12), st.integers(0, 10**9))),
        ("readFanout", st.one_of(st.none(), st.integers(0, 2**31 - 1))),
        ("untieredBytes", st.one_of(st.none(), st.integers(0, 2**63 - 1))),
    ):
        if draw(st.booleans()):
            obj[name] = draw(values)
    fields = [*obj, "logDirs", "leader", "isr", "sizeBytes", "bytesInPerSec", "readFanout", "bogus"]
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(fields))
        how = draw(st.sampled_from(["odd", "drop", "item"]))
        if how == "drop":
            obj.pop(name, None)
        elif how == "item" and isinstance(obj.get(name), list) and obj[name]:
            items = list(obj[name])
            items[draw(st.integers(0, len(items) - 1))] = draw(ODD)
            obj[name] = items
        else:
            obj[name] = draw(ODD)
    return obj


def precise(obj: object) -> Any:
    try:
        return _parse_partition(obj, "p", BROKERS)
    except BadInputError as e:
        return e


@settings(max_examples=800, deadline=None)
@given(partitions())
def test_the_fast_read_is_the_precise_parsers_answer_or_none(obj: dict[str, Any]) -> None:
    quick = fast(obj)
    slow = precise(obj)
    if quick is not None:
        assert quick == slow
        assert all(type(getattr(quick, f)) is type(getattr(slow, f)) for f in ("bytes_in_per_sec", "leader"))
    if isinstance(slow, BadInputError):
        assert quick is None


def test_the_fast_read_is_taken_for_valid_partitions_and_left_for_odd_ones() -> None:
    valid = {"topic": "t", "partition": 3, "replicas": [2, 1], "logDirs": ["/d2/b", "any"], "leader": 2,
             "isr": [2], "sizeBytes": 10, "bytesInPerSec": 7, "readFanout": 1,
             "untieredBytes": 4}  # fmt: skip
    got = fast(valid)
    assert got is not None and got == precise(valid) and got.bytes_in_per_sec == 7.0
    assert fast({"topic": "t", "partition": 0, "replicas": [1]}) == precise(
        {"topic": "t", "partition": 0, "replicas": [1]}
    )

    class Id(int):
        pass

    odd = {**valid, "partition": Id(3)}  # accepted by the precise parser only
    assert fast(odd) is None and precise(odd) == got
    for spoiled in (
        {**valid, "replicas": [2, 9], "logDirs": ["/d2/b", "any"]},  # an unknown broker
        {**valid, "logDirs": ["/d2/b", "/d2/a"]},  # a dir of another broker
        {**valid, "leader": 4},
        {**valid, "isr": [4]},
        {**valid, "replicas": [2, 2]},
        {**valid, "bytesInPerSec": math.nan},
        {**valid, "bytesInPerSec": math.inf},
        {**valid, "sizeBytes": -1},
        {**valid, "readFanout": 2**31},
        {**valid, "topic": "a b"},
    ):
        assert fast(spoiled) is None
        assert isinstance(precise(spoiled), BadInputError), spoiled


def test_a_snapshot_read_names_the_partition_at_fault_as_before() -> None:
    doc = {
        "brokers": [{"id": 1, "logDirs": [{"path": "/a"}]}, {"id": 2, "logDirs": [{"path": "/b"}]}],
        "partitions": [
            {"topic": "t", "partition": 0, "replicas": [1, 2], "logDirs": ["/a", "/b"]},
            {"topic": "t", "partition": 1, "replicas": [1, 2], "logDirs": ["/a", "/a"]},
        ],
    }
    with pytest.raises(BadInputError) as raised:
        ClusterSnapshot.from_json(doc, "s.json")
    assert raised.value.location == "s.json.partitions[1] (t-1).logDirs[1]"
    assert "broker 2 has no log dir" in raised.value.detail, raised.value


def test_a_read_snapshot_holds_one_object_per_topic_dir_and_broker() -> None:
    """The partitions share the topic names, dir paths and broker ids (a parse makes a copy of each value:
    at a million partitions some 600 MB), and the planner's state keys on the index's own tuples."""
    doc = {
        "brokers": [
            {"id": b, "logDirs": [{"path": "/data/d0"}, {"path": "/data/d1"}]} for b in (1001, 1002, 1003)
        ],
        "partitions": [
            {"topic": "orders", "partition": i, "replicas": [1001, 1002, 1003], "logDirs": ["/data/d0"] * 3,
             "leader": 1002, "isr": [1003, 1001] if i else [1001, 1002, 1003]}
            for i in range(3)
        ],
    }  # fmt: skip
    parsed = ClusterSnapshot.loads(json.dumps(doc))  # (json gives each value its own object)
    first, second, third = parsed.partitions
    assert first.topic is second.topic is third.topic
    assert all(a is b for a, b in zip(first.log_dirs, second.log_dirs, strict=True))
    assert all(a is b for a, b in zip(first.replicas, third.replicas, strict=True))
    assert first.isr is first.replicas and second.isr == (1003, 1001)
    assert second.isr[0] is second.replicas[2] and second.leader is second.replicas[1]
    assert parsed.keys() == [p.key for p in parsed.partitions]
    assert parsed.keys()[0] is next(iter(parsed._partition_index))  # (not a tuple made again)
    twice = ClusterSnapshot(parsed.brokers, (first, first))  # (made in code: no parse checks the keys)
    assert twice.keys() == [first.key, first.key]
