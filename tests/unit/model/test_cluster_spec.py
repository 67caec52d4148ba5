"""The KafkaCluster's typed spec (model/cluster_spec.py): one declaration gives the parser and the CRD schema,
the CRD's defaults are the model's, and bad values are refused naming the field."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafka_placement.execution.executor import Limits
from kafka_placement.model.cluster_spec import (
    CaSecretRef,
    CertSecretRef,
    ClusterSpec,
    InvalidPart,
    LimitsSpec,
    PlannerSpec,
    SaslSecretRef,
    SaslSpec,
    SparkSpec,
    TlsSpec,
    TrafficSpec,
    is_connection_error,
)
from kafka_placement.model.crd_schema import crd_documents
from kafka_placement.model.errors import BadInputError
from kafka_placement.model.self_healing import BrokerFailure, LogDirFailure, SelfHealingSpec

ROOT = Path(__file__).resolve().parents[3]


def crd_spec_schema() -> dict[str, Any]:
    (cluster,) = [d for d in crd_documents() if d["spec"]["names"]["kind"] == "KafkaCluster"]
    schema: dict[str, Any] = cluster["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return schema


def apiserver_defaults(
    schema: dict[str, Any], obj: dict[str, Any], applied: list[str], at: str = "spec"
) -> None:
    """What the apiserver does to a stored object: an absent property with a schema default gets it, in
    every object that is present (an absent object gets nothing)."""
    for name, sub in schema.get("properties", {}).items():
        if name not in obj and "default" in sub:
            obj[name] = copy.deepcopy(sub["default"])
            applied.append(f"{at}.{name}")
        elif isinstance(obj.get(name), dict) and "properties" in sub:
            apiserver_defaults(sub, obj[name], applied, f"{at}.{name}")


def schema_defaults(schema: dict[str, Any], at: str = "spec") -> list[str]:
    out: list[str] = []
    for name, sub in schema.get("properties", {}).items():
        if "default" in sub:
            out.append(f"{at}.{name}")
        out += schema_defaults(sub, f"{at}.{name}")
    return out


MINIMAL: dict[str, Any] = {"bootstrapServers": "k1:9092"}
# every object present, with only its required fields: every schema default applies somewhere
SKELETON: dict[str, Any] = {
    "bootstrapServers": "k1:9092",
    "tls": {"caSecretRef": {"name": "ca"}, "certSecretRef": {"name": "client"}},
    "sasl": {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": "user"}},
    "limits": {},
    "planner": {"spark": {}},
    "selfHealing": {"brokerFailure": {}, "logDirFailure": {}, "diskPressure": {}},
    "traffic": {},
    "capacity": {},
}
FULL: dict[str, Any] = {
    "bootstrapServers": "k1:9092,[::1]:9093",
    "tls": {
        "caSecretRef": {"name": "ca", "key": "bundle.pem"},
        "certSecretRef": {"name": "client", "certKey": "c.pem", "keyKey": "k.pem"},
    },
    "sasl": {"mechanism": "PLAIN", "secretRef": {"name": "user", "usernameKey": "u", "passwordKey": "p"}},
    "throttleBytesPerSecond": 52428800,
    "limits": {
        "maxMovesPerBroker": 7,
        "maxMovesInFlight": 9,
        "maxBytesPerBroker": 2**40,
        "batchSeconds": 30,
        "onConfigChange": "Pause",
        "maxReapplies": 1000,
        "reapplyWindowSeconds": 86400,
    },
    "planner": {
        "engine": "spark-k8s",
        "spark": {
            "launcher": "SparkApplication",
            "sparkConf": {"spark.executor.cores": "2", "spark.a": "x"},
            "image": "registry.example/kp:1",
            "serviceAccount": "kp-spark",
            "namespace": "spark-jobs",
            "executorInstances": 4,
            "memory": "512m",
            "timeoutSeconds": 60,
            "replanSeconds": 10,
        },
    },
    "selfHealing": {
        "brokerFailure": {"enabled": True, "afterSeconds": 30},
        "logDirFailure": {"enabled": True},
        "approval": "Manual",
        "maxConcurrentBrokerHeals": 2,
    },
    "traffic": {"enabled": True, "windowSeconds": 120, "periodSeconds": 30},
}


@pytest.mark.parametrize("raw", [MINIMAL, SKELETON, FULL], ids=["minimal", "skeleton", "full"])
def test_the_crds_defaults_are_the_models(raw: dict[str, Any]) -> None:
    """The spec as written and the spec as the apiserver stores it (schema defaults filled in) parse to the
    same value: no default of the CRD differs from the model's, and the model has none the CRD lacks
    inside a present object."""
    stored, applied = copy.deepcopy(raw), []
    apiserver_defaults(crd_spec_schema(), stored, applied)
    assert ClusterSpec.parse(stored) == ClusterSpec.parse(raw)
    if raw is SKELETON:  # every default of the schema was checked
        assert sorted(applied) == sorted(schema_defaults(crd_spec_schema()))


def test_every_default_is_declared_once_in_the_schema() -> None:
    """The model's defaults, field by field, against the CRD's (the parser's defaults come from the
    declarations the schema is made of)."""
    limits = crd_spec_schema()["properties"]["limits"]["properties"]
    assert LimitsSpec() == LimitsSpec(
        max_moves_per_broker=limits["maxMovesPerBroker"]["default"],
        max_moves_in_flight=limits["maxMovesInFlight"]["default"],
        batch_seconds=limits["batchSeconds"]["default"],
        on_config_change=limits["onConfigChange"]["default"],
        max_reapplies=limits["maxReapplies"]["default"],
        reapply_window_seconds=limits["reapplyWindowSeconds"]["default"],
    )
    planner = crd_spec_schema()["properties"]["planner"]["properties"]
    assert PlannerSpec().engine == planner["engine"]["default"]
    spark = planner["spark"]["properties"]
    assert (SparkSpec().timeout_seconds, SparkSpec().replan_seconds) == (
        spark["timeoutSeconds"]["default"],
        spark["replanSeconds"]["default"],
    )


def test_the_executors_limits_default_to_the_crds() -> None:
    d = Limits()
    assert (
        d.max_moves_per_broker,
        d.max_moves,
        d.batch_seconds,
        d.on_config_change,
        d.max_reapplies,
        d.reapply_window_s,
    ) == (1000, 1250, 120, "Reapply", 5, 600)
    spec = LimitsSpec()
    assert (d.max_moves_per_broker, d.max_moves, d.batch_seconds, d.on_config_change) == (
        spec.max_moves_per_broker,
        spec.max_moves_in_flight,
        spec.batch_seconds,
        spec.on_config_change,
    )
    assert (d.max_reapplies, d.reapply_window_s) == (spec.max_reapplies, spec.reapply_window_seconds)
    assert d.max_bytes_per_broker is None and d.throttle is None


def test_a_minimal_spec() -> None:
    spec = ClusterSpec.parse(MINIMAL)
    assert spec == ClusterSpec(bootstrap_servers="k1:9092")
    assert (spec.tls, spec.sasl, spec.planner, spec.self_healing, spec.throttle_bytes_per_second) == (
        None,
        None,
        None,
        None,
        None,
    )
    assert spec.limits == LimitsSpec() and spec.spark == SparkSpec()
    assert ClusterSpec.of({"spec": MINIMAL}) == spec


def test_a_full_spec() -> None:
    spec = ClusterSpec.parse(FULL)
    assert spec.bootstrap_servers == "k1:9092,[::1]:9093"
    assert spec.tls == TlsSpec(
        ca_secret_ref=CaSecretRef(name="ca", key="bundle.pem"),
        cert_secret_ref=CertSecretRef(name="client", cert_key="c.pem", key_key="k.pem"),
    )
    assert spec.sasl == SaslSpec(
        mechanism="PLAIN", secret_ref=SaslSecretRef(name="user", username_key="u", password_key="p")
    )
    assert spec.throttle_bytes_per_second == 52428800
    assert spec.limits == LimitsSpec(
        max_moves_per_broker=7,
        max_moves_in_flight=9,
        max_bytes_per_broker=2**40,
        batch_seconds=30,
        on_config_change="Pause",
        max_reapplies=1000,
        reapply_window_seconds=86400,
    )
    assert spec.planner == PlannerSpec(
        engine="spark-k8s",
        spark=SparkSpec(
            launcher="SparkApplication",
            spark_conf=(("spark.executor.cores", "2"), ("spark.a", "x")),
            image="registry.example/kp:1",
            service_account="kp-spark",
            namespace="spark-jobs",
            executor_instances=4,
            memory="512m",
            timeout_seconds=60,
            replan_seconds=10,
        ),
    )
    assert spec.spark is spec.planner.spark
    assert spec.self_healing == SelfHealingSpec(
        BrokerFailure(True, 30), LogDirFailure(True, 60), "Manual", max_concurrent_broker_heals=2
    )


def test_the_defaults_of_the_secret_refs() -> None:
    spec = ClusterSpec.parse(SKELETON)
    assert spec.tls == TlsSpec(
        ca_secret_ref=CaSecretRef(name="ca", key="ca.crt"),
        cert_secret_ref=CertSecretRef(name="client", cert_key="tls.crt", key_key="tls.key"),
    )
    assert spec.sasl is not None
    assert spec.sasl.secret_ref == SaslSecretRef(
        name="user", username_key="username", password_key="password"
    )
    assert ClusterSpec.parse({**MINIMAL, "tls": {}}).tls == TlsSpec()  # TLS with the system trust store


def test_null_is_absent_and_an_integral_number_is_an_integer() -> None:
    spec = ClusterSpec.parse(
        {**MINIMAL, "tls": None, "limits": {"batchSeconds": None, "maxMovesInFlight": 10.0}}
    )
    assert spec.tls is None and spec.limits.batch_seconds == 120 and spec.limits.max_moves_in_flight == 10
    assert isinstance(spec.limits.max_moves_in_flight, int)


BAD = [
    ({}, "spec.bootstrapServers", 'bootstrapServers is required ("host:port,host:port")'),
    ({"bootstrapServers": ""}, "spec.bootstrapServers", "does not match"),
    ({"bootstrapServers": "k1"}, "spec.bootstrapServers", "does not match"),
    ({"bootstrapServers": 9092}, "spec.bootstrapServers", "expected a string"),
    ({**MINIMAL, "limit": {}}, "spec", "unknown field(s) limit"),
    ({**MINIMAL, "tls": "yes"}, "spec.tls", "expected an object"),
    ({**MINIMAL, "tls": {"caSecretRef": {}}}, "spec.tls.caSecretRef", "missing required field 'name'"),
    ({**MINIMAL, "tls": {"caSecretRef": {"name": ""}}}, "spec.tls.caSecretRef.name", "must not be empty"),
    (
        {**MINIMAL, "tls": {"caSecretRef": {"name": "n" * 254}}},
        "spec.tls.caSecretRef.name",
        "longer than 253",
    ),
    (
        {**MINIMAL, "tls": {"certSecretRef": {"name": "c", "keyKey": ""}}},
        "spec.tls.certSecretRef.keyKey",
        "empty",
    ),
    (
        {**MINIMAL, "sasl": {"mechanism": "GSSAPI", "secretRef": {"name": "u"}}},
        "spec.sasl.mechanism",
        "one of",
    ),
    ({**MINIMAL, "sasl": {"mechanism": "PLAIN"}}, "spec.sasl", "missing required field 'secretRef'"),
    ({**MINIMAL, "sasl": {"secretRef": {"name": "u"}}}, "spec.sasl", "missing required field 'mechanism'"),
    ({**MINIMAL, "throttleBytesPerSecond": 0}, "spec.throttleBytesPerSecond", "must be >= 1, got 0"),
    ({**MINIMAL, "throttleBytesPerSecond": True}, "spec.throttleBytesPerSecond", "expected an integer"),
    ({**MINIMAL, "throttleBytesPerSecond": "fast"}, "spec.throttleBytesPerSecond", "expected an integer"),
    ({**MINIMAL, "throttleBytesPerSecond": 1.5}, "spec.throttleBytesPerSecond", "expected an integer"),
    (
        {**MINIMAL, "throttle": {"mode": "Adaptive", "minBytesPerSecond": 9, "maxBytesPerSecond": 8}},
        "spec.throttle.minBytesPerSecond",
        "minBytesPerSecond must be <= maxBytesPerSecond (got 9 > 8)",
    ),
    (
        {**MINIMAL, "throttle": {"mode": "Fast", "maxBytesPerSecond": 8}},
        "spec.throttle.mode",
        "one of Static, Adaptive",
    ),
    (
        {**MINIMAL, "throttle": {"mode": "Adaptive", "maxBytesPerSecond": 8}},
        "spec.throttle.minBytesPerSecond",
        "minBytesPerSecond is required with mode Adaptive",
    ),
    (
        {**MINIMAL, "throttle": {"mode": "Adaptive", "minBytesPerSecond": 0, "maxBytesPerSecond": 8}},
        "spec.throttle.minBytesPerSecond",
        "must be >= 1",
    ),
    (
        {**MINIMAL, "throttle": {"mode": "Static"}},
        "spec.throttle.maxBytesPerSecond",
        "throttle needs maxBytesPerSecond (or spec.throttleBytesPerSecond)",
    ),
    (
        {
            **MINIMAL,
            "throttleBytesPerSecond": 5,
            "throttle": {"mode": "Adaptive", "minBytesPerSecond": 1, "maxBytesPerSecond": 8},
        },
        "spec.throttle.maxBytesPerSecond",
        "throttle.maxBytesPerSecond and throttleBytesPerSecond disagree: set one, or both alike (8 != 5)",
    ),
    (
        {**MINIMAL, "throttleBytesPerSecond": 5, "throttle": {"mode": "Adaptive", "minBytesPerSecond": 6}},
        "spec.throttle.minBytesPerSecond",
        "minBytesPerSecond must be <= maxBytesPerSecond (got 6 > 5)",
    ),
    ({**MINIMAL, "limits": {"maxMovesInFlight": 0}}, "spec.limits.maxMovesInFlight", "must be >= 1"),
    ({**MINIMAL, "limits": {"maxReapplies": 1001}}, "spec.limits.maxReapplies", "must be <= 1000"),
    ({**MINIMAL, "limits": {"onConfigChange": "Stop"}}, "spec.limits.onConfigChange", "Reapply, Pause"),
    ({**MINIMAL, "limits": {"maxMoves": 5}}, "spec.limits", "unknown field(s) maxMoves"),
    ({**MINIMAL, "planner": {"engine": "gpu"}}, "spec.planner.engine", "local, spark, spark-k8s, auto"),
    ({**MINIMAL, "planner": {"effort": "fast"}}, "spec.planner.effort", "Fast, Balanced, Exhaustive"),
    ({**MINIMAL, "planner": {"effort": 3}}, "spec.planner.effort", "expected a string"),
    ({**MINIMAL, "planner": {"spark": {"memory": "2 GB"}}}, "spec.planner.spark.memory", "does not match"),
    ({**MINIMAL, "planner": {"spark": {"timeoutSeconds": 59}}}, "spec.planner.spark.timeoutSeconds", ">= 60"),
    (
        {**MINIMAL, "planner": {"spark": {"executorInstances": 1001}}},
        "spec.planner.spark.executorInstances",
        "<=",
    ),
    ({**MINIMAL, "planner": {"spark": {"image": ""}}}, "spec.planner.spark.image", "must not be empty"),
    (
        {**MINIMAL, "planner": {"spark": {"sparkConf": {f"spark.k{i}": "v" for i in range(101)}}}},
        "spec.planner.spark.sparkConf",
        "at most 100 entries",
    ),
    (
        {**MINIMAL, "planner": {"spark": {"sparkConf": {"spark.a": "v" * 1001}}}},
        "spec.planner.spark.sparkConf['spark.a']",
        "longer than 1000",
    ),
]


@pytest.mark.parametrize(("raw", "location", "says"), BAD, ids=[b[1] + ":" + b[2][:20] for b in BAD])
def test_bad_values_are_refused_naming_the_field(raw: dict[str, Any], location: str, says: str) -> None:
    with pytest.raises(BadInputError) as e:
        ClusterSpec.parse(raw)
    assert e.value.location == location, e.value.message
    assert says in e.value.detail, e.value.message
    top = location.split(".")[1] if "." in location else ""
    assert is_connection_error(e.value) == (top in ("bootstrapServers", "tls", "sasl"))


def test_a_throttle_is_static_or_adaptive_its_maximum_defaulting_to_throttle_bytes_per_second() -> None:
    static = ClusterSpec.parse({**MINIMAL, "throttle": {"mode": "Static", "maxBytesPerSecond": 7}})
    assert static.top_throttle == 7 and static.adaptive_throttle is None
    old = ClusterSpec.parse({**MINIMAL, "throttleBytesPerSecond": 9})
    assert old.top_throttle == 9 and old.adaptive_throttle is None
    both = ClusterSpec.parse(
        {**MINIMAL, "throttleBytesPerSecond": 9, "throttle": {"mode": "Adaptive", "minBytesPerSecond": 2}}
    )
    assert both.top_throttle == 9 and both.adaptive_throttle == (2, 9)
    alike = {"mode": "Adaptive", "minBytesPerSecond": 2, "maxBytesPerSecond": 9}
    assert ClusterSpec.parse(
        {**MINIMAL, "throttleBytesPerSecond": 9, "throttle": alike}
    ).adaptive_throttle == (2, 9)
    assert ClusterSpec.parse(MINIMAL).top_throttle is None


def test_a_minimum_above_throttle_bytes_per_second_is_refused_by_the_crd_schema_and_the_parser() -> None:
    """``throttle.minBytesPerSecond`` is held to the maximum it defaults to, ``throttleBytesPerSecond``, by a
    CEL rule naming the field (the apiserver stored such a spec, which the operator then refused)."""
    adaptive = {"mode": "Adaptive", "minBytesPerSecond": 200}
    bad = {**MINIMAL, "throttleBytesPerSecond": 100, "throttle": adaptive}
    with pytest.raises(BadInputError) as e:
        ClusterSpec.parse(bad)
    assert e.value.location == "spec.throttle.minBytesPerSecond"
    rules = crd_spec_schema()["x-kubernetes-validations"]
    assert {
        "rule": "!has(self.throttle) || !has(self.throttle.minBytesPerSecond) || "
        "!has(self.throttleBytesPerSecond) || self.throttle.minBytesPerSecond <= "
        "self.throttleBytesPerSecond",
        "message": "minBytesPerSecond must be <= maxBytesPerSecond "
        "(the maximum defaults to throttleBytesPerSecond)",
        "fieldPath": ".throttle.minBytesPerSecond",
    } in rules


def test_an_invalid_self_healing_leaves_the_rest_of_the_spec_valid() -> None:
    spec = ClusterSpec.parse({**FULL, "selfHealing": {"approval": "Sometimes"}})
    assert isinstance(spec.self_healing, InvalidPart)
    assert spec.self_healing.message.startswith("spec.selfHealing.approval: must be one of Automatic, Manual")
    assert spec.limits == ClusterSpec.parse(FULL).limits
    assert ClusterSpec.parse({**MINIMAL, "selfHealing": {}}).self_healing == SelfHealingSpec()


def test_the_schema_is_the_models() -> None:
    assert crd_spec_schema() == ClusterSpec.schema()
    spec = ClusterSpec.schema()
    assert spec["required"] == ["bootstrapServers"]
    assert list(spec["properties"]) == [
        "bootstrapServers",
        "tls",
        "sasl",
        "throttleBytesPerSecond",
        "throttle",
        "limits",
        "planner",
        "selfHealing",
        "traffic",
        "capacity",
        "execution",
    ]
    assert spec["properties"]["selfHealing"] == SelfHealingSpec.schema()
    assert spec["properties"]["sasl"]["required"] == ["mechanism", "secretRef"]


def test_the_example_kafka_cluster_parses() -> None:
    specs = [
        ClusterSpec.of(doc)
        for path in sorted((ROOT / "examples").glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if doc and doc.get("kind") == "KafkaCluster"
    ]
    assert specs and all(s.limits == LimitsSpec() for s in specs)  # the example spells the defaults out


def test_traffic_sampling_is_off_by_default_and_its_window_is_at_least_its_period() -> None:
    assert ClusterSpec.parse(MINIMAL).sampling == TrafficSpec(
        enabled=False, window_seconds=300, period_seconds=60
    )
    assert ClusterSpec.parse(FULL).sampling == TrafficSpec(
        enabled=True, window_seconds=120, period_seconds=30
    )
    ok = {**MINIMAL, "traffic": {"enabled": True, "windowSeconds": 5, "periodSeconds": 5}}
    assert ClusterSpec.parse(ok).sampling.window_seconds == 5
    bad = {**MINIMAL, "traffic": {"enabled": True, "windowSeconds": 10, "periodSeconds": 20}}
    with pytest.raises(BadInputError) as e:
        ClusterSpec.parse(bad)
    assert e.value.location == "spec.traffic.windowSeconds" and "periodSeconds" in e.value.message
    with pytest.raises(BadInputError, match=">= 1"):
        ClusterSpec.parse({**MINIMAL, "traffic": {"periodSeconds": 0}})
    rules = crd_spec_schema()["properties"]["traffic"]["x-kubernetes-validations"]
    assert rules == [
        {"rule": "self.windowSeconds >= self.periodSeconds", "message": TrafficSpec.WINDOW_BELOW_PERIOD}
    ]
