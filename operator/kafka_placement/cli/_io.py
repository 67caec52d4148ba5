"""File helpers of the CLI: read inputs and write outputs with clear errors (``-`` = stdin/stdout)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..model.errors import BadInputError, PlacementError


def read_text(path: str, what: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInputError(f"{what} file not found", path) from None
    except (OSError, UnicodeDecodeError) as e:
        raise BadInputError(f"cannot read {what}: {e}", path) from None


def write_json(path: str | None, doc: Any) -> None:
    """Write JSON atomically (temp file + rename), or to stdout for ``-`` / None."""
    text = json.dumps(doc, indent=1) + "\n"
    if path in (None, "-"):
        sys.stdout.write(text)
        return
    target = Path(str(path))
    try:
        fd, tmp = tempfile.mkstemp(
            dir=target.parent if str(target.parent) else ".", prefix=f".{target.name}."
        )
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)
    except OSError as e:
        raise PlacementError(f"cannot write {path}: {e}") from None
