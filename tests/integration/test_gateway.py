"""KafkaGateway and `kafka-placement snapshot` against the real rigs: snapshot shape and round trip, KIP-1066
cordons (4.3 rig) and their rejection (legacy rig), KIP-113 dir moves, KIP-455 reassignments with cancel,
configs, preferred-leader election, unreachable clusters and bad connection settings.
Real brokers only (`make rig-up`); every wait is bounded; topics, cordons, throttles and reassignments
made here are undone in `finally` blocks so other tests see the rig as it was.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.integration.conftest import SilentBroker, clients, cyclic_gc_off

from kafka_placement.cli._io import read_snapshot_arg
from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import (
    CORDON_CONFIG,
    CORDON_METADATA_LEVEL,
    ConfigChange,
    ConfigTarget,
    CordonUnsupportedError,
    KafkaGateway,
    KafkaUnavailableError,
    kafka_python_admin,
)
from kafka_placement.model.snapshot import ClusterSnapshot

if TYPE_CHECKING:
    from conftest import KafkaRig, TopicFactory

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(180)]

Wait = Callable[..., Any]
CLI = Path(sys.executable).parent / "kafka-placement"
UNREACHABLE = "127.0.0.1:1"


@pytest.fixture(scope="module")
def gateway(kafka_rig: KafkaRig) -> Iterator[KafkaGateway]:
    with KafkaGateway(ConnectionSettings(kafka_rig.bootstrap_servers)) as gw:
        yield gw


@pytest.fixture(scope="module")
def legacy_gateway(kafka_legacy_rig: KafkaRig) -> Iterator[KafkaGateway]:
    with KafkaGateway(ConnectionSettings(kafka_legacy_rig.bootstrap_servers)) as gw:
        yield gw


def produce(rig: KafkaRig, topic: str, messages: list[tuple[int, bytes]]) -> None:
    from confluent_kafka import Producer

    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": rig.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for partition, value in messages:
        producer.produce(
            topic, value=value, partition=partition, on_delivery=lambda err, _m: errors.append(err)
        )
    assert producer.flush(30) == 0, "messages still in flight after 30s"
    assert not [e for e in errors if e is not None], errors


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=timeout)


def holding(gw: KafkaGateway, broker: int, topic: str, partition: int) -> dict[str, bool]:
    """Dirs of `broker` holding the replica -> is_future, through the gateway's describe_log_dirs."""
    return {
        d.path: r.is_future
        for d in gw.describe_log_dirs([broker])[broker]
        for r in d.replicas
        if (r.topic, r.partition) == (topic, partition)
    }


# ----------------------------------------------------------------------------------------- snapshot


def test_snapshot_has_every_broker_rack_and_log_dir(gateway: KafkaGateway, kafka_rig: KafkaRig) -> None:
    snap = gateway.snapshot()
    assert snap.cluster_id
    assert [(b.id, b.rack) for b in snap.brokers] == [(1, "/dc1/r1"), (2, "/dc1/r2"), (3, "/dc2/r1")]
    for b in snap.brokers:
        assert b.dir_paths == kafka_rig.node(b.id).log_dirs
        for d in b.log_dirs:
            assert d.online and d.total_bytes > 0 and 0 <= d.usable_bytes <= d.total_bytes
    assert ClusterSnapshot.from_json(snap.to_json()) == snap
    assert ClusterSnapshot.loads(snap.dumps()) == snap


