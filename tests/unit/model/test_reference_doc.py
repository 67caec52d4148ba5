"""docs/reference.md, the custom resources' field reference, is what scripts/gen_reference.py makes of the
CRD schemas now (crd_documents(), the one source): a changed field, default or bound fails here until
the page is regenerated with `make reference`. The generator reads every field from the schema, so a
field added to the model appears in the page without touching the script."""

from __future__ import annotations

import copy
import difflib
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

from kafka_placement.model.crd_schema import crd_documents

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "reference.md"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "scripts" / "gen_reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fields(schema: dict[str, Any], path: str) -> list[str]:
    out = []
    items = schema.get("items") if schema.get("type") == "array" else None
    if isinstance(items, dict):
        out += _fields(items, path + "[]")
    for name, sub in schema.get("properties", {}).items():
        out += [f"{path}.{name}", *_fields(sub, f"{path}.{name}")]
    return out


def test_committed_reference_matches_the_crd_schemas() -> None:
    expected = _generator().render()
    committed = PAGE.read_text(encoding="utf-8") if PAGE.is_file() else ""
    if committed != expected:
        diff = "".join(
            list(
                difflib.unified_diff(
                    committed.splitlines(keepends=True),
                    expected.splitlines(keepends=True),
                    "docs/reference.md (committed)",
                    "docs/reference.md (from the CRD schemas)",
                    n=0,
                )
            )[:60]
        )
        raise AssertionError(
            "docs/reference.md drifted from the CRD schemas "
            "(operator/kafka_placement/model/crd_schema.py): run make reference\n" + diff
        )


def test_every_field_of_every_kind_has_a_row() -> None:
    page = _generator().render()
    for doc in crd_documents():
        kind = doc["spec"]["names"]["kind"]
        schema = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        assert f"\n## {kind}\n" in page, kind
        section = page.split(f"\n## {kind}\n", 1)[1].split("\n## ", 1)[0]
        for part in ("spec", "status"):
            for path in _fields(schema["properties"][part], part):
                assert f"| `{path}` |" in section, f"{kind}: no row for {path}"


def test_the_page_follows_the_schema_not_the_script() -> None:
    """A field, default or bound the model gains shows up without touching the generator."""
    gen = _generator()
    docs = copy.deepcopy(crd_documents())
    spec = docs[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["newKnob"] = {
        "type": "integer",
        "description": "A knob | with a pipe and *stars*.",
        "minimum": 2,
        "maximum": 9,
        "default": 3,
    }
    page = gen.render(docs)
    row = next(line for line in page.splitlines() if line.startswith("| `spec.newKnob` |"))
    assert row == r"| `spec.newKnob` | integer | `3` | 2 to 9 | A knob \| with a pipe and \*stars\*. |"
    assert page != gen.render()


def test_check_mode_names_the_fix(tmp_path: Path, capsys: Any) -> None:
    gen = _generator()
    stale = tmp_path / "reference.md"
    stale.write_text("# old\n", encoding="utf-8")
    assert gen.main(["--check", "-o", str(stale)]) == 1
    assert "run `make reference`" in capsys.readouterr().err
    assert gen.main(["-o", str(stale)]) == 0
    assert gen.main(["--check", "-o", str(stale)]) == 0
    assert stale.read_text(encoding="utf-8") == gen.render()
