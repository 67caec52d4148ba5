"""The reconcile plans with the sampler's rates and keeps a plan awaiting approval while they drift
(reconcile/cluster_pass.py, ``ReconcilePass._plan``; the rule: planning/plan_keeping.py). A gateway
that only hands out a snapshot stands for Kafka; the review ConfigMap is not written (``_review`` is
replaced)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

import pytest
from tests.unit.planning.test_plan_keeping import cluster, jittered, skewed

from kafka_placement.kube.gateway import KubeGateway
from kafka_placement.model.cluster_spec import ClusterSpec
from kafka_placement.model.intent_status import Review
from kafka_placement.model.intents import Intents
from kafka_placement.model.plan import Plan
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.traffic_rates import Traffic
from kafka_placement.reconcile import cluster_pass, plan_review
from kafka_placement.reconcile.cluster_pass import ReconcilePass
from kafka_placement.reconcile.decision import Planned
from kafka_placement.reconcile.inputs import limits_of
from kafka_placement.reconcile.reconciler import Reconciler

KAFKA_CLUSTER = {
    "apiVersion": "kafkaplacement.io/v1alpha1",
    "kind": "KafkaCluster",
    "metadata": {"name": "c", "namespace": "kafka", "uid": "u-c"},
    "spec": {"bootstrapServers": "k:9092", "traffic": {"enabled": True}},
}


def policy(**extra: Any) -> dict[str, Any]:
    return {
        "kind": "PlacementPolicy",
        "metadata": {"name": "net", "namespace": "kafka", "uid": "u-p"},
        "spec": {
            "clusterRef": {"name": "c"},
            "balance": {"networkIn": True, "tolerance": 0.2},
            "approval": "Manual",
            **extra,
        },
    }


class Gateway:
    """The three calls planning makes of Kafka."""

    def __init__(self, snap: ClusterSnapshot) -> None:
        self.snap = snap

    def snapshot(self) -> ClusterSnapshot:
        return self.snap

    def list_reassignments(self) -> list[Any]:
        return []

    def supports_cordon(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def no_review(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ReconcilePass, "_review", lambda self, planned, *_: planned)
    monkeypatch.setattr(
        ReconcilePass, "_kept_from_review", lambda self, key: None
    )  # no review ConfigMap either


def plan_once(rec: Reconciler, body: dict[str, Any], snap: ClusterSnapshot) -> Plan:
    spec = ClusterSpec.of(KAFKA_CLUSTER)
    one = ReconcilePass(
        rec, cast(Any, Gateway(snap)), KAFKA_CLUSTER, spec, limits_of(spec), [body], [], cast(Any, None),
        None, None,
    )  # fmt: skip
    one._plan([body])
    planned = one.view.planned
    assert isinstance(planned, Planned) and planned.plan is not None, planned
    return planned.plan


def reconciles(rates: list[dict[int, float]], keep: bool, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The plan ids of one reconcile after each of the sampler's looks (``rates[k]``: partition i's)."""
    current: dict[str, Any] = {}
    rec = Reconciler(cast(KubeGateway, object()), rates=lambda _cluster: current["rates"])
    if not keep:
        monkeypatch.setattr(cluster_pass.KeptPlan, "keep", lambda *_a, **_k: "disabled")
    ids = []
    for k, step in enumerate(rates):
        current["rates"] = {("t", i): Traffic(r, 0) for i, r in step.items()}
        body = policy(approvedPlan="nothing-yet") if k == len(rates) - 1 else policy()
        ids.append(plan_once(rec, body, cluster()).plan_id)
    return ids


