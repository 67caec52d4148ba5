"""Planning engines behind one interface: ``local`` (in-process), ``spark`` (PySpark), ``auto``.

Every engine computes targets for the same pure planner (``planning.optimizer.compute_plan`` does
validation, advisories and the summary for all of them). The Spark engine sends the partitions to
Spark as an Arrow table; one pass of tasks selects the partitions that break a hard rule and tallies
the snapshot (``spark.analysis``); it hashes those partitions into shards, runs the hard placement goal of
each shard in parallel in Spark tasks (the pure ``planning.sharding.plan_shard``; the rows travel as
Arrow IPC streams the JVM does not convert), collects
the changed partitions and finishes on the driver with the balance pass (``merge_and_balance``;
the shards' results need no reconciliation when the selection is exact), checked by the summary's tally in
Spark tasks (``spark.tally``; a hard rule broken after the plan, i.e. a partition the analysis missed,
re-runs the merge reconciling every partition). Its summary says how many partitions each rule sent to
the shards. ``auto`` picks Spark above a replica-count threshold. ``spark-k8s`` runs the same job on
Kubernetes (``spark.k8s``).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import os
import pickle
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any, TypeVar

from ..model.crd_parts import ENGINES  # the KafkaCluster CRD's spec.planner.engine enum
from ..model.errors import BadInputError, PlacementError
from ..model.intents import Intents
from ..model.jsonio import clip
from ..model.plan import Plan
from ..model.snapshot import ClusterSnapshot, PartitionState
from ..planning import batching, plan_quality
from ..planning.context import PlanningContext
from ..planning.optimizer import Measure, Optimizer, PlanResult, compute_plan, optimize
from ..planning.plan_quality import Scope, Tally
from ..planning.sharding import (
    Row,
    ShardView,
    auto_shards,
    merge_and_balance,
    plan_shard,
    raise_if_infeasible,
    shard_of,
)
from ..planning.state import ClusterLoads, Eligibility
from . import beside
from .analysis import Analysis, SnapshotSlices
from .collector import collector_paused
from .failures import ExecutorWatch, check_master, is_cluster, is_spark_error, root_cause, spark_failure
from .io import arrow_table, ipc_bytes, ipc_table, partitions_of
from .memory import check_plan
from .settings import EngineSettings
from .shipping import ship
from .tally import plan_slices, tally_plan, tally_slices

T = TypeVar("T")


def replica_count(snapshot: ClusterSnapshot) -> int:
    return sum(len(p.replicas) for p in snapshot.partitions)


def choose(snapshot: ClusterSnapshot, settings: EngineSettings) -> str:
    """The concrete engine for ``settings.engine`` (resolving ``auto``), refusing local when too big."""
    if settings.engine not in ENGINES:
        raise BadInputError(
            f"unknown engine '{settings.engine}'; expected one of {', '.join(ENGINES)}", "--engine"
        )
    replicas = replica_count(snapshot)
    if settings.engine == "auto":
        return "spark" if replicas >= settings.auto_spark_replicas else "local"
    if settings.engine == "local" and replicas > settings.local_max_replicas:
        raise BadInputError(
            f"the snapshot has {replicas} replicas, more than the local engine plans "
            f"({settings.local_max_replicas}); use --engine spark (or auto)",
            "--engine",
        )
    return settings.engine


def plan_with(
    snapshot: ClusterSnapshot, intents: Intents, settings: EngineSettings, session: Any = None, **kw: Any
) -> PlanResult:
    """Plan with the chosen engine (Spark on ``session`` when given); the summary records which ran.
    Python's cyclic garbage collector is paused meanwhile (``spark.collector``)."""
    with collector_paused():
        return _plan_with(snapshot, intents, settings, session, **kw)


