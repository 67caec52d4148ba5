"""The flags of the pure planner's CLI commands: ``plan``, ``evaluate``, ``report``, ``place`` (their work is
in ``planning_cmds``, imported only when one of them runs).

Light on purpose: building the parser (every command, ``--help``) imports neither the planner's engines
nor Spark nor pydantic; the defaults the flags show come from the model and ``spark.settings``.
"""

from __future__ import annotations

from typing import Any

from ..model.capacity import DEFAULT_MAX_DISK_SHARE, MAX_DISK_SHARE, MIN_DISK_SHARE
from ..model.cluster_spec import SPARK_K8S_DEFAULTS, LimitsSpec, SparkSpec
from ..model.crd_parts import ENGINES, LAUNCHERS
from ..model.effort import DEFAULT_EFFORT, EFFORTS
from ..model.effort import DESCRIPTION as EFFORT_DESCRIPTION
from ..model.intent_kinds import MAX_NEW_PARTITIONS, MAX_REPLICATION_FACTOR
from ..model.jsonio import INT32_MAX
from ..model.plan import BATCH_MAX_PER_BROKER
from ..spark.settings import EngineSettings
from ._args import int_in, key_value, lazy, number_in

KAFKA_MS_PER_MOVE = (0.5, 1000.0)  # `report --kafka-ms-per-move`: execution.copy_model.PER_MOVE_RANGE in ms

MAX_SHARDS = 100_000


def _escaped(text: str) -> str:
    """``text`` in an argparse help string, which is %-formatted (``%(default)s``): each % doubled."""
    return text.replace("%", "%%")


