# ruff: noqa: RUF009  (child/custom return dataclasses.field specifiers, like field(): nothing is shared)
"""The KafkaCluster's spec, typed: connection (TLS, SASL), throttle, executor limits, planner, self-healing.

The one source of both the parser and the CRD schema of ``spec`` (``ClusterSpec.schema()``, used by
``crd_schema.py``): every field is declared once with its JSON name, its schema and its default
(``spec_fields.py``). The operator parses a KafkaCluster's spec once per reconcile
(``ClusterSpec.of(body)``) and hands the typed value down: connection settings, executor limits and
planner settings are read from it, never from the raw dict.

Absent objects mean what they meant before: no ``tls`` is plaintext, no ``sasl`` no authentication, no
``planner`` the operator's Helm default engine; an absent ``limits`` or ``planner.spark`` is one with
every field at its default. An invalid ``selfHealing`` does not make the spec invalid: it is kept as an
``InvalidPart`` and only self-healing stops (the SelfHealing condition says why), as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .capacity import DEFAULT_MAX_DISK_SHARE, CapacitySpec
from .crd_parts import (
    BOOTSTRAP_PATTERN,
    ENGINES,
    LAUNCHERS,
    ON_CONFIG_CHANGE,
    SASL_MECHANISMS,
    SPARK_MEMORY_PATTERN,
    Launcher,
    OnConfigChange,
    Schema,
    bool_schema,
    int_schema,
    name_schema,
    str_schema,
)
from .effort import DEFAULT_EFFORT, EFFORTS, Effort
from .effort import DESCRIPTION as EFFORT_DESCRIPTION
from .errors import BadInputError
from .self_healing import SelfHealingSpec
from .spec_fields import child, custom, leaf, object_schema, parse_object, spec_of
from .windows import ExecutionSpec

SECRET_NAME = "Name of the Secret in this namespace."
CONNECTION_FIELDS = ("bootstrapServers", "tls", "sasl")  # an error there: the cluster cannot be reached


@dataclass(frozen=True, slots=True)
class InvalidPart:
    """A part of the spec that does not parse, kept rather than raised (``message`` names the field)."""

    message: str


# ---- connection ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CaSecretRef:
    DESCRIPTION: ClassVar[str] = (
        "Secret holding the CA certificate(s) to verify the brokers; absent = system trust."
    )

    name: str = leaf("name", name_schema(SECRET_NAME), required=True)
    key: str = leaf(
        "key", str_schema("Key of the CA bundle (PEM) in the Secret.", minLength=1, default="ca.crt")
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class CertSecretRef:
    DESCRIPTION: ClassVar[str] = "Secret holding a client certificate and key (mutual TLS); optional."

    name: str = leaf("name", name_schema(SECRET_NAME), required=True)
    cert_key: str = leaf(
        "certKey", str_schema("Key of the client certificate (PEM).", minLength=1, default="tls.crt")
    )
    key_key: str = leaf(
        "keyKey", str_schema("Key of the client private key (PEM).", minLength=1, default="tls.key")
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsSpec:
    DESCRIPTION: ClassVar[str] = "TLS to the brokers; absent = plaintext."

    ca_secret_ref: CaSecretRef | None = child("caSecretRef", CaSecretRef)
    cert_secret_ref: CertSecretRef | None = child("certSecretRef", CertSecretRef)


@dataclass(frozen=True, slots=True, kw_only=True)
class SaslSecretRef:
    DESCRIPTION: ClassVar[str] = "Secret holding the SASL username and password."

    name: str = leaf("name", name_schema(SECRET_NAME), required=True)
    username_key: str = leaf(
        "usernameKey", str_schema("Key of the username.", minLength=1, default="username")
    )
    password_key: str = leaf(
        "passwordKey", str_schema("Key of the password.", minLength=1, default="password")
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SaslSpec:
    DESCRIPTION: ClassVar[str] = "SASL authentication; absent = none."

    mechanism: str = leaf(
        "mechanism", str_schema("SASL mechanism.", enum=list(SASL_MECHANISMS)), required=True
    )
    secret_ref: SaslSecretRef = child("secretRef", SaslSecretRef, required=True)


# ---- the executor's limits ---------------------------------------------------------------------------


ASSUMED_UNTHROTTLED_RATE = 100 * 1024 * 1024  # bytes/s a broker is assumed to copy when unthrottled


@dataclass(frozen=True, slots=True, kw_only=True)
class LimitsSpec:
    """``spec.limits``; its defaults are also the executor's (``execution.record.Limits``: the one model the
    executor runs under and its record keeps; ``reconcile/inputs.limits_of`` builds it from this)."""

    DESCRIPTION: ClassVar[str] = (
        "Concurrency limits of the executor: counts and bytes in flight. Thousands of small "
        "partitions move together; large ones a few at a time (a broker with nothing in flight "
        "always takes one move)."
    )

    max_moves_per_broker: int = leaf(
        "maxMovesPerBroker",
        int_schema("Most partition moves in flight involving one broker.", 1, default=1000),
    )
    max_moves_in_flight: int = leaf(
        "maxMovesInFlight", int_schema("Most partition moves in flight in the cluster.", 1, default=1250)
    )
    max_bytes_per_broker: int | None = leaf(
        "maxBytesPerBroker",
        int_schema(
            "Most bytes in flight into (and out of) one broker; absent = the throttle (or "
            "100 MiB/s when unthrottled) times batchSeconds.",
            1,
            int64=True,
        ),
    )
    batch_seconds: int = leaf(
        "batchSeconds",
        int_schema(
            "Target seconds to copy one broker's bytes in flight (derives maxBytesPerBroker).",
            1,
            default=120,
        ),
    )
    on_config_change: OnConfigChange = leaf(
        "onConfigChange",
        str_schema(
            "Throttles or cordons the executor set, changed or removed by another party while "
            "moving: Reapply them (a Warning Event, counted in a metric) or Pause (no new moves "
            "while the change lasts).",
            enum=list(ON_CONFIG_CHANGE),
            default="Reapply",
        ),
    )
    max_reapplies: int = leaf(
        "maxReapplies",
        int_schema(
            "Re-applications allowed within reapplyWindowSeconds; then no new moves and no "
            "re-application until the window has passed (never fights forever).",
            1,
            default=5,
            maximum=1000,
        ),
    )
    reapply_window_seconds: int = leaf(
        "reapplyWindowSeconds",
        int_schema("The window of maxReapplies, in seconds.", 1, default=600, maximum=86400),
    )
    hold_achieved_rate: bool = leaf(
        "holdAchievedRate",
        bool_schema(
            "Hold each broker's achieved replication rate at the throttle: Kafka's brokers replicate "
            "below their configured rate (0.75-0.88 of it measured on the project's rig), so the "
            "executor measures what each broker copies (over 20 s windows) and sets Kafka's rate above "
            "the throttle by the shortfall, at most 1.5 times it; off, Kafka's rate is the throttle.",
            default=False,
        ),
    )


# ---- the planner ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SparkSpec:
    """``spec.planner.spark``: a field without a schema default is None when absent and then takes the
    operator's Helm value (reconcile/planner.py): a schema default would hide it."""

    DESCRIPTION: ClassVar[str] = (
        "Settings of the spark-k8s engine; absent fields take the operator's Helm values "
        "(planner.spark). The exchange volume is the operator Deployment's."
    )

    launcher: Launcher | None = leaf(
        "launcher",
        str_schema(
            "Pod: the operator creates a driver pod and Spark starts its executor pods "
            "(nothing else to install); SparkApplication: the Kubeflow spark-operator "
            "runs the job.",
            enum=list(LAUNCHERS),
        ),
    )
    spark_conf: tuple[tuple[str, str], ...] | None = leaf(
        "sparkConf",
        {
            "type": "object",
            "description": "More Spark settings of the Pod launcher's driver, e.g. "
            "spark.executor.cores or spark.kubernetes.executor.request.cores; they win "
            "over the operator's own and the Helm values' (planner.spark.conf).",
            "maxProperties": 100,
            "additionalProperties": {"type": "string", "maxLength": 1000},
        },
    )
    image: str | None = leaf(
        "image", str_schema("Container image of the Spark driver and executors.", minLength=1)
    )
    service_account: str | None = leaf("serviceAccount", name_schema("Service account of the Spark driver."))
    namespace: str | None = leaf(
        "namespace", name_schema("Namespace the Spark job runs in; absent = this namespace.")
    )
    executor_instances: int | None = leaf(
        "executorInstances", int_schema("Number of Spark executors.", 1, maximum=1000)
    )
    memory: str | None = leaf(
        "memory",
        str_schema(
            'Memory of the driver and of each executor, Spark syntax ("2g", "512m").',
            pattern=SPARK_MEMORY_PATTERN,
        ),
    )
    timeout_seconds: int = leaf(
        "timeoutSeconds",
        int_schema(
            "How long one planning job may take; after that it is deleted and planning fails.",
            60,
            maximum=86400,
            default=1800,
        ),
    )
    replan_seconds: int = leaf(
        "replanSeconds",
        int_schema(
            "How long a job's plan (or failure) is reused while the intents and the "
            "placement are unchanged; after that the next reconcile plans again.",
            10,
            maximum=86400,
            default=600,
        ),
    )


