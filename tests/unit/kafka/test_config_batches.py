"""DescribeConfigs batches: one broker per request (librdkafka's rule), topics in bounded requests."""

from __future__ import annotations

from kafka_placement.kafka.configs import TOPICS_PER_CONFIG_REQUEST, _config_batches
from kafka_placement.kafka.types import ConfigTarget


def test_brokers_one_per_request_and_topics_in_bounded_requests() -> None:
    topics = [ConfigTarget.topic(f"t{i}") for i in range(2 * TOPICS_PER_CONFIG_REQUEST + 1)]
    brokers = [ConfigTarget.broker(1), ConfigTarget.broker(2)]
    batches = _config_batches([*topics, *brokers])
    assert batches[:2] == [[brokers[0]], [brokers[1]]]
    assert [len(b) for b in batches[2:]] == [TOPICS_PER_CONFIG_REQUEST, TOPICS_PER_CONFIG_REQUEST, 1]
    assert [t for b in batches[2:] for t in b] == topics  # every topic once, in order
    assert _config_batches([]) == []
