"""The operator's engine choice and spark-k8s settings (reconcile/planner.py), without a rig."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.unit.builders import snapshot

from kafka_placement.model.cluster_spec import ClusterSpec, SparkSpec
from kafka_placement.model.errors import BadInputError
from kafka_placement.model.intents import Intents
from kafka_placement.reconcile.planner import (
    PlanInputs,
    engine_of,
    intents_yaml,
    placement_key,
    spark_k8s_settings,
)

HELM = {
    "KAFKA_PLACEMENT_PLANNER_ENGINE": "auto",
    "KAFKA_PLACEMENT_SPARK_IMAGE": "registry.example/kpo:1",
    "KAFKA_PLACEMENT_SPARK_NAMESPACE": "spark-jobs",
    "KAFKA_PLACEMENT_SPARK_SERVICE_ACCOUNT": "kpo-spark",
    "KAFKA_PLACEMENT_SPARK_EXECUTOR_INSTANCES": "3",
    "KAFKA_PLACEMENT_SPARK_MEMORY": "4g",
    "KAFKA_PLACEMENT_SPARK_EXCHANGE_CLAIM": "kp-exchange",
    "KAFKA_PLACEMENT_SPARK_EXCHANGE_DIR": "/exchange",
}


def cluster(spec: dict[str, Any]) -> ClusterSpec:
    """A KafkaCluster's spec as the reconciler parses it."""
    return ClusterSpec.parse({"bootstrapServers": "k:9092", **spec})


def spark_of(spec: dict[str, Any]) -> SparkSpec:
    return cluster(spec).spark


def test_engine_comes_from_the_spec_then_the_helm_default_then_local() -> None:
    assert engine_of(cluster({"planner": {"engine": "spark"}}).planner, HELM) == "spark"
    assert engine_of(cluster({}).planner, HELM) == "auto"
    assert engine_of(cluster({}).planner, {}) == "local"
    # a planner without an engine has the CRD's default, as the apiserver fills it in
    assert engine_of(cluster({"planner": {"spark": {"image": "i:1"}}}).planner, {}) == "auto"


def test_spark_k8s_settings_take_the_spec_over_the_helm_values() -> None:
    helm_only = spark_k8s_settings(SparkSpec(), "kafka", reactive_cordon=False, env=HELM)
    assert (helm_only.image, helm_only.namespace, helm_only.service_account) == (
        "registry.example/kpo:1",
        "spark-jobs",
        "kpo-spark",
    )
    assert helm_only.executor_instances == 3
    assert helm_only.driver_memory == helm_only.executor_memory == "4g"
    assert (helm_only.exchange_claim, helm_only.exchange_mount, helm_only.exchange_dir) == (
        "kp-exchange",
        "/exchange",
        Path("/exchange"),
    )
    assert helm_only.extra_arguments == () and helm_only.timeout_s == 1800
    spec = {
        "planner": {
            "spark": {"image": "mine:2", "namespace": "n2", "executorInstances": 1, "timeoutSeconds": 90}
        }
    }
    mine = spark_k8s_settings(spark_of(spec), "kafka", reactive_cordon=True, env=HELM)
    assert (mine.image, mine.namespace, mine.executor_instances, mine.timeout_s) == ("mine:2", "n2", 1, 90)
    assert mine.extra_arguments == ("--reactive-cordon",)
    fast = spark_k8s_settings(spark_of(spec), "kafka", reactive_cordon=False, env=HELM, effort="Fast")
    assert fast.extra_arguments == ("--effort", "Fast")  # spec.planner.effort reaches the job
    no_namespace = {k: v for k, v in HELM.items() if k != "KAFKA_PLACEMENT_SPARK_NAMESPACE"}
    assert spark_k8s_settings(SparkSpec(), "kafka", False, env=no_namespace).namespace == "kafka"