@dataclass(frozen=True, slots=True)
class SparkK8sDefaults:
    """The spark-k8s job's settings that neither ``spec.planner.spark`` nor the operator's Helm values nor
    the CLI's flags give: ``SparkK8sSettings``' defaults, which the CLI's flags show (spark/k8s.py,
    cli/planning_cmds.py). The job's timeout is the CRD's default (``SparkSpec.timeout_seconds``)."""

    launcher: Launcher = "Pod"
    service_account: str = "kafka-placement-spark"
    executor_instances: int = 2
    memory: str = "2g"  # of the driver and of each executor
    exchange_mount: str = "/exchange"  # where the Spark pods mount the exchange volume


SPARK_K8S_DEFAULTS = SparkK8sDefaults()


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannerSpec:
    DESCRIPTION: ClassVar[str] = "Which planner engine runs, how hard it searches, and its Spark settings."

    engine: str = leaf(
        "engine",
        str_schema(
            "local: in the operator process; spark: PySpark local[*] in the operator pod; "
            "spark-k8s: a Spark job on Kubernetes; auto: chosen by cluster size.",
            enum=list(ENGINES),
            default="auto",
        ),
    )
    effort: str = leaf(
        "effort",
        str_schema(EFFORT_DESCRIPTION, enum=list(EFFORTS), default=DEFAULT_EFFORT),
    )
    spark: SparkSpec = child("spark", SparkSpec, absent=True)


