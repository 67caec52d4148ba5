"""What every test process shares, set before any test starts a JVM.

The Spark JVMs that tests start on this machine (in-process sessions, the CLI's and the operator's
``--engine spark`` runs, spark-submit) compile with the client JIT only and collect with the serial
collector: a JVM that lives seconds to a minute then spends about a third less CPU (docs/benchmarks.md,
"make test and set-up times"), and the tests check plans, not speed. The rig's brokers run the same
flags (tests/rig/kafka_rig.py); the Spark pods get them as ``extraJavaOptions``
(tests/e2e/test_spark_pods.py). A value already in the environment wins.
"""

from __future__ import annotations

import os

TEST_JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData"
os.environ.setdefault("SPARK_SUBMIT_OPTS", TEST_JVM_OPTS)
