"""The reconcile's thin shell around retiring.py (cluster_pass.py ``ReconcilePass._retire``,
``_retiring``): the heals decided on are deleted through the KubeGateway, fenced, with their uid and
resourceVersion as preconditions; a refused delete leaves the heal awaiting retirement; Events on the
cluster and the heal. A fake KubeGateway and leadership record the calls; no Kafka is read."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from tests.unit.reconcile.test_retiring import BACK, NAME, SINCE, SPEC, T0, ended, heal

from kafka_placement.execution.record import Execution
from kafka_placement.execution.record_doc import Phase
from kafka_placement.kube.gateway import KubeConflict, KubeError, KubeGateway
from kafka_placement.model.cluster_spec import ClusterSpec
from kafka_placement.model.self_healing import HealingState, PastFailure, format_time
from kafka_placement.reconcile.cluster_pass import ReconcilePass
from kafka_placement.reconcile.healing import HealingOutcome
from kafka_placement.reconcile.reconciler import Reconciler

CLUSTER: dict[str, Any] = {
    "apiVersion": "kafkaplacement.io/v1alpha1",
    "kind": "KafkaCluster",
    "metadata": {"name": "main", "namespace": "kafka", "uid": "uid-main"},
    "spec": {"bootstrapServers": "k:9092", "selfHealing": SPEC},
}


class FakeKube:
    def __init__(self, refuse: KubeError | None = None) -> None:
        self.refuse = refuse
        self.calls: list[tuple[str, ...]] = []
        self.deleted: list[tuple[str, str, Mapping[str, str] | None]] = []

    def delete_custom(
        self,
        group: str,
        version: str,
        ns: str,
        plural: str,
        name: str,
        preconditions: Mapping[str, str] | None = None,
    ) -> bool:
        self.calls.append(("delete", name))
        if self.refuse is not None:
            raise self.refuse
        self.deleted.append((plural, name, preconditions))
        return True

    def event(self, obj: Mapping[str, Any], etype: str, reason: str, message: str) -> None:
        self.calls.append(("event", obj["kind"], reason))


class Lead:
    identity = "me"

    def __init__(self, kube: FakeKube) -> None:
        self.kube = kube

    def is_leader(self) -> bool:
        return True

    def fence(self) -> None:
        self.kube.calls.append(("fence",))


def one_pass(kube: FakeKube, bodies: list[dict[str, Any]], record: Execution | None = None) -> ReconcilePass:
    rec = Reconciler(cast(KubeGateway, kube), leadership=cast(Any, Lead(kube)), wall=lambda: T0 + 1020)
    spec = ClusterSpec.of(CLUSTER)
    return ReconcilePass(
        rec, cast(Any, None), CLUSTER, spec, cast(Any, None), bodies, [], cast(Any, None), record, None
    )


def outcome() -> HealingOutcome:
    return HealingOutcome(HealingState(), ended=(ended(),), live=frozenset({1, 2, 3}))


def test_a_retired_heal_is_deleted_fenced_with_preconditions_and_told() -> None:
    kube = FakeKube()
    out = one_pass(kube, [heal()])._retire(outcome(), {})
    assert kube.deleted == [("brokerdecommissions", NAME, {"uid": "u3", "resourceVersion": "42"})]
    assert kube.calls[:2] == [("fence",), ("delete", NAME)]  # fenced before the delete
    assert ("event", "KafkaCluster", "HealRetired") in kube.calls
    assert ("event", "BrokerDecommission", "HealRetired") in kube.calls
    assert out.to_status() == {
        "pastFailures": [
            {
                "broker": 3,
                "since": SINCE,
                "heal": NAME,
                "returnedAt": BACK,
                "retiredAt": format_time(T0 + 1020),
            }
        ]
    }


def test_a_refused_delete_awaits_retirement_again_and_only_a_real_refusal_warns() -> None:
    kube = FakeKube(refuse=KubeError("Kubernetes API: cannot delete: 403 Forbidden", 403))
    out = one_pass(kube, [heal()])._retire(outcome(), {})
    assert kube.deleted == [] and ("event", "KafkaCluster", "HealNotRetired") in kube.calls
    assert out.past == (PastFailure(3, SINCE, NAME, BACK),)
    kube = FakeKube(refuse=KubeConflict("Kubernetes API: cannot delete: 409 Conflict", 409))
    out = one_pass(kube, [heal()])._retire(outcome(), {})  # changed since listed: quietly next time
    assert [c for c in kube.calls if c[0] == "event"] == [] and out.past[0].awaiting_retirement


def test_a_heal_an_execution_runs_waits_and_the_next_reconcile_replans_without_it() -> None:
    kube = FakeKube()
    body = heal(phase="Executing")
    p = one_pass(kube, [body])
    assert p._retiring([body]) == frozenset()  # no execution in flight: nothing to re-plan
    p.record = cast(Execution, SimpleNamespace(phase=Phase.MOVING, doc=SimpleNamespace(participants=["u3"])))
    out = p._retire(outcome(), {})
    assert kube.deleted == [] and out.waiting == {"u3"} and out.past[0].awaiting_retirement
    p.cluster = {**CLUSTER, "status": out.to_status()}
    assert p._retiring([body]) == {"u3"}  # decide's View.retiring: re-planned without it
    p.started, p.started_with = True, frozenset({"uid-other"})  # the superseding execution started
    again = p._retire(HealingOutcome(HealingState(), live=frozenset({1, 2, 3})), p.cluster["status"])
    assert [name for _, name, _ in kube.deleted] == [NAME] and again.past[0].retired_at is not None


class FakeGateway:
    """What ``ReconcilePass._plan`` reads of Kafka: the snapshot, the reassignments, KIP-1066 support."""

    def __init__(self, snap: Any) -> None:
        self.snap = snap

    def snapshot(self) -> Any:
        return self.snap

    def list_reassignments(self) -> list[Any]:
        return []

    def supports_cordon(self) -> bool:
        return False


class ReviewlessKube(FakeKube):
    """The plan review's ConfigMap cannot be written: told in an Event, never a reason not to plan."""

    def __getattr__(self, name: str) -> Any:
        def refuse(*_: Any, **__: Any) -> Any:
            raise KubeError(f"Kubernetes API: {name} refused here", 403)

        return refuse


