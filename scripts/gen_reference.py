"""Generate docs/reference.md, the custom resources' field reference, from the CRD schemas.

    .venv/bin/python scripts/gen_reference.py                # writes docs/reference.md (make reference)
    .venv/bin/python scripts/gen_reference.py --check        # exit 1 when docs/reference.md is stale
    .venv/bin/python scripts/gen_reference.py -o -           # print it

The one source is ``kafka_placement.model.crd_schema.crd_documents()`` (the same dicts ``crds/`` is
rendered from), read at run time: nothing about a field is written here. Per kind: its names, its
``kubectl get`` columns, then one table row per field of ``spec`` and ``status`` (path, type, default,
allowed values and bounds, description). tests/unit/model/test_reference_doc.py regenerates the page and fails
on drift.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "docs" / "reference.md"
SOURCE = "operator/kafka_placement/model/crd_schema.py"
STALE = "docs/reference.md is out of date with the CRD schemas ({source}): run `make reference`"

Schema = Mapping[str, Any]


def _crd_documents() -> list[dict[str, Any]]:
    try:
        from kafka_placement.model.crd_schema import crd_documents
    except ImportError:  # run with a Python that lacks the editable install: use the source tree
        sys.path.insert(0, str(ROOT / "operator"))
        from kafka_placement.model.crd_schema import crd_documents
    return crd_documents()


# ---- cells ----------------------------------------------------------------------------------------------


def _text(value: str) -> str:
    """Prose in a table cell: one line, Markdown's active characters escaped."""
    out = " ".join(value.split())
    for ch in ("\\", "`", "*", "_", "|"):
        out = out.replace(ch, "\\" + ch)
    return out.replace("<", "&lt;").replace(">", "&gt;")


def _code(value: Any) -> str:
    """A literal in a table cell, as code (a pipe inside a table's code span must still be escaped)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text.replace('|', chr(92) + '|')}{pad}{fence}"


def _type(s: Schema) -> str:
    kind = str(s.get("type", "any"))
    if kind == "array":
        return f"array of {_type(s.get('items', {}))}"
    if kind == "object" and "properties" not in s and "additionalProperties" in s:
        return f"map of string to {_type(s['additionalProperties'])}"
    return f"{kind} ({s['format']})" if "format" in s else kind


def _range(low: Any, high: Any, what: str = "") -> str | None:
    """``1 to 8``, ``≥ 0``, ``length ≤ 4096``: the bounds of a value, a length or a count."""
    prefix = f"{what} " if what else ""
    if low is not None and high is not None:
        return f"{prefix}{low} to {high}"
    if low is not None:
        return f"{prefix}≥ {low}"
    if high is not None:
        return f"{prefix}≤ {high}"
    return None


def _bounds(s: Schema) -> list[str]:
    """What the schema allows of one value (not of its items or properties)."""
    out: list[str] = []
    if "enum" in s:
        out.append("one of " + ", ".join(_code(v) for v in s["enum"]))
    for low, high, what in (
        ("minimum", "maximum", ""),
        ("minLength", "maxLength", "length"),
        ("minItems", "maxItems", "items"),
        ("minProperties", "maxProperties", "entries"),
    ):
        text = _range(s.get(low), s.get(high), what)
        if text:
            out.append(text)
    if "pattern" in s:
        out.append("pattern " + _code(s["pattern"]))
    if s.get("x-kubernetes-list-type") == "set":
        out.append("no duplicates")
    if s.get("x-kubernetes-list-type") == "map":
        out.append("one item per " + ", ".join(_code(k) for k in s.get("x-kubernetes-list-map-keys", ())))
    for rule in s.get("x-kubernetes-validations", ()):
        out.append(f"rule {_code(rule['rule'])}: {_text(rule.get('message', ''))}")
    return out


def _allowed(s: Schema) -> str:
    parts = _bounds(s)
    if s.get("type") == "array" and "properties" not in s.get("items", {}):
        parts += [f"each: {b}" for b in _bounds(s.get("items", {}))]
    if s.get("type") == "object" and isinstance(s.get("additionalProperties"), Mapping):
        parts += [f"each value: {b}" for b in _bounds(s["additionalProperties"])]
    return "; ".join(parts)


# ---- tables ---------------------------------------------------------------------------------------------


def _fields(s: Schema, path: str) -> Iterator[tuple[str, Schema, bool]]:
    """(path, schema, required) of every field under ``s``, depth first in the schema's order."""
    items = s.get("items") if s.get("type") == "array" else None
    if isinstance(items, Mapping) and "properties" in items:
        yield from _fields(items, path + "[]")
    required = set(s.get("required", ()))
    for name, sub in s.get("properties", {}).items():
        here = f"{path}.{name}"
        yield here, sub, name in required
        yield from _fields(sub, here)


