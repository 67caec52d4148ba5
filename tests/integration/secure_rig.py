"""The secure Kafka rig (`kafka_rig.py up --name secure`, rig.json key `kafka-secure`) for the tests.

SASL_SSL (SCRAM-SHA-512) and mutual-TLS listeners, StandardAuthorizer, the operator's principal with
exactly the ACLs of README "Security" (tests/rig/kafka_security.py). Helpers here act as the rig's super
user (topics, ACL changes, reading placement, reassignments and throttles); the code under test connects
as the operator's principal only. Nothing is mocked.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.integration.conftest import broker_addresses, rig_entry, wait_for, wait_topic_everywhere
from tests.rig import kafka_security

from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import KafkaAuthorizationError, KafkaGateway
from kafka_placement.kafka.throttles import CLAIM_PREFIX

THROTTLE_KEYS = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)


@dataclass(frozen=True)
class SecureRig:
    """The secure cluster's connection details (rig.json `kafka-secure`)."""

    bootstrap: str
    mtls_bootstrap: str
    broker_ids: tuple[int, ...]
    security: dict[str, Any]

    @property
    def operator_password(self) -> str:
        return str(self.security["users"][self.security["operatorUser"]])

    def command_config(self, name: str) -> str:
        """A ready-made client properties file: operatorSasl, operatorMtls or adminSasl."""
        return str(self.security["commandConfigs"][name])

    def admin_conf(self) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap, **kafka_security.admin_client_conf(self.security)}

    def admin_settings(self) -> ConnectionSettings:
        return ConnectionSettings.from_command_config(self.command_config("adminSasl"))

    def operator_settings(self) -> ConnectionSettings:
        return ConnectionSettings.from_command_config(self.command_config("operatorSasl"))


@pytest.fixture(scope="session")
def secure_rig(rig_json: dict[str, Any]) -> SecureRig:
    entry = rig_entry(rig_json, "kafka-secure")
    return SecureRig(
        bootstrap=str(entry["bootstrapServers"]),
        mtls_bootstrap=str(entry["security"]["mtlsBootstrapServers"]),
        broker_ids=tuple(int(n["id"]) for n in entry["nodes"]),
        security=dict(entry["security"]),
    )


@pytest.fixture(scope="session")
def secure_admin(secure_rig: SecureRig) -> Any:
    """confluent-kafka AdminClient of the rig's super user."""
    from confluent_kafka.admin import AdminClient

    return AdminClient(secure_rig.admin_conf())


SecureTopic = Callable[[list[list[int]]], str]


@pytest.fixture
def secure_topic(
    secure_rig: SecureRig, secure_admin: Any, request: pytest.FixtureRequest
) -> Iterator[SecureTopic]:
    """Factory: a topic with that replica assignment and ~100 kB per partition; deleted afterwards."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    created: list[str] = []

    def make(assignment: list[list[int]]) -> str:
        name = f"sec-{request.node.name[:30].strip('_')}-{uuid.uuid4().hex[:6]}"
        name = "".join(c if c.isalnum() or c in "-_." else "-" for c in name)
        topic = NewTopic(name, num_partitions=len(assignment), replica_assignment=assignment)
        secure_admin.create_topics([topic], request_timeout=30)[name].result(timeout=60)
        created.append(name)
        security = kafka_security.admin_client_conf(secure_rig.security)
        wait_topic_everywhere(secure_rig.bootstrap, name, len(assignment), conf=security)
        producer = Producer({**secure_rig.admin_conf(), "acks": "all"})
        for i in range(100 * len(assignment)):
            producer.produce(name, value=b"x" * 1000, partition=i % len(assignment))
        assert producer.flush(60) == 0
        return name

    yield make
    if created:
        for f in secure_admin.delete_topics(created, request_timeout=30).values():
            f.result(timeout=60)


def placement(rig: SecureRig, topic: str) -> dict[int, tuple[int, ...]]:
    """partition -> replicas, read as the super user."""
    with KafkaGateway(rig.admin_settings()) as gw:
        return {p: s.replicas for (_, p), s in gw.describe_partitions([topic]).items()}


def reassignments(rig: SecureRig) -> dict[Any, Any]:
    with KafkaGateway(rig.admin_settings()) as gw:
        return gw.list_reassignments()


def throttles_left(rig: SecureRig, topics: list[str]) -> dict[str, str]:
    """Every throttle config still set on the brokers and the topics."""
    from kafka_placement.kafka.gateway import ConfigTarget

    targets = [ConfigTarget.broker(b) for b in rig.broker_ids] + [ConfigTarget.topic(t) for t in topics]
    with KafkaGateway(rig.admin_settings()) as gw:
        described = gw.describe_configs(targets)
    return {
        f"{t.kind} {t.name} {k}": v.value or ""
        for t, entries in described.items()
        for k, v in entries.items()
        if (k in THROTTLE_KEYS and v.value) or k.startswith(CLAIM_PREFIX)  # a claim's value reads as null
    }


def no_throttle_left(rig: SecureRig, topics: list[str], timeout: float = 30) -> None:
    """Until ``throttles_left`` is empty: the operator removes them through the controller before its
    execution ends; each broker applies that moments later (strict: only the operator removes them)."""
    deadline = time.monotonic() + timeout
    while left := throttles_left(rig, topics):
        assert time.monotonic() < deadline, f"throttles left {timeout:.0f} s after the execution: {left}"
        time.sleep(0.5)


def _binding_filter(binding: Any) -> Any:
    from confluent_kafka.admin import AclBindingFilter

    return AclBindingFilter(
        binding.restype,
        binding.name,
        binding.resource_pattern_type,
        binding.principal,
        binding.host,
        binding.operation,
        binding.permission_type,
    )


@contextlib.contextmanager
def acl_removed(rig: SecureRig, admin: Any, index: int) -> Iterator[tuple[str, str, str, str]]:
    """Remove the operator's ACL ``kafka_security.OPERATOR_ACLS[index]`` for the block, then restore it and
    wait until the operator's principal is allowed everything again."""
    principal = str(rig.security["operatorPrincipal"])
    binding = kafka_security.acl_bindings(principal)[index]
    deleted = [b for f in admin.delete_acls([_binding_filter(binding)]).values() for b in f.result(30)]
    assert len(deleted) == 1, f"expected to delete exactly {binding}, deleted {deleted}"
    acl_everywhere(
        rig, binding, False
    )  # the change reaches each broker's authorizer through the metadata log
    try:
        yield kafka_security.OPERATOR_ACLS[index]
    finally:
        for f in admin.create_acls([binding]).values():
            f.result(30)
        acl_everywhere(rig, binding, True)
        wait_authorized(rig)


def acl_everywhere(rig: SecureRig, binding: Any, present: bool) -> None:
    """Until every broker's authorizer has (or no longer has) ``binding``: DescribeAcls is answered by the
    broker asked, from the ACLs it has applied (a fresh client per broker, which knows only that one)."""
    from confluent_kafka.admin import AdminClient

    for address in broker_addresses(rig.bootstrap):

        def applied(address: str = address) -> bool:
            one = AdminClient(
                {**kafka_security.admin_client_conf(rig.security), "bootstrap.servers": address}
            )
            return bool(one.describe_acls(_binding_filter(binding)).result(30)) == present

        wait_for(f"ACL {binding} {'on' if present else 'gone from'} broker {address}", applied, 30)


def wait_authorized(rig: SecureRig, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with KafkaGateway(rig.operator_settings()) as gw:
                gw.check_authorized()
            return
        except KafkaAuthorizationError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def write_properties(path: Path, lines: dict[str, str]) -> str:
    path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    return str(path)