def _plan_with(
    snapshot: ClusterSnapshot, intents: Intents, settings: EngineSettings, session: Any, **kw: Any
) -> PlanResult:
    engine = choose(snapshot, settings)
    if engine == "local":
        replicas = replica_count(snapshot)
        check_plan(replicas, len(snapshot.partitions), settings.memory)
        enforced = intents.enforced_only()  # (the intents the summary measures the plan under)
        use = settings.beside and beside.wanted(len(snapshot.partitions), replicas, settings.memory)
        with beside.tallied(snapshot, enforced, use) as other, contextlib.ExitStack() as stack:
            run, measure = (optimize, None) if other is None else _beside(snapshot, other, stack)
            result = compute_plan(snapshot, intents, optimizer=run, measure=measure, **kw)
        return replace(result, summary=replace(result.summary, engine=engine))
    if engine != "spark":
        raise PlacementError(
            "spark-k8s needs the Kubernetes settings of `kafka-placement plan --engine spark-k8s`"
        )
    per_broker = int(kw.get("max_moves_per_broker", batching.MAX_PER_BROKER))
    # nothing stays cached in a long-lived session
    with SparkOptimizer(settings, session, per_broker) as spark:
        result = compute_plan(
            snapshot, intents, optimizer=spark.optimize, measure=spark.measure, batches=spark.batches, **kw
        )
    # the report of the enforced plan's run (advisories plan again)
    summary = replace(result.summary, engine=engine, sharding=spark.reports[0] if spark.reports else None)
    return replace(result, summary=summary)


def _beside(
    snapshot: ClusterSnapshot, other: beside.Beside, stack: contextlib.ExitStack
) -> tuple[Optimizer, Measure]:
    """The local engine with a copy beside it (``spark.beside``): the plan takes the partitions to repair
    it selected, the summary's tally of the plan is its tally of the snapshot with the plan's entries
    shifted in; each as before when it has none (or for other intents: the advisories' plan). A plan of
    at least ``beside.MIN_SHIFTED`` entries is shifted in by two processes: a second copy, forked once the
    plan is made and the first copy has given its tally and ended (never two copies at once: each costs
    memory), shifts the last ``SHIFTED_SHARE`` of its entries while this one orders the batches and
    shifts the others (closed by ``stack``)."""
    shifts: list[tuple[Plan, int, Tally, beside.Beside]] = []

    def run(s: ClusterSnapshot, intents: Intents) -> Plan:
        plan = optimize(s, intents, repairs=(lambda: other.repairs(intents)) if s is snapshot else None)
        if s is snapshot and intents == other.intents and len(plan.partitions) >= beside.MIN_SHIFTED:
            scope = plan_quality.Scope.of(s, intents)
            base = other.result(scope)
            other.close()  # (its work is done: never two copies at once)
            if base is not None:
                plan.check_against(s)  # (the copy shifts entries known to be the snapshot's)
                k = len(plan.partitions) - int(len(plan.partitions) * beside.SHIFTED_SHARE)
                copy = beside.shifting(s, plan.partitions[k:], scope)
                stack.callback(copy.close)
                shifts.append((plan, k, base, copy))
        return plan

    def measure(s: ClusterSnapshot, plan: Plan, scope: Scope) -> Tally:
        found = [(k, b, c) for p, k, b, c in shifts if p is plan and c.intents == scope.intents]
        if found:
            k, held, copy = found[0]
            plan_quality.shifted(held, s, plan, scope, plan.partitions[:k])
            rest = copy.shifts()
            if rest is None:  # (the copy did not answer: shift its part here)
                return plan_quality.shifted(held, s, plan, scope, plan.partitions[k:])
            return held.merge(rest)
        base = other.result(scope) if s is snapshot else None
        if base is None:
            return plan_quality.tally(s, plan, scope)
        return plan_quality.shifted(base, s, plan, scope)

    return run, measure


def java_available() -> bool:
    home = os.environ.get("JAVA_HOME")
    return (
        bool(home and os.path.exists(os.path.join(home, "bin", "java"))) or shutil.which("java") is not None
    )