# ---- traffic sampling ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TrafficSpec:
    """``spec.traffic``: the operator's periodic traffic sampler (handlers/traffic_daemon.py)."""

    DESCRIPTION: ClassVar[str] = (
        "Traffic sampling: every periodSeconds one look at every partition's offsets and the consumer "
        "groups' commits, folded into bytes in per second and read fan-out over windowSeconds; per-broker "
        "totals in status.traffic, the state in ConfigMap kafka-placement-<cluster>-traffic."
    )
    WINDOW_BELOW_PERIOD: ClassVar[str] = "windowSeconds must be >= periodSeconds"

    enabled: bool = leaf("enabled", bool_schema("Whether the operator samples the traffic.", default=False))
    window_seconds: int = leaf(
        "windowSeconds",
        int_schema(
            "Time constant of the weighted rates (minutes, not hours: a shift of load shows within a "
            "few windows); at least periodSeconds.",
            1,
            maximum=86400,
            default=300,
        ),
    )
    period_seconds: int = leaf(
        "periodSeconds",
        int_schema(
            "Seconds between two looks (each costs a read per partition and per group).",
            1,
            maximum=86400,
            default=60,
        ),
    )

    def check(self, where: str = "spec.traffic") -> None:
        """``BadInputError`` when the window is shorter than the period."""
        if self.window_seconds < self.period_seconds:
            raise BadInputError(
                f"{self.WINDOW_BELOW_PERIOD} (got {self.window_seconds} < {self.period_seconds})",
                f"{where}.windowSeconds",
            )

    @staticmethod
    def schema() -> Schema:
        s = object_schema(TrafficSpec)
        rule = "self.windowSeconds >= self.periodSeconds"
        s["x-kubernetes-validations"] = [{"rule": rule, "message": TrafficSpec.WINDOW_BELOW_PERIOD}]
        return s


