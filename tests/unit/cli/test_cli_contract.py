"""One precise test per class of contract break the fuzz suite looks for: message formats the README
promises, bounded output for amplifying input, numbers validated where parsed, Parquet inputs, local
paths and files checked before Kafka is contacted."""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.unit.fuzz_support import GOLDEN, HOSTILE_YAML, check_contract, listing, run_cli, run_cli_process

D = GOLDEN / "drain"
# connection timeouts of a second (librdkafka's least): a command that wrongly connects ends quickly
FAST_FAIL = "socket.connection.setup.timeout.ms=1000\nrequest.timeout.ms=1000\n"


def test_checks_against_the_snapshot_name_the_file_and_document(tmp_path: Path) -> None:
    intents = tmp_path / "intents.yaml"
    intents.write_text(
        "kind: BrokerDecommission\nspec: {brokers: [1]}\n---\n"
        "kind: LogDirCordon\nmetadata: {name: c1}\nspec: {broker: 2, logDirs: [/data/x]}\n"
    )
    run = run_cli(["plan", "--snapshot", str(D / "snapshot.json"), "--intents", str(intents)])
    assert run.code == 2
    assert (
        f"{intents}: document 2 (LogDirCordon c1).spec.logDirs[0]: broker 2 has no log dir '/data/x'"
        in run.err
    )


def test_evaluate_names_the_plan_file_and_the_entrys_position_in_it(tmp_path: Path) -> None:
    plan = json.loads((D / "plan.json").read_text())
    plan["partitions"].reverse()  # the file's last entry sorts first
    last = len(plan["partitions"]) - 1
    plan["partitions"][last]["replicas"][0] = 99
    p = tmp_path / "my-plan.json"
    p.write_text(json.dumps(plan))
    run = run_cli(["evaluate", "--snapshot", str(D / "snapshot.json"), "--plan", str(p)])
    assert run.code == 2 and f"{p}.partitions[{last}]" in run.err and "broker 99" in run.err, run.err


def test_evaluate_checks_intents_against_the_snapshot_like_plan(tmp_path: Path) -> None:
    intents = tmp_path / "i.yaml"
    intents.write_text("kind: BrokerDecommission\nspec: {brokers: [77]}\n")
    run = run_cli(
        [
            "evaluate",
            "--snapshot",
            str(D / "snapshot.json"),
            "--plan",
            str(D / "plan.json"),
            "--intents",
            str(intents),
        ]
    )
    assert run.code == 2 and f"{intents}: document 1" in run.err and "unknown broker 77" in run.err, run.err


@pytest.mark.parametrize("case", ["alias-bomb-kind", "alias-bomb-brokers", "alias-bomb-logdirs", "huge-kind"])
def test_amplifying_input_gives_a_short_message(tmp_path: Path, case: str) -> None:
    (tmp_path / "i.yaml").write_bytes(HOSTILE_YAML[case])
    run = run_cli_process(
        ["plan", "--snapshot", str(D / "snapshot.json"), "--intents", "i.yaml"], cwd=tmp_path
    )
    assert run.code == 2 and "i.yaml" in run.err and "Traceback" not in run.err, run.err[:500]
    assert len(run.err) < 1000


@pytest.mark.parametrize(
    ("spec", "where"),
    [
        ("{balance: {brokers: true, tolerance: .nan}}", "balance.tolerance"),
        ("{balance: {brokers: true, tolerance: .inf}}", "balance.tolerance"),
        ("{replicationFactor: 32768}", "replicationFactor"),
        ("{preferredBrokers: [2147483648]}", "preferredBrokers[0]"),
    ],
)
def test_numbers_are_validated_where_parsed(tmp_path: Path, spec: str, where: str) -> None:
    (tmp_path / "i.yaml").write_text(f"kind: PlacementPolicy\nspec: {spec}\n")
    run = run_cli(
        [
            "plan",
            "--snapshot",
            str(D / "snapshot.json"),
            "--intents",
            str(tmp_path / "i.yaml"),
            "-o",
            str(tmp_path / "p.json"),
            "--summary",
            str(tmp_path / "s.json"),
        ]
    )
    assert run.code == 2 and f".spec.{where}" in run.err, run.err
    assert listing(tmp_path) == {"i.yaml"}


