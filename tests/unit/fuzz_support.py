"""Shared pieces of the CLI fuzz suite: running the CLI, the contract every run must keep, and the
adversarial material (mutations of the golden inputs, hostile documents, values and paths).

The contract (docs/cli.md): bad input exits 2 (or 3 for infeasible, 0 when it turns out to
be acceptable), never 1 and never with a traceback; an exit-2 message names the offending file (or
flag); stderr stays under ``STDERR_LIMIT``; on error nothing is written (no output file, no temp file
left in the output directory); every output that is written is strict JSON (no NaN/Infinity).
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from kafka_placement.cli import main

GOLDEN = Path(__file__).resolve().parents[1] / "testdata" / "golden"
SCENARIOS = tuple(sorted(d.name for d in GOLDEN.iterdir() if (d / "snapshot.json").is_file()))
STDERR_LIMIT = 4096
INPUT_PROBLEM_CODES = frozenset({0, 2, 3})
CLI = Path(sys.executable).parent / "kafka-placement"

# Seeded and bounded: the same examples on every run, no example database, no per-example deadline.
FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=40,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def run_cli(argv: Sequence[str]) -> Run:
    """The CLI in-process (its real entry function), stdout and stderr captured."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:  # argparse usage errors
            code = e.code if isinstance(e.code, int) else 1
    return Run(code, out.getvalue(), err.getvalue())


