"""The operator's path at a million partitions, measured against a real kube-apiserver: plan -> the plan
review -> approval -> the execution record, through the operator's own functions and its real KubeGateway.

    .venv/bin/python tests/bench/run_operator_path.py [--sizes 1000000:1000] [--probe-interval 0.5]
        [--kubeconfig FILE] [-o docs/benchmarks.md | --no-doc]

Needs the k8s rig (``scripts/rig.sh up k8s``; its rig.json under ``$KP_RIG_DIR``, default ``.rig``): a
kube-apiserver over etcd. Kafka stands aside: the snapshot is given, tests/bench/generator.py's scenario
``all`` (a decommission, a draining dir cordon, 2-level rack spread, broker/dir/leader balance; RF 3).

Each size runs in a fresh process (the operator's process: its peak resident memory is per step, the
kernel's high-water mark reset before each one through ``/proc/self/clear_refs``). In a fresh namespace it
creates a KafkaCluster, the scenario's three intents (``approval: Manual``) and two more KafkaClusters
for the probes, then performs two reconciles as ``reconcile/cluster_pass.py`` performs them, ``decide``
(the real one) choosing each action:

1. the reconcile that plans: the intent resources and the record read (``Reconciler.intents_of``,
   ``Execution.load`` of ``Reconciler.store``); ``SyncCordons`` (Kafka's cordons: Kafka stands aside, so
   nothing is set, the view says synced); ``PlanIntents``: ``ReconcilePass._plan`` (``planning_document``,
   ``PlanInputs.of``, ``alone_invalid``, the kept-plan read ``plan_review.read_kept``, ``inputs_key``,
   ``loads_of``, ``plan_cluster`` with the spec's engine, local, on the ``Reconciler``'s planner pool as
   ``_plan`` passes it: a call returns the plan or, after its few seconds' wait, ``running``, and the call
   is repeated every reconcile interval, as the cluster's next reconciles do, until the plan is there);
   ``_review`` (``plan_blob``,
   ``prune_blobs``, ``put_blob`` into the record's ``ConfigMapStore``, ``plan_review.publish`` with the
   same report and estimate closures); the statuses ``decide`` returns (``Reconciler.publish``:
   AwaitingApproval); the KafkaCluster's status (``status.cluster_status``), which kopf writes from the
   handler's return value: patched here through ``KubeGateway.patch_custom_status``, the closest call;
2. approval: ``spec.approvedPlan`` patched onto each intent (the user's write, not the operator's);
3. the reconcile that starts the execution: the reads again; ``_kept_plan``'s path in the same process
   (``inputs_key``, ``KeptPlan.keep``, ``check_against``); ``CheckMinIsr`` (Kafka's min ISR: not read,
   nothing below it); ``StartExecution``: ``ReconcilePass._start`` (``Execution.create``, owned cordons,
   claim owner, ``save``) and the statuses it publishes (Executing);
4. the first tick's write: the baseline blob and the record saved, as ``executor._validate`` stores them
   (its full read of Kafka replaced by the given snapshot; the rest of the tick needs Kafka).

Every write goes through ``KubeGateway`` (a subclass that notes each write's step, object and request
bytes, then calls the real method); each object written is read back afterwards and measured: a
ConfigMap's data as the apiserver's 1 MiB check counts it (keys + values, binaryData decoded), every
object's JSON as served. Events are kopf's (the gateway's sink): none here.

Meanwhile two probes patch the status of another KafkaCluster every ``--probe-interval`` seconds: a thread
of the operator's process (what another cluster's handler in that process waits: the apiserver and the
GIL) and a separate process (the apiserver alone). A probe's wait = the patch's end minus when it was due.
Results replace this script's section of docs/benchmarks.md, with the command.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import gc
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from tests.bench.run_spread import write_section  # noqa: E402

from kafka_placement.kube.gateway import KubeError, KubeGateway, Obj  # noqa: E402
from kafka_placement.model.crd_parts import GROUP, PLURALS, VERSION  # noqa: E402

HEADING = "## The operator's path at 1M partitions"
MIB = 1 << 20
PROBE_PLURAL = PLURALS["KafkaCluster"]
KINDS = {plural: kind for kind, plural in PLURALS.items()}
WIDTH_DIRS = (2, 4, 8, 12, 16)  # log dirs per broker of the KafkaCluster status measured apart


# ---- measuring -------------------------------------------------------------------------------------


def _hwm_kb() -> int:
    """This process's peak resident memory since the last reset (VmHWM), else ru_maxrss."""
    try:
        found = re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text())
    except OSError:
        found = None
    return int(found.group(1)) if found else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _reset_hwm() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS (Linux)
        return True
    except OSError:
        return False


@dataclass
class Write:
    step: str
    verb: str
    kind: str
    namespace: str
    name: str
    request_bytes: int
    seconds: float


