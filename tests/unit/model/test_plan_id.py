"""A plan's id hashes its canonical JSON, which ``Plan.canonical`` writes entry by entry: exactly the
text ``json.dumps`` writes of the plan's JSON with sorted keys and no spaces, whatever the names. The plan
file's text (``Plan.dumps``, and ``Plan.pieces`` that a writer writes one after the other) is written the same
way: exactly ``json.dumps``' text indented by one."""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from kafka_placement.model.plan import ANY_DIR, PartitionTarget, Plan

NAMES = ["t", "a.b_c-1", 'q"uote\\back', "tab\there", "caf\u00e9", "\u2603/\U0001f600", "nl\n", ""]


def _plan(rng: random.Random, n: int) -> Plan:
    targets = {}
    for _ in range(n):
        k = rng.randrange(1, 4)
        replicas = tuple(rng.sample(range(-3, 2**31), k) if rng.random() < 0.2 else rng.sample(range(9), k))
        dirs = tuple(rng.choice([ANY_DIR, "/data/d0", "/d\u00e9/x", '/a"b', "/tab\t"]) for _ in replicas)
        topic, number = rng.choice(NAMES), rng.choice([0, 1, 7, 2**31 - 1, rng.randrange(10**6)])
        targets[(topic, number)] = PartitionTarget(topic, number, replicas, dirs)
    return Plan.of(list(targets.values()))


@pytest.mark.parametrize("seed", range(20))
def test_the_canonical_text_is_json_dumps_sorted_and_compact(seed: int) -> None:
    plan = _plan(random.Random(seed), random.Random(seed).choice([0, 1, 5, 200]))
    text = json.dumps(plan.to_json(), sort_keys=True, separators=(",", ":"))
    assert plan.canonical() == text
    assert plan.plan_id == hashlib.sha256(text.encode()).hexdigest()[:12]


@pytest.mark.parametrize("seed", range(20))
def test_the_plan_files_text_is_json_dumps_indented_by_one(seed: int) -> None:
    plan = _plan(random.Random(seed), random.Random(seed).choice([0, 1, 5, 200]))
    text = json.dumps(plan.to_json(), indent=1)
    assert plan.dumps() == text
    per = 1 + seed % 5
    assert "".join(plan.pieces(per)) == text  # (what the CLI writes, piece by piece)
    if plan.partitions:  # a piece holds at most ``per`` entries
        assert max(piece.count('"topic"') for piece in plan.pieces(per)) <= per


def test_the_plan_files_text_writes_empty_lists_as_json_does() -> None:
    for plan in (Plan.of([]), Plan.of([PartitionTarget("t", 0, (), ())])):
        assert plan.dumps() == json.dumps(plan.to_json(), indent=1)


def test_the_id_of_a_known_plan_is_unchanged() -> None:
    plan = Plan.of([PartitionTarget("t", 0, (2, 1), (ANY_DIR, "/data/d1"))])
    assert (
        plan.plan_id
        == hashlib.sha256(
            b'{"partitions":[{"log_dirs":["any","/data/d1"],"partition":0,"replicas":[2,1],"topic":"t"}],'
            b'"version":1}'
        ).hexdigest()[:12]
    )