def test_snapshot_shows_explicit_assignment_dirs_and_sizes(
    gateway: KafkaGateway, kafka_rig: KafkaRig, kafka_admin: Any, new_topic: TopicFactory, kafka_wait: Wait
) -> None:
    assignment = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
    topic = new_topic(assignment)
    produce(kafka_rig, topic, [(p, b"z" * 500) for p in (0, 1) for _ in range(40)])

    def sized() -> ClusterSnapshot | None:
        snap = gateway.snapshot()
        parts = [snap.partition(topic, p) for p in range(3)]
        ok = all(p is not None for p in parts) and parts[0].size_bytes > 0 and parts[1].size_bytes > 0  # type: ignore[union-attr]
        return snap if ok else None

    snap = kafka_wait(f"{topic} sizes in the snapshot", sized)
    for number, replicas in enumerate(assignment):
        p = snap.partition(topic, number)
        assert p is not None
        assert list(p.replicas) == replicas
        assert p.leader == replicas[0] and set(p.isr) == set(replicas)
        for broker, path in zip(p.replicas, p.log_dirs, strict=True):
            assert path in kafka_rig.node(broker).log_dirs, (broker, path)
    sizes = [p.size_bytes for p in snap if p.topic == topic]
    assert sizes[0] > 20_000 and sizes[1] > 20_000 and sizes[2] == 0
    internal = {t for t in kafka_admin.list_topics(timeout=10).topics if t.startswith("__")}
    assert internal <= set(snap.topics())  # internal topics (e.g. __consumer_offsets) are data too
    assert ClusterSnapshot.from_json(snap.to_json()) == snap


# ----------------------------------------------------------------------------------------- cordon


def test_cordon_set_and_unset_is_reflected_in_snapshot(
    gateway: KafkaGateway, kafka_rig: KafkaRig, kafka_wait: Wait
) -> None:
    assert gateway.metadata_version() >= CORDON_METADATA_LEVEL and gateway.supports_cordon()
    broker = 3  # test_kafka_rig's cordon test uses broker 2
    free, cordoned = kafka_rig.node(broker).log_dirs
    target = ConfigTarget.broker(broker)

    def cordon_state() -> dict[str, bool]:
        b = gateway.snapshot().broker(broker)
        assert b is not None
        return {d.path: d.cordoned for d in b.log_dirs}

    try:
        gateway.set_cordon(broker, [cordoned], True)
        gateway.set_cordon(broker, [cordoned], True)  # APPEND is idempotent: no duplicate entry
        kafka_wait("cordon in snapshot", lambda: cordon_state() == {free: False, cordoned: True})
        kafka_wait(
            "config holds the dir once",
            lambda: gateway.describe_configs([target])[target][CORDON_CONFIG].value == cordoned,
        )
        gateway.set_cordon(broker, [cordoned], False)
        kafka_wait("cordon lifted in snapshot", lambda: cordon_state() == {free: False, cordoned: False})
    finally:
        gateway.incremental_alter_configs({target: [ConfigChange(CORDON_CONFIG, "DELETE")]})
    kafka_wait(
        "cordoned.log.dirs back to its default",
        lambda: gateway.describe_configs([target])[target][CORDON_CONFIG].is_default,
    )


def test_cordon_of_an_unknown_dir_is_refused_without_touching_the_config(gateway: KafkaGateway) -> None:
    from kafka_placement.kafka.gateway import KafkaOperationError

    with pytest.raises(KafkaOperationError) as raised:
        gateway.set_cordon(3, ["/no/such/dir"], True)
    assert "broker 3" in raised.value.message and "/no/such/dir" in raised.value.message
    target = ConfigTarget.broker(3)
    assert "/no/such/dir" not in (gateway.describe_configs([target])[target][CORDON_CONFIG].value or "")


def test_cordon_is_rejected_clearly_on_the_legacy_cluster(
    legacy_gateway: KafkaGateway, kafka_legacy_rig: KafkaRig
) -> None:
    level = legacy_gateway.metadata_version()
    assert level < CORDON_METADATA_LEVEL and not legacy_gateway.supports_cordon()
    with pytest.raises(CordonUnsupportedError) as raised:
        legacy_gateway.set_cordon(1, [kafka_legacy_rig.node(1).log_dirs[1]], True)
    message = raised.value.message
    assert "cordoned.log.dirs" in message and "4.3-IV0" in message and f"level {level}" in message
    assert kafka_legacy_rig.bootstrap_servers in message
    snap = legacy_gateway.snapshot()
    assert [b.id for b in snap.brokers] == [n.id for n in kafka_legacy_rig.nodes]
    assert not any(d.cordoned for b in snap.brokers for d in b.log_dirs)


# ----------------------------------------------------------------------------------------- log dirs