# ---- the throttle: static or adaptive ------------------------------------------------------------------

THROTTLE_MODES = ("Static", "Adaptive")
ADAPTIVE = "Adaptive"


@dataclass(frozen=True, slots=True, kw_only=True)
class ThrottleSpec:
    """``spec.throttle``: the replication throttle, static or yielding to client traffic
    (execution/adaptive.py)."""

    DESCRIPTION: ClassVar[str] = (
        "The replication throttle per broker taking part in a move. Static: maxBytesPerSecond (as "
        "throttleBytesPerSecond). Adaptive: it yields to clients: a broker's follower rate is "
        "capacity.networkIn x capacity.maxShare minus the client bytes in that status.traffic measures on "
        "it, its leader rate capacity.networkOut x maxShare minus its measured network out, each clamped "
        "to [minBytesPerSecond, maxBytesPerSecond] and set again when the traffic moves it by more than "
        "10% or onto a bound (at most once per broker per traffic.periodSeconds); without a capacity or a "
        "measured rate a broker gets maxBytesPerSecond, and status.progress.throttleNote says why. "
        "maxBytesPerSecond defaults to throttleBytesPerSecond (one of them is needed; both set, they must "
        "agree)."
    )
    MIN_ABOVE_MAX: ClassVar[str] = "minBytesPerSecond must be <= maxBytesPerSecond"
    MIN_FOR_ADAPTIVE: ClassVar[str] = "minBytesPerSecond is required with mode Adaptive"

    mode: str = leaf(
        "mode",
        str_schema(
            "Static: every broker at maxBytesPerSecond; Adaptive: the rate follows the client traffic "
            "(above).",
            enum=list(THROTTLE_MODES),
        ),
        missing="throttle.mode is required (Static or Adaptive)",
    )
    min_bytes_per_second: int | None = leaf(
        "minBytesPerSecond",
        int_schema(
            "Adaptive: the lowest replication rate set on a broker, bytes per second (not used by Static).",
            1,
            int64=True,
        ),
    )
    max_bytes_per_second: int | None = leaf(
        "maxBytesPerSecond",
        int_schema(
            "The highest replication rate set on a broker, bytes per second (Static: the rate; also what "
            "batches and the estimate are sized with); default throttleBytesPerSecond.",
            1,
            int64=True,
        ),
    )

    @property
    def adaptive(self) -> bool:
        return self.mode == ADAPTIVE

    def check(self, where: str = "spec.throttle") -> None:
        """``BadInputError`` naming the field: Adaptive without a minimum, min above max."""
        low, high = self.min_bytes_per_second, self.max_bytes_per_second
        if self.adaptive and low is None:
            raise BadInputError(self.MIN_FOR_ADAPTIVE, f"{where}.minBytesPerSecond")
        if low is not None and high is not None and low > high:
            raise BadInputError(f"{self.MIN_ABOVE_MAX} (got {low} > {high})", f"{where}.minBytesPerSecond")

    @staticmethod
    def schema() -> Schema:
        s = object_schema(ThrottleSpec)
        s["x-kubernetes-validations"] = [
            {
                "rule": f"self.mode != '{ADAPTIVE}' || has(self.minBytesPerSecond)",
                "message": ThrottleSpec.MIN_FOR_ADAPTIVE,
            },
            {
                "rule": "!has(self.minBytesPerSecond) || !has(self.maxBytesPerSecond) || "
                "self.minBytesPerSecond <= self.maxBytesPerSecond",
                "message": ThrottleSpec.MIN_ABOVE_MAX,
            },
        ]
        return s


