"""docs/architecture.md's section on layers says what the import-linter contracts of pyproject.toml
enforce (the layer line, one bold rule per contract), and its claims on modules hold."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "operator" / "kafka_placement"
LARGEST = 850  # lines: what the doc promises no module exceeds
HALF_UNDER = 180  # lines: what the doc says half the modules are under


def _section() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text()
    return text.split("## 2. Layers", 1)[1].split("## 3.", 1)[0]


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def test_the_layer_line_is_the_layers_contract() -> None:
    (layers,) = [c for c in _contracts() if c["type"] == "layers"]
    listed = layers["layers"]
    assert isinstance(listed, list)
    rows = [[p.strip().removeprefix("kafka_placement.") for p in row.split("|")] for row in listed]
    expected = " > ".join(" | ".join(row) for row in rows)
    line = re.search(r"\*\*layers\*\*: `([^`]+)`", _section())
    assert line is not None, "the doc has no **layers** rule"
    assert line.group(1) == expected
    cells = re.findall(r"^\| (`[^|]+`) \|", _section(), re.M)  # the table's first column
    assert [re.findall(r"`([a-z]+)`", c) for c in cells] == rows


def test_every_contract_has_its_bold_rule_and_every_rule_a_contract() -> None:
    rules = set(re.findall(r"^- \*\*([^*]+)\*\*", _section(), re.M))
    names = {str(c["name"]).split(":", 1)[0] for c in _contracts()}
    assert rules == names


def test_modules_are_small_and_say_their_role() -> None:
    sizes = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        sizes[path.relative_to(PACKAGE)] = text.count("\n")
        if path.name != "__init__.py" or text.strip():
            assert ast.get_docstring(ast.parse(text)), f"{path} opens with no docstring"
    assert max(sizes.values()) <= LARGEST, max(sizes.items(), key=lambda kv: kv[1])
    ordered = sorted(sizes.values())
    assert ordered[len(ordered) // 2] < HALF_UNDER


def test_no_two_classes_of_the_package_share_a_name() -> None:
    """One name, one class: a reader (or a grep) never has to ask which ``Progress`` is meant."""
    where: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(str(path.relative_to(PACKAGE)))
    shared = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert not shared, f"classes of one name in several places: {shared}"
