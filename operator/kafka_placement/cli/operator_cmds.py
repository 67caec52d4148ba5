"""``kafka-placement operator``: run the kopf operator (handlers in ``kafka_placement.handlers``); its flags
are in ``operator_args``, which imports this module only when the command runs.

Watches the given namespaces or the whole cluster, serves Prometheus metrics, and reconciles each
KafkaCluster every ``--interval`` seconds. Kubernetes credentials: in-cluster service account, else
``KUBECONFIG``/~/.kube/config.

Leader election (default on; reconcile/leader.py): the process first competes for a
``coordination.k8s.io/v1`` Lease and waits as a standby until it holds it; then it claims the execution
records (bumps their resourceVersion, so no earlier leader's save can win) and runs kopf. kopf runs
standalone (no kopf peering), in the leader only. If the Lease is lost, kopf is stopped and the command
exits 1, so the Deployment restarts the container as a standby; on SIGTERM the leader releases the Lease,
so a standby takes over at once.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from ..kafka.gateway import LIBRDKAFKA_LOGGER
from ..kube import key_files
from ..model.errors import BadInputError, PlacementError
from ..spark.memory import parse_size

log = logging.getLogger("kafka_placement.operator")
SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def _lease_namespace(args: argparse.Namespace) -> str:
    """--lease-namespace, else $POD_NAMESPACE, else the pod's own namespace, else the first watched
    namespace, else "default" (as kubectl does), so `operator --all-namespaces` works outside a pod too."""
    ns = args.lease_namespace or os.environ.get("POD_NAMESPACE") or ""
    if not ns and os.path.isfile(SERVICE_ACCOUNT_NAMESPACE):  # in a pod without the downward API env
        with open(SERVICE_ACCOUNT_NAMESPACE, encoding="utf-8") as f:
            ns = f.read().strip()
    if not ns:
        ns = args.namespace[0] if args.namespace else "default"
        log.info("leader election: Lease in namespace %s (--lease-namespace to choose)", ns)
    return str(ns)


class TimerSuccesses(logging.Filter):
    """Drops kopf's INFO line for every successful timer run: the reconcile ticks every second per
    KafkaCluster, which buried what the operator did under "Timer 'reconcile_cluster' succeeded." lines.
    A timer's failure, retry or warning still shows, and so does everything with ``--verbose``."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO:
            return True
        message = record.getMessage()
        return not (message.startswith("Timer '") and message.endswith("' succeeded."))