@dataclass
class Step:
    name: str
    start: float = 0.0  # wall clock (the probes' samples are attributed by it)
    end: float = 0.0
    peak_kb: int = 0
    note: str = ""
    parts: dict[str, float] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return self.end - self.start


class RecordingGateway(KubeGateway):
    """The operator's KubeGateway; each write is noted (step, object, request bytes, seconds) and then
    made by the real method."""

    step = "setup"
    writes: list[Write]

    def _note(self, verb: str, kind: str, ns: str, name: str, body: Any, call: Callable[[], Any]) -> Any:
        size = len(json.dumps(body, separators=(",", ":")).encode())
        started = time.perf_counter()
        try:
            return call()
        finally:
            w = Write(self.step, verb, kind, ns, name, size, time.perf_counter() - started)
            self.writes.append(w)

    def create_config_map(self, ns: str, body: Obj) -> Obj:
        name = body["metadata"]["name"]
        made: Obj = self._note(
            "create",
            "ConfigMap",
            ns,
            name,
            body,
            lambda: super(RecordingGateway, self).create_config_map(ns, body),
        )
        return made

    def replace_config_map(self, ns: str, body: Obj) -> Obj | None:
        name = body["metadata"]["name"]
        out: Obj | None = self._note(
            "replace",
            "ConfigMap",
            ns,
            name,
            body,
            lambda: super(RecordingGateway, self).replace_config_map(ns, body),
        )
        return out

    def patch_config_map(self, ns: str, name: str, patch: Obj) -> bool:
        done: bool = self._note(
            "patch",
            "ConfigMap",
            ns,
            name,
            patch,
            lambda: super(RecordingGateway, self).patch_config_map(ns, name, patch),
        )
        return done

    def delete_config_map(self, ns: str, name: str) -> bool:
        done: bool = self._note(
            "delete",
            "ConfigMap",
            ns,
            name,
            {},
            lambda: super(RecordingGateway, self).delete_config_map(ns, name),
        )
        return done

    def patch_custom_status(
        self, group: str, version: str, ns: str, plural: str, name: str, status: Mapping[str, Any]
    ) -> bool:
        done: bool = self._note(
            "patch status",
            plural,
            ns,
            name,
            {"status": dict(status)},
            lambda: super(RecordingGateway, self).patch_custom_status(
                group, version, ns, plural, name, status
            ),
        )
        return done

    def create_custom(self, group: str, version: str, ns: str, plural: str, body: Obj) -> Obj:
        made: Obj = self._note(
            "create",
            plural,
            ns,
            body["metadata"]["name"],
            body,
            lambda: super(RecordingGateway, self).create_custom(group, version, ns, plural, body),
        )
        return made


def probe_loop(
    kube: KubeGateway, ns: str, name: str, interval: float, stop: Callable[[], bool]
) -> list[list[float]]:
    """Patch KafkaCluster ``name``'s status every ``interval`` s until ``stop()``: [due, start, end] each
    (wall clock); a late patch is followed by the next due one (none is made up)."""
    out: list[list[float]] = []
    due, k = time.time(), 0
    while not stop():
        now = time.time()
        if now < due:
            time.sleep(due - now)
        start = time.time()
        k += 1
        kube.patch_custom_status(GROUP, VERSION, ns, PROBE_PLURAL, name, {"reassignmentsInFlight": k})
        end = time.time()
        out.append([due, start, end])
        due = max(due + interval, end)
    return out


# ---- the operator's path ---------------------------------------------------------------------------


