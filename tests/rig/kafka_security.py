"""Security of the rig's `secure` Kafka profile: PEM certificates, SCRAM users, listeners, ACLs.

Used by tests/rig/kafka_rig.py for `kafka_rig.py up --name secure` (and any cluster started with
`--secure`). Everything here is generated per `up`, under `.rig/kafka-<name>/pki/`:

- a CA (`ca.crt`) that signs a broker certificate (CN=broker, SAN 127.0.0.1/localhost, server and client
  auth; `broker.pem` holds its key and chain, read by Kafka as `ssl.keystore.type=PEM`), the operator's
  client certificate (CN=placement-operator: `operator.crt`/`operator.key`), an already expired client
  certificate for the same name (`expired.crt`/`expired.key`) and a second CA that signed nothing the
  brokers use (`untrusted-ca.crt`), for the negative tests. No JKS anywhere.
- SCRAM-SHA-512 users created at format time (`kafka-storage format --add-scram`): `admin`, the rig's
  super user, and `placement-operator`, the operator's principal; random passwords per `up`.
- listeners: `SASL_SSL` (SCRAM-SHA-512 over TLS, no client certificate), `MTLS` (TLS with a required
  client certificate; `ssl.principal.mapping.rules` maps CN=x to `User:x`, so the operator's certificate
  is the same principal as its SCRAM user) and `CONTROLLER` (mutual TLS between the nodes, as `User:broker`).
- `StandardAuthorizer`, super users `User:admin` and `User:broker`, nothing allowed without an ACL; after
  the cluster is up the rig grants `User:placement-operator` exactly ``OPERATOR_ACLS`` (README, "Security").

Connection details go into rig.json under the cluster's key, `security` (see ``rig_json_section``).
"""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
CERT_DAYS = 30
SCRAM = "SCRAM-SHA-512"
ADMIN_USER = "admin"
OPERATOR_USER = "placement-operator"
BROKER_PRINCIPAL = "User:broker"
CLUSTER_RESOURCE = "kafka-cluster"

# What the operator's principal may do, and why: (resource type, resource name, operation, why). Found by
# experiment against this rig (tests/integration/test_security.py removes each in turn). Kafka implies
# DESCRIBE from ALTER and DESCRIBE_CONFIGS from ALTER_CONFIGS, so these four grants are the least privilege.
OPERATOR_ACLS: tuple[tuple[str, str, str, str], ...] = (
    ("CLUSTER", CLUSTER_RESOURCE, "ALTER",
     "AlterPartitionReassignments, AlterReplicaLogDirs, ElectLeaders; implied DESCRIBE: DescribeLogDirs, "
     "ListPartitionReassignments"),
    ("CLUSTER", CLUSTER_RESOURCE, "ALTER_CONFIGS",
     "IncrementalAlterConfigs of brokers (throttle rates, cordoned.log.dirs); implied DESCRIBE_CONFIGS"),
    ("TOPIC", "*", "DESCRIBE", "Metadata of every topic (replicas, leader, ISR)"),
    ("TOPIC", "*", "ALTER_CONFIGS",
     "IncrementalAlterConfigs of topics (*.replication.throttled.replicas); implied DESCRIBE_CONFIGS"),
)  # fmt: skip


class PkiError(Exception):
    """openssl failed while the rig made its certificates."""


def _openssl(openssl: str, args: Sequence[str], what: str) -> None:
    try:
        proc = subprocess.run([openssl, *args], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired as e:
        raise PkiError(f"openssl {what} timed out") from e
    if proc.returncode != 0:
        raise PkiError(f"openssl {what} failed (exit {proc.returncode}): {proc.stderr.strip()[-600:]}")


def _ca(openssl: str, pki: Path, name: str) -> tuple[Path, Path]:
    key, crt = pki / f"{name}.key", pki / f"{name}.crt"
    _openssl(openssl, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", str(CERT_DAYS),
                       "-keyout", str(key), "-out", str(crt), "-subj", f"/CN=kafka-placement-rig-{name}",
                       "-addext", "basicConstraints=critical,CA:TRUE",
                       "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"],
             f"{name}")  # fmt: skip
    return key, crt