def test_duplicate_yaml_keys_are_refused(tmp_path: Path) -> None:
    (tmp_path / "i.yaml").write_bytes(HOSTILE_YAML["duplicate-spec-keys"])
    run = run_cli(["plan", "--snapshot", str(D / "snapshot.json"), "--intents", str(tmp_path / "i.yaml")])
    assert run.code == 2 and "duplicate key 'brokers'" in run.err and "line 2" in run.err, run.err


@pytest.mark.parametrize(
    ("flags", "flag"),
    [
        (["--max-moves-per-broker", "0"], "--max-moves-per-broker"),
        (["--max-moves-per-broker", "-1"], "--max-moves-per-broker"),
        (["--shards", "-2"], "--shards"),
    ],
)
def test_plan_refuses_bad_flags(tmp_path: Path, flags: list[str], flag: str) -> None:
    run = run_cli(
        [
            "plan",
            "--snapshot",
            str(D / "snapshot.json"),
            "--intents",
            str(D / "intents.yaml"),
            "-o",
            str(tmp_path / "p.json"),
            *flags,
        ]
    )
    assert run.code == 2 and flag in run.err and listing(tmp_path) == set(), run.err


@pytest.mark.timeout(60)  # a count that got as far as placing would run for far longer
@pytest.mark.parametrize("partitions", ["2147483648", "1000001", "9" * 5000])
def test_place_refuses_huge_partition_counts_at_once(tmp_path: Path, partitions: str) -> None:
    def place(snapshot: Path) -> str:
        argv = ["place", "--snapshot", str(snapshot), "--topic", "t", "--partitions", partitions]
        run = run_cli([*argv, "--replication-factor", "2"])
        assert run.code == 2 and "--partitions" in run.err and len(run.err) < 1000, run.err[:300]
        return run.err

    place(D / "snapshot.json")
    # refused while the flags are parsed: before the snapshot is even opened
    assert "missing.json" not in place(tmp_path / "missing.json")


@pytest.mark.parametrize(
    ("topic", "ok"),
    [("a" * 249, True), ("a" * 250, False), (".", False), ("..", False), ("a/b", False), ("a.b_c-D9", True)],
)
def test_place_validates_topic_names_as_kafka_does(topic: str, ok: bool) -> None:
    run = run_cli(
        [
            "place",
            "--snapshot",
            str(D / "snapshot.json"),
            "--topic",
            topic,
            "--partitions",
            "1",
            "--replication-factor",
            "2",
        ]
    )
    assert run.code == (0 if ok else 2), run.err
    if not ok:
        assert "--topic" in run.err and "legal Kafka topic name" in run.err


def test_place_refuses_partition_numbers_beyond_int32() -> None:
    run = run_cli(
        [
            "place",
            "--snapshot",
            str(D / "snapshot.json"),
            "--topic",
            "t",
            "--partitions",
            "2",
            "--start-partition",
            "2147483647",
            "--replication-factor",
            "2",
        ]
    )
    assert run.code == 2 and "2147483647" in run.err, run.err


def _parquet_snapshot(tmp_path: Path) -> Path:
    from kafka_placement.model.snapshot import ClusterSnapshot
    from kafka_placement.spark.io import write_parquet

    d = tmp_path / "snap"
    write_parquet(ClusterSnapshot.loads((D / "snapshot.json").read_text()), d)
    return d


@pytest.mark.parametrize(
    ("broken", "content"),
    [
        ("brokers.json", b"{not json"),
        ("brokers.json", b'{"version": 1, "brokers": [{"id": 2147483648}], "partitions": []}'),
        ("brokers.json", b"\xff\xfe"),
        ("partitions.parquet", b"PAR1 not really"),
        ("partitions.parquet", b""),
    ],
)
def test_a_parquet_snapshot_with_a_broken_file_is_bad_input_naming_it(
    tmp_path: Path, broken: str, content: bytes
) -> None:
    d = _parquet_snapshot(tmp_path)
    (d / broken).write_bytes(content)
    run = run_cli(
        ["plan", "--snapshot", str(d), "--intents", str(D / "intents.yaml"), "-o", str(tmp_path / "p.json")]
    )
    assert run.code == 2 and str(d / broken) in run.err, run.err
    assert not (tmp_path / "p.json").exists()


