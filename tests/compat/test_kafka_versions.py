"""The compatibility smoke (tests/compat/smoke.py) as a test, one per Kafka version: each brings a 3-node
cluster of that release up, runs the CLI's move, cancel, cordon and dead-broker checks on it and tears it
down (about a minute each). Not part of `make test` (its lanes run tests/integration and tests/e2e only)
and skipped unless KP_COMPAT=1:

    KP_COMPAT=1 .venv/bin/python -m pytest tests/compat -q -m compat
"""

from __future__ import annotations

import argparse
import os

import pytest
from tests.compat import smoke

pytestmark = [
    pytest.mark.compat,
    pytest.mark.skipif(os.environ.get("KP_COMPAT") != "1", reason="the compatibility smoke: KP_COMPAT=1"),
]


@pytest.mark.parametrize("version", smoke.VERSIONS)
def test_the_cli_works_on_kafka(version: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    args = argparse.Namespace(
        rig_dir=str(tmp_path_factory.mktemp("rig")),
        work=str(tmp_path_factory.mktemp("work")),
        base_port=int(os.environ.get("KP_COMPAT_BASE_PORT", "19092")),
        controller_base_port=int(os.environ.get("KP_COMPAT_CONTROLLER_BASE_PORT", "19192")),
        partition_bytes=2_000_000,
    )
    result = smoke.smoke_version(version, args)
    failed = {op: o.detail for op, o in result.outcomes.items() if o.status == "fail"}
    assert not failed, failed
