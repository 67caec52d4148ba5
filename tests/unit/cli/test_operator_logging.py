"""The operator's log: kopf's line for every successful timer run is dropped, everything else kept."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from kafka_placement.cli.operator_cmds import TimerSuccesses


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