def register(sub: Any) -> None:
    """Add this group's sub-commands to the top-level parser's subparsers."""
    engine, spark = EngineSettings(), SPARK_K8S_DEFAULTS  # the defaults the flags show
    p = sub.add_parser("plan", help="compute the moves that reach the declared placement")
    p.add_argument(
        "--snapshot", required=True, help="cluster snapshot JSON (from `snapshot`) or a Parquet snapshot dir"
    )
    p.add_argument("--intents", required=True, help="YAML stream of {kind, spec} documents")
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default=engine.engine,
        help=f"local: in-process; spark: PySpark (default master {engine.master}); auto: spark for large "
        "snapshots (default %(default)s)",
    )
    p.add_argument("--spark-master", default=engine.master, help="Spark master for --engine spark")
    p.add_argument(
        "--spark-conf",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for --engine spark, or for the driver of --engine spark-k8s with the Pod "
        "launcher (repeatable), e.g. spark.executor.memory=4g",
    )
    p.add_argument(
        "--spark-executor-wait",
        type=int_in(1, 86_400),
        default=int(engine.executor_wait_s),
        metavar="SECONDS",
        help="on a Spark cluster, give up when no executor is registered for this long (default %(default)s)",
    )
    p.add_argument(
        "--shards",
        type=int_in(0, MAX_SHARDS),
        default=engine.shards,
        help="Spark shards (default 0: 1 for up to 1000 partitions to repair, else 4 per core)",
    )
    k = p.add_argument_group("--engine spark-k8s (the Spark job as pods on Kubernetes)")
    k.add_argument(
        "--spark-launcher",
        choices=LAUNCHERS,
        default=spark.launcher,
        help="Pod: a driver pod, Spark starts executor pods; SparkApplication: the Kubeflow "
        "spark-operator runs the job (default %(default)s)",
    )
    k.add_argument(
        "--spark-executors",
        type=int_in(1, 1000),
        default=spark.executor_instances,
        help="executor pods (launcher Pod; default %(default)s)",
    )
    k.add_argument(
        "--spark-memory",
        default=spark.memory,
        help="memory of the driver and each executor (default %(default)s)",
    )
    k.add_argument(
        "--spark-timeout",
        type=int_in(1, 86_400),
        default=SparkSpec().timeout_seconds,
        metavar="SECONDS",
        help="delete the run and fail after this long (default %(default)s)",
    )
    k.add_argument("--spark-service-account", default=spark.service_account, help="the driver's")
    k.add_argument("--kubeconfig", help="default: $KUBECONFIG or ~/.kube/config")
    k.add_argument("--spark-namespace", default="default")
    k.add_argument("--spark-image", help="image with kafka-placement and its Spark job")
    k.add_argument("--exchange-claim", help="PVC mounted by the Spark pods, shared with this process")
    k.add_argument("--exchange-dir", help="where that volume is mounted here")
    k.add_argument(
        "--exchange-mount", default=spark.exchange_mount, help="where it is mounted in the Spark pods"
    )
    p.add_argument(
        "-o",
        "--output",
        default="-",
        help="plan JSON (Kafka's reassignment format); - = stdout; a name ending in .parquet writes Parquet",
    )
    p.add_argument("--summary", help="write the plan's metrics, lower bound and batches here")
    p.add_argument(
        "--max-moves-per-broker",
        type=int_in(1, INT32_MAX),
        default=BATCH_MAX_PER_BROKER,
        help="per-broker limit of each batch (at least 1)",
    )
    p.add_argument(
        "--reactive-cordon",
        action="store_true",
        help="Kafka < 4.3 cannot cordon dirs: also move empty replicas that appeared on cordoned dirs",
    )
    p.add_argument(
        "--max-disk-share",
        type=number_in(MIN_DISK_SHARE, MAX_DISK_SHARE),
        metavar="SHARE",
        help=(
            f"no log dir is planned above this share of its volume ({MIN_DISK_SHARE:g}-{MAX_DISK_SHARE:g}; "
            f"default: the intents' capacity.maxDiskShare, else {DEFAULT_MAX_DISK_SHARE:g}); a plan that "
            "cannot keep every dir under it is refused (exit 3)"
        ),
    )
    p.add_argument(
        "--effort",
        choices=EFFORTS,
        default=DEFAULT_EFFORT,
        help=f"{_escaped(EFFORT_DESCRIPTION)} Default: %(default)s.",
    )
    p.add_argument(
        "--max-memory",
        metavar="SIZE",
        help="the most memory the local engine may take (e.g. 3Gi, 2500Mi; default: the container's "
        "memory limit, else none): a snapshot whose plan would need more is refused before it is read "
        "or planned (exit 3), never killed for lack of memory mid-plan",
    )
    p.set_defaults(func=lazy("planning_cmds", "cmd_plan"))

    e = sub.add_parser("evaluate", help="quality metrics of a plan against a snapshot, as JSON")
    e.add_argument("--snapshot", required=True)
    e.add_argument("--plan", required=True)
    e.add_argument("--intents", help="also measure lower bound and violations against these intents")
    e.add_argument("-o", "--output", default="-")
    e.set_defaults(func=lazy("planning_cmds", "cmd_evaluate"))

    r = sub.add_parser("report", help="one self-contained HTML page of a plan: charts and tables")
    r.add_argument("--snapshot", required=True)
    r.add_argument("--plan", required=True)
    r.add_argument("--intents", help="also show the lower bound, balance threshold and violations")
    r.add_argument(
        "--max-moves-per-broker",
        type=int_in(1, INT32_MAX),
        default=BATCH_MAX_PER_BROKER,
        help="per-broker limit of each batch, as given to `plan` (default %(default)s)",
    )
    r.add_argument(
        "--throttle",
        type=int_in(1, 2**63 - 1),
        metavar="BYTES/s",
        help="the throttle `execute` would be given: the page's estimated duration uses it (default: "
        "none, an assumed rate)",
    )
    r.add_argument(
        "--hold-achieved-rate",
        action="store_true",
        help="as `execute --hold-achieved-rate`: brokers achieve the throttle (else the estimate counts "
        "what they achieve below it)",
    )
    in_flight = LimitsSpec()  # execute's defaults (execution.record_doc.Limits): one source
    r.add_argument(
        "--execute-max-moves-per-broker",
        type=int_in(1, 100_000),
        default=in_flight.max_moves_per_broker,
        metavar="N",
        help="as `execute --max-moves-per-broker`: moves in flight per broker, for the estimate (default "
        "%(default)s)",
    )
    r.add_argument(
        "--execute-max-moves",
        type=int_in(1, 1_000_000),
        default=in_flight.max_moves_in_flight,
        metavar="N",
        help="as `execute --max-moves`: moves in flight in the cluster, for the estimate "
        "(default %(default)s)",
    )
    r.add_argument(
        "--execute-max-bytes-per-broker",
        type=int_in(1, 2**63 - 1),
        metavar="BYTES",
        help="as `execute --max-bytes-per-broker`: bytes in flight per broker, for the estimate (default: "
        "execute's)",
    )
    r.add_argument(
        "--kafka-ms-per-move",
        type=number_in(*KAFKA_MS_PER_MOVE),
        metavar="MS",
        help="Kafka's own time per move, for the estimate (the controller's records, the brokers creating, "
        "catching up and deleting logs: about one move at a time across the cluster, what many small moves "
        "cost beyond their bytes); the operator measures it on each cluster into the KafkaCluster's "
        "status.kafkaWork.microsecondsPerMove (default: 8 ms, assumed)",
    )
    r.add_argument("-o", "--output", required=True, help="the HTML file; - = stdout")
    r.set_defaults(func=lazy("planning_cmds", "cmd_report"))

    n = sub.add_parser("place", help="assign new partitions honouring cordons, decommissions and policies")
    n.add_argument("--snapshot", required=True)
    n.add_argument("--intents", help="intents YAML (optional)")
    n.add_argument("--topic", required=True)
    n.add_argument(
        "--partitions",
        type=int_in(1, MAX_NEW_PARTITIONS),
        required=True,
        help=f"how many new partitions (1 to {MAX_NEW_PARTITIONS})",
    )
    n.add_argument(
        "--replication-factor",
        type=int_in(1, MAX_REPLICATION_FACTOR),
        help="default: the topic's policy's RF",
    )
    n.add_argument(
        "--start-partition",
        type=int_in(0, INT32_MAX),
        default=0,
        help="number of the first new partition",
    )
    n.add_argument("-o", "--output", default="-")
    n.set_defaults(func=lazy("planning_cmds", "cmd_place"))
