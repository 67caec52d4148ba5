"""What every test process shares, set before any test starts a JVM.

The Spark JVMs that tests start on this machine (in-process sessions, the CLI's and the operator's
``--engine spark`` runs, spark-submit) compile with the client JIT only and collect with the serial
collector: a JVM that lives seconds to a minute then spends about a third less CPU (docs/benchmarks.md,
"make test and set-up times"), and the tests check plans, not speed. The rig's brokers run the same
flags (tests/rig/kafka_rig.py); the Spark pods get them as ``extraJavaOptions``
(tests/e2e/test_spark_pods.py). The drivers also map a class-data archive when `make rig-build` wrote one
(tests/rig/spark_cds.py). A value already in the environment wins.
"""

from __future__ import annotations

import os

from tests.rig import cpu_per_test, spark_cds

TEST_JVM_OPTS = spark_cds.TEST_JVM_OPTS
os.environ.setdefault("SPARK_SUBMIT_OPTS", " ".join([TEST_JVM_OPTS, *spark_cds.options()]))


# ------------------------------------------------------- the cluster guard (tests/rig/cluster_guard.py)

import warnings  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from typing import TYPE_CHECKING  # noqa: E402

import pytest  # noqa: E402

if TYPE_CHECKING:
    pass

_GUARD_KEY = pytest.StashKey["Guard"]()
_GUARDED = ("kafka_rig", "kafka_legacy_rig", "secure_rig")  # the fixtures of a lane's shared clusters


@pytest.fixture(autouse=True)
def cluster_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test on a shared Kafka cluster (main, legacy, secure), whether it passed or not: the
    cluster is put back as the rig made it (no throttle, claim, cordon or reassignment left) and what had
    to be cleaned is reported (tests/rig/cluster_guard.py). Finalized after the test's own fixtures, so its
    operator is stopped by then. A test marked ``keeps_cordons`` hands its state to a later test of its
    module on purpose: that module's last test is guarded."""
    yield
    guarded = [name for name in _GUARDED if name in request.fixturenames]
    if not guarded or request.node.get_closest_marker("keeps_cordons") is not None:
        return
    from tests.rig.cluster_guard import Guard

    from kafka_placement.kafka.connection import ConnectionSettings

    guard = request.config.stash.setdefault(_GUARD_KEY, Guard())
    for name in guarded:
        rig = request.getfixturevalue(name)
        if name == "secure_rig":
            settings = rig.admin_settings()
        else:
            settings = ConnectionSettings(bootstrap_servers=rig.bootstrap_servers)
        guard.check(request.node.nodeid, name, settings, lambda m: warnings.warn(m, stacklevel=1))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """The guard's report at the end of a lane's output (nothing when no shared cluster was used)."""
    guard = config.stash.get(_GUARD_KEY, None)
    if guard is not None:
        for line in guard.summary():
            terminalreporter.write_line(line)


# ------------------------------------------------- CPU per test (KP_TEST_CPU=DIR; tests/rig/cpu_per_test.py)


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(cpu_per_test.ENV) and not config.pluginmanager.is_registered(cpu_per_test):
        config.pluginmanager.register(cpu_per_test, "kp-cpu-per-test")
