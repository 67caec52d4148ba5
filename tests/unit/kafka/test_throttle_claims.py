"""Throttle claims without Kafka: an execution's claim is set with its rates and cleared with them, and a
sweep restores exactly what a gone owner's claim recorded (tests/e2e/test_operator_orphaned_throttles.py
runs the same against the rig's brokers and apiserver)."""

from __future__ import annotations

from collections.abc import Iterable

from tests.unit.kafka.test_throttles import _Configs

from kafka_placement.kafka.throttle_claims import Claim, find_claims, parse_claim, release
from kafka_placement.kafka.throttles import (
    CLAIM_PREFIX,
    DIR_RATE,
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    Move,
    apply_throttles,
    claim_key,
    clear_throttles,
    owned_drift,
    still_set,
)
from kafka_placement.kafka.types import ConfigTarget
from kafka_placement.model.throttle_state import ClaimOwner

GONE = ClaimOwner(namespace="team-a", name="prod", uid="1111-aaaa")
LIVE = ClaimOwner(namespace="team-b", name="prod", uid="2222-bbbb")
B = ConfigTarget.broker
T = ConfigTarget.topic("t")


class _Cluster(_Configs):
    """The configs of brokers 1-3 and topic ``t``, and the reassignments in flight."""

    def __init__(self, configs: dict[ConfigTarget, dict[str, str]], in_flight: int = 0) -> None:
        super().__init__(configs)
        self.in_flight = in_flight

    def list_reassignments(self) -> dict[tuple[str, int], object]:
        return {("t", p): object() for p in range(self.in_flight)}

    def partition_counts(self) -> dict[str, int]:
        return {"t": 4}

    def describe_configs(self, targets: Iterable[ConfigTarget]):  # type: ignore[no-untyped-def]
        return super().describe_configs([t for t in targets if t in self.configs])


def fresh() -> _Cluster:
    return _Cluster({B(1): {LEADER_RATE: "777"}, B(2): {}, B(3): {}, T: {}})


def claims_on(cluster: _Cluster, broker: int) -> list[Claim]:
    return [c for k in cluster.configs[B(broker)] if (c := parse_claim(broker, k)) is not None]


def test_a_claim_is_set_with_the_rates_and_cleared_with_them() -> None:
    cluster = fresh()
    state = apply_throttles(cluster, [Move("t", 0, (1, 2), (2, 3))], 1000, claim=GONE)  # type: ignore[arg-type]
    for b in (1, 2, 3):
        (claim,) = claims_on(cluster, b)
        assert claim.owner == GONE and set(claim.previous) == {LEADER_RATE, FOLLOWER_RATE}
    # broker 1 had a rate of its own: its claim's name says so, so a sweep would put it back
    assert claims_on(cluster, 1)[0].previous == {LEADER_RATE: "777", FOLLOWER_RATE: None}
    assert claims_on(cluster, 2)[0].previous == {LEADER_RATE: None, FOLLOWER_RATE: None}
    # a dir move added on broker 2 later: its claim is replaced by one that covers the dir rate too
    state = apply_throttles(
        cluster,
        [Move("t", 0, (1, 2), (2, 3))],
        1000,
        dir_rate=50,
        dir_move_brokers=[2],
        state=state,
        claim=GONE,
    )  # type: ignore[arg-type]
    (claim,) = claims_on(cluster, 2)
    assert set(claim.previous) == {LEADER_RATE, FOLLOWER_RATE, DIR_RATE}
    assert still_set(cluster, state)  # type: ignore[arg-type]
    clear_throttles(cluster, state)  # type: ignore[arg-type]
    assert cluster.configs == {B(1): {LEADER_RATE: "777"}, B(2): {}, B(3): {}, T: {}}
    assert still_set(cluster, state) == []  # type: ignore[arg-type]


def test_a_claim_present_is_no_drift_and_a_deleted_one_is_put_back() -> None:
    cluster = fresh()
    state = apply_throttles(cluster, [Move("t", 0, (1, 2), (2, 3))], 1000, claim=GONE)  # type: ignore[arg-type]
    assert owned_drift(cluster, state, ["t"], {}, [1, 2, 3]) == ([], {})  # type: ignore[arg-type]
    (claim,) = claims_on(cluster, 3)
    del cluster.configs[B(3)][claim.key]
    drifts, changes = owned_drift(cluster, state, ["t"], {}, [1, 2, 3])  # type: ignore[arg-type]
    assert [d.config for d in drifts] == [claim.key] and list(changes) == [B(3)]