def child(n: int, brokers: int, kubeconfig: str, interval: float) -> dict[str, Any]:
    """One size, in this (fresh) process: the operator's path; returns what was measured."""
    import yaml
    from tests.bench.generator import cluster as cluster_shape
    from tests.bench.generator import scenario

    from kafka_placement.execution import copy_model
    from kafka_placement.execution.record import Execution, Original, plan_blob
    from kafka_placement.kube.gateway import load_config
    from kafka_placement.model.cluster_spec import ClusterSpec
    from kafka_placement.model.plan import Plan
    from kafka_placement.model.spec_fields import to_json
    from kafka_placement.model.throttle_state import ClaimOwner
    from kafka_placement.model.windows import finish_at
    from kafka_placement.planning.plan_keeping import KeptPlan, inputs_key, loads_of, tolerance_of
    from kafka_placement.planning.plan_summary import StatusSummary
    from kafka_placement.planning.report import Report, build_report
    from kafka_placement.reconcile import periods, plan_review
    from kafka_placement.reconcile import status as st
    from kafka_placement.reconcile.cordons import owned_cordons
    from kafka_placement.reconcile.decide import decide, execution_rules, window_bound
    from kafka_placement.reconcile.decision import (
        CheckMinIsr,
        Decision,
        PlanIntents,
        Planned,
        StartExecution,
        SyncCordons,
        View,
    )
    from kafka_placement.reconcile.inputs import MAX_STEPS, ceilings_of, limits_of, planning_document
    from kafka_placement.reconcile.planner import PlanInputs, plan_cluster
    from kafka_placement.reconcile.reconciler import Reconciler
    from kafka_placement.spark.collector import collector_paused

    started = time.perf_counter()
    snap, text = scenario("all", brokers=brokers, partitions=n, topics=max(20, n // 500))
    generated = time.perf_counter() - started
    gc.collect()
    base_kb = _hwm_kb()

    kube = RecordingGateway(load_config(kubeconfig))
    kube.writes = []
    ns = f"kp-bench-path-{n}-{os.getpid()}"
    namespace: Any = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    kube.core.create_namespace(namespace)
    cname = "bench"
    kube.create_custom(
        GROUP,
        VERSION,
        ns,
        PROBE_PLURAL,
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KafkaCluster", "metadata": {"name": cname},
         "spec": {"bootstrapServers": "kafka.invalid:9092"}},
    )  # fmt: skip
    for probe in ("probe-thread", "probe-process"):
        kube.create_custom(
            GROUP, VERSION, ns, PROBE_PLURAL,
            {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KafkaCluster", "metadata": {"name": probe},
             "spec": {"bootstrapServers": "kafka.invalid:9092"}},
        )  # fmt: skip
    names = {
        "BrokerDecommission": "retire-1",
        "LogDirCordon": "drain-2-d0",
        "PlacementPolicy": "spread-balance",
    }
    for doc in yaml.safe_load_all(text):
        kind = doc["kind"]
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": kind,
            "metadata": {"name": names[kind]},
            "spec": {**doc["spec"], "clusterRef": {"name": cname}, "approval": "Manual"},
        }
        kube.create_custom(GROUP, VERSION, ns, PLURALS[kind], body)

    # the probes: a thread of this process, and a process of its own
    stopping = threading.Event()
    thread_samples: list[list[float]] = []

    def run_thread() -> None:
        thread_samples.extend(probe_loop(kube.with_own_pool(), ns, "probe-thread", interval, stopping.is_set))

    stop_file = Path(tempfile.mkdtemp(prefix="kp-path-")) / "stop"
    proc = subprocess.Popen(
        [sys.executable, __file__, "--probe", kubeconfig, ns, "probe-process", str(interval), str(stop_file)],
        stdout=subprocess.PIPE,
        text=True,
    )
    prober = threading.Thread(target=run_thread, daemon=True)
    prober.start()
    time.sleep(2 * interval)  # both probes under way

    rec = Reconciler(kube)
    steps: list[Step] = []

    @contextmanager
    def step(name: str, note: str = "") -> Iterator[Step]:
        s = Step(name, note=note)
        kube.step = name
        _reset_hwm()  # (no gc.collect() here: the operator makes none, and it would hold the GIL)
        s.start = time.time()
        try:
            yield s
        finally:
            s.end = time.time()
            s.peak_kb = _hwm_kb()
            steps.append(s)
            kube.step = "between steps"

    def read() -> tuple[dict[str, Any], list[dict[str, Any]], ClusterSpec, Any, Any, Execution | None]:
        cluster = rec.cluster(ns, cname)
        assert cluster is not None
        bodies = rec.intents_of(ns, cname)
        spec = ClusterSpec.of(cluster)
        limits = limits_of(spec)
        store = rec.store(ns, cname, cluster)
        return cluster, bodies, spec, limits, store, Execution.load(store)

    where = (ns, cname)
    result: dict[str, Any] = {}

    def plan_and_review(resources: Any) -> Planned:
        """ReconcilePass._plan and _review for a plan made afresh."""
        with step("plan (ReconcilePass._plan: inputs, kept-plan read, plan_cluster)") as s:
            documents = [d for d in (planning_document(b, snap) for b in resources) if d]
            t = time.perf_counter()
            inputs = PlanInputs.of(documents, False, spec.capacity)
            assert not inputs.alone_invalid(documents, snap, False)
            found = plan_review.read_kept(rec.kube, ns, cluster)
            assert found is None  # a fresh namespace: nothing kept
            key = inputs_key(snap, inputs.text, repr(spec.planner))
            keep = KeptPlan(Plan(()), StatusSummary(), key, loads_of(snap), tolerance_of(inputs.intents))
            s.parts["inputs and key"] = time.perf_counter() - t
            runs = rec.store(ns, cname, cluster, "planning")
            t = time.perf_counter()
            polls = 0
            while True:  # as ReconcilePass._plan calls it: on the Reconciler's planner pool (plan_runs.py)
                polls += 1
                asked = time.perf_counter()
                planned = plan_cluster(
                    rec.kube,
                    runs,
                    ns,
                    spec,
                    snap,
                    inputs,
                    False,
                    plans=rec.plans,
                    cluster=cname,
                    key=keep.key,
                )
                if planned.running is None:
                    break
                # the intents stay Planning; the cluster's next reconcile (the interval after this one
                # started) takes the plan: Kafka stands aside, so only the planner's call is repeated
                time.sleep(max(0.0, asked + periods.interval_s() - time.perf_counter()))
            s.parts["plan_cluster"] = time.perf_counter() - t
            s.parts["reconciles that asked"] = polls
        assert planned.plan is not None, planned.error
        plan = planned.plan
        result["planId"] = plan.plan_id
        with step("review (ReconcilePass._review: plan blob, review ConfigMap)") as s:
            t = time.perf_counter()
            kept = replace(keep, plan=plan, summary=planned.summary, loads=loads_of(snap, plan))
            s.parts["kept plan's loads"] = time.perf_counter() - t

            def report() -> Report:  # as _review's closure
                t = time.perf_counter()
                with collector_paused():
                    out = build_report(snap, plan, inputs.intents, limits.max_moves_per_broker, planned.tally)
                s.parts["build_report"] = time.perf_counter() - t
                return out

            def estimated() -> dict[str, Any]:  # as _review's closure
                t = time.perf_counter()
                rules = execution_rules(inputs.intents.decommissions)
                ceilings = ceilings_of(spec, cluster.get("status") or {}, rec.wall())
                sides = ceilings.model_rates(b.id for b in snap.brokers) if ceilings is not None else None
                est = copy_model.estimate_plan(snap, plan, limits, periods.interval_s(), rules, sides)
                windows = window_bound(spec.execution, spec.self_healing, bodies)
                out = copy_model.estimate_json(est, finish_at(windows, rec.wall(), est.seconds))
                s.parts["estimate"] = time.perf_counter() - t
                return out

            t = time.perf_counter()
            blob, data = plan_blob(plan)
            s.parts["plan_blob (JSON)"] = time.perf_counter() - t
            t = time.perf_counter()
            store.prune_blobs({blob})
            store.put_blob(blob, data)
            s.parts["prune_blobs + put_blob"] = time.perf_counter() - t
            result["plan_blob_bytes"] = len(data)
            del data
            t = time.perf_counter()
            review, estimate = plan_review.publish(
                rec.kube, ns, cluster, plan.plan_id, report, limits, rec.leadership.fence,
                plan_review.kept_text(kept), make_estimate=estimated,
            )  # fmt: skip
            s.parts["publish (with report, estimate)"] = time.perf_counter() - t
            planned = replace(planned, summary=replace(planned.summary, review=review, estimate=estimate))
            rec.memory(where).kept = replace(kept, summary=planned.summary)
        return planned

    # ---- reconcile 1: plan, review, AwaitingApproval ---------------------------------------------
    with step("read: KafkaCluster, intents, record"):
        cluster, bodies, spec, limits, store, record = read()
    assert record is None  # a fresh namespace: no execution yet
    view = View(bodies, (), record=None, cluster_conditions=None, now=time.time())
    decision = decide(view)
    for _ in range(MAX_STEPS):
        if decision.statuses:
            with step(f"intent statuses: {decision.statuses[0].phase}"):
                rec.publish(decision)
        for action in decision.actions:
            if isinstance(action, SyncCordons):  # Kafka's cordoned.log.dirs: Kafka stands aside
                view = replace(view, cordons_synced=True)
            elif isinstance(action, PlanIntents):
                view = replace(view, planned=plan_and_review(action.resources))
            else:
                raise AssertionError(f"reconcile 1: unexpected action {action!r}")
        if decision.done:
            break
        decision = decide(view)
    with step("KafkaCluster status (kopf's patch of the handler's result)"):
        rec.kube.patch_custom_status(
            GROUP, VERSION, ns, PROBE_PLURAL, cname, {"phase": "Connected", **st.cluster_status(snap, 0)}
        )

    # ---- approval: the user's write ------------------------------------------------------------------
    with step("approval (the user patches spec.approvedPlan: not the operator's writes)"):
        for b in bodies:
            meta = b["metadata"]
            kube.custom.patch_namespaced_custom_object(
                GROUP,
                VERSION,
                ns,
                PLURALS[b["kind"]],
                meta["name"],
                {"spec": {"approvedPlan": result["planId"]}},
            )

    # ---- reconcile 2: the kept plan, the execution record ---------------------------------------------
    with step("read: KafkaCluster, intents, record"):
        cluster, bodies, spec, limits, store, _ = read()
    view = View(bodies, (), record=None, cluster_conditions=None, now=time.time())
    decision = decide(view)
    execution: Execution | None = None
    for _ in range(MAX_STEPS):
        if decision.statuses:
            with step(f"intent statuses: {decision.statuses[0].phase}"):
                rec.publish(decision)
        for action in decision.actions:
            if isinstance(action, SyncCordons):
                view = replace(view, cordons_synced=True)
            elif isinstance(action, PlanIntents):
                with step("keep the plan (ReconcilePass._kept_plan: key, drift, check_against)"):
                    documents = [d for d in (planning_document(b, snap) for b in action.resources) if d]
                    inputs = PlanInputs.of(documents, False, spec.capacity)
                    key = inputs_key(snap, inputs.text, repr(spec.planner))
                    memory = rec.memory(where)
                    kept_plan, memory.kept = memory.kept, None
                    assert (
                        kept_plan is not None
                        and kept_plan.keep(key, loads_of(snap, kept_plan.plan), True) is None
                    )
                    kept_plan.plan.check_against(snap, live_only=True)
                    memory.kept = kept_plan
                view = replace(view, planned=Planned(plan=kept_plan.plan, summary=kept_plan.summary))
            elif isinstance(action, CheckMinIsr):  # Kafka's min.insync.replicas: Kafka stands aside
                view = replace(view, below_min_isr=())
            elif isinstance(action, StartExecution):
                a = action
                with step("execution record (ReconcilePass._start: Execution.create, save)") as s:
                    rec.memory(where).kept = None
                    t = time.perf_counter()
                    execution = Execution.create(
                        store, a.plan, limits=limits, bootstrap_servers=spec.bootstrap_servers,
                        cluster_id=snap.cluster_id, rules=list(a.rules), participants=list(a.participants),
                        plan_status=to_json(a.plan_status),
                    )  # fmt: skip
                    s.parts["Execution.create (plan blob: present)"] = time.perf_counter() - t
                    execution.doc.owned_cordons = owned_cordons(snap, a.intents)  # Kafka >= 4.3
                    meta = cluster["metadata"]
                    execution.doc.claim_owner = ClaimOwner(namespace=ns, name=cname, uid=meta["uid"])
                    t = time.perf_counter()
                    execution.save()
                    s.parts["save"] = time.perf_counter() - t
                with step(f"intent statuses: {a.then[0].phase if a.then else '-'}"):
                    rec.publish(Decision(statuses=a.then, events=a.events))
            else:
                raise AssertionError(f"reconcile 2: unexpected action {action!r}")
        if decision.done or execution is not None:
            break
        decision = decide(view)
    assert execution is not None, "approval did not start an execution"

    # ---- the first tick's write: the baseline (executor._validate, its read of Kafka given) ----------
    with step("first tick: baseline blob + record (executor._validate's writes)") as s:
        t = time.perf_counter()
        baseline = []
        for target in execution.plan.plan.partitions:
            p = snap.partition(target.topic, target.partition)
            assert p is not None
            in_sync = len(set(p.isr) & set(p.replicas))
            baseline.append(Original(p.replicas, p.log_dirs, p.copy_bytes, in_sync, 0))  # min ISR: not read
        usage = {
            (b.id, d.path): 1.0 - d.usable_bytes / d.total_bytes
            for b in snap.brokers
            for d in b.log_dirs
            if d.total_bytes > 0
        }
        s.parts["baseline from the snapshot"] = time.perf_counter() - t
        t = time.perf_counter()
        execution.set_baseline(baseline, usage)
        s.parts["set_baseline (blob)"] = time.perf_counter() - t
        t = time.perf_counter()
        execution.save()
        s.parts["save"] = time.perf_counter() - t

    # ---- the probes stop; what was written is read back ----------------------------------------------
    stopping.set()
    stop_file.touch()
    prober.join(timeout=60)
    out, _ = proc.communicate(timeout=120)
    shutil.rmtree(stop_file.parent, ignore_errors=True)
    process_samples: list[list[float]] = json.loads(out.strip().splitlines()[-1])

    # ---- apart from the path: the KafkaCluster status of this many brokers with more dirs each ------
    kube.step = "setup"
    widths: list[dict[str, Any]] = []
    for dirs in WIDTH_DIRS:
        shaped = cluster_shape(brokers=brokers, dirs=dirs, partitions=3 * brokers, topics=10)
        wname = f"width-{dirs}"
        kube.create_custom(
            GROUP, VERSION, ns, PROBE_PLURAL,
            {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KafkaCluster", "metadata": {"name": wname},
             "spec": {"bootstrapServers": "kafka.invalid:9092"}},
        )  # fmt: skip
        status = {"phase": "Connected", **st.cluster_status(shaped, 0)}
        sent = len(json.dumps({"status": status}, separators=(",", ":")).encode())
        try:
            kube.patch_custom_status(GROUP, VERSION, ns, PROBE_PLURAL, wname, status)
            got = kube.get_custom(GROUP, VERSION, ns, PROBE_PLURAL, wname)
            stored = len(json.dumps(got, separators=(",", ":")).encode())
            widths.append({"dirs": dirs, "brokers": brokers, "sent": sent, "stored": stored, "error": None})
        except KubeError as e:
            widths.append(
                {"dirs": dirs, "brokers": brokers, "sent": sent, "stored": None, "error": e.message}
            )
        del shaped
    result["widths"] = widths

    objects: dict[tuple[str, str], dict[str, Any]] = {}
    for w in kube.writes:
        if w.step == "setup":
            continue
        o = objects.setdefault((w.kind, w.name), {"kind": w.kind, "name": w.name, "steps": [], "writes": 0})
        o["writes"] += 1
        o["maxRequestBytes"] = max(o.get("maxRequestBytes", 0), w.request_bytes)
        if w.step not in o["steps"]:
            o["steps"].append(w.step)
        o["deleted"] = w.verb == "delete"
    for (kind, name), o in objects.items():
        if o["deleted"]:
            continue
        if kind == "ConfigMap":
            got = kube.read_config_map(ns, name)
            assert got is not None
            text_bytes = sum(len(k) + len(v.encode()) for k, v in (got.get("data") or {}).items())
            binary = sum(len(k) + len(base64.b64decode(v)) for k, v in (got.get("binaryData") or {}).items())
            o["dataBytes"] = text_bytes + binary
        else:
            got = kube.get_custom(GROUP, VERSION, ns, kind, name)
            assert got is not None
        o["objectJsonBytes"] = len(json.dumps(got, separators=(",", ":")).encode())

    result.update(
        partitions=len(snap.partitions),
        brokers=len(snap.brokers),
        planEntries=len(plan_review_entries(execution)),
        generatedS=generated,
        baseKb=base_kb,
        steps=[
            {
                "name": s.name,
                "start": s.start,
                "end": s.end,
                "seconds": s.seconds,
                "peakKb": s.peak_kb,
                "parts": s.parts,
            }
            for s in steps
        ],
        writes=[w.__dict__ for w in kube.writes if w.step != "setup"],
        objects=list(objects.values()),
        probes={"thread": thread_samples, "process": process_samples},
        ruMaxRssKb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    )

    # ---- clean up: the namespace's objects (the rig has no controller-manager to empty a namespace) ---
    for _, name in list(kube.config_map_names(ns, "app.kubernetes.io/managed-by=kafka-placement-operator")):
        KubeGateway.delete_config_map(kube, ns, name)
    for kind in ("BrokerDecommission", "LogDirCordon", "PlacementPolicy", "KafkaCluster"):
        for b in kube.list_custom(GROUP, VERSION, ns, PLURALS[kind]):
            kube.custom.delete_namespaced_custom_object(
                GROUP, VERSION, ns, PLURALS[kind], b["metadata"]["name"]
            )
    kube.core.delete_namespace(ns)
    return result