def test_the_reconcile_plans_with_the_rates_and_keeps_the_plan_id_while_they_drift(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looks = [skewed(), jittered(1), jittered(2)]
    kept = reconciles(looks, keep=True, monkeypatch=monkeypatch)
    assert len(set(kept)) == 1, kept  # approval fields changed on the last: still the same plan
    afresh = reconciles(looks, keep=False, monkeypatch=monkeypatch)
    assert len(set(afresh)) == 3 and afresh[0] == kept[0], afresh  # without the rule: three approvals


def test_rates_drifting_far_plan_again_and_no_rate_known_plans_without(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ids = reconciles([skewed(), skewed(1.0, 4.0)], keep=True, monkeypatch=monkeypatch)
    assert ids[0] != ids[1]
    rec = Reconciler(cast(KubeGateway, object()), rates=lambda _cluster: None)  # sampler not loaded yet
    plan = plan_once(rec, policy(), cluster())
    assert plan.empty  # no rate in the snapshot: networkIn has nothing to balance
    assert rec.memory(("kafka", "c")).kept is None


def test_one_plan_parses_the_intents_once_and_reviews_the_plan_with_them_and_its_tally(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed: list[Intents] = []
    real = Intents.from_documents

    def counted(docs: Any, source: str = "intents") -> Intents:
        parsed.append(real(docs, source))
        return parsed[-1]

    monkeypatch.setattr(Intents, "from_documents", staticmethod(counted))
    reviewed: list[Intents] = []

    def review(
        self: ReconcilePass, planned: Planned, plan: Plan, snap: ClusterSnapshot, intents: Intents, kept: Any
    ) -> Planned:
        assert kept is not None and kept.plan is plan  # written with the plan: kept across leaders
        assert planned.plan is plan and planned.tally is not None  # the review counts no partition again
        reviewed.append(intents)
        return planned

    monkeypatch.setattr(ReconcilePass, "_review", review)
    look = {("t", i): Traffic(r, 0) for i, r in skewed().items()}
    rec = Reconciler(cast(KubeGateway, object()), rates=lambda _cluster: look)
    plan = plan_once(rec, policy(), cluster())
    assert not plan.empty and len(parsed) == 1  # the kept plan's key, the planner and the review
    assert len(reviewed) == 1 and reviewed[0].policies == parsed[0].policies
    assert plan_once(rec, policy(), cluster()).plan_id == plan.plan_id and len(parsed) == 2  # kept


def test_an_invalid_intent_is_invalid_input_and_keeps_no_plan() -> None:
    rec = Reconciler(cast(KubeGateway, object()), rates=lambda _cluster: None)
    bad = policy(balance={"networkIn": True, "tolerance": -1})
    spec = ClusterSpec.of(KAFKA_CLUSTER)
    one = ReconcilePass(
        rec, cast(Any, Gateway(cluster())), KAFKA_CLUSTER, spec, limits_of(spec), [bad], [], cast(Any, None),
        None, None,
    )  # fmt: skip
    one._plan([bad])
    planned = one.view.planned
    assert isinstance(planned, Planned) and planned.error_reason == "InvalidInput", planned
    assert "tolerance" in (planned.error or "") and rec.memory(("kafka", "c")).kept is None


def test_a_new_leader_keeps_the_plan_from_the_record_the_last_one_wrote(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The record written with the plan (plan_review.KeptPlanRecord, through its JSON) is what a new
    process keeps the plan with: the same id under rates that drifted within the bound, where planning
    afresh gives another; drifted beyond it, a new plan."""
    written: list[str | None] = []

    def review(
        self: ReconcilePass, planned: Planned, plan: Plan, snap: Any, intents: Any, kept: Any
    ) -> Planned:
        written.append(plan_review.kept_text(kept))
        return Planned(plan=planned.plan, summary=replace(planned.summary, review=Review(config_map="cm")))

    monkeypatch.setattr(ReconcilePass, "_review", review)
    look: dict[str, Any] = {"rates": {("t", i): Traffic(r, 0) for i, r in skewed().items()}}
    first = plan_once(
        Reconciler(cast(KubeGateway, object()), rates=lambda _c: look["rates"]), policy(), cluster()
    )
    assert len(written) == 1 and written[0] is not None
    record = plan_review.KeptPlanRecord.model_validate_json(written[0])
    assert record.plan_id == first.plan_id and "review" not in record.summary
    restored: list[Any] = []

    def from_review(self: ReconcilePass, key: str) -> Any:
        restored.append(record.kept(first, {"configMap": "cm", "brokersChanging": ""}))
        return restored[-1]

    look["rates"] = {("t", i): Traffic(r, 0) for i, r in jittered(1).items()}
    afresh = plan_once(
        Reconciler(cast(KubeGateway, object()), rates=lambda _c: look["rates"]), policy(), cluster()
    )
    assert afresh.plan_id != first.plan_id  # without the record the new leader asks for approval again
    monkeypatch.setattr(ReconcilePass, "_kept_from_review", from_review)
    rec = Reconciler(cast(KubeGateway, object()), rates=lambda _c: look["rates"])
    assert plan_once(rec, policy(), cluster()).plan_id == first.plan_id and len(restored) == 1
    assert plan_once(rec, policy(), cluster()).plan_id == first.plan_id and len(restored) == 1  # read once
    look["rates"] = {("t", i): Traffic(r, 0) for i, r in skewed(1.0, 4.0).items()}
    rec = Reconciler(cast(KubeGateway, object()), rates=lambda _c: look["rates"])
    assert plan_once(rec, policy(), cluster()).plan_id != first.plan_id  # drifted: planned again
