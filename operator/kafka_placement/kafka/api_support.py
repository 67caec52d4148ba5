"""Which Kafka admin APIs the operator cannot work without, and what to say when a broker lacks one.

Pure: given the API version ranges a broker answered ApiVersions with (API key -> (min, max)) and, when
known, the release they point at, ``missing`` lists the required APIs the broker does not serve and
``unsupported_message`` says so in one line. The gateway (kafka/clients.py) reads the ranges once per
connection and raises ``KafkaUnsupportedError`` before any request that needs them is sent, so nothing is
changed on such a cluster.

DescribeCluster (API 60, Kafka 2.8) is not required: the gateway reads the brokers through kafka-python's
DescribeCluster first and falls back to librdkafka's when that fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class RequiredApi:
    """An admin API the operator needs: its key, Kafka's name for it, the first release with it, why."""

    key: int
    name: str
    since: str
    used_for: str


REQUIRED: tuple[RequiredApi, ...] = (
    RequiredApi(32, "DescribeConfigs", "0.11", "reading throttles and cordons"),
    RequiredApi(34, "AlterReplicaLogDirs", "1.1", "moving replicas between log dirs (KIP-113)"),
    RequiredApi(35, "DescribeLogDirs", "1.0", "reading log dirs and replica sizes (KIP-113)"),
    RequiredApi(44, "IncrementalAlterConfigs", "2.3", "setting throttles and cordons (KIP-339)"),
    RequiredApi(45, "AlterPartitionReassignments", "2.4", "submitting and cancelling moves (KIP-455)"),
    RequiredApi(46, "ListPartitionReassignments", "2.4", "reading moves in flight (KIP-455)"),
)
OLDEST_SUPPORTED = "2.4"  # the newest ``since`` above: the oldest release that has every required API

Ranges = Mapping[int, tuple[int, int]]


def missing(ranges: Ranges) -> tuple[RequiredApi, ...]:
    """The required APIs the broker does not serve (absent from its ranges, or an empty range)."""
    out = []
    for api in REQUIRED:
        served = ranges.get(api.key)
        if served is None or served[1] < served[0]:
            out.append(api)
    return tuple(out)


def describe_release(ranges: Ranges, release: str | None) -> str:
    """How the message names the broker: its release when the ranges pointed at one (e.g. ``Kafka 2.3``),
    else the highest API key it serves (a broker newer than the client's table, or one it cannot tell)."""
    if release:
        return f"Kafka {release}"
    top = max(ranges, default=None)
    return f"a Kafka broker of unknown release (highest API key served: {top})"


def unsupported_message(
    servers: str, ranges: Ranges, release: str | None, lacking: tuple[RequiredApi, ...]
) -> str:
    """One line naming the broker's release and every missing API with its key and first release."""
    apis = ", ".join(f"{a.name} (API key {a.key}, Kafka {a.since}+, {a.used_for})" for a in lacking)
    return (
        f"the Kafka cluster at {servers} is not supported: it runs {describe_release(ranges, release)}, "
        f"which lacks {apis}; the operator needs Kafka {OLDEST_SUPPORTED} or newer (nothing was changed)"
    )
