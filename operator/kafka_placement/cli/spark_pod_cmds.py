"""``kafka-placement executor`` / ``driver``: the image's entry when Spark on Kubernetes starts a pod.

Not for people: Spark's Kubernetes scheduler runs the image's entry point with the argument
``executor`` (an executor pod) or ``driver ...`` (a cluster-mode driver pod, e.g. a SparkApplication's);
these commands replace this process with the JVM or ``spark-submit`` that ``spark.pod_entry`` builds
from the pod's environment (imported when the command runs, not when the parser is built).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any


def register(sub: Any) -> None:
    """Add this group's sub-commands to the top-level parser's subparsers."""
    e = sub.add_parser(
        "executor",
        help="(started by Spark on Kubernetes) run a Spark executor from the pod's environment",
        description="The entry of a Spark executor pod: exec the executor backend with the settings "
        "Spark put in the pod's environment.",
    )
    e.set_defaults(func=_executor)
    d = sub.add_parser(
        "driver",
        help="(started by Spark on Kubernetes) run a cluster-mode Spark driver",
        description="The entry of a cluster-mode driver pod: exec spark-submit in client mode on the "
        "pod's address, with the arguments Spark passed.",
        prefix_chars="+",  # every argument, --properties-file too, is spark-submit's
        add_help=False,
    )
    d.add_argument("spark_args", nargs=argparse.REMAINDER, help="spark-submit's arguments")
    d.set_defaults(func=_driver)


def _exec(command: list[str]) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvp(command[0], command)
    return 1  # pragma: no cover - execvp does not return


def _executor(args: argparse.Namespace) -> int:
    from ..spark.pod_entry import executor_command, spark_home

    return _exec(executor_command(os.environ, spark_home()))


def _driver(args: argparse.Namespace) -> int:
    from ..spark.pod_entry import driver_command, spark_home

    return _exec(driver_command(os.environ, spark_home(), args.spark_args))
