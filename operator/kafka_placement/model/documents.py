"""Parsing JSON text into plain documents, strictly, with errors that name the file (YAML:
``model.yaml_documents``, kept apart so that the planning core imports no third-party package and Spark
executors whose Python has only pyspark, pandas and pyarrow can run it).

Both parsers refuse what their defaults silently accept: duplicate keys (last-wins would hide a
typo), and in JSON the non-standard ``NaN``/``Infinity`` constants, refused at their JSON path
(``snapshot.json.partitions[14].sizeBytes``) like every other bad value. Whatever a hostile document makes
the parser raise (too deep nesting, an integer with thousands of digits, memory exhaustion) becomes a
``BadInputError`` naming ``source`` (exit 2), never an unexpected failure. ``read_input_text`` reads
an input file the same way everywhere: regular files only (a FIFO or device would block or never
end), UTF-8, every failure naming the file.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from .errors import BadInputError
from .jsonio import brief, clip


def read_input_text(path: str | Path, what: str) -> str:
    """The UTF-8 text of the input file ``path`` (``what``: snapshot, plan, intents...)."""
    source = str(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; regular files ignore the flag
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise BadInputError(f"{what} is a directory, not a file", source)
            if not stat.S_ISREG(mode):
                raise BadInputError(f"{what} is not a regular file", source)
            data = f.read()
    except FileNotFoundError:
        raise BadInputError(f"{what} file not found", source) from None
    except MemoryError:
        raise BadInputError(f"{what} is too large to read", source) from None
    except OSError as e:
        raise BadInputError(f"cannot read {what}: {e.strerror or e}", source) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInputError(f"{what} is not UTF-8 text (byte {e.start})", source) from None


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


class _DuplicateKey(ValueError):
    def __init__(self, key: object) -> None:
        super().__init__(key)
        self.key = key


class _NonFinite:
    """Stands in for a ``NaN``/``Infinity``/``-Infinity`` constant while parsing, so that the document's
    first one can be found, and named by its path, once the parse is done."""

    def __init__(self, constant: str) -> None:
        self.constant = constant


class _Constants:
    """``parse_constant`` of one parse: a marker per constant, and whether any was met."""

    def __init__(self) -> None:
        self.met = False

    def __call__(self, constant: str) -> _NonFinite:
        self.met = True
        return _NonFinite(constant)


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,39}")
PATH_LIMIT = 300  # characters of a JSON path shown in a message


def _step(key: str | int) -> str:
    """One step of a JSON path: ``[3]``, ``.sizeBytes``, or ``['odd key']`` (bounded)."""
    if isinstance(key, int):
        return f"[{key}]"
    return f".{key}" if _PLAIN_KEY.fullmatch(key) else f"[{brief(key, 40)}]"


def _first_non_finite(doc: Any) -> tuple[str, str] | None:
    """(JSON path, constant) of the document's first ``_NonFinite``, in document order (iterative: the
    document may be nested as deeply as the parser allows)."""
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, _NonFinite):
            return path, node.constant
        if isinstance(node, dict):
            items: list[tuple[str | int, Any]] = list(node.items())
        elif isinstance(node, list):
            items = list(enumerate(node))
        else:
            continue
        stack.extend((path + _step(k), v) for k, v in reversed(items))
    return None


def load_json(text: str, source: str) -> Any:
    """One JSON document; duplicate keys, NaN/Infinity, too deep nesting are bad input of ``source``."""
    constants = _Constants()
    try:
        doc = json.loads(text, object_pairs_hook=_json_pairs, parse_constant=constants)
    except json.JSONDecodeError as e:
        raise BadInputError(f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}", source) from None
    except _DuplicateKey as e:
        raise BadInputError(f"not valid JSON: duplicate key {brief(e.key)}", source) from None
    except (RecursionError, MemoryError, ValueError) as e:
        raise parser_limit("JSON", e, source) from None
    found = _first_non_finite(doc) if constants.met else None
    if found is not None:
        path, constant = found
        if len(path) > PATH_LIMIT:  # deep nesting: its start and its end say where
            path = f"{path[: PATH_LIMIT // 2]}...{path[-(PATH_LIMIT // 2) :]}"
        raise BadInputError(f"not valid JSON: {constant} is not a number JSON allows", source + path)
    return doc


def parser_limit(kind: str, e: RecursionError | MemoryError | ValueError, source: str) -> BadInputError:
    """What every parser raises at its limits, as bad input of ``source``: too deep nesting, memory
    exhaustion, or a ValueError such as an integer literal longer than Python's digit limit."""
    if isinstance(e, RecursionError):
        why = "nested too deeply"
    elif isinstance(e, MemoryError):
        why = "too large to parse"
    else:
        why = clip(str(e), 120)
    return BadInputError(f"not valid {kind}: {why}", source)