@pytest.mark.parametrize(
    ("missing", "says"),
    [
        ("KAFKA_PLACEMENT_SPARK_IMAGE", "spec.planner.spark.image"),
        ("KAFKA_PLACEMENT_SPARK_EXCHANGE_CLAIM", "planner.spark.exchange.claimName"),
        ("KAFKA_PLACEMENT_SPARK_EXCHANGE_DIR", "planner.spark.exchange.claimName"),
    ],
)
def test_missing_spark_k8s_settings_are_bad_input_naming_what_to_set(missing: str, says: str) -> None:
    env = {k: v for k, v in HELM.items() if k != missing}
    with pytest.raises(BadInputError) as err:
        spark_k8s_settings(SparkSpec(), "kafka", False, env=env)
    assert says in err.value.message


def test_job_intents_parse_back_and_ignore_approval_fields() -> None:
    docs = [
        {
            "kind": "BrokerDecommission",
            "metadata": {"name": "retire"},
            "spec": {"clusterRef": {"name": "c"}, "brokers": [3], "approval": "Manual", "approvedPlan": "p1"},
        },
        {
            "kind": "LogDirCordon",
            "metadata": {"name": "d0"},
            "spec": {"clusterRef": {"name": "c"}, "broker": 1, "logDirs": ["/data/d0"], "paused": True},
        },
    ]
    text = intents_yaml(docs)
    assert "approvedPlan" not in text and "paused" not in text
    assert Intents.loads(text) == Intents.from_documents(docs)
    approved = [{**d, "spec": {**d["spec"], "approvedPlan": "p2"}} for d in docs]
    assert intents_yaml(approved) == text  # approving does not launch another planning job


def test_placement_key_changes_with_placement_not_with_sizes() -> None:
    settings = spark_k8s_settings(SparkSpec(), "kafka", False, env=HELM)
    a = snapshot({1: None, 2: None, 3: None}, [("t", 0, [1, 2], [0, 0], 10)])
    bigger = snapshot({1: None, 2: None, 3: None}, [("t", 0, [1, 2], [0, 0], 99)])
    moved = snapshot({1: None, 2: None, 3: None}, [("t", 0, [3, 2], [0, 0], 10)])
    assert placement_key(a, "x", settings) == placement_key(bigger, "x", settings)
    assert placement_key(a, "x", settings) != placement_key(moved, "x", settings)
    assert placement_key(a, "x", settings) != placement_key(a, "y", settings)


def test_the_launcher_defaults_to_pod_and_an_unknown_one_is_bad_input() -> None:
    assert spark_k8s_settings(SparkSpec(), "kafka", False, env=HELM).launcher == "Pod"
    helm_apps = {**HELM, "KAFKA_PLACEMENT_SPARK_LAUNCHER": "SparkApplication"}
    assert spark_k8s_settings(SparkSpec(), "kafka", False, env=helm_apps).launcher == "SparkApplication"
    spec = {"planner": {"spark": {"launcher": "Pod"}}}
    assert spark_k8s_settings(spark_of(spec), "kafka", False, env=helm_apps).launcher == "Pod"
    with pytest.raises(BadInputError) as err:  # the spec's: refused by the model (and the CRD)
        spark_of({"planner": {"spark": {"launcher": "Job"}}})
    assert "spec.planner.spark.launcher" in err.value.message and "Pod, SparkApplication" in err.value.message
    with pytest.raises(BadInputError) as err:  # the Helm value's
        spark_k8s_settings(SparkSpec(), "kafka", False, env={**HELM, "KAFKA_PLACEMENT_SPARK_LAUNCHER": "Job"})
    assert "spec.planner.spark.launcher" in err.value.message and "Pod, SparkApplication" in err.value.message


