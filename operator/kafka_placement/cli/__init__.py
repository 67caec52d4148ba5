"""The ``kafka-placement`` command line: one dispatcher, one module per command group.

Exit codes (docs/architecture.md, "The CLI"): 0 ok, 2 bad input (with a precise message), 3 infeasible
(with the reason), 1 any other failure. User errors never print a traceback; ``--debug`` shows one for
unexpected failures. Every message is bounded (``MESSAGE_LIMIT``): values echoed from the input are
already cut where they are quoted, and the dispatcher cuts what is left as a last resort.

Start-up: building the parser imports only the flags (``planning_args``, ``kafka_args``, ``operator_args``,
and the two small groups ``crd_cmds``, ``spark_pod_cmds``) and the light model modules their defaults come
from; a command imports its implementation (the planner, the executor, the Kafka gateway, Spark...) when
it runs, so ``--help`` or a usage error costs a fraction of a command (tests/unit/cli/test_cli_startup.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .. import __version__
from ..model.errors import PlacementError
from ..model.jsonio import clip
from . import crd_cmds, kafka_args, operator_args, planning_args, spark_pod_cmds
from ._args import BoundedParser

MESSAGE_LIMIT = 3000

_GROUPS = (planning_args, kafka_args, crd_cmds, operator_args, spark_pod_cmds)


def build_parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = BoundedParser(
        prog="kafka-placement",
        description="Plan and execute Kafka replica placement: decommissions, cordoned log dirs, "
        "multi-level rack policies.",
    )
    parser.add_argument("--version", action="version", version=f"kafka-placement {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of unexpected failures")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for group in _GROUPS:
        group.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        code: int = args.func(args)
        return code
    except PlacementError as e:
        print(f"kafka-placement {args.command}: error: {clip(e.message, MESSAGE_LIMIT)}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print(f"kafka-placement {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        if args.debug:
            raise
        print(
            f"kafka-placement {args.command}: unexpected failure: {type(e).__name__}: {clip(str(e))} "
            "(rerun with --debug for a traceback)",
            file=sys.stderr,
        )
        return 1


def run() -> None:
    sys.exit(main())
