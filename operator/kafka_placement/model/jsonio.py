"""Strict readers for JSON-like documents: typed field access that reports the exact location.

Every accessor raises ``BadInputError`` naming the JSON path (``partitions[3].replicas[1]``) and what
was expected, so a malformed snapshot, plan or intent never surfaces as a ``KeyError`` traceback.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .errors import BadInputError


def type_name(value: object) -> str:
    """A user-facing name for a JSON value's type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def as_object(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise BadInputError(f"expected an object, got {type_name(value)}", where)
    return value


def check_fields(obj: Mapping[str, Any], where: str, allowed: Iterable[str]) -> None:
    """Reject unknown fields (typos must not be silently ignored)."""
    allowed_set = set(allowed)
    unknown = sorted(str(k) for k in obj if k not in allowed_set)
    if unknown:
        raise BadInputError(
            f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed_set))}", where
        )


def require(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise BadInputError(f"missing required field '{key}'", where)
    return obj[key]


def as_int(value: object, where: str, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInputError(f"expected an integer, got {type_name(value)} {value!r}", where)
    if minimum is not None and value < minimum:
        raise BadInputError(f"must be >= {minimum}, got {value}", where)
    return value


def as_number(value: object, where: str, *, minimum: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadInputError(f"expected a number, got {type_name(value)} {value!r}", where)
    if minimum is not None and value < minimum:
        raise BadInputError(f"must be >= {minimum}, got {value}", where)
    return float(value)


def as_str(value: object, where: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise BadInputError(f"expected a string, got {type_name(value)} {value!r}", where)
    if not allow_empty and not value:
        raise BadInputError("must not be empty", where)
    return value


def as_bool(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise BadInputError(f"expected true or false, got {type_name(value)} {value!r}", where)
    return value


def as_list(value: object, where: str) -> Sequence[Any]:
    if not isinstance(value, list | tuple):
        raise BadInputError(f"expected an array, got {type_name(value)}", where)
    return value


def as_int_list(value: object, where: str, *, minimum: int | None = None) -> tuple[int, ...]:
    return tuple(as_int(v, f"{where}[{i}]", minimum=minimum) for i, v in enumerate(as_list(value, where)))


def as_str_list(value: object, where: str) -> tuple[str, ...]:
    return tuple(as_str(v, f"{where}[{i}]") for i, v in enumerate(as_list(value, where)))
