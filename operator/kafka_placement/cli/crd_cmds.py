"""``kafka-placement crds``: write the generated CustomResourceDefinitions (one YAML file per CRD).

The schemas come from ``model/crd_schema.py``, the one source; ``crds/`` and the chart's ``crds/``
hold this command's output byte for byte (a unit test fails on drift).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..model.crd_schema import rendered_crds
from ..model.errors import PlacementError


def register(sub: Any) -> None:
    """Add this group's sub-commands to the top-level parser's subparsers."""
    p = sub.add_parser(
        "crds",
        help="write the CustomResourceDefinitions as YAML (one file per CRD)",
        description="Render the four CRDs of kafkaplacement.io from the spec models into DIR, one file "
        "per CRD (<group>_<plural>.yaml), or all of them to stdout with -o -.",
    )
    p.add_argument("-o", "--output", default="crds", metavar="DIR", help="output directory (- = stdout)")
    p.set_defaults(func=_crds)


def _crds(args: argparse.Namespace) -> int:
    files = rendered_crds()
    if args.output == "-":
        sys.stdout.write("".join(files.values()))
        return 0
    out = Path(args.output)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (out / name).write_text(text, encoding="utf-8")
    except OSError as e:
        raise PlacementError(f"cannot write CRDs: {e}") from None
    for name in files:
        print(out / name)
    return 0
