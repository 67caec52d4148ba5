"""Typed custom-resource specs whose fields are each declared once; parser and CRD schema derive from it.

A spec is a frozen dataclass whose fields are declared with ``leaf`` (a JSON name and its OpenAPI schema:
description, type, bounds, enum, pattern and ``default``; a scalar, a map of scalars or an array of
scalars), ``child`` (a nested spec class) or ``custom`` (a schema and a reader of its own, e.g.
``selfHealing``'s ``SelfHealingSpec``), or ``items`` (an array of a nested spec class). A field declared
otherwise is not the spec's (an intent's ``name``, taken from its metadata): the parser is given it
(``parse_object(..., name=...)``). The CRD schema (``object_schema``) and the strict parser
(``parse_object``) are both derived from those declarations, and a leaf's Python default *is* its
schema's ``default``: the object the apiserver stores (defaults filled in) and the object the user wrote
parse to the same value (tests/unit/model/test_cluster_spec.py checks it). ``to_json`` writes an instance
back as that JSON: the statuses are declared the same way (model/intent_status.py), so what the operator
writes and what it reads back have one declaration too (self-healing's status entries included,
model/self_healing.py).

Why not pydantic (the execution record's model): its JSON schema is not a structural OpenAPI schema
(``$ref``, ``anyOf`` with null, titles; no ``x-kubernetes-*``, no control over the field order), so the
CRD would need either a second description of every field or a translation layer; and ``model/`` must
import on Spark workers, which have no pydantic (tests/unit/spark/test_executor_imports.py).

The parser accepts exactly what the schema accepts: unknown fields are refused (the apiserver prunes
them from what it stores), and so are values breaking type, minimum/maximum, minLength/maxLength,
pattern, enum, maxProperties, minItems/maxItems or a ``set`` list's uniqueness (CEL rules are the spec
class's own checks). A leaf's ``says`` words the errors of its minItems, set and pattern for the user
(``must list at least one broker``). A null is an absent field (the apiserver prunes the nulls of
non-nullable fields before defaulting). An integral number (``5.0``) is an integer, as for the
apiserver. Every error is a ``BadInputError`` naming the field (``spec.limits.maxMovesInFlight: must be
>= 1, got 0``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, TypeVar

from .crd_parts import Schema, obj_schema
from .errors import BadInputError
from .jsonio import (
    INT64_MAX,
    as_bool,
    as_int,
    as_list,
    as_number,
    as_object,
    as_str,
    brief,
    brief_list,
    check_fields,
)

_KEY = "spec_field"
S = TypeVar("S")  # a spec class: a dataclass of leaf / child / custom fields with a DESCRIPTION


@dataclass(frozen=True, slots=True)
class _Prop:
    json: str
    schema: Schema | None = None  # a leaf's or a custom field's schema, its default included
    nested: type[Any] | None = None  # a child's spec class
    read: Callable[[object, str], Any] | None = None  # a custom field's reader
    required: bool = False
    missing: str | None = None  # the message of a missing required field, at the field itself
    says: Mapping[str, str] | None = None  # a leaf's own words for errors (``check_value``)
    many: Schema | None = None  # ``items``: the array's own schema (its items are ``nested``'s)
    write: Callable[[Any], Any] | None = None  # a custom field's writer (``to_json``)
    omit_empty: bool = False  # an empty array left out by ``to_json`` (a leaf declared with ``value=()``)


def leaf(
    json: str,
    schema: Schema,
    *,
    required: bool = False,
    missing: str | None = None,
    says: Mapping[str, str] | None = None,
    value: Any = MISSING,
) -> Any:
    """A scalar, map or array field: its default is ``schema["default"]`` (an array's as a tuple); without
    one it is None when absent, unless ``required`` (``missing``: the message naming what to set, else the
    generic one). ``says``: messages for a broken ``minItems``, ``set`` or ``pattern`` (``check_value``).
    ``value``: a default the schema does not carry (a status field the apiserver must not fill in, e.g. a
    self-healing entry's ``lostPartitionCount: 0``); an array's ``()`` is left out when written."""
    prop = _Prop(
        json,
        schema=schema,
        required=required or missing is not None,
        missing=missing,
        says=says,
        omit_empty=value == (),
    )
    meta = {_KEY: prop}
    if value is not MISSING:
        return field(default=value, metadata=meta)
    if "default" in schema:
        default = schema["default"]
        return field(default=tuple(default) if isinstance(default, list) else default, metadata=meta)
    return field(metadata=meta) if prop.required else field(default=None, metadata=meta)


def child(json: str, cls: type[Any], *, required: bool = False, absent: bool = False) -> Any:
    """A nested object of spec class ``cls``: None when absent, or with ``absent=True`` ``cls()`` (every
    field at its default: the same meaning as an empty object, e.g. ``limits``)."""
    meta = {_KEY: _Prop(json, nested=cls, required=required)}
    if required:
        return field(metadata=meta)
    return field(default_factory=cls, metadata=meta) if absent else field(default=None, metadata=meta)


def items(json: str, cls: type[Any], description: str, *, max_items: int | None, **extra: Any) -> Any:
    """An array of nested objects of spec class ``cls`` (at most ``max_items``; None: unbounded, for a
    list the operator writes of what the cluster has, e.g. its brokers; ``extra``: more of the array's
    schema, e.g. ``x-kubernetes-list-type``); ``()`` when absent."""
    bound = {} if max_items is None else {"maxItems": max_items}
    many = {"type": "array", "description": description, **bound, **extra}
    return field(default=(), metadata={_KEY: _Prop(json, nested=cls, many=many)})


def custom(
    json: str,
    schema: Schema,
    read: Callable[[object, str], Any],
    write: Callable[[Any], Any] | None = None,
    *,
    default: Any = None,
) -> Any:
    """A field with a schema and a reader of its own (``read(value, where)``) and, for ``to_json``, a writer
    (``write(value)``; without one the value is written as it is); ``default`` when absent."""
    return field(default=default, metadata={_KEY: _Prop(json, schema=schema, read=read, write=write)})


def spec_of(body: Mapping[str, Any]) -> Any:
    """A custom resource's ``spec`` as stored, for a typed parser (an absent or null one is empty)."""
    return body.get("spec") or {}


def _props(cls: type[Any]) -> list[tuple[str, _Prop]]:
    """The spec's fields (those declared with ``leaf``, ``child`` or ``custom``) in declaration order."""
    return [(f.name, f.metadata[_KEY]) for f in fields(cls) if _KEY in f.metadata]


def json_names(cls: type[Any]) -> tuple[str, ...]:
    """The JSON names of a spec class's fields, in declaration order."""
    return tuple(p.json for _, p in _props(cls))


def properties(cls: type[Any]) -> dict[str, Schema]:
    """The schemas of a spec class's fields, by JSON name in declaration order."""
    out: dict[str, Schema] = {}
    for _, p in _props(cls):
        if p.many is not None:
            assert p.nested is not None
            out[p.json] = {**p.many, "items": object_schema(p.nested)}
        elif p.nested is not None:
            out[p.json] = object_schema(p.nested)
        else:
            assert p.schema is not None
            out[p.json] = copy.deepcopy(p.schema)
    return out


def object_schema(cls: type[Any]) -> Schema:
    """The structural OpenAPI schema of a spec class: its properties in declaration order."""
    required = [p.json for _, p in _props(cls) if p.required]
    return obj_schema(cls.DESCRIPTION, properties(cls), required)


def parse_object(
    cls: type[S], raw: object, where: str, *, others: bool = False, also: Iterable[str] = (), **given: Any
) -> S:
    """An instance of the spec class ``cls`` from a JSON object (``where``: its location, for errors).
    ``others``: the object may hold fields of other parsers too (they are left to them); ``also``: the
    names of such fields, when they are known (any other is refused). ``given``: the values of the class's
    fields that are not the spec's (e.g. an intent's name)."""
    obj = as_object(raw, where)
    props = _props(cls)
    if not others:
        check_fields(obj, where, [*(p.json for _, p in props), *also])
    kw: dict[str, Any] = dict(given)
    for name, p in props:
        value = obj.get(p.json)
        at = f"{where}.{p.json}"
        if value is None:
            if p.missing is not None:
                raise BadInputError(p.missing, at)
            if p.required:
                raise BadInputError(f"missing required field '{p.json}'", where)
            continue
        if p.read is not None:
            kw[name] = p.read(value, at)
        elif p.many is not None:
            assert p.nested is not None
            listed = as_list(value, at)
            most = p.many.get("maxItems")
            if most is not None and len(listed) > most:
                raise BadInputError(f"at most {most} entries, got {len(listed)}", at)
            kw[name] = tuple(parse_object(p.nested, v, f"{at}[{i}]") for i, v in enumerate(listed))
        elif p.nested is not None:
            kw[name] = parse_object(p.nested, value, at)
        else:
            assert p.schema is not None
            kw[name] = check_value(p.schema, value, at, p.says)
    return cls(**kw)


def to_json(obj: Any) -> dict[str, Any]:
    """An instance of a spec class as the JSON object its schema describes (what ``parse_object`` reads
    back): JSON names, nested objects and arrays written out; absent fields (None, or an empty list of
    ``items`` or ``custom`` entries, their default) left out."""
    out: dict[str, Any] = {}
    for name, p in _props(type(obj)):
        value = getattr(obj, name)
        if value is None or (value == () and (p.many is not None or p.read is not None or p.omit_empty)):
            continue
        if p.write is not None:
            out[p.json] = p.write(value)
        elif p.many is not None:
            out[p.json] = [to_json(v) for v in value]
        elif p.nested is not None:
            out[p.json] = to_json(value)
        elif p.read is not None:
            out[p.json] = value
        else:
            assert p.schema is not None
            out[p.json] = _leaf_json(p.schema, value)
    return out


def _leaf_json(schema: Schema, value: Any) -> Any:
    if schema["type"] == "object":  # a map of scalars, kept as (key, value) pairs
        return dict(value)
    if schema["type"] == "array":
        return list(value)
    return value


def check_value(schema: Schema, value: object, where: str, says: Mapping[str, str] | None = None) -> Any:
    """A scalar (or a map of scalars: ``additionalProperties``, or an array of scalars) checked against its
    schema; a map is returned as a tuple of (key, value) pairs in the given order, an array as a tuple.
    ``says`` words the errors of ``minItems``, ``set`` (``{list}``: the array) and ``pattern``
    (``{got}``: the value) instead of the generic messages."""
    kind = schema["type"]
    out: Any
    if kind == "integer":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        out = as_int(value, where, minimum=schema.get("minimum"), maximum=schema.get("maximum", INT64_MAX))
    elif kind == "number":
        out = as_number(value, where, minimum=schema.get("minimum"), maximum=schema.get("maximum"))
    elif kind == "boolean":
        out = as_bool(value, where)
    elif kind == "string":
        out = as_str(value, where, allow_empty=True)
        _check_string(schema, out, where, says)
    elif kind == "object" and isinstance(schema.get("additionalProperties"), Mapping):
        obj = as_object(value, where)
        most = schema.get("maxProperties")
        if most is not None and len(obj) > most:
            raise BadInputError(f"at most {most} entries, got {len(obj)}", where)
        items = schema["additionalProperties"]
        out = tuple((str(k), check_value(items, v, f"{where}[{brief(k, 60)}]")) for k, v in obj.items())
    elif kind == "array":
        out = _check_array(schema, value, where, says or {})
    else:  # pragma: no cover  (a declaration error, caught by the unit tests' full spec)
        raise TypeError(f"{where}: schema type {kind!r} is not supported by spec_fields")
    enum = schema.get("enum")
    if enum is not None and out not in enum:
        raise BadInputError(f"must be one of {', '.join(map(str, enum))}, got {brief(out)}", where)
    return out


def _check_array(schema: Schema, value: object, where: str, says: Mapping[str, str]) -> tuple[Any, ...]:
    given = as_list(value, where)
    fewest, most = schema.get("minItems", 0), schema.get("maxItems")
    if len(given) < fewest:
        raise BadInputError(
            says.get("minItems", f"must hold at least {fewest} entries, got {len(given)}"), where
        )
    if most is not None and len(given) > most:
        raise BadInputError(f"at most {most} entries, got {len(given)}", where)
    out = tuple(check_value(schema["items"], v, f"{where}[{i}]", says) for i, v in enumerate(given))
    if schema.get("x-kubernetes-list-type") == "set" and len(set(out)) != len(out):
        listed = brief_list(out)
        raise BadInputError(says.get("set", "duplicate entry in {list}").format(list=listed), where)
    return out


def _check_string(schema: Schema, text: str, where: str, says: Mapping[str, str] | None = None) -> None:
    shortest, longest = schema.get("minLength", 0), schema.get("maxLength")
    if len(text) < shortest:
        raise BadInputError(
            "must not be empty" if shortest == 1 else f"shorter than {shortest} characters", where
        )
    if longest is not None and len(text) > longest:
        raise BadInputError(f"longer than {longest} characters: {brief(text)}", where)
    pattern = schema.get("pattern")
    if pattern is not None and re.search(_end_of_text(pattern), text, re.ASCII) is None:
        words = (says or {}).get("pattern")  # (a pattern may hold braces: it is never a template)
        shown = words.format(got=brief(text)) if words else f"{brief(text)} does not match {pattern}"
        raise BadInputError(shown, where)


def _end_of_text(pattern: str) -> str:
    """The schema's pattern (the apiserver's RE2: a final ``$`` is the end of the text, ``\\s`` ASCII
    whitespace) for Python's ``re`` (whose ``$`` also matches before a final newline; searched with
    ``re.ASCII``)."""
    return pattern[:-1] + r"\Z" if pattern.endswith("$") and not pattern.endswith(r"\$") else pattern


__all__ = [
    "check_value",
    "child",
    "custom",
    "items",
    "json_names",
    "leaf",
    "object_schema",
    "parse_object",
    "properties",
    "spec_of",
    "to_json",
]