def test_a_gone_owners_throttles_are_put_back_exactly_and_a_live_owners_are_kept() -> None:
    cluster = fresh()
    apply_throttles(cluster, [Move("t", 0, (1, 2), (2, 3))], 1000, claim=GONE)  # type: ignore[arg-type]
    # a live owner throttles brokers 3 and 1 too (topic t's partition 1 from 3 to 1)
    live_state = apply_throttles(cluster, [Move("t", 1, (3,), (1,))], 500, claim=LIVE)  # type: ignore[arg-type]
    claims = find_claims(cluster, [1, 2, 3])  # type: ignore[arg-type]
    assert {(c.broker, c.owner.uid) for c in claims} == {(b, GONE.uid) for b in (1, 2, 3)} | {
        (b, LIVE.uid) for b in (1, 3)
    }
    assert release(cluster, claims, gone=set()) is None  # type: ignore[arg-type]
    released = release(cluster, claims, gone={GONE.uid})  # type: ignore[arg-type]
    # broker 2 is the gone owner's alone: back to nothing, and its throttled-replica entries go; on brokers
    # 1 and 3 the live owner's rates stay, and so does the gone owner's claim (the live owner will put
    # back the values it found, the gone owner's)
    assert released is not None and released.deferred is None, released
    assert released.brokers == (1, 2, 3) and "team-a/prod" in str(released)
    assert cluster.configs[B(2)] == {}
    for b in (1, 3):
        assert {c.owner.uid for c in claims_on(cluster, b)} == {GONE.uid, LIVE.uid}
        assert cluster.configs[B(b)][LEADER_RATE] == "500"
    assert "0:2" not in cluster.configs[T].get(LEADER_REPLICAS, "")
    assert "1:1" in cluster.configs[T][FOLLOWER_REPLICAS] and "1:3" in cluster.configs[T][LEADER_REPLICAS]
    # the live owner ends and puts back what it found; the next sweep restores what was there before both
    clear_throttles(cluster, live_state)  # type: ignore[arg-type]
    assert cluster.configs[B(1)][LEADER_RATE] == "1000"
    again = release(cluster, find_claims(cluster, [1, 2, 3]), gone={GONE.uid})  # type: ignore[arg-type]
    assert again is not None and again.deferred is None
    assert cluster.configs[B(1)] == {LEADER_RATE: "777"} and cluster.configs[B(3)] == {}


def test_nothing_is_released_while_reassignments_are_in_flight() -> None:
    cluster = fresh()
    apply_throttles(cluster, [Move("t", 0, (1, 2), (2, 3))], 1000, claim=GONE)  # type: ignore[arg-type]
    cluster.in_flight = 2
    before = repr(sorted((str(t), sorted(c.items())) for t, c in cluster.configs.items()))
    released = release(cluster, find_claims(cluster, [1, 2, 3]), gone={GONE.uid})  # type: ignore[arg-type]
    assert released is not None and released.deferred is not None and "2 reassignment(s)" in released.deferred
    assert repr(sorted((str(t), sorted(c.items())) for t, c in cluster.configs.items())) == before


def test_malformed_or_foreign_claims_are_left_alone() -> None:
    good = claim_key(GONE, {LEADER_RATE: None, FOLLOWER_RATE: "10"})
    assert parse_claim(1, good) == Claim(1, good, GONE, {LEADER_RATE: None, FOLLOWER_RATE: "10"})
    assert parse_claim(1, "some.other.config") is None
    assert parse_claim(1, CLAIM_PREFIX + "team-a/prod") is None  # no uid
    assert parse_claim(1, CLAIM_PREFIX + "team-a/prod/1111-aaaa") is None  # covers no rate
    assert parse_claim(1, CLAIM_PREFIX + "Team A/prod/1111-aaaa/" + LEADER_RATE + "@") is None
    assert parse_claim(1, good + "/min.insync.replicas@2") is None  # not a rate
    assert parse_claim(1, good + f"/{LEADER_RATE}@5") is None  # a rate twice
    assert parse_claim(1, CLAIM_PREFIX + f"team-a/prod/1111-aaaa/{LEADER_RATE}@1e9") is None