def test_spark_conf_comes_from_the_helm_values_then_the_spec() -> None:
    helm = {**HELM, "KAFKA_PLACEMENT_SPARK_CONF": '{"spark.executor.cores": 2, "spark.a": "x"}'}
    spec = {"planner": {"spark": {"sparkConf": {"spark.a": "y", "spark.b": "true"}}}}
    got = spark_k8s_settings(spark_of(spec), "kafka", False, env=helm).conf
    assert dict(got) == {"spark.executor.cores": "2", "spark.a": "y", "spark.b": "true"}
    with pytest.raises(BadInputError, match=r"spec.planner.spark.sparkConf\['spark.b'\]: expected a string"):
        spark_of({"planner": {"spark": {"sparkConf": {"spark.b": True}}}})  # the CRD's values are strings
    assert spark_k8s_settings(SparkSpec(), "kafka", False, env=HELM).conf == ()
    for bad_env, bad_spec in (("[1]", {}), ("{", {}), ("{}", {"sparkConf": {"executor.cores": "2"}})):
        with pytest.raises(BadInputError):
            spark_k8s_settings(
                spark_of({"planner": {"spark": bad_spec}}),
                "kafka",
                False,
                env={**HELM, "KAFKA_PLACEMENT_SPARK_CONF": bad_env},
            )


def test_the_clusters_capacity_reaches_the_planner_with_every_engine() -> None:
    from dataclasses import replace

    from kafka_placement.reconcile.planner import plan_cluster

    snap = snapshot({1: None, 2: None, 3: None, 4: None}, [("t", 0, [1, 2, 3], [0, 0, 0], 10)])
    hot = replace(snap, partitions=(replace(snap.partitions[0], bytes_in_per_sec=50e6),))
    capacity = {"default": {"networkInBytesPerSec": 60_000_000}, "maxShare": 0.8}
    spec = cluster({"planner": {"engine": "local"}, "capacity": capacity})
    inputs = PlanInputs.of([], False, spec.capacity)
    planned = plan_cluster(None, None, "ns", spec, hot, inputs, False)  # type: ignore[arg-type]
    assert planned.error_reason == "Infeasible" and "broker 1: network in 50.0 MB/s" in (planned.error or "")
    # spark-k8s: the job's intents file carries it
    text = intents_yaml([], spec.capacity)
    assert Intents.loads(text).capacity == spec.capacity
    assert Intents.loads(intents_yaml([])).capacity is None
    # the plan review's report measures the plan with the same intents (reconciler._review)
    assert inputs.intents.capacity == spec.capacity and inputs.text == text


def test_a_spark_k8s_result_is_not_reused_once_the_rates_drifted_beyond_the_bound() -> None:
    from dataclasses import replace

    from kafka_placement.planning.plan_keeping import loads_of
    from kafka_placement.reconcile.planner import SparkRun, _drifted

    snap = snapshot(
        {1: None, 2: None, 3: None}, [("t", i, [1 + i % 3, 1 + (i + 1) % 3], [0, 0], 10) for i in range(6)]
    )

    def rated(rates: list[float]) -> Any:
        parts = tuple(replace(p, bytes_in_per_sec=r) for p, r in zip(snap.partitions, rates, strict=True))
        return replace(snap, partitions=parts)

    planned = rated([1000.0] * 6)
    run = SparkRun(run_id="r1", key="k", submitted_at=0.0, rates=loads_of(planned).to_json())
    assert SparkRun.model_validate_json(run.model_dump_json()) == run  # kept in the planning record
    assert not _drifted(run, loads_of(rated([1010.0, 990.0, 1000.0, 1005.0, 1000.0, 995.0])), 0.2)
    assert _drifted(run, loads_of(rated([3000.0] + [1000.0] * 5)), 0.2)
    assert not _drifted(run.model_copy(update={"rates": None}), loads_of(rated([3000.0] * 6)), 0.2)
    assert _drifted(run, loads_of(snap), 0.2)  # rates gone (none measured now): drift as well