def test_alter_replica_log_dirs_moves_a_replica_and_describe_log_dirs_follows(
    gateway: KafkaGateway, kafka_rig: KafkaRig, new_topic: TopicFactory, kafka_wait: Wait
) -> None:
    topic = new_topic([[1, 2]])
    produce(kafka_rig, topic, [(0, b"x" * 1000) for _ in range(50)])
    (source,) = kafka_wait("replica on broker 1", lambda: holding(gateway, 1, topic, 0))
    target = next(d for d in kafka_rig.node(1).log_dirs if d != source)

    assert gateway.alter_replica_log_dirs({(topic, 0, 1): target}) == {}
    kafka_wait(f"{topic}-0 on broker 1 in {target}", lambda: holding(gateway, 1, topic, 0) == {target: False})
    (info,) = [d for d in gateway.describe_log_dirs([1])[1] if d.path == target]
    (replica,) = [r for r in info.replicas if r.topic == topic]
    assert replica.size_bytes > 50_000 and replica.offset_lag == 0 and not replica.is_future
    assert info.online and info.cordoned is False

    p = gateway.snapshot().partition(topic, 0)
    assert p is not None and p.log_dirs[0] == target and p.size_bytes == replica.size_bytes


def test_alter_replica_log_dirs_reports_per_replica_errors(
    gateway: KafkaGateway, kafka_rig: KafkaRig, new_topic: TopicFactory, kafka_wait: Wait
) -> None:
    topic = new_topic([[1, 2]])
    # broker 1 made its log (a broker's metadata may show the topic a moment before its log exists, and a
    # move of a replica not made yet is refused as not available)
    kafka_wait("replica on broker 1", lambda: holding(gateway, 1, topic, 0))
    errors = gateway.alter_replica_log_dirs(
        {
            (topic, 0, 3): kafka_rig.node(3).log_dirs[0],  # broker 3 does not host it (yet)
            (topic, 0, 2): "/no/such/dir",
            (topic, 0, 1): kafka_rig.node(1).log_dirs[0],  # fine (maybe already there)
        }
    )
    assert set(errors) == {(topic, 0, 3), (topic, 0, 2)}, errors
    assert errors[(topic, 0, 3)].replica_not_available and errors[(topic, 0, 3)].retriable
    assert (
        errors[(topic, 0, 2)].code == "LOG_DIR_NOT_FOUND" and not errors[(topic, 0, 2)].replica_not_available
    )


# ----------------------------------------------------------------------------------------- reassignments


def test_reassignment_alter_list_and_cancel(
    gateway: KafkaGateway, kafka_rig: KafkaRig, new_topic: TopicFactory, kafka_wait: Wait
) -> None:
    """A throttled move stays in flight long enough to be listed, then a KIP-455 cancel reverts it."""
    topic = new_topic(
        [[1, 2]],
        config={"leader.replication.throttled.replicas": "*", "follower.replication.throttled.replicas": "*"},
    )
    produce(kafka_rig, topic, [(0, b"r" * 10_000) for _ in range(200)])  # ~2 MB at 1 KB/s: stays in flight
    brokers = [ConfigTarget.broker(n.id) for n in kafka_rig.nodes]
    rates = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
    before = gateway.describe_configs(brokers)
    key = (topic, 0)
    try:
        errors = gateway.incremental_alter_configs(
            {b: [ConfigChange(r, "SET", "1000") for r in rates] for b in brokers}
        )
        assert errors == {}
        assert gateway.alter_reassignments({key: [3, 2]}) == {}
        moving = kafka_wait("reassignment listed", lambda: gateway.list_reassignments([key]).get(key))
        assert set(moving.replicas) == {1, 2, 3}
        assert moving.adding == (3,) and moving.removing == (1,)
        assert key in gateway.list_reassignments()  # listing everything sees it too

        assert gateway.alter_reassignments({key: None}) == {}  # cancel
        kafka_wait("reassignment gone", lambda: key not in gateway.list_reassignments([key]))
        # KRaft reverts to "replicas minus adding" = (3, 2, 1) - (3,) = (2, 1): the set comes back, the
        # original order (the preferred leader) does not; an executor must re-send the order if it matters.
        kafka_wait(
            "replicas back to {1, 2}",
            lambda: (
                (p := gateway.snapshot().partition(topic, 0)) is not None and sorted(p.replicas) == [1, 2]
            ),
        )
    finally:
        gateway.alter_reassignments({key: None})  # no-op unless something above failed mid-move
        restore = {
            b: [
                ConfigChange(r, "SET", was.value)
                if (was := before[b].get(r)) is not None and was.source == "DYNAMIC_BROKER_CONFIG"
                else ConfigChange(r, "DELETE")
                for r in rates
            ]
            for b in brokers
        }
        assert gateway.incremental_alter_configs(restore) == {}


