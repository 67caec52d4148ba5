"""Property-based tests of the planner over random clusters and random intents (hypothesis).

For every generated case the planner either says infeasible (exit 3) or returns a plan such that:
every hard rule holds afterwards, the replication factor is the declared one, applying the plan gives
exactly the planned targets, only changed partitions are listed, none names a broker whose every dir is
cordoned (Kafka refuses such a target: ``Eligibility.pins``), the bytes moved are never below the
lower bound when every goal is met, and planning twice gives the same plan. No intents means no plan.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_placement.model.errors import InfeasibleError
from kafka_placement.model.intents import Intents
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.optimizer import compute_plan
from kafka_placement.planning.plan_quality import apply_plan, violations
from kafka_placement.planning.state import Eligibility

RACKS = ["/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc2/r2", "/dc3/r1", None]


@st.composite
def clusters(draw: st.DrawFn) -> ClusterSnapshot:
    n = draw(st.integers(3, 8))
    dirs = draw(st.integers(1, 3))
    ids = list(range(1, n + 1))
    brokers = [
        {
            "id": b,
            "rack": draw(st.sampled_from(RACKS[:-1])),
            "logDirs": [{"path": f"/d{i}"} for i in range(dirs)],
        }
        for b in ids
    ]
    parts: list[dict[str, Any]] = []
    for i in range(draw(st.integers(0, 24))):
        rf = draw(st.integers(1, min(3, n)))
        reps = draw(st.permutations(ids))[:rf]
        parts.append(
            {
                "topic": draw(st.sampled_from(["a", "b", "c"])) + f"{i % 3}",
                "partition": i,
                "replicas": reps,
                "logDirs": [f"/d{draw(st.integers(0, dirs - 1))}" for _ in reps],
                "sizeBytes": draw(st.integers(0, 1000)),
            }
        )
    return ClusterSnapshot.from_json({"version": 1, "brokers": brokers, "partitions": parts})


@st.composite
def intent_docs(draw: st.DrawFn, snap: ClusterSnapshot) -> list[dict[str, Any]]:
    ids = list(snap.broker_ids)
    docs: list[dict[str, Any]] = []
    gone = draw(st.lists(st.sampled_from(ids), max_size=2, unique=True))
    if gone:
        docs.append({"kind": "BrokerDecommission", "spec": {"brokers": gone}})
    for b in draw(st.lists(st.sampled_from(ids), max_size=2, unique=True)):
        paths = list(snap.broker(b).dir_paths)  # type: ignore[union-attr]
        chosen = draw(st.sampled_from([["*"], paths[:1], paths[-1:]]))
        docs.append(
            {"kind": "LogDirCordon", "spec": {"broker": b, "logDirs": chosen, "drain": draw(st.booleans())}}
        )
    if draw(st.booleans()):
        spec: dict[str, Any] = {"topics": {"include": [draw(st.sampled_from(["*", "a*", "b*"]))]}}
        if draw(st.booleans()):
            spec["rackAwareness"] = {"separator": "/", "levels": draw(st.integers(1, 2))}
        if draw(st.booleans()):
            spec["replicationFactor"] = draw(st.integers(1, 3))
        spec["balance"] = {
            "brokers": draw(st.booleans()),
            "logDirs": draw(st.booleans()),
            "leaders": draw(st.booleans()),
            "tolerance": draw(st.sampled_from([0.0, 0.05, 0.2])),
        }
        docs.append({"kind": "PlacementPolicy", "spec": spec})
    return docs


@st.composite
def cases(draw: st.DrawFn) -> tuple[ClusterSnapshot, Intents]:
    snap = draw(clusters())
    return snap, Intents.from_documents(draw(intent_docs(snap)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_plan_satisfies_every_hard_rule_or_is_infeasible(case: tuple[ClusterSnapshot, Intents]) -> None:
    snap, intents = case
    try:
        result = compute_plan(snap, intents)
    except InfeasibleError as e:
        assert e.rule and e.partition and e.exit_code == 3
        return
    plan, summary = result.plan, result.summary.to_json()
    after = apply_plan(snap, plan)
    assert violations(snap, after, intents) == dict.fromkeys(
        ("decommissioned", "drained", "cordoned", "replicationFactor", "rackSpread", "capacity"), 0
    )
    for p in after.partitions:
        policy = intents.policy_for(p.topic)
        before = snap.partition(p.topic, p.partition)
        assert before is not None
        rf = policy.replication_factor if policy and policy.replication_factor else len(before.replicas)
        assert len(p.replicas) == rf and len(set(p.replicas)) == rf
    targets = plan.by_key()
    elig = Eligibility.of(snap, intents)
    for key, t in targets.items():
        q = after.partition(*key)
        assert q is not None and q.replicas == t.replicas
        p = snap.partition(*key)
        assert p is not None and (p.replicas != t.replicas or p.log_dirs != q.log_dirs)
        assert not elig.pins(p.replicas, t.replicas), (key, p.replicas, t.replicas, sorted(elig.pinned))
    if all(g["met"] for g in summary["goals"]):  # the bound is on plans that meet every goal
        assert summary["bytesToMove"] >= summary["lowerBoundBytes"]
    assert compute_plan(snap, intents).plan.plan_id == plan.plan_id


@settings(max_examples=100, deadline=None)
@given(clusters())
def test_no_intents_means_no_plan(snap: ClusterSnapshot) -> None:
    result = compute_plan(snap, Intents())
    assert result.plan.empty and result.summary.bytes_to_move == 0
