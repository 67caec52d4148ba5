"""Regenerate the golden scenarios (run deliberately, review the diff): python tests/testdata/golden/regen.py

Each scenario directory holds the input (snapshot.json, intents.yaml) and the planner's reviewed output
(plan.json, expected.json with the metrics that matter). tests/unit/planning/test_golden.py replays them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from tests.bench.generator import SCENARIOS, scenario  # noqa: E402

from kafka_placement.model.intents import Intents  # noqa: E402
from kafka_placement.planning.optimizer import compute_plan  # noqa: E402

HERE = Path(__file__).resolve().parent
KEYS = (
    "partitionsChanged",
    "replicaMoves",
    "intraBrokerMoves",
    "leaderChanges",
    "bytesToMove",
    "lowerBoundBytes",
    "violationsBefore",
    "violationsAfter",
    "goals",
)


def expected(summary: dict[str, object]) -> dict[str, object]:
    out = {k: summary[k] for k in KEYS}
    out["balanceAfter"] = summary["balanceAfter"]
    out["batchCount"] = summary["batches"]["count"]  # type: ignore[index]
    return out


def main() -> None:
    for name in SCENARIOS:
        snap, text = scenario(name, brokers=9, partitions=180, topics=6, seed=7)
        d = HERE / name
        d.mkdir(exist_ok=True)
        (d / "snapshot.json").write_text(snap.dumps() + "\n")
        (d / "intents.yaml").write_text(text)
        result = compute_plan(snap, Intents.loads(text))
        (d / "plan.json").write_text(json.dumps(result.plan.to_json(), indent=1) + "\n")
        (d / "expected.json").write_text(json.dumps(expected(result.summary.to_json()), indent=1) + "\n")
        print(
            name,
            result.plan.plan_id,
            result.summary.bytes_to_move,
            result.summary.lower_bound_bytes,
        )


if __name__ == "__main__":
    main()
