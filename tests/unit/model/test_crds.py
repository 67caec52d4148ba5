"""The generated CRDs: committed files match their one source, every field is documented, the
intent kinds' schemas cover exactly the fields the spec parsers accept, and the examples are valid."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafka_placement.cli import main
from kafka_placement.model.crd_schema import crd_documents, rendered_crds
from kafka_placement.model.errors import BadInputError
from kafka_placement.model.intents import KINDS, parse_document, parse_spec

ROOT = Path(__file__).resolve().parents[3]
CRD_DIRS = [ROOT / "crds", ROOT / "charts" / "kafka-placement-operator" / "crds"]
EXAMPLES = ROOT / "examples"
REGENERATE = ".venv/bin/kafka-placement crds -o crds && cp crds/*.yaml charts/kafka-placement-operator/crds/"


def _schemas() -> dict[str, dict[str, Any]]:
    return {
        d["spec"]["names"]["kind"]: d["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for d in crd_documents()
    }


@pytest.mark.parametrize("crd_dir", CRD_DIRS, ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_crds_match_the_source(crd_dir: Path) -> None:
    expected = rendered_crds()
    present = {p.name: p.read_text(encoding="utf-8") for p in sorted(crd_dir.glob("*.yaml"))}
    stale = sorted(set(present) - set(expected))
    missing = sorted(set(expected) - set(present))
    differ = sorted(n for n in set(expected) & set(present) if present[n] != expected[n])
    assert not (stale or missing or differ), (
        f"{crd_dir.relative_to(ROOT)} drifted from operator/kafka_placement/model/crd_schema.py "
        f"(missing {missing}, stale {stale}, different {differ}); run `{REGENERATE}`"
    )


def _walk(schema: dict[str, Any], path: str) -> list[str]:
    """Paths of the properties (and object items) without a description."""
    missing: list[str] = []
    for name, sub in schema.get("properties", {}).items():
        here = f"{path}.{name}"
        if not sub.get("description"):
            missing.append(here)
        missing += _walk(sub, here)
    items = schema.get("items")
    if isinstance(items, dict):
        if items.get("type") == "object" and not items.get("description"):
            missing.append(f"{path}[]")
        missing += _walk(items, f"{path}[]")
    return missing


def test_every_field_has_a_description() -> None:
    for kind, schema in _schemas().items():
        assert schema.get("description"), kind
        props = dict(schema["properties"])
        # The apiserver forbids anything but `type` on the top-level metadata.
        assert props.pop("metadata") == {"type": "object"}
        missing = _walk({"properties": props}, kind)
        assert not missing, f"fields without a description: {missing}"


def test_description_walker_finds_undocumented_fields() -> None:
    schema = {"properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}}
    assert _walk(schema, "K") == ["K.a", "K.a.b"]


def _allowed_fields(kind: str, spec: dict[str, Any], where: str) -> set[str]:
    """The fields the parser accepts at ``where``, read from its unknown-field error."""
    with pytest.raises(BadInputError) as e:
        parse_spec(kind, spec, "spec", "x")
    assert e.value.location == where
    m = re.search(r"allowed: (.*)$", e.value.detail)
    assert m, e.value.message
    return set(m.group(1).split(", "))


BASE_SPECS: dict[str, dict[str, Any]] = {
    "BrokerDecommission": {"brokers": [1]},
    "LogDirCordon": {"broker": 1, "logDirs": ["/d"]},
    "PlacementPolicy": {},
}
NESTED = {"topics", "rackAwareness", "balance", "moveBudget"}


@pytest.mark.parametrize("kind", KINDS)
def test_schema_fields_are_exactly_the_parsers(kind: str) -> None:
    spec_schema = _schemas()[kind]["properties"]["spec"]
    assert set(spec_schema["properties"]) == _allowed_fields(kind, {**BASE_SPECS[kind], "zz": 1}, "spec")
    for name in sorted(NESTED & set(spec_schema["properties"])):
        nested = spec_schema["properties"][name]
        accepted = _allowed_fields(kind, {**BASE_SPECS[kind], name: {"zz": 1}}, f"spec.{name}")
        assert set(nested["properties"]) == accepted, name
    # every required field is one the parser needs (or the operator's clusterRef)
    for field in spec_schema.get("required", []):
        if field == "clusterRef":
            continue
        spec = {k: v for k, v in BASE_SPECS[kind].items() if k != field}
        with pytest.raises(BadInputError, match=f"missing required field '{field}'"):
            parse_spec(kind, spec, "spec", "x")


def test_schema_enums_and_bounds_match_the_parser() -> None:
    policy = _schemas()["PlacementPolicy"]["properties"]["spec"]["properties"]
    assert policy["mode"]["enum"] == ["Enforce", "Advise"]
    assert (
        policy["rackAwareness"]["properties"]["levels"]["minimum"],
        policy["rackAwareness"]["properties"]["levels"]["maximum"],
    ) == (1, 8)
    tol = policy["balance"]["properties"]["tolerance"]
    assert (tol["minimum"], tol["maximum"]) == (0, 10)
    parse_spec("PlacementPolicy", {"rackAwareness": {"levels": 8}, "balance": {"tolerance": 10}}, "s", "x")
    for bad in ({"rackAwareness": {"levels": 9}}, {"balance": {"tolerance": 10.5}}, {"mode": "Other"}):
        with pytest.raises(BadInputError):
            parse_spec("PlacementPolicy", bad, "s", "x")
    cordon = _schemas()["LogDirCordon"]["properties"]["spec"]["properties"]["logDirs"]
    pattern = re.compile(cordon["items"]["pattern"])
    for d in ("*", "/data/d1", "relative", "", "**"):
        parser_ok = True
        try:
            parse_spec("LogDirCordon", {"broker": 0, "logDirs": [d]}, "s", "x")
        except BadInputError:
            parser_ok = False
        assert bool(pattern.match(d)) == parser_ok, d


def _example_docs() -> list[tuple[str, dict[str, Any]]]:
    docs = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc is not None:
                docs.append((path.name, doc))
    return docs


def test_examples_are_valid_intents() -> None:
    docs = _example_docs()
    kinds = sorted({d["kind"] for _, d in docs})
    assert kinds == sorted([*KINDS, "KafkaCluster"])
    for name, doc in docs:
        assert doc["apiVersion"] == "kafkaplacement.io/v1alpha1", name
        if doc["kind"] != "KafkaCluster":
            parse_document(doc, name)
            assert doc["spec"]["clusterRef"] == {"name": "local"}, name


def test_kustomization_lists_every_example() -> None:
    kust = yaml.safe_load((EXAMPLES / "kustomization.yaml").read_text(encoding="utf-8"))
    listed = sorted(kust["resources"])
    assert listed == sorted(p.name for p in EXAMPLES.glob("*.yaml") if p.name != "kustomization.yaml")


def test_cli_writes_the_crds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds", "-o", str(tmp_path / "out")]) == 0
    written = {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "out").iterdir()}
    assert written == rendered_crds()
    capsys.readouterr()
    assert main(["crds", "-o", "-"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# generated by kafka-placement crds; do not edit")
    docs = [d for d in yaml.safe_load_all(out) if d]
    assert [d["spec"]["names"]["kind"] for d in docs] == [
        "KafkaCluster",
        "LogDirCordon",
        "BrokerDecommission",
        "PlacementPolicy",
    ]
    assert docs == crd_documents()


def test_spark_fields_with_a_helm_value_have_no_schema_default() -> None:
    """The apiserver fills a schema default into every KafkaCluster that has ``spec.planner.spark``, which
    would hide the Helm value the field falls back to (reconcile/planner.py reads an absent field as such)."""
    (cluster,) = [d for d in crd_documents() if d["spec"]["names"]["kind"] == "KafkaCluster"]
    spec = cluster["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spark = spec["properties"]["planner"]["properties"]["spark"]["properties"]
    for field in (
        "launcher",
        "image",
        "serviceAccount",
        "namespace",
        "executorInstances",
        "memory",
        "sparkConf",
    ):
        assert "default" not in spark[field], field


def test_the_intents_operator_fields_are_declared_once() -> None:
    """clusterRef, approval, approvedPlan, paused and ignoreWindows: one declaration
    (model/intent_kinds.py) gives every intent kind's schema of them and the operator's parser (with the
    CRD's defaults)."""
    from kafka_placement.model.intents import OPERATOR_FIELDS, ClusterRef, OperatorFields

    assert OPERATOR_FIELDS == ("clusterRef", "approval", "approvedPlan", "paused", "ignoreWindows")
    for kind in KINDS:
        spec = _schemas()[kind]["properties"]["spec"]
        assert spec["properties"]["clusterRef"] == ClusterRef.schema(), kind
        assert {k: spec["properties"][k] for k in OPERATOR_FIELDS[1:]} == OperatorFields.schema(), kind
        assert "clusterRef" in spec["required"], kind
    defaults = {k: s["default"] for k, s in OperatorFields.schema().items() if "default" in s}
    assert defaults == {"approval": "Automatic", "paused": False, "ignoreWindows": False}
    assert OperatorFields.parse({"brokers": [1]}, "spec") == OperatorFields(
        approval="Automatic", paused=False, ignore_windows=False
    )
    gate = OperatorFields.parse({"approval": "Manual", "approvedPlan": "p1"}, "spec")
    assert not gate.unapproved("p1") and gate.unapproved("p2")
    assert not OperatorFields.parse({}, "spec").unapproved("p2")
    assert ClusterRef.name_of({"spec": {"clusterRef": {"name": "c"}}}) == "c"
    for nameless in ({}, {"spec": None}, {"spec": {"clusterRef": {}}}, {"spec": {"clusterRef": {"name": 3}}}):
        assert ClusterRef.name_of(nameless) is None