def _throttle(raw: object, where: str) -> ThrottleSpec:
    spec = parse_object(ThrottleSpec, raw, where)
    spec.check(where)
    return spec


THROTTLE_NO_MAX = "throttle needs maxBytesPerSecond (or spec.throttleBytesPerSecond)"
THROTTLE_DISAGREE = "throttle.maxBytesPerSecond and throttleBytesPerSecond disagree: set one, or both alike"


def _check_throttle(spec: ClusterSpec, where: str) -> None:
    """The throttle's cross-field rules (the CRD's CEL rules, and min against the maximum it defaults to)."""
    t = spec.throttle
    if t is None:
        return
    static = spec.throttle_bytes_per_second
    if t.max_bytes_per_second is None and static is None:
        raise BadInputError(THROTTLE_NO_MAX, f"{where}.throttle.maxBytesPerSecond")
    if t.max_bytes_per_second is not None and static is not None and t.max_bytes_per_second != static:
        raise BadInputError(
            f"{THROTTLE_DISAGREE} ({t.max_bytes_per_second} != {static})",
            f"{where}.throttle.maxBytesPerSecond",
        )
    top = spec.top_throttle
    if t.min_bytes_per_second is not None and top is not None and t.min_bytes_per_second > top:
        raise BadInputError(
            f"{ThrottleSpec.MIN_ABOVE_MAX} (got {t.min_bytes_per_second} > {top})",
            f"{where}.throttle.minBytesPerSecond",
        )


# ---- the spec ------------------------------------------------------------------------------------------


def _self_healing(raw: object, where: str) -> SelfHealingSpec | InvalidPart:
    try:
        return SelfHealingSpec.parse(raw, where)
    except BadInputError as e:
        return InvalidPart(e.message)