class ClientRepeats(logging.Filter):
    """Lets through one record of each kind per ``window`` seconds from the Kafka clients' loggers
    (kafka-python's ``kafka.*``, librdkafka's through the gateway): a broker that stays down made them log
    the same connection failure on every reconcile, three ERROR lines every 2 s for as long as it was
    down, which buried what the operator did. A kind is the logger and the message with its numbers
    blanked (librdkafka counts the errors it suppressed, and ports and backoffs vary). Other loggers are
    untouched; at most ``MAX_KINDS`` kinds are remembered (then forgotten all at once)."""

    MAX_KINDS = 1000
    _NUMBERS = re.compile(r"\d+(\.\d+)?")

    def __init__(self, window: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.window, self.clock = window, clock
        self._seen: dict[tuple[str, str], float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if not (record.name == "kafka" or record.name.startswith(("kafka.", LIBRDKAFKA_LOGGER))):
            return True
        key = (record.name, self._NUMBERS.sub("#", record.getMessage()))
        now, last = self.clock(), self._seen.get(key)
        if last is not None and now - last < self.window:
            return False
        if len(self._seen) >= self.MAX_KINDS:
            self._seen.clear()
        self._seen[key] = now
        return True


def cmd_operator(args: argparse.Namespace) -> int:
    if not args.namespace and not args.all_namespaces:
        raise BadInputError("give --namespace NS (repeatable) or --all-namespaces", "operator")
    if args.namespace and args.all_namespaces:
        raise BadInputError("--namespace and --all-namespaces exclude each other", "operator")
    from ..reconcile.leader import LeaseTimings

    timings = LeaseTimings(args.lease_duration, args.renew_deadline, args.renew_period, args.retry_period)
    if args.leader_election:
        problems = timings.problems()
        if problems:
            raise BadInputError("; ".join(problems), "operator --lease-duration/--renew-*/--retry-period")
        lease_ns = _lease_namespace(args)
    os.environ["KP_RECONCILE_INTERVAL"] = str(args.interval)
    os.environ["KP_RESYNC_SECONDS"] = str(args.resync_seconds)
    if args.max_memory is not None:
        parse_size(args.max_memory)  # refused here, not at the first plan
        os.environ["KP_MAX_MEMORY"] = args.max_memory
    import kopf

    from ..handlers import health, register  # registers every handler with kopf
    from ..reconcile import leader, metrics

    del register
    kopf.configure(verbose=args.verbose)
    logging.getLogger("kafka").setLevel(logging.WARNING)  # kafka-python logs every connection at INFO
    repeats = ClientRepeats()
    for handler in logging.getLogger().handlers:
        handler.addFilter(repeats)
    if not args.verbose:
        logging.getLogger("kopf.objects").addFilter(TimerSuccesses())
    if args.metrics_port:  # metrics, /healthz and /readyz
        health.serve(args.metrics_port, args.metrics_address)
    run: dict[str, Any] = {
        "standalone": True,
        "clusterwide": bool(args.all_namespaces),
        "namespaces": args.namespace or (),
        "liveness_endpoint": args.liveness or None,
    }
    bounded_shutdown(args.shutdown_grace_seconds)
    if not args.leader_election:
        leader.install(leader.Unelected())
        metrics.watch_leadership(lambda: True)
        kopf.run(**run)
        return 0
    return _run_elected(args, timings, lease_ns, run)


def bounded_shutdown(grace: float) -> None:
    """Bound the time from a stop (SIGTERM, SIGINT, a lost Lease) to the exit. kopf stops its tasks and
    then waits for the handler threads, and a reconcile thread may be inside a Kafka or Kubernetes call
    that does not answer (a broker down, a network cut) for its whole timeout, or retry it: the process
    would outlive its stop by that long, past a pod's grace period (then SIGKILLed) or a test's wait.
    When kopf begins to stop, a timer is armed: still running ``grace`` seconds later, the process exits
    at once (code 1), as a crash would, which is safe: every execution resumes from its record, no move
    is sent twice (docs/architecture.md) and the next leader re-reads everything. 0: no bound."""
    if grace <= 0:
        return
    import kopf

    @kopf.on.cleanup(id="bounded-shutdown")
    async def arm(**_: object) -> None:
        def force() -> None:
            log.warning(
                "still running %g s after the stop was asked (a call to Kafka or Kubernetes that does not "
                "answer): exiting now; executions resume from their records",
                grace,
            )
            logging.shutdown()
            key_files.remove_own()  # (os._exit runs no exit handler)
            os._exit(1)

        timer = threading.Timer(grace, force)
        timer.daemon = True  # a process that ends in time is not held by it
        timer.start()


def _run_elected(args: argparse.Namespace, timings: Any, lease_ns: str, run: dict[str, Any]) -> int:
    from ..handlers import health
    from ..kube.gateway import KubeGateway
    from ..reconcile import leader, metrics
    from ..reconcile.record_store import claim_records

    kube = KubeGateway.from_config()
    identity = args.identity or leader.default_identity()
    elector = leader.LeaseElector(
        kube.with_own_pool(),  # its own connection pool: used by the elector thread
        lease_ns,
        args.lease_name,
        identity,
        timings,
        on_fenced=metrics.FENCED_WRITES.inc,
    )
    leader.install(elector)
    metrics.watch_leadership(elector.is_leader)
    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    elector.start()
    log.info("standby: waiting for %s (identity %s)", elector.where, identity)
    while not elector.acquired.wait(0.5):
        if elector.running():  # a dead elector thread stops the beat: /healthz fails, the pod restarts
            health.HEALTH.beat("standby")
        if stopping.is_set():
            elector.stop(release=False)
            log.info("stopped as a standby")
            return 0
    for s, handler in previous.items():
        signal.signal(s, handler)
    if stopping.is_set():
        elector.stop(release=True)
        return 0
    try:  # before driving: no save prepared by an earlier leader can win any more
        claimed = claim_records(kube, args.namespace or None, identity)
        log.info("leader %s claimed %d execution record(s): %s", identity, len(claimed), ", ".join(claimed))
        asyncio.run(_drive(elector, run))
    finally:
        lost = elector.lost.is_set()
        elector.stop(release=not lost)
    if lost:
        raise PlacementError(
            f"{identity} lost {elector.where} (now held by {elector.holder or 'nobody'}); it stopped driving "
            "and exits so that a restart rejoins as a standby"
        )
    return 0


async def _drive(elector: Any, run: dict[str, Any]) -> None:
    """kopf in this thread's new event loop, stopped (gracefully) when the elector loses the Lease. The
    stop flag is an asyncio.Event set from the elector thread: a threading.Event would park a thread of
    the loop's default executor in ``wait()`` forever and block the loop's shutdown."""
    import kopf

    loop = asyncio.get_running_loop()
    lost = asyncio.Event()
    elector.on_lost(lambda: loop.call_soon_threadsafe(lost.set))

    @kopf.on.cleanup(id="stop-flag")
    async def stopping(**_: object) -> None:
        # kopf stopped for another reason (a signal): its task waiting on the flag would otherwise be
        # left running, and kopf waits 5 s for such tasks before it cancels them (every SIGTERM, every
        # rollout held the Lease 5 s longer)
        lost.set()

    await kopf.operator(**run, stop_flag=lost)
