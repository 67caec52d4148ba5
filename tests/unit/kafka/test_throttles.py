"""Throttles as owned state without Kafka: the one ``ThrottleState`` that ``kafka/throttles.py`` returns is
what the execution record persists (same JSON as before), and the state read back from the record is what
clears, re-applies and checks them (tests/integration/test_gateway.py runs the same against brokers)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from kafka_placement.execution.record import Execution
from kafka_placement.execution.record_doc import Limits
from kafka_placement.execution.store import FileStore
from kafka_placement.kafka.throttles import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    Move,
    apply_throttles,
    clear_throttles,
    owned_drift,
    still_set,
)
from kafka_placement.kafka.types import ConfigChange, ConfigTarget, ConfigValue, OpError
from kafka_placement.model.plan import PartitionTarget, Plan
from kafka_placement.model.throttle_state import BrokerThrottle, ThrottleState, TopicThrottle


class _Configs:
    """Dynamic configs of brokers 1-3 and topic ``t``, every change applied at once."""

    def __init__(self, configs: dict[ConfigTarget, dict[str, str]]) -> None:
        self.configs = configs

    def describe_configs(self, targets: Iterable[ConfigTarget]) -> dict[ConfigTarget, dict[str, ConfigValue]]:
        return {
            t: {n: ConfigValue(v, "DYNAMIC_CONFIG", False, False, False) for n, v in self.configs[t].items()}
            for t in targets
        }

    def incremental_alter_configs(
        self, changes: dict[ConfigTarget, list[ConfigChange]]
    ) -> dict[ConfigTarget, OpError]:
        for target, ops in changes.items():
            live = self.configs[target]
            for c in ops:
                entries = [e for e in live.get(c.name, "").split(",") if e]
                given = (c.value or "").split(",")
                if c.op == "SET":
                    live[c.name] = c.value or ""
                elif c.op == "DELETE":
                    live.pop(c.name, None)
                elif c.op == "APPEND":
                    live[c.name] = ",".join([*entries, *(e for e in given if e not in entries)])
                else:
                    live[c.name] = ",".join(e for e in entries if e not in given)
                if live.get(c.name) == "":
                    del live[c.name]
        return {}


B1, B2, B3, T = (
    ConfigTarget.broker(1),
    ConfigTarget.broker(2),
    ConfigTarget.broker(3),
    ConfigTarget.topic("t"),
)


def test_the_state_applied_is_the_state_recorded_cleared_and_defended(tmp_path: Path) -> None:
    gw = _Configs({B1: {LEADER_RATE: "500"}, B2: {}, B3: {}, T: {FOLLOWER_REPLICAS: "0:9"}})
    move = Move("t", 0, current=(1, 2), target=(3, 2))
    store = FileStore(tmp_path / "state.json")
    plan = Plan.of([PartitionTarget("t", 0, (3, 2), ("any", "any"))])
    limits = Limits(max_moves_per_broker=1, max_moves=1, max_bytes_per_broker=None, throttle=1000)
    ex = Execution.create(store, plan, limits=limits, cluster_id="c1")

    def write_ahead(planned: ThrottleState) -> None:
        ex.doc.throttles = planned
        ex.save()

    state = apply_throttles(gw, [move], 1000, before_alter=write_ahead)  # type: ignore[arg-type]
    assert BrokerThrottle(broker=1, config=LEADER_RATE, previous="500", value="1000") in state.brokers
    assert BrokerThrottle(broker=3, config=FOLLOWER_RATE, previous=None, value="1000") in state.brokers
    assert state.topics == (
        TopicThrottle(topic="t", config=FOLLOWER_REPLICAS, entries=("0:3",)),
        TopicThrottle(topic="t", config=LEADER_REPLICAS, entries=("0:1", "0:2")),
    )
    # persisted as it always was: field names and JSON shape of the record's ``throttles``
    saved = json.loads((tmp_path / "state.json").read_text())["throttles"]
    assert saved["brokers"][0] == {"broker": 1, "config": LEADER_RATE, "previous": "500", "value": "1000"}
    assert saved["topics"][0] == {"topic": "t", "config": FOLLOWER_REPLICAS, "entries": ["0:3"]}
    loaded = Execution.load(store)
    assert loaded is not None and loaded.doc.throttles == state

    # applied again from the record (a restart): the previous values stay those found before us
    again = apply_throttles(gw, [move], 800, state=loaded.doc.throttles)  # type: ignore[arg-type]
    assert BrokerThrottle(broker=1, config=LEADER_RATE, previous="500", value="800") in again.brokers
    assert again.topics == state.topics

    gw.configs[B3].pop(FOLLOWER_RATE)  # another party removes one of our rates
    drifts, changes = owned_drift(gw, again, ["t"], {}, [1, 2, 3])  # type: ignore[arg-type]
    assert [d.key for d in drifts] == [f"broker 3 {FOLLOWER_RATE}"]
    assert changes == {B3: [ConfigChange(FOLLOWER_RATE, "SET", "800")]}
    gw.incremental_alter_configs(changes)

    clear_throttles(gw, again)  # type: ignore[arg-type]
    assert gw.configs == {B1: {LEADER_RATE: "500"}, B2: {}, B3: {}, T: {FOLLOWER_REPLICAS: "0:9"}}
    assert still_set(gw, again) == []  # type: ignore[arg-type]


def test_brokers_that_cannot_be_configured_now_are_left_out() -> None:
    """A broker answers for its own configs: one that is down (or silent to the operator) would only make
    the call wait out its timeout, so ``brokers`` limits the rates set; the topics' entries stay."""
    gw = _Configs({B1: {}, B2: {}, B3: {}, T: {}})
    moves = [Move("t", 0, current=(1, 2), target=(3, 2)), Move("t", 1, current=(2, 1), target=(2, 3))]
    state = apply_throttles(gw, moves, 1000, dir_rate=500, dir_move_brokers=[3], brokers={1, 2})  # type: ignore[arg-type]
    assert {b.broker for b in state.brokers} == {1, 2} and not gw.configs[B3]
    assert {t.config for t in state.topics} == {FOLLOWER_REPLICAS, LEADER_REPLICAS}


def test_ceilings_lower_a_side_before_its_factor_and_a_hold_overrides_both() -> None:
    """The adaptive throttle's rates (execution/adaptive.py) cap a broker side below the move's rate, the
    rate hold's factor applies on top, a disk hold's value replaces them; a ceiling above the rate changes
    nothing."""
    gw = _Configs({B1: {}, B2: {}, B3: {}, T: {}})
    move = Move("t", 0, current=(1, 2), target=(3, 2))
    state = apply_throttles(
        gw,  # type: ignore[arg-type]
        [move],
        1000,
        ceilings={(3, FOLLOWER_RATE): 300, (1, LEADER_RATE): 5000, (2, LEADER_RATE): 400},
        factors={(3, FOLLOWER_RATE): 1.5},
        override={(2, LEADER_RATE): "7"},
    )
    assert gw.configs[B3] == {FOLLOWER_RATE: "450", LEADER_RATE: "1000"}  # 300 x 1.5
    assert gw.configs[B1] == {FOLLOWER_RATE: "1000", LEADER_RATE: "1000"}  # a ceiling above: the rate
    assert gw.configs[B2] == {FOLLOWER_RATE: "1000", LEADER_RATE: "7"}  # held
    assert BrokerThrottle(broker=3, config=FOLLOWER_RATE, previous=None, value="450") in state.brokers