def test_a_replan_dropping_the_only_retired_heal_is_its_moves_in_flight_and_needs_no_planner(
    tmp_path: Path,
) -> None:
    """Only the retired heal ran the execution: no intent is left to plan (the planner is not called), and
    the new plan is exactly the moves in flight (``kept_only``: no approval); the moves not yet submitted
    (t-2) are dropped."""
    from tests.unit.execution.test_supersede import LIMITS, _snapshot

    from kafka_placement.execution.record import Original
    from kafka_placement.execution.record_doc import Submission
    from kafka_placement.execution.store import FileStore
    from kafka_placement.model.plan import PartitionTarget, Plan

    running = Plan.of(
        [PartitionTarget("t", 1, (1, 3), ("any", "any")), PartitionTarget("t", 2, (4, 1), ("any", "any"))]
    )
    store = FileStore(tmp_path / "state.json")
    record = Execution.create(store, running, limits=LIMITS, cluster_id="c1", participants=["u3"])
    record.set_baseline([Original((1, 2), ("/d0", "/d0"), 10), Original((2, 4), ("/d0", "/d0"), 10)], {})
    record.submit(0, Submission.CONFIRMED, 5.0)
    record.save()
    kube = ReviewlessKube()
    rec = Reconciler(cast(KubeGateway, kube), leadership=cast(Any, Lead(kube)), wall=lambda: T0)
    p = ReconcilePass(
        rec, cast(Any, FakeGateway(_snapshot())), CLUSTER, ClusterSpec.of(CLUSTER), cast(Any, None),
        [], [], cast(Any, store), record, None,
    )  # fmt: skip
    p._plan((), keeping_in_flight=True, dropping=True)
    planned = p.view.planned
    assert planned is not None and planned.kept_only and planned.plan is not None
    assert [(t.name, t.replicas) for t in planned.plan.partitions] == [("t-1", (1, 3))]