def spark_session(
    master: str | None,
    driver_memory: str = "4g",
    app: str = "kafka-placement",
    conf: tuple[tuple[str, str], ...] = (),
) -> Any:
    """A SparkSession; ``master=None`` takes spark-submit's. A clear error without Java or pyspark,
    for a malformed or unreachable master (``spark.failures.check_master``) and when Spark cannot start.

    A local master binds to loopback only; ``conf`` is applied last (``--spark-conf``)."""
    check_master(master)
    if not java_available():
        raise PlacementError(
            "the spark engine needs Java 17: set JAVA_HOME or put java on PATH (or --engine local)"
        )
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:  # pragma: no cover - pyspark is a dependency
        raise PlacementError(f"the spark engine needs pyspark: {e}") from e
    if master is not None and master.startswith("local"):  # executors run here: this very Python
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # else the workers' Python: spark.pyspark.python of the cluster's spark-defaults, or PYSPARK_PYTHON
    builder = SparkSession.builder.appName(app)
    if master is not None:
        builder = builder.master(master).config("spark.driver.memory", driver_memory)
    if master is not None and master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.host", "127.0.0.1").config(
            "spark.driver.bindAddress", "127.0.0.1"
        )
    builder = (
        builder.config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.adaptive.enabled", "false")
    )
    for key, value in conf:
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    except Exception as e:
        if not is_spark_error(e):
            raise
        raise PlacementError(
            f"Spark did not start (master {clip(master or 'of spark-submit', 200)}): "
            f"{type(e).__name__}: {clip(root_cause(str(e)), 600)}"
        ) from e
    session.sparkContext.setLogLevel("ERROR")
    ship(session.sparkContext)  # a cluster's executors do not have this package
    return session


def start_session(settings: EngineSettings) -> concurrent.futures.Future[Any]:
    """Start the engine's Spark session in a daemon thread, while the caller reads the snapshot (the
    CLI): the JVM and, on a local master, the Python workers (which import the planner in one small
    job) start meanwhile instead of before and during the first real job. ``result()`` gives the
    session, or raises what starting it raised; a process that stops before asking does not wait for
    it."""
    started: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def run() -> None:
        try:
            session = spark_session(settings.master, settings.driver_memory, conf=settings.conf)
            master = str(session.sparkContext.master)
            if not is_cluster(master):  # a cluster's job needs its executor watch (``_guarded``)
                slices = 2 * int(session.sparkContext.defaultParallelism or 2)
                try:
                    session.sparkContext.parallelize(range(slices), slices).mapPartitions(_imported).count()
                except Exception as e:
                    raise spark_failure(e, master) from e
            started.set_result(session)
        except BaseException as e:  # handed to whoever asks for the session
            started.set_exception(e)

    threading.Thread(target=run, name="kafka-placement-spark-start", daemon=True).start()
    return started


def _imported(items: Iterator[Any]) -> Iterator[Any]:
    """A warm-up task: the modules the engine's tasks use, imported once in each Python worker."""
    from . import analysis, tally  # noqa: F401

    yield from items


# a shard's rows (``_result_schema``)
RESULT_COLUMNS = ("topic", "partition", "replicas", "dirs", "error", "change")