def plan_review_entries(execution: Any) -> tuple[Any, ...]:
    partitions: tuple[Any, ...] = execution.plan.plan.partitions
    return partitions


# ---- reporting ---------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def waits_in(samples: list[list[float]], start: float, end: float) -> list[float]:
    """The waits (end - due) of the patches due within [start, end) or still waiting at ``start``."""
    return [e - d for d, _, e in samples if (start <= d < end) or (d < start < e)]


def lines_for(r: dict[str, Any]) -> list[str]:
    size = f"{r['partitions'] // 1000}k x {r['brokers']}"
    steps = r["steps"]
    probes = r["probes"]
    rows = []
    for s in steps:
        wt = waits_in(probes["thread"], s["start"], s["end"])
        wp = waits_in(probes["process"], s["start"], s["end"])
        writes = [w for w in r["writes"] if w["step"] == s["name"]]
        written = sum(w["request_bytes"] for w in writes if w["verb"] != "delete")
        parts = "; ".join(f"{k} {v}" if isinstance(v, int) else f"{k} {v:.2f}" for k, v in s["parts"].items())
        rows.append(
            f"| {size} | {s['name']} | {s['seconds']:.2f} | {s['peakKb'] / 1024:.0f} | {len(writes)} | "
            f"{written / 1e6:.2f} | {max(wt, default=0):.2f} | {max(wp, default=0):.2f} | {parts} |"
        )
    return rows


