"""How many shards the Spark engine uses when none is configured, and why one shard is the local plan."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_placement.model.intents import Intents
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.optimizer import optimize
from kafka_placement.planning.sharding import ONE_SHARD_MAX_REPAIRS, auto_shards, sharded_optimize

GOLDEN = Path(__file__).resolve().parents[2] / "testdata" / "golden"


@pytest.mark.parametrize(
    ("repairs", "cores", "shards"),
    [
        (0, 2, 1),
        (40, 2, 1),
        (ONE_SHARD_MAX_REPAIRS, 2, 1),
        (ONE_SHARD_MAX_REPAIRS + 1, 2, 8),
        (10**6, 2, 8),
        (10**6, 0, 2),
        (10**6, 64, 256),
    ],
)
def test_one_shard_for_a_small_repair_else_four_per_core(repairs: int, cores: int, shards: int) -> None:
    assert auto_shards(repairs, cores) == shards


@pytest.mark.parametrize("case", ["all", "decommission", "drain", "rack-repair", "scale-out"])
def test_one_shard_plans_what_the_local_engine_plans(case: str) -> None:
    snap = ClusterSnapshot.loads((GOLDEN / case / "snapshot.json").read_text())
    intents = Intents.loads((GOLDEN / case / "intents.yaml").read_text()).enforced_only()
    local = optimize(snap, intents)
    assert not local.empty and sharded_optimize(snap, intents, 1) == local
