"""End to end: a stop is never held by a reconcile stuck on a broker that does not answer.

The operator as a process, its KafkaCluster's bootstrap a "broker" that accepts connections and never
answers (tests/integration/conftest.py, ``SilentBroker``): the reconcile's first Kafka call waits its whole
request timeout (30 s). SIGTERM arrives while it waits. kopf stops its tasks, then would wait for that
thread; the bounded shutdown (``--shutdown-grace-seconds``, here 3 s through its environment variable)
ends the process instead, as a crash would, saying so in the log: the process is gone well within a pod's
grace period (before the fixture's 30 s wait), and no thread outlives it. This is what held the operator
of the correlated-failure test past its teardown on a loaded machine (issue 51, 2026-12-02).

Cost: about 15 s (an operator start, one stuck reconcile, a bounded stop).
"""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest
from tests.e2e.conftest import Operator
from tests.e2e.test_operator import apply, cluster_manifest
from tests.integration.conftest import SilentBroker, wait_for

pytestmark = [pytest.mark.k8s]


@pytest.fixture
def operator_env() -> dict[str, str]:
    return {"KAFKA_PLACEMENT_SHUTDOWN_GRACE_SECONDS": "3"}


def test_a_stop_is_not_held_by_a_reconcile_stuck_on_a_broker_that_never_answers(
    operator: Operator, kubectl: Any, k8s_namespace: str
) -> None:
    with SilentBroker() as silent:
        apply(kubectl, k8s_namespace, cluster_manifest("hung", silent.address))
        # a connection just opened: a reconcile is now inside a call that waits 30 s for an answer
        wait_for(
            "the reconcile's call to the silent broker",
            lambda: any(time.monotonic() - t < 2 for t in silent.opened),
            timeout=60,
            every=0.1,
        )
        proc = operator.proc
        assert proc is not None and proc.poll() is None
        operator.kill(signal.SIGTERM)  # waits for the exit, 30 s at most (a TimeoutExpired fails the test)
    assert proc.returncode == 1, proc.returncode  # ended by the bound, as a crash would be
    log = operator.log.read_text(errors="replace")
    assert "still running 3 s after the stop was asked" in log, operator.tail()
