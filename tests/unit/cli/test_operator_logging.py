"""The operator's log: kopf's line for every successful timer run is dropped, the Kafka clients' repeats
throttled to one per kind per window, everything else kept."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from kafka_placement.cli.operator_cmds import ClientRepeats, TimerSuccesses
from kafka_placement.kafka.gateway import LIBRDKAFKA_LOGGER


@pytest.fixture
def kopf_objects(caplog: pytest.LogCaptureFixture) -> Iterator[logging.Logger]:
    logger = logging.getLogger("kopf.objects")
    quiet = TimerSuccesses()
    logger.addFilter(quiet)
    caplog.set_level(logging.DEBUG, logger="kopf.objects")
    yield logger
    logger.removeFilter(quiet)


def test_successful_timer_runs_are_not_logged(
    kopf_objects: logging.Logger, caplog: pytest.LogCaptureFixture
) -> None:
    kopf_objects.info("Timer 'reconcile_cluster' succeeded.")
    kopf_objects.info("Timer %r succeeded.", "sample_traffic")  # formatted as kopf may
    assert caplog.messages == []


@pytest.mark.parametrize(
    ("level", "message"),
    [
        (
            logging.ERROR,
            "Timer 'reconcile_cluster' failed with an exception and will try again in 60 seconds",
        ),
        (logging.INFO, "Handler 'on_create' succeeded."),  # a handler that runs once: kept
        (logging.INFO, "Timer 'reconcile_cluster' is invoked."),
        (logging.WARNING, "Timer 'reconcile_cluster' succeeded."),  # only INFO is dropped
    ],
)
def test_everything_else_is_kept(
    kopf_objects: logging.Logger, caplog: pytest.LogCaptureFixture, level: int, message: str
) -> None:
    kopf_objects.log(level, message)
    assert caplog.messages == [message]


def _record(name: str, message: str) -> logging.LogRecord:
    return logging.LogRecord(name, logging.ERROR, __file__, 1, message, None, None)


def test_a_kafka_clients_repeated_failure_is_logged_once_per_window() -> None:
    # a broker that stays down: kafka-python and librdkafka log the same failure on every reconcile
    now = [0.0]
    repeats = ClientRepeats(window=300.0, clock=lambda: now[0])
    py = "Connection failed: KafkaConnectionError: 111 ECONNREFUSED"
    rd = "FAIL [thrd:127.0.0.1:24094/3]: Connect failed (after 0ms, {} identical error(s) suppressed)"
    seen = []
    for tick in range(150):  # 5 minutes of reconciles every 2 s
        now[0] = tick * 2.0
        seen.append(repeats.filter(_record("kafka.net.manager", py)))
        seen.append(repeats.filter(_record(LIBRDKAFKA_LOGGER, rd.format(tick * 977))))
    assert seen.count(True) == 2  # one of each kind
    now[0] = 301.0
    assert repeats.filter(_record("kafka.net.manager", py))  # the next window shows it again


def test_other_loggers_and_other_messages_are_untouched() -> None:
    repeats = ClientRepeats(window=300.0, clock=lambda: 0.0)
    ours = _record("kafka_placement.reconcile.reconciler", "reconcile failed")
    assert all(repeats.filter(ours) for _ in range(3))  # the operator's own lines are never dropped
    assert repeats.filter(_record("kafka.conn", "broker 1 refused"))
    assert repeats.filter(_record("kafka.conn", "broker 1 timed out"))  # another kind: shown
    assert not repeats.filter(_record("kafka.conn", "broker 2 refused"))  # numbers blanked: a repeat
