"""The benchmark baselines: a naive greedy script and Kafka's own ``kafka-reassign-partitions --generate``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # tests/ is not a package; make tests.bench importable however pytest is run
    sys.path.insert(0, str(ROOT))

from tests.bench import generator  # noqa: E402
from tests.bench.baselines import naive_greedy_plan  # noqa: E402

from kafka_placement.model.plan import Plan  # noqa: E402
from kafka_placement.model.snapshot import ClusterSnapshot  # noqa: E402

Placement = dict[tuple[str, int], tuple[tuple[int, ...], tuple[str, ...]]]


def apply(snapshot: ClusterSnapshot, plan: Plan) -> Placement:
    """Placement after the plan: key -> (replicas, dirs); dirs of untouched partitions as in the snapshot."""
    out = {p.key: (p.replicas, tuple(d or "any" for d in p.log_dirs)) for p in snapshot.partitions}
    for t in plan.partitions:
        assert t.key in out, f"plan names unknown partition {t.name}"
        out[t.key] = (t.replicas, t.log_dirs)
    return out


def broker_bytes(snapshot: ClusterSnapshot, placement: Placement) -> dict[int, int]:
    load = {b: 0 for b in snapshot.broker_ids}
    for p in snapshot.partitions:
        for b in placement[p.key][0]:
            load[b] += p.size_bytes
    return load


# --- naive greedy -------------------------------------------------------------------------------------------


def test_naive_greedy_empties_decommissioned_brokers_keeping_rf_and_distinct_replicas() -> None:
    snap = generator.cluster(brokers=12, partitions=2000, seed=3)
    gone = {11, 12}
    plan = naive_greedy_plan(snap, gone, set(), balance=False)
    after = apply(snap, plan)
    assert not plan.empty
    for p in snap.partitions:
        reps, dirs = after[p.key]
        assert len(reps) == len(p.replicas) == 3
        assert len(set(reps)) == len(reps)
        assert not set(reps) & gone
        assert len(dirs) == len(reps)
    # only partitions that had a replica on a decommissioned broker move
    assert {t.key for t in plan.partitions} == {p.key for p in snap.partitions if set(p.replicas) & gone}
    assert all(v == 0 for b, v in broker_bytes(snap, after).items() if b in gone)
    # moved replicas land in the target broker's first dir; everything else stays put
    for t in plan.partitions:
        old = snap.partition(*t.key)
        assert old is not None
        moves = zip(old.replicas, t.replicas, old.log_dirs, t.log_dirs, strict=True)
        for b_old, b_new, d_old, d_new in moves:
            if b_old in gone:
                assert b_new not in old.replicas and d_new == "/data/d0"
            else:
                assert (b_new, d_new) == (b_old, d_old)


def test_naive_greedy_drains_dirs_and_is_deterministic() -> None:
    snap, _ = generator.scenario("drain", brokers=8, partitions=600)
    drained = {(1, "/data/d0"), (2, "/data/d1")}
    plan = naive_greedy_plan(snap, set(), drained, balance=False)
    assert plan == naive_greedy_plan(snap, set(), drained, balance=False)
    after = apply(snap, plan)
    for p in snap.partitions:
        reps, dirs = after[p.key]
        assert len(set(reps)) == len(reps) == len(p.replicas)
        assert not set(zip(reps, dirs, strict=True)) & drained


def test_naive_greedy_balance_reaches_tolerance_on_scale_out() -> None:
    snap, _ = generator.scenario("scale-out", brokers=12, partitions=2000)
    before = broker_bytes(snap, apply(snap, Plan.of([])))
    assert min(before.values()) == 0  # the new brokers start empty
    plan = naive_greedy_plan(snap, {1}, set(), balance=True)
    after = apply(snap, plan)
    load = broker_bytes(snap, after)
    assert load[1] == 0
    rest = [v for b, v in load.items() if b != 1]
    assert max(rest) / (sum(rest) / len(rest)) <= 1.05
    for p in snap.partitions:
        reps, _ = after[p.key]
        assert len(set(reps)) == len(reps) == len(p.replicas)
    assert plan == naive_greedy_plan(snap, {1}, set(), balance=True)


# --- Kafka's --generate -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kafka_generate():  # type: ignore[no-untyped-def]
    from tests.bench import kafka_generate as kg

    kg.libs_dir()  # the jars (make rig-build / tests/rig/kafka/fetch.sh); fails loudly if they cannot be had
    return kg


def rack_of(snap: ClusterSnapshot, b: int) -> str | None:
    broker = snap.broker(b)
    assert broker is not None
    return broker.rack


@pytest.mark.kafka
@pytest.mark.parametrize(
    ("dcs", "racks_per_dc", "brokers"),
    [
        (3, 2, [1, 2, 3, 4, 5]),  # racks /dc1/r1 /dc2/r1 /dc3/r1 /dc1/r2 /dc2/r2 /dc3/r2; broker 6 leaves
        (3, 2, [1, 2, 3, 4, 5, 6]),  # all of them
        (2, 1, [1, 2, 3, 4, 5, 6]),  # only two racks: each partition spans both
        (3, 2, [1, 2, 4, 5]),  # the remaining brokers cover only 4 racks of 2 dcs
    ],
)
def test_kafka_generate_places_every_partition_rack_aware(kafka_generate, dcs, racks_per_dc, brokers) -> None:  # type: ignore[no-untyped-def]
    snap = generator.cluster(brokers=6, dcs=dcs, racks_per_dc=racks_per_dc, topics=2, partitions=24)
    assert len(snap.topics()) == 2 and len(snap.partitions) == 24
    proposed = kafka_generate.kafka_generate_assignment(snap, brokers)
    assert set(proposed) == {p.key for p in snap.partitions}
    n_racks = len({rack_of(snap, b) for b in brokers})
    for reps in proposed.values():
        assert len(reps) == 3 and len(set(reps)) == 3
        assert set(reps) <= set(brokers)
        assert len({rack_of(snap, b) for b in reps}) == min(3, n_racks)

    plan = kafka_generate.kafka_generate_plan(snap, brokers)
    after = apply(snap, plan)
    assert {k: v[0] for k, v in after.items()} == proposed
    assert all(set(t.log_dirs) == {"any"} for t in plan.partitions)
    assert all(snap.partition(*t.key).replicas != t.replicas for t in plan.partitions)  # type: ignore[union-attr]
    assert plan == kafka_generate.kafka_generate_plan(snap, brokers)  # seeded: reproducible


@pytest.mark.kafka
def test_kafka_generate_unseeded_is_the_tools_own_code_and_errors_are_clear(kafka_generate) -> None:  # type: ignore[no-untyped-def]
    snap = generator.cluster(brokers=6, dcs=3, racks_per_dc=2, topics=2, partitions=24)
    proposed = kafka_generate.kafka_generate_assignment(snap, [1, 2, 3, 4, 5, 6], seed=None)
    for reps in proposed.values():
        assert len(set(reps)) == 3 and len({rack_of(snap, b) for b in reps}) == 3
    with pytest.raises(RuntimeError, match="replication factor of 3 cannot be reached"):
        kafka_generate.kafka_generate_plan(snap, [1, 2])
    with pytest.raises(ValueError, match="broker 99 is not in the snapshot"):
        kafka_generate.kafka_generate_plan(snap, [1, 2, 99])


def test_run_bench_rewrites_only_its_own_part_of_the_benchmarks_file(tmp_path: Path) -> None:
    from tests.bench.run_bench import END, write_own_part

    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"# Benchmarks\nold table\n\n{END}\n\n## Execution at scale\nkept rows\n")
    write_own_part(doc, ["# Benchmarks", "new table"])
    assert doc.read_text() == f"# Benchmarks\nnew table\n\n{END}\n\n## Execution at scale\nkept rows\n"
    other = tmp_path / "other.md"
    other.write_text("## Someone else's section\n")
    with pytest.raises(SystemExit, match="not overwriting"):
        write_own_part(other, ["# Benchmarks"])
    assert other.read_text() == "## Someone else's section\n"
