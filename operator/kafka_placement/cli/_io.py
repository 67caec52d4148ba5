"""File helpers of the CLI: read inputs and write outputs with clear errors (``-`` = stdin/stdout)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..model.errors import BadInputError, PlacementError
from ..model.plan import Plan
from ..model.snapshot import ClusterSnapshot


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


def read_snapshot_arg(path: str) -> ClusterSnapshot:
    """A snapshot from a JSON file (``-`` = stdin) or a Parquet snapshot directory."""
    if path != "-" and Path(path).is_dir():
        from ..spark.io import read_snapshot

        return read_snapshot(Path(path))
    return ClusterSnapshot.loads(read_text(path, "snapshot"), source=path)


def read_plan(path: str) -> Plan:
    """A plan from a JSON file (``-`` = stdin) or a ``.parquet`` file."""
    from ..spark.io import is_parquet_plan, read_plan_parquet

    if is_parquet_plan(path):
        return read_plan_parquet(Path(path))
    return Plan.loads(read_text(path, "plan"), source=path)


def write_plan(path: str | None, plan: Plan) -> None:
    """A plan as JSON (atomically; ``-``/None = stdout), or as Parquet when ``path`` ends in .parquet."""
    from ..spark.io import is_parquet_plan, write_plan_parquet

    if path is not None and is_parquet_plan(path):
        write_plan_parquet(plan, Path(path))
    else:
        write_json(path, plan.to_json())
