"""What the execution record (execution/record.py) reads from and writes to its store: recording the
baseline reads nothing back (the plan it holds is indexed with it), and a record of a plan whose blob is
already stored (the plan review stores it before approval) does not encode the plan again. No rig."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kafka_placement.execution import record
from kafka_placement.execution.record import Execution, Original, plan_blob
from kafka_placement.execution.record_doc import Limits
from kafka_placement.execution.store import FileStore
from kafka_placement.model.plan import PartitionTarget, Plan

PLAN = Plan.of(
    [
        PartitionTarget("t", 0, (1, 3), ("/d0", "/d0")),
        PartitionTarget("t", 1, (3, 2), ("/d0", "/d0")),
    ]
)
BASELINE = [Original((1, 2), ("/d0", "/d0"), 10), Original((2, 1), ("/d0", "/d0"), 20)]


class CountingStore(FileStore):
    """A file store that counts the blobs read and written."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.reads: list[str] = []
        self.puts: list[str] = []

    def get_blob(self, name: str) -> bytes | None:
        self.reads.append(name)
        return super().get_blob(name)

    def put_blob(self, name: str, data: bytes) -> None:
        self.puts.append(name)
        super().put_blob(name, data)


def test_set_baseline_reads_no_blob_back(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "state.json")
    Execution.create(store, PLAN, limits=Limits(), cluster_id="c1").save()
    loaded = Execution.load(store)  # as the first tick finds it: the plan read from its blob
    assert loaded is not None
    assert loaded.plan.plan.plan_id == PLAN.plan_id and loaded.plan.baseline is None
    store.reads.clear()

    loaded.set_baseline(BASELINE, {(1, "/d0"): 0.5})

    assert store.reads == []  # the old order recorded the name first and read plan and baseline back
    assert store.puts[-1] == f"baseline-{loaded.doc.execution_id}"
    assert list(loaded.plan.baseline or ()) == BASELINE and loaded.plan.plan == PLAN
    assert loaded.plan.move_bytes == [10, 20]  # partition 0 adds broker 3 (10 bytes), 1 adds 3 (20)
    loaded.save()
    again = Execution.load(store)  # and what it stored reads back the same
    assert again is not None and list(again.plan.baseline or ()) == BASELINE


def test_a_stored_plan_blob_is_not_encoded_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = CountingStore(tmp_path / "state.json")
    store.put_blob(*plan_blob(PLAN))  # as the plan review stores it before approval
    store.puts.clear()

    def no_encode(plan: Plan) -> tuple[str, bytes]:
        raise AssertionError("the plan was encoded again")

    monkeypatch.setattr(record, "plan_blob", no_encode)
    ex = Execution.create(store, PLAN, limits=Limits(), cluster_id="c1")
    assert store.puts == [] and ex.doc.blobs.plan == f"plan-{PLAN.plan_id}"


def test_a_plan_blob_not_stored_is_stored(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "state.json")
    ex = Execution.create(store, PLAN, limits=Limits(), cluster_id="c1")
    assert store.puts == [f"plan-{PLAN.plan_id}"] and store.has_blob(ex.doc.blobs.plan)
    assert not store.has_blob("plan-000000000000")
    ex.save()
    loaded = Execution.load(store)
    assert loaded is not None and loaded.plan.plan == PLAN


def test_a_plan_blob_is_the_canonical_json_its_name_hashes() -> None:
    plan = Plan.of(
        [
            PartitionTarget("t.x_1", 0, (1, 2), ('/d/é "q"', "any")),
            PartitionTarget("a", 3, (2,), ("any",)),
        ]
    )
    name, data = plan_blob(plan)
    assert name == f"plan-{hashlib.sha256(data).hexdigest()[:12]}" == f"plan-{plan.plan_id}"
    assert json.loads(data) == json.loads(json.dumps(plan.to_json()))  # what json.dumps wrote before
    assert Plan.loads(data.decode()) == plan