def run_cli_process(argv: Sequence[str], cwd: Path, timeout: float = 60) -> Run:
    """The installed console script in a subprocess (tracebacks, real exit status)."""
    p = subprocess.run(
        [str(CLI), *argv], cwd=cwd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    return Run(p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"))


def strict_json(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise AssertionError(f"output is not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def listing(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()} if directory.is_dir() else set()


def check_contract(
    run: Run,
    *,
    names: Sequence[str],
    outdir: Path,
    before: set[str],
    outputs: Sequence[Path] = (),
    stdout_json: bool = False,
    codes: frozenset[int] = INPUT_PROBLEM_CODES,
) -> None:
    """Assert the CLI contract on one run (see the module docstring).

    ``names``: strings of which an exit-2 message must contain one (the input files, the flags);
    ``outdir``/``before``: the output directory and its listing before the run; ``outputs``: the
    files the command writes on success; ``stdout_json``: success prints JSON on stdout."""
    shown = run.err[:600]
    if currently_in_test_context():
        event(f"exit {run.code}")
    assert run.code in codes, f"exit {run.code} not in {sorted(codes)}: {shown}"
    assert "Traceback" not in run.err, shown
    assert len(run.err.encode()) < STDERR_LIMIT, f"stderr of {len(run.err.encode())} bytes: {shown}"
    if run.code == 2:
        assert any(n in run.err for n in names), f"the message names none of {list(names)}: {shown}"
    if run.code != 0:
        assert listing(outdir) == before, f"written on error: {sorted(listing(outdir) - before)}: {shown}"
        return
    leftovers = {n for n in listing(outdir) - before if n.startswith(".")}
    assert not leftovers, f"temp files left: {sorted(leftovers)}"
    for path in outputs:
        if path.suffix != ".parquet":
            strict_json(path.read_text())
    if stdout_json:
        strict_json(run.out)


# ---- golden inputs and mutations -------------------------------------------------------------------


def golden(scenario: str, name: str) -> Any:
    path = GOLDEN / scenario / name
    if name.endswith(".json"):
        return json.loads(path.read_text())
    import yaml

    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def nodes(doc: Any, path: tuple[Any, ...] = (), limit: int = 4000) -> list[tuple[Any, ...]]:
    """Paths of the nodes of a JSON-like tree (breadth-first, at most ``limit``)."""
    out: list[tuple[Any, ...]] = []
    queue: list[tuple[tuple[Any, ...], Any]] = [(path, doc)]
    while queue and len(out) < limit:
        p, node = queue.pop(0)
        out.append(p)
        if isinstance(node, dict):
            queue.extend(((*p, k), v) for k, v in node.items())
        elif isinstance(node, list):
            queue.extend(((*p, i), v) for i, v in enumerate(node))
    return out


def get(doc: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def deep(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


HUGE = "x" * 200_000
# values a hostile user puts anywhere: wrong types, boundary and non-finite numbers, huge and odd strings
ADVERSARIAL_VALUES: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    -(2**31),
    2**31 - 1,
    2**31,
    2**32,
    2**63 - 1,
    2**63,
    2**64,
    -(2**63) - 1,
    10**30,
    0.5,
    -0.0,
    1e308,
    math.nan,
    math.inf,
    -math.inf,
    "",
    " ",
    ".",
    "..",
    "*",
    "any",
    "/",
    "relative/dir",
    "../../../etc/passwd",
    "with space",
    "t\x00nul",
    "\u202eevil",
    "日本語",
    "a" * 250,
    HUGE,
    [],
    {},
    [None],
    [HUGE],
    list(range(2000)),
    {"unknown": 1},
    {HUGE: 1},
    deep(60),
)


def adversarial(draw: st.DrawFn) -> Any:
    """One of ``ADVERSARIAL_VALUES``, a copy: a later mutation of the document must not change the
    shared value (that made hypothesis see a different strategy from one case to the next)."""
    return copy.deepcopy(draw(st.sampled_from(ADVERSARIAL_VALUES)))


@st.composite
def mutated(draw: st.DrawFn, doc: Any, max_mutations: int = 3) -> Any:
    """``doc`` with 1..max_mutations structural mutations: replace, delete, add a key, duplicate."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, max_mutations))):
        paths = nodes(doc)
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(OPS))
        if not path:
            doc = adversarial(draw) if op == "replace" else doc
            continue
        parent, key = get(doc, path[:-1]), path[-1]
        if op == "replace":
            parent[key] = adversarial(draw)
        elif op == "delete":
            del parent[key]
        elif op == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(("extra", "Version", "", HUGE[:300])))] = 1
        elif op == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        elif op == "tweak":
            parent[key] = draw(tweaked(parent[key], doc))
    return doc


# "tweak" keeps the type and stays plausible (another broker id, another dir of the document), so
# many mutants get past parsing into the semantic checks and the planner
OPS = ("replace", "replace", "tweak", "tweak", "tweak", "delete", "add", "duplicate")


def tweaked(value: Any, doc: Any) -> st.SearchStrategy[Any]:
    if isinstance(value, bool):
        return st.just(not value)
    if isinstance(value, int):
        return st.integers(min(value, max(-1, value - 3)), value + 3)  # (an adversarial value may be < -1)
    if isinstance(value, float):
        return st.floats(0, 2, allow_nan=False)
    if isinstance(value, str):
        strings = sorted({get(doc, p) for p in nodes(doc, limit=400) if isinstance(get(doc, p), str)})
        return st.sampled_from(strings or [value])
    if isinstance(value, list) and value:
        return st.permutations(value).map(list)
    return st.just(value)


@st.composite
def text_mutated(draw: st.DrawFn, text: str) -> bytes:
    """``text`` cut short, or with a few bytes inserted or overwritten anywhere."""
    data = bytearray(text.encode())
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(("cut", "insert", "overwrite")))
        chunk = draw(
            st.sampled_from(
                (
                    b"{",
                    b"}",
                    b"[",
                    b"]",
                    b",",
                    b":",
                    b'"',
                    b"\\",
                    b"\xff",
                    b"- ",
                    b"&a",
                    b"*a",
                    b"\n",
                    b"\t",
                    b"NaN",
                    b"1e999",
                    b"-",
                    b"0",
                )
            )
        )
        if op == "cut":
            del data[at:]
        elif op == "insert":
            data[at:at] = chunk
        else:
            data[at : at + len(chunk)] = chunk
    return bytes(data)


def dump_json(doc: Any) -> str:
    """JSON as a sloppy producer writes it: NaN/Infinity tokens included."""
    return json.dumps(doc, allow_nan=True)


def dump_yaml(docs: Any) -> str:
    import yaml

    if not isinstance(docs, list):
        docs = [docs]
    return yaml.safe_dump_all(docs, allow_unicode=True, sort_keys=False)


# ---- hostile documents as text ---------------------------------------------------------------------


def alias_bomb(field: str) -> str:
    """A ~0.7 KB YAML billion-laughs whose last alias sits at ``field`` of a LogDirCordon spec."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, cur in zip("abcdefgh", "bcdefghi", strict=False):
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    anchors = "x-anchors:\n" + "\n".join("  " + line for line in lines)
    spec = {"broker": "1", "logDirs": '["/data/d0"]', field: "*i"}
    body = ", ".join(f"{k}: {v}" for k, v in spec.items())
    return f"kind: LogDirCordon\nspec: {{{body}}}\n---\n{anchors}\n"


def alias_bomb_kind() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, cur in zip("abcdefgh", "bcdefghi", strict=False):
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\nkind: *i\nspec: *i\n"


HOSTILE_JSON: dict[str, bytes] = {
    "empty": b"",
    "null": b"null",
    "array": b"[]",
    "number": b"0",
    "truncated": b'{"version": 1, "brokers": [',
    "deep-1000": b"[" * 1000 + b"]" * 1000,
    "deep-100000": b"[" * 100_000 + b"]" * 100_000,
    "deep-object": b'{"a":' * 5000 + b"0" + b"}" * 5000,
    "nan": b'{"version": NaN, "brokers": [], "partitions": []}',
    "infinity": b'{"version": 1, "brokers": [{"id": Infinity}], "partitions": []}',
    "huge-int-literal": b'{"version": ' + b"9" * 5000 + b', "brokers": [], "partitions": []}',
    "duplicate-keys": b'{"version": 1, "version": 1, "brokers": [], "partitions": []}',
    "non-utf8": b'{"version": 1, "brokers": ["\xff\xfe"], "partitions": []}',
    "utf16": '{"version": 1}'.encode("utf-16"),
    "bom": b"\xef\xbb\xbf{}",
    "nul-bytes": b"\x00" * 64,
    "huge-string": b'{"version": 1, "brokers": [], "partitions": [], "x": "' + b"y" * 2_000_000 + b'"}',
}

HOSTILE_YAML: dict[str, bytes] = {
    "deep-flow-1000": b"kind: " + b"[" * 1000 + b"]" * 1000 + b"\n",
    "deep-flow-100000": b"[" * 100_000 + b"]" * 100_000 + b"\n",
    "deep-block": "".join("  " * i + f"k{i}:\n" for i in range(1200)).encode() + b"  " * 1200 + b"v\n",
    "alias-bomb-kind": alias_bomb_kind().encode(),
    "alias-bomb-brokers": b"kind: BrokerDecommission\nspec: {brokers: *i}\n---\n"
    + alias_bomb_kind().replace("kind: *i\nspec: *i\n", "").encode(),
    "alias-bomb-logdirs": alias_bomb("logDirs").encode(),
    "alias-bomb-drain": alias_bomb("drain").encode(),
    "tolerance-nan": b"kind: PlacementPolicy\nspec: {balance: {brokers: true, tolerance: .nan}}\n",
    "tolerance-inf": b"kind: PlacementPolicy\nspec: {balance: {brokers: true, tolerance: .inf}}\n",
    "tolerance-negative": b"kind: PlacementPolicy\nspec: {balance: {brokers: true, tolerance: -0.5}}\n",
    "rf-huge": b"kind: PlacementPolicy\nspec: {replicationFactor: 4294967296}\n",
    "rf-int16": b"kind: PlacementPolicy\nspec: {replicationFactor: 32768}\n",
    "broker-int32": b"kind: BrokerDecommission\nspec: {brokers: [2147483648]}\n",
    "broker-int64": b"kind: BrokerDecommission\nspec: {brokers: [18446744073709551616]}\n",
    "huge-int-literal": b"kind: BrokerDecommission\nspec: {brokers: [" + b"9" * 5000 + b"]}\n",
    "duplicate-keys": b"kind: BrokerDecommission\nkind: LogDirCordon\nspec: {brokers: [1]}\n",
    "duplicate-spec-keys": b"kind: BrokerDecommission\nspec: {brokers: [1], brokers: [2]}\n",
    "huge-kind": b"kind: " + b"K" * 1_000_000 + b"\nspec: {}\n",
    "huge-name": b"kind: BrokerDecommission\nmetadata: {name: "
    + b"n" * 1_000_000
    + b"}\nspec: {brokers: [1]}\n",
    "huge-dir": b"kind: LogDirCordon\nspec: {broker: 1, logDirs: [/" + b"d" * 1_000_000 + b"]}\n",
    "non-utf8": b"kind: BrokerDecommission\nspec: {brokers: [\xff]}\n",
    "control-chars": b"kind: \x07\x1b[31m\nspec: {}\n",
    "python-tag": b"kind: !!python/object/apply:os.system ['true']\nspec: {}\n",
    "binary-tag": b"kind: !!binary aGVsbG8=\nspec: {}\n",
    "unhashable-key": b"? [a, b]\n: 1\nkind: BrokerDecommission\nspec: {brokers: [1]}\n",
    "timestamp": b"kind: BrokerDecommission\nspec: {brokers: [2001-12-14]}\n",
    "merge-key": b"base: &b {brokers: [1]}\nkind: BrokerDecommission\nspec: {<<: *b}\n",
    "tab-indent": b"kind: BrokerDecommission\nspec:\n\tbrokers: [1]\n",
}


def write_bytes(directory: Path, name: str, data: bytes) -> Path:
    path = directory / name
    path.write_bytes(data)
    return path


@contextlib.contextmanager
def scratch() -> Iterator[tuple[Path, Path]]:
    """(input dir, output dir), fresh per example (hypothesis runs many examples per test)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kpo-fuzz-") as d:
        inputs, out = Path(d) / "in", Path(d) / "out"
        inputs.mkdir()
        out.mkdir()
        yield inputs, out
