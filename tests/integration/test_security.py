"""The CLI against the secure rig: SASL_SSL (SCRAM-SHA-512) and mutual TLS, least-privilege ACLs.

Real Kafka only (`kafka_rig.py up --name secure`). The CLI connects as the operator's principal through
`--command-config`; the rig's super user sets up topics and reads the outcome. Each needed ACL removed in
turn must fail with an error naming it and move nothing; a wrong password, an untrusted CA and an expired
client certificate each fail fast with their own message; no password ever appears in any output.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.integration.conftest import clients, cyclic_gc_off
from tests.integration.secure_rig import *  # noqa: F403  (the secure rig's fixtures)
from tests.integration.secure_rig import (
    SecureRig,
    SecureTopic,
    acl_removed,
    no_throttle_left,
    placement,
    reassignments,
    throttles_left,
    write_properties,
)
from tests.rig import kafka_security

from kafka_placement.kafka import access
from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import KafkaAuthenticationError, KafkaGateway

pytestmark = [pytest.mark.kafka]
CLI = str(Path(sys.executable).parent / "kafka-placement")
THROTTLE = "10000000"
# a refusal (a denied ACL, a refused login) ends a command within its connection timeouts (10 s, and
# 30 s per request); a command still running after this long waits for something instead
REFUSAL_TIMEOUT_S = 90.0


def cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """The CLI's outcome; one still running after ``timeout`` seconds fails the test."""
    try:
        return subprocess.run([CLI, "--debug", *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"kafka-placement {args[0]} still running after {timeout:g} s")


def plan_decommission(tmp_path: Path, config: str, broker: int) -> Path:
    """snapshot + plan (BrokerDecommission of ``broker``) over ``config``; returns the plan file."""
    snap, intents, plan = tmp_path / "snapshot.json", tmp_path / "intents.yaml", tmp_path / "plan.json"
    out = cli("snapshot", "--command-config", config, "-o", str(snap))
    assert out.returncode == 0, out.stderr
    intents.write_text(f"kind: BrokerDecommission\nspec: {{brokers: [{broker}]}}\n")
    out = cli("plan", "--snapshot", str(snap), "--intents", str(intents), "-o", str(plan))
    assert out.returncode == 0, out.stderr
    return plan


def test_rig_grants_exactly_the_documented_acls() -> None:
    """The rig's grants and the product's REQUIRED_ACLS (README table) are the same four."""
    rig = {(t, n, o) for t, n, o, _ in kafka_security.OPERATOR_ACLS}
    product = {(a.resource_type, "*" if a.resource_type == "TOPIC" else "kafka-cluster", a.operation)
               for a in access.REQUIRED_ACLS}  # fmt: skip
    assert rig == product


@pytest.mark.parametrize("listener", ["operatorSasl", "operatorMtls"])
def test_cli_decommissions_a_broker_over_a_secured_listener(
    secure_rig: SecureRig, secure_topic: SecureTopic, tmp_path: Path, listener: str
) -> None:
    topic = secure_topic([[2], [2]])
    config = secure_rig.command_config(listener)
    plan = plan_decommission(tmp_path, config, 2)
    state = str(tmp_path / "state.json")
    ex = cli("execute", "--command-config", config, "--plan", str(plan), "--throttle", THROTTLE,
             "--wait", "--poll-seconds", "0.5", "--state", state)  # fmt: skip
    assert ex.returncode == 0, ex.stderr + ex.stdout
    assert "[Completed]" in ex.stdout
    ver = cli("verify", "--command-config", config, "--plan", str(plan), "--state", state)
    assert ver.returncode == 0, ver.stderr + ver.stdout
    assert placement(secure_rig, topic) == {0: (1,), 1: (1,)}
    no_throttle_left(secure_rig, [topic])  # removed before Completed; each broker applies it moments later
    for out in (ex, ver):
        assert secure_rig.operator_password not in out.stdout + out.stderr


@pytest.mark.parametrize("index", range(len(kafka_security.OPERATOR_ACLS)))
def test_each_missing_acl_is_named_and_nothing_moves(
    secure_rig: SecureRig, secure_admin: object, secure_topic: SecureTopic, tmp_path: Path, index: int
) -> None:
    topic = secure_topic([[2], [2]])
    config = secure_rig.command_config("operatorSasl")
    plan = plan_decommission(tmp_path, config, 2)  # planned while every ACL is in place
    before = placement(secure_rig, topic)
    with acl_removed(secure_rig, secure_admin, index) as (rtype, _, operation, _):
        ex = cli("execute", "--command-config", config, "--plan", str(plan), "--throttle", THROTTLE,
                 "--wait", "--poll-seconds", "0.5", "--state", str(tmp_path / "state.json"),
                 timeout=REFUSAL_TIMEOUT_S)  # fmt: skip
        snap = cli("snapshot", "--command-config", config, "-o", str(tmp_path / "denied.json"))
        after = placement(secure_rig, topic)
        in_flight = reassignments(secure_rig)
        left = throttles_left(secure_rig, [topic])
    assert ex.returncode == 1, ex.stderr + ex.stdout
    assert "not authorized" in ex.stderr and f"{operation} on {rtype}" in ex.stderr, ex.stderr
    assert "nothing was submitted" in ex.stderr  # denied by the check before executing, not midway
    assert after == before and not in_flight and left == {}, (after, in_flight, left)
    if (rtype, operation) in (("TOPIC", "DESCRIBE"), ("CLUSTER", "ALTER")):  # a snapshot needs DESCRIBE
        assert snap.returncode == 1 and f"{operation} on {rtype}" in snap.stderr, snap.stderr
    else:
        assert snap.returncode == 0, snap.stderr
    for out in (ex, snap):
        assert secure_rig.operator_password not in out.stdout + out.stderr
        assert "Traceback" not in out.stderr


def test_wrong_password_untrusted_ca_expired_certificate_each_fail_specifically(
    secure_rig: SecureRig, secure_topic: SecureTopic, tmp_path: Path
) -> None:
    topic = secure_topic([[2], [2]])
    sec = secure_rig.security
    plan = plan_decommission(tmp_path, secure_rig.command_config("operatorSasl"), 2)
    before = placement(secure_rig, topic)
    wrong = "Wr0ng-" + secure_rig.operator_password[::-1]
    jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required"
    right = secure_rig.operator_password
    cases = {
        "wrong password": (
            {"bootstrap.servers": secure_rig.bootstrap, "security.protocol": "SASL_SSL",
             "sasl.mechanism": "SCRAM-SHA-512", "ssl.ca.location": sec["caFile"],
             "sasl.jaas.config": f'{jaas} username="{sec["operatorUser"]}" password="{wrong}";'},
            f"SASL SCRAM-SHA-512 authentication of user '{sec['operatorUser']}' failed",
        ),
        "untrusted CA": (
            {"bootstrap.servers": secure_rig.bootstrap, "security.protocol": "SASL_SSL",
             "sasl.mechanism": "SCRAM-SHA-512", "ssl.ca.location": sec["untrustedCaFile"],
             "sasl.jaas.config": f'{jaas} username="{sec["operatorUser"]}" password="{right}";'},
            f"is not trusted: it is not signed by a CA in ssl.ca.location {sec['untrustedCaFile']}",
        ),
        "expired certificate": (
            {"bootstrap.servers": secure_rig.mtls_bootstrap, "security.protocol": "SSL",
             "ssl.ca.location": sec["caFile"], "ssl.certificate.location": sec["expiredCertFile"],
             "ssl.key.location": sec["expiredKeyFile"]},
            f"the client certificate {sec['expiredCertFile']} (ssl.certificate.location) expired at",
        ),
        "untrusted client certificate": (
            {"bootstrap.servers": secure_rig.mtls_bootstrap, "security.protocol": "SSL",
             "ssl.ca.location": sec["caFile"]},
            "rejected the client certificate (none: ssl.certificate.location is not set)",
        ),
    }  # fmt: skip
    for name, (props, expected) in cases.items():
        config = write_properties(tmp_path / f"{name.replace(' ', '-')}.properties", props)
        for args in (
            ("snapshot", "--command-config", config, "-o", str(tmp_path / "x.json")),
            ("execute", "--command-config", config, "--plan", str(plan), "--throttle", THROTTLE, "--wait",
             "--state", str(tmp_path / f"{name}.state.json")),
        ):  # fmt: skip
            out = cli(*args, timeout=REFUSAL_TIMEOUT_S)
            text = out.stdout + out.stderr
            assert out.returncode == 1, f"{name} {args[0]}: {text}"
            assert expected in out.stderr, f"{name} {args[0]}: {text}"  # the reason, not a timeout
            assert secure_rig.operator_password not in text and wrong not in text
            assert "Traceback" not in text
    assert placement(secure_rig, topic) == before
    assert not reassignments(secure_rig) and throttles_left(secure_rig, [topic]) == {}


def test_a_refused_authentication_leaves_no_client_behind(secure_rig: SecureRig) -> None:
    """The operator's gateway refused with a wrong password: the error names the user, and with the
    cyclic garbage collector off (the operator frees clients by reference counting between its rare full
    collections) no librdkafka client outlives the closed gateway, retrying the refused login."""
    from confluent_kafka.admin import AdminClient

    sec = secure_rig.security
    settings = ConnectionSettings(
        secure_rig.bootstrap, security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
        username=sec["operatorUser"], password="Wr0ng-" + secure_rig.operator_password[::-1],
        ssl_cafile=sec["caFile"],
    )  # fmt: skip
    with cyclic_gc_off(AdminClient) as before:
        with KafkaGateway(settings) as gw, pytest.raises(KafkaAuthenticationError) as raised:
            gw.snapshot()
        assert f"authentication of user '{sec['operatorUser']}' failed" in raised.value.message
        del gw, raised
        assert clients(AdminClient) == before  # the module's open gateways keep theirs
