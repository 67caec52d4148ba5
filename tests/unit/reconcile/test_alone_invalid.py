"""``planner.alone_invalid``: which intent documents are invalid on their own against the snapshot, so that
each fails alone and the others are planned (decide.py, ``Planned.rejected``)."""

from __future__ import annotations

from tests.unit.builders import snapshot

from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.reconcile.planner import alone_invalid


def test_a_cordon_of_a_dir_its_dead_broker_no_longer_reports_is_rejected_alone() -> None:
    doc = snapshot({1: "a", 2: "b", 3: "c"}, [("t", 0, [1, 3], [0, 1], 10)]).to_json()
    doc["brokers"] = [b for b in doc["brokers"] if b["id"] != 3] + [
        {"id": 3, "rack": None, "alive": False, "logDirs": []}
    ]
    doc["partitions"][0]["logDirs"] = ["/data/d0", None]
    snap = ClusterSnapshot.from_json(doc)
    documents = [
        {"kind": "BrokerDecommission", "metadata": {"name": "heal-3"}, "spec": {"brokers": [3]}},
        {
            "kind": "LogDirCordon",
            "metadata": {"name": "dir-3"},
            "spec": {"broker": 3, "logDirs": ["/data/d1"]},
        },
        {
            "kind": "LogDirCordon",
            "metadata": {"name": "dir-1"},
            "spec": {"broker": 1, "logDirs": ["/data/d1"]},
        },
        {"kind": "BrokerDecommission", "metadata": {"name": "typo"}, "spec": {"brokers": [9]}},
    ]
    out = alone_invalid(documents, snap, reactive_cordon=False)
    assert sorted(out) == [1, 3]
    assert "broker 3 has no log dir" in out[1] and "LogDirCordon dir-3" in out[1]
    assert "unknown broker 9" in out[3]
    assert alone_invalid([documents[0], documents[2]], snap, reactive_cordon=False) == {}