def test_the_clusters_max_disk_share_reaches_the_planner_and_a_refusal_is_disk_headroom() -> None:
    from tests.unit.planning.headroom_cases import roomy, tight

    from kafka_placement.reconcile import status
    from kafka_placement.reconcile.planner import plan_cluster

    body = {"kind": "BrokerDecommission", "metadata": {"name": "retire-4"}, "spec": {"brokers": [4]}}
    for spec in (cluster({"planner": {"engine": "local"}}), cluster({"capacity": {"maxDiskShare": 0.6}})):
        inputs = PlanInputs.of([body], False, spec.capacity)
        assert inputs.intents.max_disk_share == spec.max_disk_share
        planned = plan_cluster(None, None, "ns", spec, roomy(), inputs, False)  # type: ignore[arg-type]
        assert planned.summary.to_json() is not None
        assert planned.summary.to_json()["diskHeadroom"]["maxDiskShare"] == spec.max_disk_share
        assert all(
            d["shareAfter"] <= spec.max_disk_share for d in planned.summary.to_json()["diskHeadroom"]["dirs"]
        )
    assert (
        Intents.loads(
            intents_yaml([body], cluster({"capacity": {"maxDiskShare": 0.6}}).capacity)
        ).max_disk_share
        == 0.6
    )
    spec = cluster({"planner": {"engine": "local"}})
    planned = plan_cluster(None, None, "ns", spec, tight(), PlanInputs.of([body], False), False)  # type: ignore[arg-type]
    assert planned.plan is None and planned.error_reason == "DiskHeadroom"
    assert "placed so far, broker 1 /d0, is 90.0% full (limit 85.0%)" in (planned.error or "")
    blocked = status.phase_conditions(status.FAILED, planned.error_reason, planned.error or "")["Blocked"]
    assert blocked[:2] == (True, "DiskHeadroom")


def test_the_clusters_planner_effort_reaches_the_planner() -> None:
    """``spec.planner.effort``: Fast plans with the greedy goals alone, the default and Exhaustive run the
    exact program (a 4-broker cluster with two rack levels and broker balance: Fast copies 27% more)."""
    import json

    from tests.bench.generator import cluster as generated

    from kafka_placement.reconcile.planner import plan_cluster

    snap = generated(brokers=4, partitions=24, topics=4, rf=3, dcs=2, racks_per_dc=2, seed=3, dirs=2)
    body = {
        "kind": "PlacementPolicy",
        "metadata": {"name": "spread"},
        "spec": json.loads(
            '{"topics": {"include": ["*"]}, "rackAwareness": {"separator": "/", "levels": 2},'
            ' "balance": {"brokers": true}}'
        ),
    }
    moved = {}
    for effort in ("Fast", None, "Exhaustive"):
        planner = {"engine": "local", **({"effort": effort} if effort else {})}
        spec = cluster({"planner": planner})
        planned = plan_cluster(None, None, "ns", spec, snap, PlanInputs.of([body], False), False)  # type: ignore[arg-type]
        assert planned.summary.to_json() is not None and planned.summary.hard_violations_after == 0
        moved[effort or spec.effort] = planned.summary.bytes_to_move
    assert moved["Exhaustive"] <= moved["Balanced"] < moved["Fast"]


def test_a_plan_over_the_operators_memory_limit_is_a_planning_failure_named_insufficient_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``kafka-placement operator --max-memory`` (KP_MAX_MEMORY; else the pod's limit): a cluster whose
    plan would not fit is refused before planning, its intents Failed and Stalled with reason
    InsufficientMemory."""
    from tests.unit.planning.headroom_cases import roomy

    from kafka_placement.reconcile import status
    from kafka_placement.reconcile.planner import plan_cluster

    body = {"kind": "BrokerDecommission", "metadata": {"name": "retire-4"}, "spec": {"brokers": [4]}}
    spec = cluster({"planner": {"engine": "local"}})
    monkeypatch.setenv("KP_MAX_MEMORY", "1Mi")
    planned = plan_cluster(None, None, "ns", spec, roomy(), PlanInputs.of([body], False), False)  # type: ignore[arg-type]
    assert planned.plan is None and planned.error_reason == "InsufficientMemory"
    assert "more than 0.00 GiB (--max-memory)" in (planned.error or "")
    conditions = status.phase_conditions(status.FAILED, planned.error_reason, planned.error or "")
    assert conditions["Stalled"][:2] == (True, "InsufficientMemory")
    monkeypatch.setenv("KP_MAX_MEMORY", "64Gi")
    assert plan_cluster(None, None, "ns", spec, roomy(), PlanInputs.of([body], False), False).plan is not None  # type: ignore[arg-type]