class SparkOptimizer:
    """The sharded planner on Spark: analysis, hard goal per shard and the summary's tally in Spark,
    balance on the driver.

    Spark tasks analyse the snapshot (``spark.analysis``: the partitions that break a hard rule, the
    brokers' and dirs' loads that are the shards' starting point, the snapshot's tally without a plan);
    only the partitions to repair are hashed into shards, and the pure hard goal runs on each shard with
    Spark tasks (``_run_shards``) while the driver builds its planning context. The driver merges the changed
    partitions into one assignment and balances globally (``planning.sharding.merge_and_balance``); then
    Spark tasks tally the plan's entries (``spark.tally``), which added to the analysis's tally give the
    summary's tally and the check that no partition breaks a hard rule after the plan (one the analysis
    missed would: the driver then merges again reconciling every partition). ``measure`` returns that
    tally for that plan, and tallies any other plan the same way (analysing the snapshot again under
    another scope). Beside that tally's Spark job the driver orders the plan into batches of
    ``max_moves_per_broker`` (the summary's), which ``batches`` returns for that plan. ``reports``
    holds, per plan, how many partitions each rule sent to the shards and the seconds of each phase.
    """

    def __init__(
        self,
        settings: EngineSettings,
        session: Any = None,
        max_moves_per_broker: int = batching.MAX_PER_BROKER,
    ) -> None:
        self.settings = settings
        self.max_moves_per_broker = max_moves_per_broker
        self._session = session
        self.reports: list[dict[str, Any]] = []
        self._session_s = 0.0
        self._snapshot: SnapshotSlices | None = None
        self._base: tuple[Intents, Tally] | None = None  # the last analysis's tally (no plan), its intents
        self._tallied: tuple[ClusterSnapshot, Intents, Plan, Tally] | None = None  # the last plan's tally
        # the last plan's batches: for that snapshot, plan, rules and limit per broker
        self._ordered: tuple[ClusterSnapshot, Plan, Eligibility, int, list[list[str]]] | None = None

    def optimize(self, snapshot: ClusterSnapshot, intents: Intents) -> Plan:
        with self._guarded() as spark:
            return self._optimize(spark, snapshot, intents)

    def measure(self, snapshot: ClusterSnapshot, plan: Plan, scope: Scope) -> Tally:
        """The summary's tally of ``plan``: the analysis's tally of the snapshot with the plan's entries
        shifted in by Spark tasks (``spark.tally``); the plan this engine just made was tallied while it
        was checked, and that tally is the one returned."""
        kept = self._tallied
        if kept is not None and kept[0] is snapshot and kept[1] is scope.intents and kept[2] is plan:
            return kept[3]  # checked against the snapshot while it was tallied
        plan.check_against(snapshot)
        started = time.perf_counter()
        with self._guarded() as spark:
            snapshot_slices = self._snapshot_in(spark, snapshot)
            base = self._base[1] if self._base is not None and self._base[0] is scope.intents else None
            if base is None:  # another scope than the last analysis's: tally the snapshot under it
                analysis = snapshot_slices.analyse(scope)
                analysis.close()
                base = analysis.found.tally
            found = tally_plan(spark, snapshot, base, plan, scope, self._slices(spark))
        if self.reports and "summary" not in self.reports[-1]["seconds"]:
            self.reports[-1]["seconds"]["summary"] = round(time.perf_counter() - started, 1)
        return found

    def batches(
        self, snapshot: ClusterSnapshot, plan: Plan, elig: Eligibility, max_per_broker: int
    ) -> list[list[str]]:
        """``plan``'s batches (``batching.batches``); this engine's own plan was ordered beside the
        Spark job that tallied it, and that order is the one returned."""
        kept = self._ordered
        if (
            kept is not None
            and kept[0] is snapshot
            and kept[1] is plan
            and kept[2:4] == (elig, max_per_broker)
        ):
            return kept[4]  # (the same rules: an equal ``Eligibility``)
        return batching.batches(snapshot, plan, elig, max_per_broker)

    def close(self) -> None:
        """Forget the snapshot's slices, tallies and batches (nothing of it stays cached in Spark)."""
        self._snapshot = self._base = self._tallied = self._ordered = None

    def __enter__(self) -> SparkOptimizer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _guarded(self) -> Iterator[Any]:
        """The session (started on first use), with a Spark failure turned into a clear error."""
        settings = self.settings
        if self._session is None:
            started = time.perf_counter()
            self._session = spark_session(settings.master, settings.driver_memory, conf=settings.conf)
            self._session_s = time.perf_counter() - started
        spark = self._session
        master = str(spark.sparkContext.master)
        watch = ExecutorWatch(spark.sparkContext, settings.executor_wait_s) if is_cluster(master) else None
        with watch or contextlib.nullcontext():
            try:
                yield spark
            except Exception as e:
                raise spark_failure(e, master, watch) from e

    def _snapshot_in(self, spark: Any, snapshot: ClusterSnapshot) -> SnapshotSlices:
        if self._snapshot is None or self._snapshot.snapshot is not snapshot:
            self.close()
            self._snapshot = SnapshotSlices.of(spark, snapshot, self._slices(spark))
        return self._snapshot

    @staticmethod
    def _slices(spark: Any) -> int:
        """Spark partitions of the analysis and the tally: two per core (even slices), more only where
        ``analysis.SLICE_BYTES`` asks for them (each slice's pickled tally is merged on the driver)."""
        return 2 * int(spark.sparkContext.defaultParallelism or 2)

    def _optimize(self, spark: Any, snapshot: ClusterSnapshot, intents: Intents) -> Plan:
        cores = int(spark.sparkContext.defaultParallelism or 2)
        started = time.perf_counter()
        self._tallied = self._ordered = None
        scope = Scope.of(snapshot, intents)
        analysis = self._snapshot_in(spark, snapshot).analyse(scope)
        self._base = (intents, analysis.found.tally)
        # a Spark job releases the GIL while the driver waits for it: the context is built meanwhile
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="kafka-placement") as beside:
            try:
                report = analysis.found.report(len(snapshot.partitions))
                shards = self.settings.shards or auto_shards(report["partitionsToRepair"], cores)
                report["shards"] = shards
                view = ShardView.of(snapshot, analysis.found.loads(snapshot), shards, scope.elig)
                analysed = time.perf_counter()
                context = beside.submit(_timed, PlanningContext.of, snapshot, intents)
                out = _run_shards(analysis, shards, view, intents)
            finally:
                analysis.close()
            sharded = time.perf_counter()
            rows, change = _shard_rows(out)
            ctx, context_s = context.result()
        merging = time.perf_counter()
        plan = merge_and_balance(ctx, rows, change, exact_selection=True)
        merged = time.perf_counter()
        del ctx, context  # (the planning state, its largest part, is not needed for the summary)
        # The check of the selection: the summary's tally counts every hard rule on every partition
        # after the plan; any violation (a partition the analysis missed) re-runs the merge with the
        # reconciliation of every partition, and that plan is tallied again by ``measure``.
        # The entries are sent to Spark first, not while a busy thread beside holds the GIL: each of
        # the sender's calls would wait out that thread's switch interval (7 s at 1M instead of 1 s
        # when they were sent as a DataFrame).
        entries = plan_slices(spark, snapshot, plan, self._slices(spark))
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="kafka-placement") as beside:
            # beside the tally's Spark job: the plan's check, its id (memoised) and its batches
            checked = beside.submit(
                _check_name_and_order, plan, snapshot, scope.elig, self.max_moves_per_broker
            )
            found = tally_slices(entries, analysis.found.tally, scope)
            order = checked.result()
        broken = found.violations_after.finish(scope.elig, found.before.dir_bytes)
        tallied = time.perf_counter()
        report["hardViolationsAfterMerge"] = sum(broken.values())
        if report["hardViolationsAfterMerge"]:
            report["violationsAfterMerge"] = {k: v for k, v in broken.items() if v}
            plan = merge_and_balance(
                PlanningContext.of(snapshot, intents), rows, change, exact_selection=False
            )
        else:
            self._tallied = (snapshot, intents, plan, found)
            self._ordered = (snapshot, plan, scope.elig, self.max_moves_per_broker, order)
        report["seconds"] = {
            "session": round(self._session_s, 1),
            "analysis": round(analysed - started, 1),
            "shards": round(sharded - analysed, 1),
            "context": round(context_s, 1),  # beside the shards
            "waitForContext": round(merging - sharded, 1),  # with reading the shards' rows
            "mergeAndBalance": round(merged - merging, 1),
            "summary": round(tallied - merged, 1),  # the tally of the plan's entries, and the check
            "reconcileAll": round(time.perf_counter() - tallied, 1),  # only after a violation
        }
        self._session_s = 0.0  # counted once
        self.reports.append(report)
        return plan


