"""How the reconciler uses the KafkaCluster's typed spec (reconcile/reconciler.py): the connection settings
and the executor's limits come from it, and an invalid spec fails the reconcile with a condition naming the
field, before anything is read from Kafka."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, cast

import pytest

from kafka_placement.execution.executor import Limits
from kafka_placement.kube.gateway import KubeGateway
from kafka_placement.model.cluster_spec import ClusterSpec
from kafka_placement.model.errors import BadInputError
from kafka_placement.reconcile import inputs
from kafka_placement.reconcile.inputs import connection_settings, limits_of
from kafka_placement.reconcile.reconciler import Reconciler


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class FakeKube:
    """The few KubeGateway calls a failed reconcile makes: Secrets, intents, Events and status patches."""

    def __init__(self, secrets: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self.secrets = {name: {k: b64(v) for k, v in data.items()} for name, data in (secrets or {}).items()}
        self.intents: dict[str, list[dict[str, Any]]] = {}
        self.events: list[tuple[str, str, str, str]] = []  # (the object's kind, type, reason, message)
        self.statuses: list[tuple[str, dict[str, Any]]] = []

    def secret_data(self, ns: str, name: str) -> Mapping[str, str] | None:
        return self.secrets.get(name)

    def list_custom(self, group: str, version: str, ns: str, plural: str) -> list[dict[str, Any]]:
        return self.intents.get(plural, [])

    def read_config_map(self, ns: str, name: str) -> None:
        return None  # no execution record

    def event(self, obj: Mapping[str, Any], etype: str, reason: str, message: str) -> None:
        self.events.append((obj.get("kind", ""), etype, reason, message))

    def patch_custom_status(
        self, group: str, version: str, ns: str, plural: str, name: str, status: dict[str, Any]
    ) -> None:
        self.statuses.append((name, status))


SECRETS = {
    "ca": {"ca.crt": "CA PEM"},
    "client": {"tls.crt": "CERT PEM", "tls.key": "KEY PEM"},
    "user": {"username": "alice", "password": "s3cret"},
}


@pytest.fixture
def settings_of(monkeypatch: pytest.MonkeyPatch) -> Any:
    """connection_settings' ConnectionSettings arguments (PEM contents stand for their files)."""
    monkeypatch.setattr(inputs, "pem_file", lambda content: f"file:{content}")
    monkeypatch.setattr(inputs, "ConnectionSettings", lambda **kw: kw)

    def settings(spec: Mapping[str, Any], secrets: Any = SECRETS) -> dict[str, Any]:
        kube = cast(KubeGateway, FakeKube(secrets))
        got: dict[str, Any] = cast(Any, connection_settings(ClusterSpec.parse(spec), "kafka", kube))
        return got

    return settings