def _leaf(
    openssl: str, pki: Path, name: str, cn: str, ca: tuple[Path, Path], ext: str, days: int = CERT_DAYS
) -> tuple[Path, Path]:
    """A key (unencrypted PKCS#8 PEM) and a certificate signed by ``ca``; ``days`` < 0: already expired."""
    key, csr, crt, extfile = (pki / f"{name}.{s}" for s in ("key", "csr", "crt", "ext"))
    _openssl(openssl, ["req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
                       "-subj", f"/CN={cn}"], f"{name} key")  # fmt: skip
    extfile.write_text(ext)
    _openssl(openssl, ["x509", "-req", "-sha256", "-days", str(days), "-in", str(csr), "-CA", str(ca[1]),
                       "-CAkey", str(ca[0]), "-CAcreateserial", "-extfile", str(extfile), "-out", str(crt)],
             f"{name} certificate")  # fmt: skip
    csr.unlink()
    extfile.unlink()
    return key, crt


def make_pki(openssl: str, pki: Path) -> dict[str, str]:
    """Every certificate and key of the secure profile (see the module docstring); returns their paths."""
    pki.mkdir(parents=True, mode=0o700)
    ca = _ca(openssl, pki, "ca")
    _ca(openssl, pki, "untrusted-ca")
    client_ext = (
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n"
    )
    broker_key, broker_crt = _leaf(
        openssl,
        pki,
        "broker",
        "broker",
        ca,
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
        f"extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:{HOST},DNS:localhost\n",
    )
    op_key, op_crt = _leaf(openssl, pki, "operator", OPERATOR_USER, ca, client_ext)
    old_key, old_crt = _leaf(openssl, pki, "expired", OPERATOR_USER, ca, client_ext, days=-1)
    keystore = pki / "broker.pem"  # Kafka's PEM keystore: the private key and the certificate chain
    keystore.write_text(broker_key.read_text() + broker_crt.read_text() + ca[1].read_text())
    for f in pki.iterdir():
        f.chmod(0o600)
    return {
        "caFile": str(ca[1]),
        "untrustedCaFile": str(pki / "untrusted-ca.crt"),
        "brokerKeystore": str(keystore),
        "clientCertFile": str(op_crt),
        "clientKeyFile": str(op_key),
        "expiredCertFile": str(old_crt),
        "expiredKeyFile": str(old_key),
    }


def new_users() -> dict[str, str]:
    """SCRAM user -> a fresh random password (hex: nothing for the storage tool's parser to trip on)."""
    return {ADMIN_USER: secrets.token_hex(16), OPERATOR_USER: secrets.token_hex(16)}


def format_args(users: Mapping[str, str]) -> list[str]:
    """`kafka-storage format` arguments creating the SCRAM users in the bootstrap metadata."""
    out: list[str] = []
    for name, password in users.items():
        out += ["--add-scram", f"{SCRAM}=[name={name},password={password}]"]
    return out


def server_props(
    files: Mapping[str, str], sasl_port: int, mtls_port: int, controller_port: int
) -> dict[str, object]:
    """The security part of one node's server.properties (overrides the plaintext listeners)."""
    jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    return {
        "listeners": f"SASL_SSL://{HOST}:{sasl_port},MTLS://{HOST}:{mtls_port},CONTROLLER://{HOST}:{controller_port}",
        "advertised.listeners": f"SASL_SSL://{HOST}:{sasl_port},MTLS://{HOST}:{mtls_port},"
        f"CONTROLLER://{HOST}:{controller_port}",
        "listener.security.protocol.map": "SASL_SSL:SASL_SSL,MTLS:SSL,CONTROLLER:SSL",
        "inter.broker.listener.name": "MTLS",
        "sasl.enabled.mechanisms": SCRAM,
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": jaas,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": files["brokerKeystore"],
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": files["caFile"],
        "ssl.client.auth": "required",  # MTLS and CONTROLLER
        "listener.name.sasl_ssl.ssl.client.auth": "none",
        "ssl.principal.mapping.rules": "RULE:^CN=([A-Za-z0-9._-]+)(,.*)?$/$1/,DEFAULT",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:{ADMIN_USER};{BROKER_PRINCIPAL}",
        "allow.everyone.if.no.acl.found": "false",
    }


