"""Fuzz suite, part 1: hostile *documents* against ``plan``, ``evaluate`` and ``place``.

Mutations of the golden snapshots, intents and plans (hypothesis, seeded and bounded) and hand-made
hostile documents (deep nesting, alias bombs, NaN/Infinity, huge integers and strings, duplicate keys,
non-UTF-8); every run must keep the CLI contract (``fuzz_support.check_contract``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.fuzz_support import (
    FUZZ,
    GOLDEN,
    HOSTILE_JSON,
    HOSTILE_YAML,
    SCENARIOS,
    check_contract,
    dump_json,
    dump_yaml,
    golden,
    listing,
    mutated,
    run_cli,
    scratch,
    text_mutated,
    write_bytes,
)

pytestmark = pytest.mark.timeout(120)

scenarios = st.sampled_from(SCENARIOS)


def plan_argv(snapshot: Path, intents: Path, out: Path) -> list[str]:
    return [
        "plan",
        "--snapshot",
        str(snapshot),
        "--intents",
        str(intents),
        "-o",
        str(out / "plan.json"),
        "--summary",
        str(out / "summary.json"),
    ]


@settings(FUZZ, max_examples=120)
@given(data=st.data(), scenario=scenarios, target=st.sampled_from(("snapshot", "intents", "both")))
def test_plan_keeps_the_contract_on_mutated_golden_inputs(
    data: st.DataObject, scenario: str, target: str
) -> None:
    snap: Any = golden(scenario, "snapshot.json")
    docs: Any = golden(scenario, "intents.yaml")
    if target in ("snapshot", "both"):
        snap = data.draw(mutated(snap), label="snapshot")
    if target in ("intents", "both"):
        docs = data.draw(mutated(docs), label="intents")
    with scratch() as (inp, out):
        s = write_bytes(inp, "snapshot.json", dump_json(snap).encode())
        i = write_bytes(inp, "intents.yaml", dump_yaml(docs).encode())
        run = run_cli(plan_argv(s, i, out))
        check_contract(
            run,
            names=[str(s), str(i)],
            outdir=out,
            before=set(),
            outputs=[out / "plan.json", out / "summary.json"],
        )


@settings(FUZZ, max_examples=80)
@given(data=st.data(), scenario=scenarios, with_intents=st.booleans())
def test_evaluate_keeps_the_contract_on_mutated_plans(
    data: st.DataObject, scenario: str, with_intents: bool
) -> None:
    plan = data.draw(mutated(golden(scenario, "plan.json")), label="plan")
    with scratch() as (inp, out):
        p = write_bytes(inp, "plan.json", dump_json(plan).encode())
        argv = ["evaluate", "--snapshot", str(GOLDEN / scenario / "snapshot.json"), "--plan", str(p)]
        if with_intents:
            argv += ["--intents", str(GOLDEN / scenario / "intents.yaml")]
        run = run_cli([*argv, "-o", str(out / "metrics.json")])
        check_contract(run, names=[str(p)], outdir=out, before=set(), outputs=[out / "metrics.json"])


@FUZZ
@given(data=st.data(), scenario=scenarios)
def test_evaluate_with_mutated_intents_checks_them_like_plan(data: st.DataObject, scenario: str) -> None:
    docs = data.draw(mutated(golden(scenario, "intents.yaml")), label="intents")
    with scratch() as (inp, out):
        i = write_bytes(inp, "intents.yaml", dump_yaml(docs).encode())
        snap = str(GOLDEN / scenario / "snapshot.json")
        ev = run_cli(
            [
                "evaluate",
                "--snapshot",
                snap,
                "--plan",
                str(GOLDEN / scenario / "plan.json"),
                "--intents",
                str(i),
            ]
        )
        check_contract(ev, names=[str(i)], outdir=out, before=set(), stdout_json=True)
        pl = run_cli(["plan", "--snapshot", snap, "--intents", str(i), "-o", str(out / "p.json")])
        # the same intents are bad input for both commands or for neither
        assert (ev.code == 2) == (pl.code == 2), (ev.err[:300], pl.err[:300])


@settings(FUZZ, max_examples=60)
@given(
    data=st.data(), scenario=scenarios, role=st.sampled_from(("snapshot.json", "intents.yaml", "plan.json"))
)
def test_plan_and_evaluate_keep_the_contract_on_corrupted_golden_text(
    data: st.DataObject, scenario: str, role: str
) -> None:
    files = {n: (GOLDEN / scenario / n).read_bytes() for n in ("snapshot.json", "intents.yaml", "plan.json")}
    files[role] = data.draw(text_mutated(files[role].decode()), label=role)
    with scratch() as (inp, out):
        paths = {n: write_bytes(inp, n, b) for n, b in files.items()}
        s, i, p = (str(paths[n]) for n in ("snapshot.json", "intents.yaml", "plan.json"))
        if role == "plan.json":
            argv = ["evaluate", "--snapshot", s, "--plan", p, "--intents", i, "-o", str(out / "m.json")]
        else:
            argv = plan_argv(paths["snapshot.json"], paths["intents.yaml"], out)
        run = run_cli(argv)
        check_contract(
            run,
            names=[str(paths[role])] if role != "snapshot.json" or "plan" in argv[0] else [s, i],
            outdir=out,
            before=set(),
            outputs=[out / n for n in ("plan.json", "summary.json", "m.json") if (out / n).exists()],
        )


legal_topics = st.from_regex(r"[a-zA-Z0-9._-]{1,40}", fullmatch=True).filter(lambda t: t not in (".", ".."))
topic_names = st.one_of(
    legal_topics,
    st.sampled_from(("orders", "a.b_c-d", ".", "..", "", "a" * 249, "a" * 250, "bad/topic", "sp ace", "é")),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=20),
)
flag_ints = st.one_of(
    st.integers(1, 12),
    st.sampled_from((-(2**63), -1, 0, 32767, 32768, 2**31 - 1, 2**31, 10**6, 10**6 + 1, 10**40)),
)


@settings(FUZZ, max_examples=80)
@given(
    scenario=scenarios,
    topic=topic_names,
    partitions=flag_ints,
    rf=st.one_of(st.none(), flag_ints),
    start=st.one_of(st.none(), flag_ints),
    mutate=st.booleans(),
    data=st.data(),
)
def test_place_keeps_the_contract_on_hostile_flags_and_snapshots(
    scenario: str,
    topic: str,
    partitions: int,
    rf: int | None,
    start: int | None,
    mutate: bool,
    data: st.DataObject,
) -> None:
    snap: Any = golden(scenario, "snapshot.json")
    if mutate:
        snap = data.draw(mutated(snap, max_mutations=1), label="snapshot")
    if partitions > 2000:  # a legal count is planned in full; keep the suite bounded
        partitions = data.draw(st.sampled_from((2**31, 10**6 + 1, 10**40)), label="huge partitions")
    with scratch() as (inp, out):
        s = write_bytes(inp, "snapshot.json", dump_json(snap).encode())
        argv = ["place", "--snapshot", str(s), "--topic", topic, "--partitions", str(partitions)]
        if rf is not None:
            argv += ["--replication-factor", str(rf)]
        if start is not None:
            argv += ["--start-partition", str(start)]
        argv += ["--intents", str(GOLDEN / scenario / "intents.yaml"), "-o", str(out / "new.json")]
        run = run_cli(argv)
        check_contract(
            run,
            names=[str(s), "--topic", "--partitions", "--replication-factor", "--start-partition"],
            outdir=out,
            before=set(),
            outputs=[out / "new.json"],
        )
        if run.code == 0:
            plan = json.loads((out / "new.json").read_text())
            assert all(0 <= e["partition"] <= 2**31 - 1 for e in plan["partitions"])
            assert all(e["topic"] == topic for e in plan["partitions"])


@pytest.mark.parametrize("case", sorted(HOSTILE_JSON))
@pytest.mark.parametrize("role", ["snapshot", "plan"])
def test_hostile_json_is_bad_input_naming_the_file(tmp_path: Path, case: str, role: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    bad = write_bytes(tmp_path, f"{role}.json", HOSTILE_JSON[case])
    d = GOLDEN / "drain"
    snap, plan = (bad, d / "plan.json") if role == "snapshot" else (d / "snapshot.json", bad)
    run = run_cli(["evaluate", "--snapshot", str(snap), "--plan", str(plan), "-o", str(out / "m.json")])
    check_contract(run, names=[str(bad)], outdir=out, before=set(), codes=frozenset({2}))
    assert str(bad) in run.err


@pytest.mark.parametrize("case", sorted(HOSTILE_YAML))
def test_hostile_yaml_is_bad_input_naming_the_file(tmp_path: Path, case: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    bad = write_bytes(tmp_path, "intents.yaml", HOSTILE_YAML[case])
    d = GOLDEN / "drain"
    run = run_cli(
        ["plan", "--snapshot", str(d / "snapshot.json"), "--intents", str(bad), "-o", str(out / "p.json")]
    )
    # a merge key is legal YAML: that one document may plan; every other case is bad input
    codes = frozenset({0, 2}) if case == "merge-key" else frozenset({2})
    check_contract(run, names=[str(bad)], outdir=out, before=set(), outputs=[out / "p.json"], codes=codes)
    if run.code == 2:
        assert str(bad) in run.err
    assert listing(tmp_path) == {"out", "intents.yaml"}
