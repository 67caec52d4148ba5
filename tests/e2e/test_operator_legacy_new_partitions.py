"""End to end on the legacy rig (Kafka 4.2, below KIP-1066): the new-partition lane
(reconcile/new_partitions.py) moves a new replica off a cordoned broker while it is small, although it
already holds records (a plan of the whole cluster would move only an empty one). Its own file because
it needs the legacy rig, which `make test`'s lane `kafka` has (tests/rig/lanes.py).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from tests.e2e.conftest import KafkaRig, Operator, wait_phase
from tests.e2e.test_operator import execution_record, fill, snapshot
from tests.e2e.test_operator_new_partitions import HOUR, SPREAD_WAIT_S
from tests.e2e.test_operator_policies import apply, resource

pytestmark = [pytest.mark.kafka, pytest.mark.k8s]


@pytest.fixture
def operator_env() -> dict[str, str]:
    return HOUR  # no full re-plan during the test: whatever moves the new replica is the lane


def test_on_a_legacy_cluster_a_new_partition_written_to_is_moved_off_a_cordoned_broker(
    operator: Operator, kubectl: Any, k8s_namespace: str, kafka_legacy_rig: KafkaRig
) -> None:
    """Kafka 4.2 (no KIP-1066) puts a new replica on a cordoned broker when asked to; the lane moves it off
    although it already holds records (a whole cluster's plan would move only an empty one)."""
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]
    from tests.integration.conftest import confluent_admin, create_topics_everywhere

    rig, ns = kafka_legacy_rig, k8s_namespace
    admin = confluent_admin(rig)
    cordon = {"clusterRef": {"name": "legacy"}, "broker": 1, "logDirs": ["*"]}
    docs = [
        resource("KafkaCluster", "legacy", {"bootstrapServers": rig.bootstrap_servers}),
        resource("LogDirCordon", "no-new-on-1", cordon),
    ]
    apply(kubectl, ns, *docs)
    wait_phase(kubectl, operator, ns, "logdircordon", "no-new-on-1", ("Completed",))
    topic = f"it-np-legacy-{uuid.uuid4().hex[:8]}"
    try:
        create_topics_everywhere(admin, [NewTopic(topic, num_partitions=1, replica_assignment=[[1]])], rig)
        fill(rig, topic, 300)
        deadline = time.monotonic() + SPREAD_WAIT_S
        while [p.replicas for p in snapshot(rig).partitions if p.topic == topic] != [(2,)]:
            assert time.monotonic() < deadline, operator.tail()
            time.sleep(0.5)
        # (no consumer group reads it back: its __consumer_offsets, RF 2 on this 2-broker cluster, would
        # leave empty replicas on the cordoned broker that nothing can move; the main rig's tests read)
        (moved,) = [p for p in snapshot(rig).partitions if p.topic == topic]
        assert moved.size_bytes > 0, moved
        while (lane_record := execution_record(kubectl, ns, "legacy", "lane"))["phase"] != "Completed":
            assert time.monotonic() < deadline, lane_record  # its tick confirms what Kafka already shows
            time.sleep(0.5)
        assert lane_record["doneBytes"] > 0, lane_record  # it moved a replica holding the records
    finally:
        admin.delete_topics([topic], request_timeout=30)[topic].result(30)