def object_rows(r: dict[str, Any]) -> list[str]:
    size = f"{r['partitions'] // 1000}k x {r['brokers']}"
    rows = []
    chunks: list[dict[str, Any]] = []
    for o in r["objects"]:
        if o["deleted"]:
            continue
        m = re.match(r"(kafka-placement-bench-blob-(?:plan|baseline)-[0-9a-f]+)-(\d+)$", o["name"])
        if m and o["kind"] == "ConfigMap":
            chunks.append({**o, "blob": m.group(1)})
            continue
        rows.append(_object_row(size, KINDS.get(o["kind"], o["kind"]), o["name"], o, 1))
    by_blob: dict[str, list[dict[str, Any]]] = {}
    for c in chunks:
        by_blob.setdefault(c["blob"], []).append(c)
    for blob, cs in by_blob.items():
        largest = max(cs, key=lambda c: c["dataBytes"])
        total = sum(c["dataBytes"] for c in cs)
        what = f"{blob}-0..{len(cs) - 1} (the largest chunk; {total} bytes in all)"
        rows.append(_object_row(size, "ConfigMap", what, largest, len(cs)))
    return rows


def _object_row(size: str, kind: str, name: str, o: dict[str, Any], count: int) -> str:
    data = o.get("dataBytes")
    counted = data if data is not None else o["objectJsonBytes"]
    margin = MIB - counted
    return (
        f"| {size} | {kind} | {name} | {count} | {o['writes']} | {data if data is not None else '-'} | "
        f"{o['objectJsonBytes']} | {margin} ({margin / MIB:.0%}) | {', '.join(o['steps'])} |"
    )