def _traffic(raw: object, where: str) -> TrafficSpec:
    spec = parse_object(TrafficSpec, raw, where)
    spec.check(where)
    return spec


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterSpec:
    """A KafkaCluster's ``spec``."""

    DESCRIPTION: ClassVar[str] = (
        "How to connect to a Kafka cluster, and defaults for the intents that refer to it."
    )

    bootstrap_servers: str = leaf(
        "bootstrapServers",
        str_schema(
            'Bootstrap servers, "host:port,host:port" (Kafka\'s convention).',
            pattern=BOOTSTRAP_PATTERN,
            maxLength=4096,
        ),
        missing='bootstrapServers is required ("host:port,host:port")',
    )
    tls: TlsSpec | None = child("tls", TlsSpec)
    sasl: SaslSpec | None = child("sasl", SaslSpec)
    throttle_bytes_per_second: int | None = leaf(
        "throttleBytesPerSecond",
        int_schema(
            "Default replication throttle in bytes per second for moves; absent = unthrottled.",
            1,
            int64=True,
        ),
    )
    throttle: ThrottleSpec | None = custom("throttle", ThrottleSpec.schema(), _throttle)
    limits: LimitsSpec = child("limits", LimitsSpec, absent=True)
    planner: PlannerSpec | None = child("planner", PlannerSpec)
    self_healing: SelfHealingSpec | InvalidPart | None = custom(
        "selfHealing", SelfHealingSpec.schema(), _self_healing
    )
    traffic: TrafficSpec | None = custom("traffic", TrafficSpec.schema(), _traffic)
    capacity: CapacitySpec | None = child("capacity", CapacitySpec)
    execution: ExecutionSpec | None = child("execution", ExecutionSpec)

    @staticmethod
    def parse(raw: object, where: str = "spec") -> ClusterSpec:
        """The spec; ``BadInputError`` naming the field when it is invalid (not for ``selfHealing``)."""
        spec = parse_object(ClusterSpec, raw, where)
        _check_throttle(spec, where)
        return spec

    @staticmethod
    def of(body: Mapping[str, Any]) -> ClusterSpec:
        """The spec of a KafkaCluster resource (a missing spec is an empty one)."""
        return ClusterSpec.parse(spec_of(body))

    @staticmethod
    def schema() -> Schema:
        s = object_schema(ClusterSpec)
        s["x-kubernetes-validations"] = [
            {
                "rule": "!has(self.throttle) || has(self.throttle.maxBytesPerSecond) || "
                "has(self.throttleBytesPerSecond)",
                "message": THROTTLE_NO_MAX,
            },
            {
                "rule": "!has(self.throttle) || !has(self.throttle.maxBytesPerSecond) || "
                "!has(self.throttleBytesPerSecond) || self.throttle.maxBytesPerSecond == "
                "self.throttleBytesPerSecond",
                "message": THROTTLE_DISAGREE,
            },
            {  # the maximum the minimum is held to may be throttleBytesPerSecond (throttle's own rule: max)
                "rule": "!has(self.throttle) || !has(self.throttle.minBytesPerSecond) || "
                "!has(self.throttleBytesPerSecond) || self.throttle.minBytesPerSecond <= "
                "self.throttleBytesPerSecond",
                "message": f"{ThrottleSpec.MIN_ABOVE_MAX} (the maximum defaults to throttleBytesPerSecond)",
                "fieldPath": ".throttle.minBytesPerSecond",
            },
        ]
        return s

    @property
    def top_throttle(self) -> int | None:
        """The highest replication rate an execution sets per broker: ``throttle.maxBytesPerSecond``, else
        ``throttleBytesPerSecond`` (None: unthrottled)."""
        if self.throttle is not None and self.throttle.max_bytes_per_second is not None:
            return self.throttle.max_bytes_per_second
        return self.throttle_bytes_per_second

    @property
    def adaptive_throttle(self) -> tuple[int, int] | None:
        """(minBytesPerSecond, the maximum) of an Adaptive throttle; None when the throttle is static."""
        t, top = self.throttle, self.top_throttle
        if t is None or not t.adaptive or t.min_bytes_per_second is None or top is None:
            return None
        return t.min_bytes_per_second, top

    @property
    def sampling(self) -> TrafficSpec:
        """``traffic``, every field at its default (sampling off) when absent."""
        return self.traffic if self.traffic is not None else TrafficSpec()

    @property
    def max_disk_share(self) -> float:
        """``capacity.maxDiskShare``: no log dir is planned above this share of its volume (its default
        when no capacity is declared)."""
        return self.capacity.max_disk_share if self.capacity is not None else DEFAULT_MAX_DISK_SHARE

    @property
    def disk_per_log_dir(self) -> bool:
        """``capacity.diskPerLogDir``: every log dir on a disk of its own (planning/headroom.py)."""
        return self.capacity.disk_per_log_dir if self.capacity is not None else False

    @property
    def effort(self) -> Effort:
        """``planner.effort`` (model/effort.py), its default when ``planner`` is absent."""
        effort = self.planner.effort if self.planner is not None else DEFAULT_EFFORT
        return next(e for e in EFFORTS if e == effort)  # (the schema's enum: one of them)

    @property
    def spark(self) -> SparkSpec:
        """``planner.spark``, every field at its default when absent."""
        return self.planner.spark if self.planner is not None else SparkSpec()


def is_connection_error(e: BadInputError, where: str = "spec") -> bool:
    """Whether an error of ``ClusterSpec.parse`` is in the connection's fields (``CONNECTION_FIELDS``)."""
    head = e.location.removeprefix(f"{where}.").split(".", 1)[0]
    return e.location != where and head in CONNECTION_FIELDS


__all__ = [
    "ASSUMED_UNTHROTTLED_RATE",
    "CONNECTION_FIELDS",
    "SPARK_K8S_DEFAULTS",
    "CaSecretRef",
    "CertSecretRef",
    "ClusterSpec",
    "InvalidPart",
    "LimitsSpec",
    "PlannerSpec",
    "SaslSecretRef",
    "SaslSpec",
    "SparkK8sDefaults",
    "SparkSpec",
    "ThrottleSpec",
    "TlsSpec",
    "TrafficSpec",
    "is_connection_error",
]