def test_alter_reassignments_reports_per_partition_errors(
    gateway: KafkaGateway, new_topic: TopicFactory
) -> None:
    topic = new_topic([[1, 2], [2, 3]])
    errors = gateway.alter_reassignments({(topic, 0): None, (topic, 1): [2, 99]})
    assert errors[(topic, 0)].code == "NO_REASSIGNMENT_IN_PROGRESS"
    assert errors[(topic, 1)].code == "INVALID_REPLICATION_ASSIGNMENT"


def test_reorder_then_preferred_leader_election(
    gateway: KafkaGateway, new_topic: TopicFactory, kafka_wait: Wait
) -> None:
    topic = new_topic([[1, 2]])
    key = (topic, 0)
    assert gateway.alter_reassignments({key: [2, 1]}) == {}
    kafka_wait(
        "replica order [2, 1]",
        lambda: (p := gateway.snapshot().partition(topic, 0)) is not None and p.replicas == (2, 1),
    )
    assert gateway.snapshot().partition(topic, 0).leader == 1  # type: ignore[union-attr]
    assert gateway.elect_preferred_leaders([key]) == {}
    kafka_wait("leader 2", lambda: gateway.snapshot().partition(topic, 0).leader == 2)  # type: ignore[union-attr]
    assert gateway.elect_preferred_leaders([key]) == {}  # ELECTION_NOT_NEEDED is not an error
    errors = gateway.elect_preferred_leaders([(topic, 7)])
    assert errors[(topic, 7)].code == "UNKNOWN_TOPIC_OR_PARTITION"


# ----------------------------------------------------------------------------------------- configs


def test_topic_config_set_append_subtract_delete(
    gateway: KafkaGateway, new_topic: TopicFactory, kafka_wait: Wait
) -> None:
    topic = new_topic([[1, 2]], config={"retention.ms": "3600000"})
    target = ConfigTarget.topic(topic)

    def config(name: str) -> Any:
        return gateway.describe_configs([target])[target][name]

    assert config("retention.ms").value == "3600000" and config("retention.ms").is_dynamic
    assert not config("cleanup.policy").is_dynamic
    assert (
        gateway.incremental_alter_configs({target: [ConfigChange("cleanup.policy", "APPEND", "compact")]})
        == {}
    )
    kafka_wait("cleanup.policy delete,compact", lambda: config("cleanup.policy").value == "delete,compact")
    changes = [ConfigChange("cleanup.policy", "SUBTRACT", "delete"), ConfigChange("retention.ms", "DELETE")]
    assert gateway.incremental_alter_configs({target: changes}) == {}
    kafka_wait(
        "cleanup.policy compact, retention.ms default",
        lambda: config("cleanup.policy").value == "compact" and config("retention.ms").is_default,
    )
    broker = gateway.describe_configs([ConfigTarget.broker(1), ConfigTarget.broker(2)])
    assert set(broker) == {ConfigTarget.broker(1), ConfigTarget.broker(2)}
    assert broker[ConfigTarget.broker(1)]["broker.rack"].value == "/dc1/r1"
    errors = gateway.incremental_alter_configs({target: [ConfigChange("no.such.config", "SET", "1")]})
    assert errors[target].code == "INVALID_CONFIG", errors


# ----------------------------------------------------------------------------------------- throttles


