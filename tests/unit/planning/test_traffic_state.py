"""The traffic state's columnar JSON (planning/traffic_state.py): what a sampler keeps with its cluster
to go on after a restart. Round trips exactly, stays bounded by partitions and groups however many
looks went in, and a malformed document is bad input naming the location."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_placement.model.errors import BadInputError
from kafka_placement.model.traffic_looks import PartitionLook, TrafficLook
from kafka_placement.planning.traffic_rates import TrafficState, estimates, fold
from kafka_placement.planning.traffic_state import state_from_json, state_to_json

W = 60.0


def _look(at: float, n: int, groups: dict[str, int]) -> TrafficLook:
    parts = {("t", p): PartitionLook(0, n * (p + 1), n * (p + 1) * 100, "id") for p in range(3)}
    committed = {g: {("t", p): o for p in range(3)} for g, o in groups.items()}
    return TrafficLook(at, parts, committed)


def _state(looks: int) -> TrafficState:
    state = TrafficState()
    for i in range(looks):
        state = fold(state, _look(10.0 * i, 100 * i, {"a": i, "b": 0}), W)
    return state


def test_a_state_round_trips_through_json_with_the_same_estimates() -> None:
    state = _state(4)
    again = state_from_json(json.loads(json.dumps(state_to_json(state))))
    assert again == state
    assert estimates(again, W) == estimates(state, W)


def _shape(doc: dict[str, Any]) -> dict[str, Any]:
    """How many values each column holds (pairs counted per row): the document's size but for digits."""
    return {
        k: [len(r) for r in v] if k in ("committed", "advanced") else v if k == "version" else len(v)
        for k, v in doc.items()
    }


def test_the_document_does_not_grow_with_the_number_of_looks() -> None:
    assert _shape(state_to_json(_state(3))) == _shape(state_to_json(_state(300)))


def test_an_empty_state_round_trips() -> None:
    assert state_from_json(state_to_json(TrafficState())) == TrafficState()


def test_the_skipped_samples_survive_a_restart() -> None:
    state = fold(_state(3), _look(5.0, 200, {"a": 2}), W)  # the clock went back: 3 partitions
    state = fold(state, _look(30.0, 300, {"a": 0}), W)  # group "a" reset on each of them
    assert state.skipped == {"clockBack": 3, "groupBack": 3}
    assert state_from_json(json.loads(json.dumps(state_to_json(state)))).skipped == state.skipped


def _bad(mutate: Any) -> dict[str, Any]:
    doc = state_to_json(_state(3))
    mutate(doc)
    return doc


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda d: d.update(version=2), "state.version"),
        (lambda d: d["rate"].pop(), "state.rate"),
        (lambda d: d["end"].__setitem__(0, -1), "state.end[0]"),
        (lambda d: d["start"].__setitem__(1, 10**9), "state.start[1]"),
        (lambda d: d["rate"].__setitem__(0, -5.0), "state.rate[0]"),
        (lambda d: d["committed"].__setitem__(0, [[7, 1]]), "state.committed[0][0][0]"),
        (lambda d: d["advanced"].__setitem__(0, [[0]]), "state.advanced[0][0]"),
        (lambda d: d["partition"].__setitem__(1, 0), "state.partition[1]"),
        (lambda d: d.update(extra=1), "state"),
        (lambda d: d.update(skipped={"tooClose": -1}), "state.skipped.tooClose"),
        (lambda d: d.update(skipped={"lost": 1}), "state.skipped"),
    ],
)
def test_a_malformed_state_is_bad_input_naming_where(mutate: Any, where: str) -> None:
    with pytest.raises(BadInputError) as e:
        state_from_json(_bad(mutate), "state")
    assert where in str(e.value)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0, 1e4),
            st.integers(0, 10**6),
            st.dictionaries(st.sampled_from("xyz"), st.integers(0, 99)),
        ),
        max_size=8,
    )
)
def test_any_folded_state_round_trips(raw: list[tuple[float, int, dict[str, int]]]) -> None:
    state = TrafficState()
    for at, n, groups in raw:
        state = fold(state, _look(at, n, groups), W)
    assert state_from_json(json.loads(json.dumps(state_to_json(state)))) == state