def admin_client_conf(security: Mapping[str, Any]) -> dict[str, Any]:
    """librdkafka settings of the rig's super user over SASL_SSL (readiness checks, ACL changes)."""
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": SCRAM,
        "sasl.username": ADMIN_USER,
        "sasl.password": security["users"][ADMIN_USER],
        "ssl.ca.location": security["caFile"],
    }


def acl_bindings(principal: str) -> list[Any]:
    """``OPERATOR_ACLS`` as confluent-kafka ``AclBinding``s for ``principal``."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    return [
        AclBinding(
            getattr(ResourceType, "BROKER" if rtype == "CLUSTER" else rtype),  # librdkafka's name
            name,
            ResourcePatternType.LITERAL,
            principal,
            "*",
            getattr(AclOperation, op),
            AclPermissionType.ALLOW,
        )
        for rtype, name, op, _ in OPERATOR_ACLS
    ]


def grant_operator_acls(admin: Any, timeout: float = 30.0) -> None:
    """Create ``OPERATOR_ACLS`` for the operator's principal (idempotent)."""
    futures = admin.create_acls(acl_bindings(f"User:{OPERATOR_USER}"), request_timeout=timeout)
    for f in futures.values():
        f.result()


def client_properties(
    bootstrap: str, protocol: str, files: Mapping[str, str], user: str | None, password: str | None
) -> str:
    """A Kafka client properties file (``--command-config``) for one listener and identity."""
    lines = [
        f"bootstrap.servers={bootstrap}",
        f"security.protocol={protocol}",
        f"ssl.ca.location={files['caFile']}",
    ]
    if protocol == "SASL_SSL":
        lines += [
            f"sasl.mechanism={SCRAM}",
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{user}" password="{password}";',
        ]
    else:
        lines += [
            f"ssl.certificate.location={files['clientCertFile']}",
            f"ssl.key.location={files['clientKeyFile']}",
        ]
    return "\n".join(lines) + "\n"


def rig_json_section(
    pki: Path, files: Mapping[str, str], users: Mapping[str, str], sasl: str, mtls: str
) -> dict[str, Any]:
    """rig.json `security`: bootstraps per listener, PEM paths, users, the operator's ACLs, ready-made
    client properties files (written next to the certificates)."""
    configs = {
        "operatorSasl": client_properties(sasl, "SASL_SSL", files, OPERATOR_USER, users[OPERATOR_USER]),
        "operatorMtls": client_properties(mtls, "SSL", files, None, None),
        "adminSasl": client_properties(sasl, "SASL_SSL", files, ADMIN_USER, users[ADMIN_USER]),
    }
    paths = {}
    for name, text in configs.items():
        path = pki / f"{name}.properties"
        path.write_text(text)
        path.chmod(0o600)
        paths[name] = str(path)
    return {
        "saslSslBootstrapServers": sasl,
        "mtlsBootstrapServers": mtls,
        "saslMechanism": SCRAM,
        **files,
        "users": dict(users),
        "superUser": ADMIN_USER,
        "operatorUser": OPERATOR_USER,
        "operatorPrincipal": f"User:{OPERATOR_USER}",
        "operatorAcls": [
            {"resourceType": t, "resourceName": n, "patternType": "LITERAL", "operation": o, "why": w}
            for t, n, o, w in OPERATOR_ACLS
        ],
        "commandConfigs": paths,
    }