def test_plaintext_tls_sasl_and_mutual_tls(settings_of: Any) -> None:
    k = {"bootstrapServers": "k:9092"}
    assert settings_of(k) == {"bootstrap_servers": "k:9092", "security_protocol": "PLAINTEXT"}
    assert settings_of({**k, "tls": {}}) == {"bootstrap_servers": "k:9092", "security_protocol": "SSL"}
    mtls = {"caSecretRef": {"name": "ca"}, "certSecretRef": {"name": "client"}}
    assert settings_of({**k, "tls": mtls}) == {
        "bootstrap_servers": "k:9092",
        "security_protocol": "SSL",
        "ssl_cafile": "file:CA PEM",
        "ssl_certfile": "file:CERT PEM",
        "ssl_keyfile": "file:KEY PEM",
    }
    sasl = {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": "user"}}
    assert settings_of({**k, "sasl": sasl}) == {
        "bootstrap_servers": "k:9092",
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "username": "alice",
        "password": "s3cret",
    }
    both = settings_of({**k, "sasl": sasl, "tls": {"caSecretRef": {"name": "ca"}}})
    assert both["security_protocol"] == "SASL_SSL" and both["ssl_cafile"] == "file:CA PEM"


def test_the_secret_keys_named_in_the_spec_are_read(settings_of: Any) -> None:
    secrets = {"s": {"my-ca": "CA2", "u": "bob", "p": "pw", "c": "C2", "k": "K2"}}
    spec = {
        "bootstrapServers": "k:9092",
        "tls": {
            "caSecretRef": {"name": "s", "key": "my-ca"},
            "certSecretRef": {"name": "s", "certKey": "c", "keyKey": "k"},
        },
        "sasl": {"mechanism": "PLAIN", "secretRef": {"name": "s", "usernameKey": "u", "passwordKey": "p"}},
    }
    got = settings_of(spec, secrets)
    assert (got["ssl_cafile"], got["ssl_certfile"], got["ssl_keyfile"]) == ("file:CA2", "file:C2", "file:K2")
    assert (got["sasl_mechanism"], got["username"], got["password"]) == ("PLAIN", "bob", "pw")


@pytest.mark.parametrize(
    ("spec", "location", "says"),
    [
        ({"tls": {"caSecretRef": {"name": "nope"}}}, "spec.tls.caSecretRef", "Secret kafka/nope not found"),
        ({"tls": {"caSecretRef": {"name": "ca", "key": "x"}}}, "spec.tls.caSecretRef", "has no key 'x'"),
        (
            {"sasl": {"mechanism": "PLAIN", "secretRef": {"name": "user", "passwordKey": "pass"}}},
            "spec.sasl.secretRef",
            "Secret kafka/user has no key 'pass'",
        ),
    ],
)
def test_unreadable_secrets_are_bad_input_naming_the_field(
    settings_of: Any, spec: dict[str, Any], location: str, says: str
) -> None:
    with pytest.raises(BadInputError) as e:
        settings_of({"bootstrapServers": "k:9092", **spec})
    assert e.value.location == location and says in e.value.detail


def test_the_limits_come_from_the_spec() -> None:
    assert limits_of(ClusterSpec.parse({"bootstrapServers": "k:9092"})) == Limits()
    spec = ClusterSpec.parse(
        {
            "bootstrapServers": "k:9092",
            "throttleBytesPerSecond": 1000,
            "limits": {
                "maxMovesPerBroker": 2,
                "maxMovesInFlight": 3,
                "maxBytesPerBroker": 4096,
                "batchSeconds": 10,
                "onConfigChange": "Pause",
                "maxReapplies": 7,
                "reapplyWindowSeconds": 60,
                "holdAchievedRate": True,
            },
        }
    )
    assert limits_of(spec) == Limits(
        max_moves_per_broker=2,
        max_moves=3,
        max_bytes_per_broker=4096,
        throttle=1000,
        batch_seconds=10,
        on_config_change="Pause",
        max_reapplies=7,
        reapply_window_s=60,
        hold_rate=True,
    )


def cluster(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kafkaplacement.io/v1alpha1",
        "kind": "KafkaCluster",
        "metadata": {"name": "c", "namespace": "kafka", "uid": "u-c", "generation": 1},
        "spec": spec,
    }


RETIRE = {
    "apiVersion": "kafkaplacement.io/v1alpha1",
    "kind": "BrokerDecommission",
    "metadata": {"name": "retire-3", "namespace": "kafka", "uid": "u-r", "generation": 1},
    "spec": {"clusterRef": {"name": "c"}, "brokers": [3]},
}


@pytest.mark.parametrize(
    ("spec", "reason", "says", "phase"),
    [
        (
            {},
            "InvalidConnection",
            'spec.bootstrapServers: bootstrapServers is required ("host:port,host:port")',
            "Invalid",
        ),
        (
            {"bootstrapServers": "k:9092", "sasl": {"mechanism": "GSSAPI", "secretRef": {"name": "u"}}},
            "InvalidConnection",
            "spec.sasl.mechanism: must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, got 'GSSAPI'",
            "Invalid",
        ),
        (  # the spec is valid; the Secret it names is missing (it may be created later)
            {"bootstrapServers": "k:9092", "tls": {"caSecretRef": {"name": "gone"}}},
            "InvalidConnection",
            "spec.tls.caSecretRef: Secret kafka/gone not found",
            "Unreachable",
        ),
        (
            {"bootstrapServers": "k:9092", "limits": {"maxMovesInFlight": 0}},
            "InvalidSpec",
            "spec.limits.maxMovesInFlight: must be >= 1, got 0",
            "Invalid",
        ),
        (  # a field the CRD's schema cannot check
            {
                "bootstrapServers": "k:9092",
                "execution": {"windows": [{"start": "01:00", "end": "02:00", "timeZone": "Europe/Pariss"}]},
            },
            "InvalidSpec",
            "spec.execution.windows[0].timeZone: unknown time zone 'Europe/Pariss' "
            "(an IANA name, e.g. Europe/Paris)",
            "Invalid",
        ),
    ],
)
def test_an_invalid_spec_fails_the_reconcile_naming_the_field(
    spec: dict[str, Any], reason: str, says: str, phase: str
) -> None:
    """An invalid spec: phase Invalid (Kafka was never contacted: not Unreachable), the field named in Ready
    and in a Warning Event on the KafkaCluster as on its intents."""
    kube = FakeKube()
    kube.intents["brokerdecommissions"] = [dict(RETIRE)]
    status = Reconciler(cast(KubeGateway, kube)).reconcile(cluster(spec))
    assert status["phase"] == phase
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == ("False", reason, says)
    ((name, intent),) = kube.statuses
    assert (name, intent["phase"], intent["message"]) == ("retire-3", "Failed", says)
    told = [kind for kind, *event in kube.events if event == ["Warning", reason, says]]
    assert told == (["KafkaCluster", "BrokerDecommission"] if phase == "Invalid" else ["BrokerDecommission"])


def test_an_invalid_spec_is_told_on_the_cluster_once_per_message() -> None:
    """The KafkaCluster's Warning Event is posted when it turns Invalid or the message changes, not at every
    reconcile of the same invalid spec."""
    kube = FakeKube()
    bad = cluster({"bootstrapServers": "k:9092", "limits": {"maxMovesInFlight": 0}})
    rec = Reconciler(cast(KubeGateway, kube))
    status = rec.reconcile(bad)
    assert [e[:2] for e in kube.events] == [("KafkaCluster", "Warning")]
    kube.events.clear()
    assert rec.reconcile({**bad, "status": status})["phase"] == "Invalid"
    assert kube.events == []  # the same message: said once
    worse = cluster({"bootstrapServers": "k:9092", "limits": {"maxMovesInFlight": 0, "maxMovesPerBroker": 0}})
    rec.reconcile({**worse, "status": status})
    assert [e[2] for e in kube.events] == ["InvalidSpec"] and "maxMovesPerBroker" in kube.events[0][3]
