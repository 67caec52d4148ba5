"""``kafka-placement crds``: write the generated CustomResourceDefinitions (one YAML file per CRD).

The schemas come from ``model/crd_schema.py``, the one source; ``crds/`` and the chart's ``crds/``
hold this command's output byte for byte (a unit test fails on drift). The files are written through
the CLI's atomic writer: all of them or none (a directory this command created is removed again). The
schemas and the writer are imported when the command runs, not when the parser is built.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


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
    from ..model.crd_schema import rendered_crds
    from ._io import Output, prepare_dir, write_outputs

    files = rendered_crds()
    if args.output == "-":
        sys.stdout.write("".join(files.values()))
        return 0
    out, created = prepare_dir("-o", args.output)
    try:
        write_outputs([Output("-o", str(out / name), text=text) for name, text in files.items()])
    except BaseException:
        if created:
            out.rmdir()
        raise
    for name in files:
        print(out / name)
    return 0