def test_throttles_are_owned_state_restored_exactly(
    gateway: KafkaGateway, kafka_rig: KafkaRig, new_topic: TopicFactory, kafka_wait: Wait
) -> None:
    from kafka_placement.kafka.throttles import (
        DIR_RATE,
        FOLLOWER_RATE,
        FOLLOWER_REPLICAS,
        LEADER_RATE,
        LEADER_REPLICAS,
        Move,
        apply_throttles,
        clear_throttles,
    )
    from kafka_placement.model.throttle_state import BrokerThrottle, ThrottleState, TopicThrottle

    topic = new_topic([[1, 2]], config={FOLLOWER_REPLICAS: "0:3"})  # someone else's entry
    brokers = {n.id: ConfigTarget.broker(n.id) for n in kafka_rig.nodes}
    t_cfg = ConfigTarget.topic(topic)

    def broker_values() -> dict[tuple[int, str], str | None]:
        got = gateway.describe_configs(brokers.values())
        return {
            (b, name): (v.value if (v := got[t].get(name)) is not None and v.is_dynamic else None)
            for b, t in brokers.items()
            for name in (LEADER_RATE, FOLLOWER_RATE, DIR_RATE)
        }

    def topic_values() -> tuple[set[str], set[str]]:
        got = gateway.describe_configs([t_cfg])[t_cfg]
        leaders, followers = (
            set(filter(None, (got[n].value or "").split(","))) for n in (LEADER_REPLICAS, FOLLOWER_REPLICAS)
        )
        return leaders, followers

    pristine = broker_values()
    assert all(v is None for v in pristine.values()), f"rig has throttles set already: {pristine}"
    try:
        assert (
            gateway.incremental_alter_configs({brokers[1]: [ConfigChange(LEADER_RATE, "SET", "5000000")]})
            == {}
        )
        kafka_wait("someone else's rate", lambda: broker_values()[(1, LEADER_RATE)] == "5000000")
        move = Move(topic, 0, current=(1, 2), target=(3, 2))
        state = apply_throttles(gateway, [move], 1000, dir_rate=2000, dir_move_brokers=[2])
        assert ThrottleState.model_validate_json(state.model_dump_json()) == state  # as the record keeps it
        # the previous value comes back on clear
        assert BrokerThrottle(broker=1, config=LEADER_RATE, previous="5000000", value="1000") in state.brokers
        assert BrokerThrottle(broker=3, config=FOLLOWER_RATE, previous=None, value="1000") in state.brokers
        ours = TopicThrottle(topic=topic, config=LEADER_REPLICAS, entries=("0:1", "0:2"))
        assert state.topics == (ours,)  # 0:3 was not ours

        expected: dict[tuple[int, str], str | None] = {
            (b, r): "1000" for b in (1, 2, 3) for r in (LEADER_RATE, FOLLOWER_RATE)
        }
        expected |= {(1, DIR_RATE): None, (2, DIR_RATE): "2000", (3, DIR_RATE): None}
        kafka_wait("throttles set", lambda: broker_values() == expected)
        kafka_wait("throttled replicas", lambda: topic_values() == ({"0:1", "0:2"}, {"0:3"}))
        assert (
            apply_throttles(gateway, [move], 1000, dir_rate=2000, dir_move_brokers=[2], state=state) == state
        )

        clear_throttles(gateway, state)
        kafka_wait(
            "previous values back", lambda: broker_values() == {**pristine, (1, LEADER_RATE): "5000000"}
        )
        kafka_wait("only our entries removed", lambda: topic_values() == (set(), {"0:3"}))

        # write-ahead: the state is handed over before Kafka changes; a crash there alters nothing, and
        # clearing the recorded (never applied) state is harmless
        class Crash(Exception):
            pass

        planned: list[ThrottleState] = []

        def crash(s: ThrottleState) -> None:
            planned.append(s)
            raise Crash

        with pytest.raises(Crash):
            apply_throttles(gateway, [move], 1000, dir_rate=2000, dir_move_brokers=[2], before_alter=crash)
        assert planned == [state]  # exactly what the applied call recorded
        assert broker_values() == {**pristine, (1, LEADER_RATE): "5000000"}
        assert topic_values() == (set(), {"0:3"})
        clear_throttles(gateway, planned[0])
        before = {**pristine, (1, LEADER_RATE): "5000000"}
        kafka_wait("nothing changed by clearing", lambda: broker_values() == before)
        assert topic_values() == (set(), {"0:3"})
    finally:
        names = (LEADER_RATE, FOLLOWER_RATE, DIR_RATE)
        gateway.incremental_alter_configs(
            {t: [ConfigChange(n, "DELETE") for n in names] for t in brokers.values()}
        )
    kafka_wait("rig without throttles", lambda: broker_values() == pristine)