def _timed(fn: Callable[..., T], *args: Any) -> tuple[T, float]:
    """``fn(*args)`` and the seconds it took (run in a driver thread beside a Spark job)."""
    started = time.perf_counter()
    return fn(*args), time.perf_counter() - started


def _check_name_and_order(
    plan: Plan, snapshot: ClusterSnapshot, elig: Eligibility, max_per_broker: int
) -> list[list[str]]:
    """What the summary asks of the engine's own plan, done beside the Spark job that tallies it: the
    check against the snapshot, the id (a hash of every entry's JSON, seconds at 1M) and the batches
    (seconds at 1M too)."""
    plan.check_against(snapshot)
    _ = plan.plan_id
    return batching.batches(snapshot, plan, elig, max_per_broker)


def _shard_rows(out: Any) -> tuple[list[Row], ClusterLoads]:
    """The shards' changed partitions and the sum of what each changes in the loads (an Arrow table of
    ``_result_schema``); an infeasible shard raises."""
    rows: list[Row] = []
    errors: list[str] = []
    change = ClusterLoads.none()
    # one object per topic, broker id and dir path (Arrow gives a copy of each value; the plan keeps
    # them: at a million partitions some 80 MB)
    same: dict[object, Any] = {}
    one = same.setdefault
    for topic, number, reps, dirs, error, part in zip(
        *(out.column(c).to_pylist() for c in RESULT_COLUMNS), strict=True
    ):
        if error:
            errors.append(error)
        elif part is not None:
            change.add(pickle.loads(part))
        else:
            rows.append(
                (one(topic, topic), number, tuple(one(b, b) for b in reps), tuple(one(d, d) for d in dirs))
            )
    raise_if_infeasible(errors)
    return rows, change


