"""Fuzz suite, part 3: ``execute`` and ``verify`` with bad plan files and flags that fail before they
connect (bootstrap 127.0.0.1:1 is unreachable, so a case that wrongly gets as far as connecting shows
up as exit 1, not as a hang: the command config bounds the connection timeouts to a second).
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.fuzz_support import (
    FUZZ,
    GOLDEN,
    HOSTILE_JSON,
    HUGE,
    check_contract,
    dump_json,
    golden,
    listing,
    run_cli,
    run_cli_process,
    scratch,
    write_bytes,
)

pytestmark = pytest.mark.timeout(120)

UNREACHABLE = "127.0.0.1:1"
FAST_FAIL = "socket.connection.setup.timeout.ms=1000\nrequest.timeout.ms=1000\n"  # 1000: librdkafka's least

# (field, value) pairs every one of which makes a plan entry invalid
BREAKING: dict[str, tuple[Any, ...]] = {
    "topic": ("", ".", "..", "a/b", "a" * 250, HUGE, 1, None, ["t"]),
    "partition": (-1, 2**31, 2**64, "0", 1.5, math.nan, math.inf, None, True),
    "replicas": ([], [1, 1], [2**31], [-1], ["1"], None, HUGE, [math.nan], list(range(3)) * 2),
    "log_dirs": (["relative"], [1], "x", [None], [], ["/a"] * 7, [HUGE]),
}


@st.composite
def broken_plans(draw: st.DrawFn) -> Any:
    plan = copy.deepcopy(golden(draw(st.sampled_from(("decommission", "drain"))), "plan.json"))
    entries = plan["partitions"]
    for _ in range(draw(st.integers(1, 3))):
        entry = entries[draw(st.integers(0, len(entries) - 1))]
        fld = draw(st.sampled_from(sorted(BREAKING)))
        entry[fld] = draw(st.sampled_from(BREAKING[fld]))
    if draw(st.booleans()):
        plan["version"] = draw(st.sampled_from((2, "1", math.nan, None, 2**70)))
    return plan


def kafka_argv(command: str, plan: Path, state: Path, config: Path) -> list[str]:
    argv = [command, "--bootstrap-server", UNREACHABLE, "--command-config", str(config)]
    return [*argv, "--plan", str(plan), "--state", str(state)]


@settings(FUZZ, max_examples=60)
@given(plan=broken_plans(), command=st.sampled_from(("execute", "verify")))
def test_execute_and_verify_refuse_broken_plans_before_connecting(plan: Any, command: str) -> None:
    with scratch() as (inp, out):
        p = write_bytes(inp, "plan.json", dump_json(plan).encode())
        config = write_bytes(inp, "client.properties", FAST_FAIL.encode())
        run = run_cli(kafka_argv(command, p, out / "state.json", config))
        check_contract(run, names=[str(p)], outdir=out, before=set(), codes=frozenset({2}))
        assert str(p) in run.err


@pytest.mark.parametrize("case", sorted(HOSTILE_JSON))
def test_execute_refuses_hostile_plan_files(tmp_path: Path, case: str) -> None:
    p = write_bytes(tmp_path, "plan.json", HOSTILE_JSON[case])
    config = write_bytes(tmp_path, "client.properties", FAST_FAIL.encode())
    out = tmp_path / "out"
    out.mkdir()
    run = run_cli(kafka_argv("execute", p, out / "state.json", config))
    check_contract(run, names=[str(p)], outdir=out, before=set(), codes=frozenset({2}))


@pytest.mark.parametrize(
    "flags",
    [
        ["--max-moves-per-broker", "0"],
        ["--max-moves-per-broker", "-3"],
        ["--max-moves", "0"],
        ["--throttle", "0"],
        ["--throttle", "-1"],
        ["--throttle", "1" + "0" * 5000],
        ["--max-moves", "x" * 100_000],
    ],
)
def test_execute_refuses_bad_limits_before_connecting(tmp_path: Path, flags: list[str]) -> None:
    config = write_bytes(tmp_path, "client.properties", FAST_FAIL.encode())
    argv = kafka_argv("execute", GOLDEN / "drain" / "plan.json", tmp_path / "state.json", config)
    run = run_cli([*argv, *flags])
    check_contract(run, names=[flags[0]], outdir=tmp_path, before=listing(tmp_path), codes=frozenset({2}))


@pytest.mark.parametrize(
    "properties",
    [
        "socket.connection.setup.timeout.ms=99999999999999\n",
        "request.timeout.ms=0\n",
        "request.timeout.ms=-5\n",
        "request.timeout.ms=1e3\n",
        "request.timeout.ms=\u00b2\n",  # a Unicode digit
        "request.timeout.ms=" + "9" * 5000 + "\n",
        "socket.connection.setup.timeout.ms=300001\n",
        "bootstrap.servers=" + "h" * 100_000 + ":1\n",
        "x" * 100_000 + "=1\n",
        "security.protocol=" + "S" * 100_000 + "\n",
    ],
)
@pytest.mark.parametrize("command", ["execute", "verify"])
def test_unusable_client_properties_are_bad_input_naming_the_file(
    tmp_path: Path, properties: str, command: str
) -> None:
    config = write_bytes(tmp_path, "client.properties", properties.encode())
    argv = kafka_argv(command, GOLDEN / "drain" / "plan.json", tmp_path / "state.json", config)
    if "bootstrap.servers" in properties:
        argv = [a for a in argv if a not in ("--bootstrap-server", UNREACHABLE)]
    run = run_cli(argv)
    check_contract(run, names=[str(config)], outdir=tmp_path, before=listing(tmp_path), codes=frozenset({2}))
    assert str(config) in run.err


def test_verify_with_a_broken_plan_is_exit_2_from_the_real_command(tmp_path: Path) -> None:
    write_bytes(tmp_path, "plan.json", b'{"version": 1, "partitions": [{"topic": "t", "partition": NaN}]}')
    run = run_cli_process(
        ["verify", "--bootstrap-server", UNREACHABLE, "--plan", "plan.json", "--state", "s.json"],
        cwd=tmp_path,
        timeout=30,
    )
    assert run.code == 2 and "plan.json" in run.err and "Traceback" not in run.err, run.err
    assert listing(tmp_path) == {"plan.json"}