# ----------------------------------------------------------------------------------------- failures


@pytest.mark.timeout(60)  # a refused connection fails each call at once; only a hang would reach this
def test_unreachable_cluster_fails_fast_with_the_servers_named() -> None:
    """Every bootstrap server refusing: the reason as soon as librdkafka reports every broker down, not
    after the connect timeout (60 s here, per call: waiting it out would overrun the test's bound; a
    mistyped address is answered in a second or two)."""
    calls: list[Callable[[KafkaGateway], object]] = [KafkaGateway.snapshot, KafkaGateway.list_reassignments]
    for call in calls:
        with (
            KafkaGateway(ConnectionSettings(UNREACHABLE, connect_timeout_s=60)) as gw,
            pytest.raises(KafkaUnavailableError) as raised,
        ):
            call(gw)
        assert raised.value.message.startswith(f"cannot reach Kafka at {UNREACHABLE}: ")
        assert "Connection refused" in raised.value.message  # the reason, not a connect timeout
        assert raised.value.exit_code == 1


def test_a_silent_broker_fails_the_call_and_the_client_closes_with_the_gateway() -> None:
    """A "broker" that accepts connections and never answers: the call fails within the connect
    timeout, and once the gateway is closed its librdkafka client is gone: its connection closes and
    it never reconnects. With the cyclic garbage collector off, since an operator frees clients only by
    reference counting between its rare full collections (Kafka's error kept in a reference cycle once
    held a client that reconnected every 11 s, one more per failed reconcile)."""
    from confluent_kafka.admin import AdminClient

    with cyclic_gc_off(AdminClient) as before, SilentBroker() as silent:
        settings = ConnectionSettings(silent.address, connect_timeout_s=2)
        for call in (KafkaGateway.snapshot, KafkaGateway.check_authorized):
            with KafkaGateway(settings) as gw, pytest.raises(KafkaUnavailableError) as raised:
                call(gw)
            assert f"cannot reach Kafka at {silent.address}: " in raised.value.message
        del gw, raised
        closed = time.monotonic()
        assert clients(AdminClient) == before  # the module's open gateways keep theirs
        time.sleep(4)  # librdkafka reconnects after ~1 s: a live client would have connected again
        late = [t for t in silent.opened if t > closed]
        assert len(silent.opened) >= 2 and not late and not silent.open_now(), (silent.opened, silent.closed)


def test_a_kafka_python_client_whose_bootstrap_fails_leaves_no_thread() -> None:
    """kafka-python's admin client starts its I/O thread before bootstrapping and leaves it running when
    the bootstrap fails; the gateway's constructor closes it, so a failed reconcile leaks no thread."""
    from kafka.errors import KafkaError

    def io_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("kafka-io")]

    before = io_threads()
    with SilentBroker() as silent:
        config = {"bootstrap_servers": silent.address, "bootstrap_timeout_ms": 1500}
        with pytest.raises(KafkaError):
            kafka_python_admin(config)
    assert io_threads() == before


# ----------------------------------------------------------------------------------------- CLI


