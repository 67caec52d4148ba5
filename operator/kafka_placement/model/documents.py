"""Parsing JSON text into plain documents, strictly, with errors that name the file (YAML:
``model.yaml_documents``, kept apart so that the planning core imports no third-party package and Spark
executors whose Python has only pyspark, pandas and pyarrow can run it).

Both parsers refuse what their defaults silently accept: duplicate keys (last-wins would hide a
typo), and in JSON the non-standard ``NaN``/``Infinity`` constants. Whatever a hostile document makes
the parser raise (too deep nesting, an integer with thousands of digits, memory exhaustion) becomes a
``BadInputError`` naming ``source`` (exit 2), never an unexpected failure. ``read_input_text`` reads
an input file the same way everywhere: regular files only (a FIFO or device would block or never
end), UTF-8, every failure naming the file.
"""

from __future__ import annotations

import json
import os
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


class _NonFinite(ValueError):
    def __init__(self, constant: str) -> None:
        super().__init__(constant)
        self.constant = constant


def _refuse_constant(constant: str) -> Any:
    raise _NonFinite(constant)


def load_json(text: str, source: str) -> Any:
    """One JSON document; duplicate keys, NaN/Infinity, too deep nesting are bad input of ``source``."""
    try:
        return json.loads(text, object_pairs_hook=_json_pairs, parse_constant=_refuse_constant)
    except json.JSONDecodeError as e:
        raise BadInputError(f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}", source) from None
    except _DuplicateKey as e:
        raise BadInputError(f"not valid JSON: duplicate key {brief(e.key)}", source) from None
    except _NonFinite as e:
        raise BadInputError(f"not valid JSON: {e.constant} is not a number JSON allows", source) from None
    except (RecursionError, MemoryError, ValueError) as e:
        raise parser_limit("JSON", e, source) from None


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