def probe_summary(r: dict[str, Any]) -> list[str]:
    out = []
    size = f"{r['partitions'] // 1000}k x {r['brokers']}"
    start, end = r["steps"][0]["start"], r["steps"][-1]["end"]
    for who in ("thread", "process"):
        samples = r["probes"][who]
        ws = waits_in(samples, start, end)
        calls = [e - s for d, s, e in samples if start <= d < end]
        worst = max(samples, key=lambda x: x[2] - x[0]) if samples else None
        during = "-"
        if worst is not None:
            during = next(
                (s["name"] for s in r["steps"] if s["start"] <= worst[0] < s["end"]), "between steps"
            )
        out.append(
            f"| {size} | {who} | {len(ws)} | {percentile(ws, 0.5):.3f} | {percentile(ws, 0.99):.3f} | "
            f"{max(ws, default=0):.3f} | {max(calls, default=0):.3f} | {during} |"
        )
    return out


def install_crds(kubeconfig: str) -> None:
    """crds/*.yaml applied and established (as tests/e2e/conftest.py does), with the rig's kubectl."""
    rig = Path(kubeconfig).with_name("rig.json")
    kubectl = json.loads(rig.read_text())["k8s"]["kubectl"] if rig.exists() else "kubectl"
    base = [kubectl, "--kubeconfig", kubeconfig]
    subprocess.run(
        [*base, "apply", "--server-side", "-f", str(ROOT / "crds")], check=True, capture_output=True
    )
    crds = [f"crd/{plural}.{GROUP}" for plural in PLURALS.values()]
    subprocess.run([*base, "wait", "--for", "condition=established", *crds, "--timeout=60s"], check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000000:1000", help="partitions:brokers,...")
    ap.add_argument("--probe-interval", type=float, default=0.5)
    ap.add_argument("--kubeconfig", default=None, help="default: the k8s rig's (rig.json under $KP_RIG_DIR)")
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "benchmarks.md"))
    ap.add_argument("--no-doc", action="store_true", help="print the section, leave docs/benchmarks.md alone")
    ap.add_argument("--json", default=None, help="also write the raw measurements here")
    args = ap.parse_args()
    command = "python tests/bench/run_operator_path.py " + " ".join(sys.argv[1:])
    kubeconfig = args.kubeconfig
    if kubeconfig is None:
        rig = Path(os.environ.get("KP_RIG_DIR", str(ROOT / ".rig"))) / "rig.json"
        if not rig.exists():
            sys.exit(f"{rig} not found: start the k8s rig (scripts/rig.sh up k8s) or pass --kubeconfig")
        kubeconfig = json.loads(rig.read_text())["k8s"]["kubeconfig"]
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--", "operator"], capture_output=True, text=True
    ).stdout.strip()
    install_crds(kubeconfig)
    results = []
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    load_before = os.getloadavg()[0]
    for spec in args.sizes.split(","):
        n, brokers = (int(x) for x in spec.split(":"))
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, __file__, "--child", f"{n}:{brokers}", kubeconfig, str(args.probe_interval)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            sys.exit(f"size {spec} failed:\n{proc.stderr[-4000:]}")
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        r["wallS"] = time.perf_counter() - started
        results.append(r)
        print(f"{spec}: done in {r['wallS']:.0f} s", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results))
    lines = section(results, command.strip(), when, commit, bool(dirty), load_before, args.probe_interval)
    print("\n".join(lines))
    if not args.no_doc:
        write_section(Path(args.output), lines, HEADING)