def _run_shards(analysis: Analysis, shards: int, view: ShardView, intents: Intents) -> Any:
    """The hard goal of every shard in Spark tasks: each slice's partitions to repair are split by
    ``shard_of`` (an IPC stream per shard), Spark moves those bytes to the shard's task (``partitionBy``
    the shard number), which plans them in the snapshot's order; the shards' rows as one Arrow table
    of ``_result_schema``."""
    import pyarrow as pa

    split = analysis.to_repair.flatMap(functools.partial(_by_shard, shards))
    results = split.partitionBy(shards, _shard_number).mapPartitionsWithIndex(_shard_task(view, intents))
    tables = [ipc_table(blob) for blob in results.collect()]
    return pa.concat_tables(tables) if tables else _result_schema().empty_table()


def _shard_number(shard: int) -> int:
    """Shard ``shard`` goes to Spark partition ``shard`` (``partitionBy`` takes it modulo the shards)."""
    return shard


def _by_shard(shards: int, numbered: tuple[int, bytes]) -> list[tuple[int, tuple[int, bytes]]]:
    """One slice's partitions to repair, split by ``shard_of``: (shard, (slice, IPC stream))."""
    import pyarrow as pa

    number, blob = numbered
    table = ipc_table(blob)
    rows: dict[int, list[int]] = {}
    topics, partitions = table.column("topic").to_pylist(), table.column("partition").to_pylist()
    for i, (topic, partition) in enumerate(zip(topics, partitions, strict=True)):
        rows.setdefault(shard_of(topic, partition, shards), []).append(i)
    return [(s, (number, ipc_bytes(table.take(pa.array(i, pa.int64()))))) for s, i in sorted(rows.items())]


def _shard_partitions(pieces: Iterable[tuple[int, tuple[int, bytes]]]) -> list[PartitionState]:
    """A shard task's partitions from its pieces (``_by_shard``'s), in the snapshot's order (by slice),
    as ``plan_shards`` has them."""
    return [p for _, blob in sorted(piece for _, piece in pieces) for p in partitions_of(ipc_table(blob))]


def _shard_task(view: ShardView, intents: Intents) -> Any:
    """The function each Spark task runs on one shard's slices (pure planner inside): its result rows
    (``_result_schema``) as one IPC stream, none for a shard without partitions."""

    def run(shard: int, pieces: Iterator[tuple[int, tuple[int, bytes]]]) -> Iterator[bytes]:
        with collector_paused():  # the hard goal allocates as on the driver (spark.collector)
            parts = _shard_partitions(pieces)
            if not parts:
                return
            rows, change, error = plan_shard(view, parts, intents, shard)
            # its partitions, then one row with what they change in the loads; or one naming the error
            done = ("", 0, (), (), None, pickle.dumps(change))
            found = [*((*row, None, None) for row in rows), done]
            records = [("", 0, (), (), error, None)] if error else found
            yield ipc_bytes(arrow_table(zip(*records, strict=True), _result_schema()))

    return run


def _result_schema() -> Any:
    """The Arrow schema of a shard's rows: its changed partitions and one row with what they change in the
    loads (``change``, a pickled ``ClusterLoads``), or one row naming why it is infeasible."""
    import pyarrow as pa

    types = (pa.string(), pa.int32(), pa.list_(pa.int32()), pa.list_(pa.string()), pa.string(), pa.binary())
    return pa.schema(list(zip(RESULT_COLUMNS, types, strict=True)))


__all__ = ["ENGINES", "EngineSettings", "SparkOptimizer", "choose", "plan_with", "shard_of", "spark_session"]