def test_cli_snapshot_writes_a_loadable_file(
    kafka_rig: KafkaRig, new_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = new_topic([[1, 2], [2, 3], [3, 1]])
    out = tmp_path / "snapshot.json"
    proc = run_cli("snapshot", "--bootstrap-server", kafka_rig.bootstrap_servers, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    snap = ClusterSnapshot.loads(out.read_text(), str(out))
    assert snap.broker_ids == (1, 2, 3)
    assert "3 brokers, 6 log dirs" in proc.stderr
    assert not list(tmp_path.glob(".snapshot.json.*"))  # the atomic write left no temp file
    # a name ending in .parquet: a Parquet snapshot directory, which --snapshot reads
    parquet = tmp_path / "snapshot.parquet"
    proc = run_cli("snapshot", "--bootstrap-server", kafka_rig.bootstrap_servers, "-o", str(parquet))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in parquet.iterdir()) == ["brokers.json", "partitions.parquet"]
    again = read_snapshot_arg(str(parquet))
    assert again.broker_ids == snap.broker_ids
    mine = [p for p in again.partitions if p.topic == topic]
    assert [p.replicas for p in mine] == [p.replicas for p in snap.partitions if p.topic == topic] != []
    assert all(d is not None for p in mine for d in p.log_dirs)  # dirs as the JSON file has them


def test_cli_snapshot_with_command_config(kafka_rig: KafkaRig, tmp_path: Path) -> None:
    props = tmp_path / "client.properties"
    props.write_text(f"bootstrap.servers={kafka_rig.bootstrap_servers}\nsecurity.protocol=PLAINTEXT\n")
    proc = run_cli("snapshot", "--command-config", str(props), "-o", "-")
    assert proc.returncode == 0, proc.stderr
    assert ClusterSnapshot.loads(proc.stdout).broker_ids == (1, 2, 3)


def test_cli_snapshot_of_an_unreachable_cluster_exits_1_with_one_line(tmp_path: Path) -> None:
    out = tmp_path / "snapshot.json"
    proc = run_cli("snapshot", "--bootstrap-server", UNREACHABLE, "-o", str(out), timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"cannot reach Kafka at {UNREACHABLE}" in proc.stderr and "Connection refused" in proc.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("ssl.truststore.location=/etc/kafka/truststore.jks\n", "convert them to PEM"),
        ("security.protocol=SASL_SSL\n", "needs sasl.mechanism"),
    ],
)
def test_cli_snapshot_with_a_bad_command_config_exits_2(
    kafka_rig: KafkaRig, tmp_path: Path, text: str, fragment: str
) -> None:
    props = tmp_path / "client.properties"
    props.write_text(text)
    proc = run_cli(
        "snapshot", "--bootstrap-server", kafka_rig.bootstrap_servers, "--command-config", str(props)
    )
    assert proc.returncode == 2, proc.stderr
    assert fragment in proc.stderr and str(props) in proc.stderr and "Traceback" not in proc.stderr
    missing = run_cli("snapshot", "--bootstrap-server", kafka_rig.bootstrap_servers, "--command-config",
                      str(tmp_path / "missing.properties"))  # fmt: skip
    assert missing.returncode == 2 and "command config file not found" in missing.stderr


def test_new_replicas_avoid_a_cordoned_dir(
    gateway: KafkaGateway, kafka_rig: KafkaRig, kafka_wait: Wait, new_topic: Any
) -> None:
    broker = 3
    free, cordoned = kafka_rig.node(broker).log_dirs
    target = ConfigTarget.broker(broker)
    try:
        gateway.set_cordon(broker, [cordoned], True)
        kafka_wait("cordon in snapshot", lambda: gateway.snapshot().broker(broker).dir(cordoned).cordoned)  # type: ignore[union-attr]
        topic = new_topic([[broker, 1], [broker, 2], [1, broker], [2, broker], [broker, 1], [broker, 2]])

        def dirs_on_broker() -> list[str | None]:
            snap = gateway.snapshot()
            return [
                d
                for p in snap.partitions
                if p.topic == topic
                for b, d in zip(p.replicas, p.log_dirs, strict=True)
                if b == broker
            ]

        kafka_wait(
            "all replicas on broker 3 placed",
            lambda: len(dirs_on_broker()) == 6 and None not in dirs_on_broker(),
        )
        assert set(dirs_on_broker()) == {free}  # Kafka >= 4.3 (KIP-1066) keeps new replicas off the dir
    finally:
        gateway.incremental_alter_configs({target: [ConfigChange(CORDON_CONFIG, "DELETE")]})
