"""Strict readers for JSON-like documents: typed field access that reports the exact location.

Every accessor raises ``BadInputError`` naming the JSON path (``partitions[3].replicas[1]``) and what
was expected, so a malformed snapshot, plan or intent never surfaces as a ``KeyError`` traceback.
Numbers are checked where they are read: finite, and integers within a signed 64-bit range unless a
narrower one (Kafka's int32 broker ids and partition numbers) is asked for. Every value a message
echoes goes through ``brief`` (bounded length and depth), so hostile input cannot blow up stderr.
"""

from __future__ import annotations

import functools
import math
import re
import reprlib
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

from .errors import BadInputError

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
ECHO_LIMIT = 80
TOPIC_MAX_LENGTH = 249  # Kafka's limit (Topic.MAX_NAME_LENGTH)
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")

_repr = reprlib.Repr()
_repr.maxlevel = 2
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 6
_repr.maxstring = _repr.maxother = _repr.maxlong = ECHO_LIMIT


def brief(value: object, limit: int = ECHO_LIMIT) -> str:
    """A bounded ``repr`` of an input value for messages: at most ``limit`` characters, shallow.

    The one helper every message that echoes user input uses (strings are quoted like ``repr``). A string
    that fits in ``limit`` is shown whole (a file path asked for with a larger limit was cut in the
    middle at ``ECHO_LIMIT`` before)."""
    try:
        text = repr(value) if isinstance(value, str) and len(value) <= limit else _repr.repr(value)
    except (RecursionError, MemoryError, ValueError):  # ValueError: int too large to convert
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def clip(text: str, limit: int = 200) -> str:
    """``text`` (already a message part, e.g. a parser's problem) cut to at most ``limit`` characters."""
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def brief_list(values: Iterable[object], limit: int = 200) -> str:
    """A bounded rendering of a list of known-small values (ids, paths) for messages."""
    return brief(list(values), limit)


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


def _field_name(key: object) -> str:
    return key if isinstance(key, str) and len(key) <= 40 and key.isprintable() else brief(key, 40)


def check_fields(obj: Mapping[str, Any], where: str, allowed: Iterable[str]) -> None:
    """Reject unknown fields (typos must not be silently ignored). ``allowed`` a frozenset: not copied
    (a million partitions are checked against one)."""
    allowed_set = allowed if isinstance(allowed, frozenset) else frozenset(allowed)
    if obj.keys() <= allowed_set:
        return
    unknown = sorted(_field_name(k) for k in obj if k not in allowed_set)
    if unknown:
        shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise BadInputError(f"unknown field(s) {shown}; allowed: {', '.join(sorted(allowed_set))}", where)


def require(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise BadInputError(f"missing required field '{key}'", where)
    return obj[key]


def as_int(value: object, where: str, *, minimum: int | None = None, maximum: int = INT64_MAX) -> int:
    """An integer within ``minimum..maximum`` (default: any signed 64-bit value)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInputError(f"expected an integer, got {type_name(value)} {brief(value)}", where)
    low = INT64_MIN if minimum is None else minimum
    if value < low:
        raise BadInputError(f"must be >= {low}, got {brief(value)}", where)
    if value > maximum:
        raise BadInputError(f"must be <= {maximum}, got {brief(value)}", where)
    return value


def as_int32(value: object, where: str) -> int:
    """A non-negative Kafka int32 (broker id, partition number)."""
    return as_int(value, where, minimum=0, maximum=INT32_MAX)


def as_number(
    value: object, where: str, *, minimum: float | None = None, maximum: float | None = None
) -> float:
    """A finite number (NaN and infinities are refused) within the given bounds."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadInputError(f"expected a number, got {type_name(value)} {brief(value)}", where)
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise BadInputError(f"must be a finite number, got {brief(value)}", where)
    if minimum is not None and number < minimum:
        raise BadInputError(f"must be >= {minimum}, got {brief(value)}", where)
    if maximum is not None and number > maximum:
        raise BadInputError(f"must be <= {maximum}, got {brief(value)}", where)
    return number


def as_str(value: object, where: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise BadInputError(f"expected a string, got {type_name(value)} {brief(value)}", where)
    if not allow_empty and not value:
        raise BadInputError("must not be empty", where)
    return value


def as_bool(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise BadInputError(f"expected true or false, got {type_name(value)} {brief(value)}", where)
    return value


def as_list(value: object, where: str) -> Sequence[Any]:
    if not isinstance(value, list | tuple):
        raise BadInputError(f"expected an array, got {type_name(value)}", where)
    return value


def check_unique(
    keys: Iterable[Hashable], message: Callable[[Any], str], where: Callable[[int], str]
) -> None:
    """BadInputError at the first key seen before: ``message(key)`` at ``where(its index)``."""
    seen: set[Hashable] = set()
    for i, key in enumerate(keys):
        if key in seen:
            raise BadInputError(message(key), where(i))
        seen.add(key)


def as_int_list(
    value: object, where: str, *, minimum: int | None = None, maximum: int = INT64_MAX
) -> tuple[int, ...]:
    items = as_list(value, where)
    low = INT64_MIN if minimum is None else minimum
    if all(type(v) is int and low <= v <= maximum for v in items):
        return tuple(items)  # (what as_int returns for each; the path below names the item at fault)
    return tuple(as_int(v, f"{where}[{i}]", minimum=minimum, maximum=maximum) for i, v in enumerate(items))


def as_int32_list(value: object, where: str) -> tuple[int, ...]:
    """Non-negative Kafka int32s (broker ids)."""
    return as_int_list(value, where, minimum=0, maximum=INT32_MAX)


def as_replicas(value: object, where: str) -> tuple[int, ...]:
    """A partition's replica list: broker ids (``as_int32_list``), at least one, none twice."""
    replicas = as_int32_list(value, where)
    if not replicas:
        raise BadInputError("a partition needs at least one replica", where)
    if len(set(replicas)) != len(replicas):
        raise BadInputError(f"duplicate replica in {brief_list(replicas)}", where)
    return replicas


@functools.lru_cache(maxsize=4096)
def _legal_topic(name: str) -> bool:
    return name not in (".", "..") and _TOPIC_NAME.fullmatch(name) is not None


def legal_topic(value: object) -> bool:
    """``as_topic`` accepts ``value``."""
    return type(value) is str and 0 < len(value) <= TOPIC_MAX_LENGTH and _legal_topic(value)


def as_topic(value: object, where: str) -> str:
    """A topic name Kafka accepts: 1-249 characters of ``a-z A-Z 0-9 . _ -``, not ``.`` or ``..``."""
    name = as_str(value, where)
    if len(name) > TOPIC_MAX_LENGTH or not _legal_topic(name):
        raise BadInputError(
            f"{brief(name)} is not a legal Kafka topic name (1-{TOPIC_MAX_LENGTH} characters of "
            "a-z A-Z 0-9 . _ -, not '.' or '..')",
            where,
        )
    return name