def section(
    results: list[dict[str, Any]],
    command: str,
    when: str,
    commit: str,
    dirty: bool,
    load: float,
    interval: float,
) -> list[str]:
    head = [
        HEADING,
        "",
        f"Produced by `{command}` on {when} at commit {commit}"
        + (" (with uncommitted changes under operator/ by other work)" if dirty else "")
        + f", {os.cpu_count()} cores (load average {load:.1f} at the start; the machine is shared), "
        "against the k8s rig's kube-apiserver and etcd on the same host. A synthetic snapshot "
        "(tests/bench/generator.py, scenario `all`, RF 3; Kafka stands aside) goes through the operator's "
        "own functions and its real `KubeGateway`, `decide` choosing each action, in a fresh process: the "
        "reconcile that plans (`ReconcilePass._plan`: `plan_cluster`, local engine; `_review`: the plan's "
        "blob, `plan_review.publish`), the intents' statuses (`Reconciler.publish`), the KafkaCluster's "
        "status (kopf writes it from the handler's result: patched here through the gateway), the user's "
        "approval, the reconcile that starts the execution (the kept plan, `ReconcilePass._start`: "
        "`Execution.create`, `save`) and the first tick's writes (the baseline blob, `executor._validate`'s "
        "read of Kafka replaced by the snapshot). How each step maps: the script's docstring.",
        "",
        "Per step: wall seconds; peak RSS of the operator's process during the step (its high-water mark "
        "reset before each step); Kubernetes writes (creates, replaces, patches, deletes) and the bytes of "
        "their request bodies; the longest wait of a status patch of another KafkaCluster due during the "
        "step, from a thread of the operator's process and from a process of its own (wait = the patch's "
        "end minus when it was due, every "
        f"{interval:.1f} s); the parts of the step, seconds.",
        "",
        "| size | step | wall s | peak RSS MB | writes | MB sent | thread wait max s | process wait max s "
        "| parts s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        head += lines_for(r)
    head += [
        "",
        "Every object the path wrote, read back afterwards: data bytes = what the apiserver's ConfigMap "
        "check counts (keys + values, binaryData decoded; the limit is 1 MiB = 1048576), JSON bytes = the "
        "object as served (binaryData in base64); margin = 1 MiB minus data bytes (custom resources: minus "
        "the JSON). "
        "Blob chunks of one blob are one row (their largest).",
        "",
        "| size | kind | object | objects | writes | data bytes | JSON bytes | margin to 1 MiB | steps |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        head += object_rows(r)
    head += [
        "",
        "Apart from the path, the KafkaCluster status `status.cluster_status` makes for as many brokers with "
        "more log dirs each (JBOD), patched onto a KafkaCluster of its own and read back (a snapshot of that "
        "shape with 3 partitions per broker: the status lists every broker's dirs, its size follows "
        "brokers x dirs, not partitions). Kubernetes bounds a custom resource by etcd's request limit "
        "(1.5 MiB by default), not by the 1 MiB of a ConfigMap; margin below = 1 MiB minus the JSON.",
        "",
        "| brokers | dirs per broker | status patch bytes | object JSON bytes | margin to 1 MiB "
        "| apiserver |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        for w in r.get("widths", []):
            stored = w["stored"]
            margin = f"{MIB - stored} ({(MIB - stored) / MIB:.0%})" if stored is not None else "-"
            outcome = "stored" if w["error"] is None else f"refused: {w['error']}"
            head.append(
                f"| {w['brokers']} | {w['dirs']} | {w['sent']} | {stored if stored is not None else '-'} | "
                f"{margin} | {outcome} |"
            )
    head += [
        "",
        "Status patches of another KafkaCluster during the whole path (the first step's start to the last's "
        "end): waits in seconds; call s = the longest patch call itself.",
        "",
        "| size | probe | patches | wait p50 | wait p99 | wait max | call max | worst during |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        head += probe_summary(r)
    head += [""]
    for r in results:
        total = r["steps"][-1]["end"] - r["steps"][0]["start"]
        head.append(
            f"{r['partitions'] // 1000}k x {r['brokers']}: plan {r['planId']}, {r['planEntries']} plan "
            f"entries, plan blob {r['plan_blob_bytes'] / 1e6:.1f} MB of JSON before gzip; the path took "
            f"{total:.0f} s (generating the snapshot {r['generatedS']:.0f} s before it, not counted; the "
            f"process held {r['baseKb'] / 1024:.0f} MB with the snapshot before the path, peak "
            f"{r['ruMaxRssKb'] / 1024:.0f} MB in all)."
        )
    head.append("")
    return head


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--probe":
        kubeconfig, ns, name, interval, stop = sys.argv[2:7]
        from kafka_placement.kube.gateway import load_config

        samples = probe_loop(
            KubeGateway(load_config(kubeconfig)), ns, name, float(interval), lambda: Path(stop).exists()
        )
        print(json.dumps(samples))
    elif len(sys.argv) > 1 and sys.argv[1] == "--child":
        size, kubeconfig, interval = sys.argv[2:5]
        n, brokers = (int(x) for x in size.split(":"))
        print(json.dumps(child(n, brokers, kubeconfig, float(interval))))
    else:
        main()
