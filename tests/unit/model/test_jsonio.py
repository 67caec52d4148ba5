"""``brief``: the bounded echo of user input in messages."""

from __future__ import annotations

from kafka_placement.model.jsonio import ECHO_LIMIT, brief


def test_a_string_within_the_limit_is_shown_whole_even_past_the_default() -> None:
    path = "/var/lib/kafka-placement/" + "d" * 150 + "/client-key.pem"  # a real path can be this long
    assert len(path) > ECHO_LIMIT
    assert brief(path, 300) == repr(path)


def test_longer_input_is_bounded() -> None:
    assert len(brief("x" * 1000, 300)) <= 300
    assert len(brief("x" * 1000)) <= ECHO_LIMIT
    assert len(brief(list(range(1000)), 100)) <= 100