def _field_table(s: Schema, path: str) -> list[str]:
    rows = [
        "| field | type | default | allowed values / bounds | description |",
        "|---|---|---|---|---|",
    ]
    for here, sub, required in _fields(s, path):
        kind = _type(sub) + (", **required**" if required else "")
        default = _code(sub["default"]) if "default" in sub else ""
        rows.append(
            f"| {_code(here)} | {kind} | {default} | {_allowed(sub)} | {_text(sub.get('description', ''))} |"
        )
    return rows


def _columns_table(columns: Sequence[Schema]) -> list[str]:
    rows = ["| column | from | type | shown | description |", "|---|---|---|---|---|"]
    for c in columns:
        shown = "with `-o wide`" if c.get("priority", 0) else "always"
        rows.append(
            f"| {_text(c['name'])} | {_code(c['jsonPath'])} | {c['type']} | {shown} | "
            f"{_text(c.get('description', ''))} |"
        )
    return rows


def _kind_section(doc: Mapping[str, Any]) -> list[str]:
    spec = doc["spec"]
    names = spec["names"]
    (version,) = [v for v in spec["versions"] if v.get("storage")]
    schema = version["schema"]["openAPIV3Schema"]
    kind = names["kind"]
    lines = [
        f"## {kind}",
        "",
        _text(schema.get("description", "")),
        "",
        f"`apiVersion: {spec['group']}/{version['name']}`, `kind: {kind}`; {spec['scope'].lower()}; "
        f"plural `{names['plural']}`, short name{'s' if len(names.get('shortNames', ())) != 1 else ''} "
        + ", ".join(f"`{n}`" for n in names.get("shortNames", ()))
        + (
            "; categories " + ", ".join(f"`{c}`" for c in names.get("categories", ()))
            if names.get("categories")
            else ""
        )
        + (" (`status` is a subresource)" if "status" in version.get("subresources", {}) else "")
        + ".",
        "",
    ]
    if version.get("additionalPrinterColumns"):
        lines += [
            f"`kubectl get {names['plural']}` shows:",
            "",
            *_columns_table(version["additionalPrinterColumns"]),
            "",
        ]
    for part in ("spec", "status"):
        sub = schema["properties"].get(part)
        if not sub:
            continue
        title = "written by you" if part == "spec" else "written by the operator"
        req = " (required)" if part in schema.get("required", ()) else ""
        lines += [f"### {kind} `{part}`{req}: {title}", "", _text(sub.get("description", "")), ""]
        lines += [*_field_table(sub, part), ""]
    return lines


def render(docs: Sequence[Mapping[str, Any]] | None = None) -> str:
    """The whole page for ``docs`` (default: the CRDs of the installed package)."""
    docs = _crd_documents() if docs is None else docs
    kinds = [d["spec"]["names"]["kind"] for d in docs]
    groups = sorted({f"{d['spec']['group']}/{v['name']}" for d in docs for v in d["spec"]["versions"]})
    lines = [
        "<!-- generated by scripts/gen_reference.py from "
        f"{SOURCE} (crd_documents()); do not edit: run `make reference` -->",
        "",
        "# Custom resource reference",
        "",
        f"The {len(docs)} kinds of {', '.join(f'`{g}`' for g in groups)}, field by field, generated from the "
        f"CRD schemas (`{SOURCE}`, the one source `crds/` and the chart's CRDs are rendered from, so "
        "`kubectl explain` says the same). The API server enforces every type, default and bound below at "
        "`kubectl apply` time; unknown fields are refused by `kubectl apply`'s default strict validation "
        "(pruned otherwise). How the operator acts on them: "
        "[operations.md](operations.md); the planner's rules: [planner.md](planner.md).",
        "",
        "Paths are relative to the object; `[]` marks the items of a list.",
        "",
        *(f"- [{k}](#{k.lower()})" for k in kinds),
        "",
    ]
    for doc in docs:
        lines += _kind_section(doc)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("-o", "--output", default=str(OUTPUT), help="the page to write (- = stdout)")
    ap.add_argument("--check", action="store_true", help="only compare with --output; exit 1 when it differs")
    args = ap.parse_args(argv)
    text = render()
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    out = Path(args.output)
    if args.check:
        if not out.is_file() or out.read_text(encoding="utf-8") != text:
            print(STALE.format(source=SOURCE), file=sys.stderr)
            return 1
        return 0
    if not out.is_file() or out.read_text(encoding="utf-8") != text:
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(out)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