def test_a_parquet_snapshot_missing_a_column_or_with_wrong_types_is_bad_input(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = _parquet_snapshot(tmp_path)
    table = pq.read_table(d / "partitions.parquet")
    pq.write_table(table.drop_columns(["isr"]), d / "partitions.parquet")
    run = run_cli(["plan", "--snapshot", str(d), "--intents", str(D / "intents.yaml")])
    assert run.code == 2 and "isr" in run.err and "partitions.parquet" in run.err, run.err
    strings = table.set_column(
        1, "partition", pa.array([str(x) for x in table.column("partition").to_pylist()])
    )
    pq.write_table(strings, d / "partitions.parquet")
    run = run_cli(["plan", "--snapshot", str(d), "--intents", str(D / "intents.yaml")])
    assert run.code == 2 and "partitions.parquet" in run.err and ".partition" in run.err, run.err


def test_a_parquet_plan_round_trips_and_a_broken_one_is_bad_input(tmp_path: Path) -> None:
    out = tmp_path / "p.parquet"
    run = run_cli(
        ["plan", "--snapshot", str(D / "snapshot.json"), "--intents", str(D / "intents.yaml"), "-o", str(out)]
    )
    assert run.code == 0 and listing(tmp_path) == {"p.parquet"}, run.err
    assert run_cli(["evaluate", "--snapshot", str(D / "snapshot.json"), "--plan", str(out)]).code == 0
    out.write_bytes(b"garbage")
    run = run_cli(["evaluate", "--snapshot", str(D / "snapshot.json"), "--plan", str(out)])
    assert run.code == 2 and str(out) in run.err, run.err


def test_resource_documents_keep_resource_style_locations() -> None:
    from kafka_placement.model.errors import BadInputError
    from kafka_placement.model.intents import Intents, validate_against
    from kafka_placement.model.snapshot import ClusterSnapshot

    snap = ClusterSnapshot.loads((D / "snapshot.json").read_text())
    docs = [{"kind": "BrokerDecommission", "metadata": {"name": "retire-42"}, "spec": {"brokers": [42]}}]
    with pytest.raises(BadInputError) as err:
        validate_against(Intents.from_documents(docs), snap)
    assert err.value.location == "BrokerDecommission retire-42: spec.brokers[0]", err.value.message


# ---- local input checked before Kafka is contacted -------------------------------------------------


@contextlib.contextmanager
def stand_in_kafka() -> Iterator[tuple[str, Callable[[], bool]]]:
    """A listening port in place of Kafka: (its address, ``contacted()``). Nothing accepts while the
    command runs, but the kernel completes every connection into the backlog, so ``contacted()`` tells
    afterwards whether the command connected at all (and one that does gets no answer: it fails)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        s.setblocking(False)

        def contacted() -> bool:
            try:
                conn, _ = s.accept()
            except BlockingIOError:
                return False
            conn.close()
            return True

        yield f"127.0.0.1:{s.getsockname()[1]}", contacted


@pytest.mark.timeout(120)
@pytest.mark.parametrize("command", ["verify", "execute", "snapshot"])
def test_a_ca_file_with_garbage_is_bad_input_naming_setting_and_file(tmp_path: Path, command: str) -> None:
    (tmp_path / "ca.pem").write_text("garbage, not a certificate\n")
    config = tmp_path / "client.properties"
    config.write_text(f"security.protocol=SSL\nssl.ca.location=ca.pem\n{FAST_FAIL}")
    out = tmp_path / "out"
    out.mkdir()
    with stand_in_kafka() as (kafka, contacted):
        argv = [command, "--bootstrap-server", kafka, "--command-config", str(config)]
        if command == "snapshot":
            argv += ["-o", str(out / "snapshot.json")]
        else:
            argv += ["--plan", str(D / "plan.json"), "--state", str(out / "state.json")]
        run = run_cli(argv)
        check_contract(run, names=[str(config)], outdir=out, before=set(), codes=frozenset({2}))
        assert f"ssl.ca.location file '{tmp_path / 'ca.pem'}'" in run.err, run.err
        assert "no usable PEM certificate" in run.err and "KafkaException" not in run.err, run.err
        assert not contacted()


def _state_directory(d: Path) -> Path:
    (d / "state").mkdir()
    return d / "state"


def _state_in_missing_directory(d: Path) -> Path:
    return d / "missing" / "state.json"


def _state_under_a_file(d: Path) -> Path:
    (d / "afile").write_text("")
    return d / "afile" / "state.json"


def _state_in_read_only_directory(d: Path) -> Path:
    (d / "ro").mkdir()
    (d / "ro").chmod(0o555)
    return d / "ro" / "state.json"


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (_state_directory, "is a directory, not a file"),
        (_state_in_missing_directory, "does not exist"),
        (_state_under_a_file, "Not a directory"),
        pytest.param(
            _state_in_read_only_directory,
            "is not writable",
            marks=pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only directories"),
        ),
    ],
)
def test_execute_refuses_an_unusable_state_path_before_connecting(
    tmp_path: Path, make: Callable[[Path], Path], fragment: str
) -> None:
    config = tmp_path / "client.properties"
    config.write_text(FAST_FAIL)
    state = make(tmp_path)
    before = listing(tmp_path)
    with stand_in_kafka() as (kafka, contacted):
        argv = ["execute", "--bootstrap-server", kafka, "--command-config", str(config)]
        run = run_cli([*argv, "--plan", str(D / "plan.json"), "--state", str(state)])
        check_contract(run, names=[str(state)], outdir=tmp_path, before=before, codes=frozenset({2}))
        assert fragment in run.err and "cannot reach Kafka" not in run.err, run.err
        assert not contacted()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("command", ["verify", "status", "cancel"])
def test_the_other_state_commands_refuse_a_directory_before_connecting(tmp_path: Path, command: str) -> None:
    config = tmp_path / "client.properties"
    config.write_text(FAST_FAIL)
    state = _state_directory(tmp_path)
    with stand_in_kafka() as (kafka, contacted):
        argv = [command, "--bootstrap-server", kafka, "--command-config", str(config), "--state", str(state)]
        run = run_cli([*argv, "--plan", str(D / "plan.json")] if command == "verify" else argv)
        check_contract(run, names=[str(state)], outdir=state, before=set(), codes=frozenset({2}))
        assert "is a directory" in run.err, run.err
        assert not contacted()


def test_execute_refuses_a_default_state_directory_it_cannot_create(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "afile").write_text("")
    monkeypatch.setenv("KAFKA_PLACEMENT_STATE_DIR", str(tmp_path / "afile" / "states"))
    config = tmp_path / "client.properties"
    config.write_text(FAST_FAIL)
    with stand_in_kafka() as (kafka, contacted):
        argv = ["execute", "--bootstrap-server", kafka, "--command-config", str(config)]
        run = run_cli([*argv, "--plan", str(D / "plan.json")])
        assert run.code == 2 and "KAFKA_PLACEMENT_STATE_DIR" in run.err, run.err
        assert str(tmp_path / "afile" / "states") in run.err
        assert not contacted()


@pytest.mark.parametrize(
    ("path", "constant"),
    [
        (("partitions", 14, "sizeBytes"), "NaN"),
        (("partitions", 3, "replicas", 1), "Infinity"),
        (("brokers", 0, "logDirs", 1, "totalBytes"), "-Infinity"),
    ],
)
def test_a_non_finite_number_in_a_snapshot_is_refused_at_its_location(
    tmp_path: Path, path: tuple[str | int, ...], constant: str
) -> None:
    doc = json.loads((D / "snapshot.json").read_text())
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[constant]
    snap = tmp_path / "snapshot.json"
    snap.write_text(json.dumps(doc))  # Python writes NaN and Infinity as such
    run = run_cli(["plan", "--snapshot", str(snap), "--intents", str(D / "intents.yaml")])
    where = str(snap) + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path)
    assert run.code == 2 and f"{where}: not valid JSON: {constant} is not a number" in run.err, run.err


@pytest.mark.parametrize(
    ("flags", "named", "says"),
    [
        (["--traffic-window", "0"], "--traffic-window", "positive"),
        (["--traffic-window", "nan"], "--traffic-window", "positive"),
        (["--traffic-window", "-5"], "--traffic-window", "positive"),
        (["--traffic-window", "60", "--traffic-looks", "1"], "--traffic-looks", "2 to"),
        (["--traffic-window", "3", "--traffic-looks", "10"], "--traffic-window", "closer than 1 s"),
    ],
)
def test_bad_traffic_sampling_flags_are_bad_input_before_kafka_is_contacted(
    tmp_path: Path, flags: list[str], named: str, says: str
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with stand_in_kafka() as (kafka, contacted):
        run = run_cli(["snapshot", "--bootstrap-server", kafka, *flags, "-o", str(out / "s.json")])
        check_contract(run, names=[named], outdir=out, before=set(), codes=frozenset({2}))
        assert says in run.err, run.err
        assert not contacted()
