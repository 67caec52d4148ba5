"""ConnectionSettings: properties-file parsing, validation messages and the two client mappings (pure)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from kafka_placement.kafka.connection import ConnectionSettings, parse_bootstrap_servers, parse_properties
from kafka_placement.model.errors import BadInputError

JAAS_PLAIN = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="s3cr=t";'
)
SCRAM_PASSWORD = "zebra-Pw-41"  # (no temporary path can hold it: a repr that shows it shows the password)
JAAS_SCRAM = (
    'org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" '
    f'password="{SCRAM_PASSWORD}";'
)


def write(tmp_path: Path, text: str, name: str = "client.properties") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def self_signed(name: str, password: bytes | None = None) -> tuple[bytes, bytes]:
    """(certificate, private key) as PEM: a self-signed EC certificate, the key encrypted with
    ``password`` when one is given."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    start = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=36500))
        .sign(key, hashes.SHA256())
    )
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption()
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def pem_files(tmp_path: Path) -> dict[str, Path]:
    """A CA certificate, and a client certificate with its unencrypted key, as PEM files."""
    files = {n: tmp_path / f"{n}.pem" for n in ("ca", "cert", "key")}
    files["ca"].write_bytes(self_signed("ca")[0])
    cert, key = self_signed("client")
    files["cert"].write_bytes(cert)
    files["key"].write_bytes(key)
    return files


def bad_input(fn: object, *args: object, **kwargs: object) -> BadInputError:
    with pytest.raises(BadInputError) as raised:
        fn(*args, **kwargs)  # type: ignore[operator]
    return raised.value


# ---- defaults and plain settings ---------------------------------------------------------------------


def test_flag_only_gives_plaintext_settings() -> None:
    s = ConnectionSettings.from_command_config(None, "k1:9092,k2:9093")
    assert s.security_protocol == "PLAINTEXT" and s.servers == ("k1:9092", "k2:9093")
    conf = s.confluent_config()
    assert conf["bootstrap.servers"] == "k1:9092,k2:9093"
    assert conf["security.protocol"] == "PLAINTEXT"
    assert not any(k.startswith(("sasl.", "ssl.")) for k in conf)
    py = s.kafka_python_config()
    assert py["bootstrap_servers"] == ["k1:9092", "k2:9093"]
    assert py["security_protocol"] == "PLAINTEXT"
    assert py["request_timeout_ms"] == 30000 and py["bootstrap_timeout_ms"] == 10000
    assert not any(k.startswith(("sasl_", "ssl_")) for k in py)


def test_no_bootstrap_servers_anywhere_is_bad_input(tmp_path: Path) -> None:
    assert "--bootstrap-server" in str(bad_input(ConnectionSettings.from_command_config, None, None))
    path = write(tmp_path, "security.protocol=PLAINTEXT\n")
    err = bad_input(ConnectionSettings.from_command_config, path, None)
    assert "no bootstrap servers" in err.message and str(path) in err.message


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("", "not a comma-separated list"),
        ("k1:9092,", "not a comma-separated list"),
        ("k1", "'k1' is not host:port"),
        ("k1:99999", "port 99999"),
        ("k1:0", "port 0"),
        ("http://k1:9092", "not host:port"),
    ],
)
def test_bad_bootstrap_servers(value: str, fragment: str) -> None:
    err = bad_input(ConnectionSettings, value)
    assert fragment in err.message and err.location == "bootstrap.servers"


def test_bootstrap_flag_errors_name_the_flag() -> None:
    assert bad_input(ConnectionSettings.from_command_config, None, "k1").location == "--bootstrap-server"


def test_ipv6_and_whitespace_bootstrap_servers() -> None:
    assert parse_bootstrap_servers(" [::1]:9092 , k2:9093") == (("::1", 9092), ("k2", 9093))
    assert ConnectionSettings("[::1]:9092, k2:9093").servers == ("[::1]:9092", "k2:9093")


# ---- properties files --------------------------------------------------------------------------------


def test_properties_syntax() -> None:
    text = "# comment\n! bang comment\n\na=1\nb : 2\nc 3\nd=x\\\n  y\ne=with\\=equals\nf=\n"
    props = parse_properties(text, "f")
    assert {k: v for k, (v, _line) in props.items()} == {
        "a": "1", "b": "2", "c": "3", "d": "xy", "e": "with=equals", "f": "",
    }  # fmt: skip
    assert props["d"][1] == 7


def test_repeated_key_is_bad_input() -> None:
    err = bad_input(parse_properties, "a=1\nb=2\na=3\n", "f.properties")
    assert err.location == "f.properties:3" and "also on line 1" in err.message


def test_file_takes_bootstrap_servers_unless_the_flag_overrides(tmp_path: Path) -> None:
    path = write(tmp_path, "bootstrap.servers=file:9092\n")
    assert ConnectionSettings.from_command_config(path).bootstrap_servers == "file:9092"
    assert ConnectionSettings.from_command_config(path, "flag:9092").bootstrap_servers == "flag:9092"


def test_missing_command_config_is_bad_input(tmp_path: Path) -> None:
    err = bad_input(ConnectionSettings.from_command_config, tmp_path / "nope.properties", "k:9092")
    assert "not found" in err.message and err.location.endswith("nope.properties")


def test_sasl_ssl_with_jaas_and_pem_files(tmp_path: Path) -> None:
    pem = pem_files(tmp_path)
    path = write(
        tmp_path,
        "security.protocol=sasl_ssl\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        f"sasl.jaas.config={JAAS_SCRAM}\n"
        f"ssl.ca.location={pem['ca']}\n"
        "ssl.certificate.location=cert.pem\n"  # relative to the properties file
        "ssl.key.location=key.pem\n"
        "ssl.key.password=kp\n"
        "ssl.endpoint.identification.algorithm=\n"
        "request.timeout.ms=12000\n"
        "client.id=ops\n",
    )
    s = ConnectionSettings.from_command_config(path, "k:9093")
    assert (s.security_protocol, s.sasl_mechanism, s.username, s.password) == (
        "SASL_SSL", "SCRAM-SHA-512", "bob", SCRAM_PASSWORD,
    )  # fmt: skip
    assert s.ssl_certfile == str(pem["cert"]) and s.ssl_keyfile == str(pem["key"])
    assert s.request_timeout_s == 12.0 and not s.ssl_check_hostname
    assert SCRAM_PASSWORD not in repr(s) and "password='***'" in repr(s)
    assert s.confluent_config() == {
        "bootstrap.servers": "k:9093",
        "client.id": "ops",
        "security.protocol": "SASL_SSL",
        "socket.timeout.ms": 12000,
        "socket.connection.setup.timeout.ms": 10000,
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "bob",
        "sasl.password": SCRAM_PASSWORD,
        "ssl.ca.location": str(pem["ca"]),
        "ssl.certificate.location": str(pem["cert"]),
        "ssl.key.location": str(pem["key"]),
        "ssl.key.password": "kp",
        "ssl.endpoint.identification.algorithm": "none",
    }
    assert s.kafka_python_config() == {
        "bootstrap_servers": ["k:9093"],
        "client_id": "ops",
        "security_protocol": "SASL_SSL",
        "request_timeout_ms": 12000,
        "bootstrap_timeout_ms": 10000,
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "bob",
        "sasl_plain_password": SCRAM_PASSWORD,
        "ssl_check_hostname": False,
        "ssl_cafile": str(pem["ca"]),
        "ssl_certfile": str(pem["cert"]),
        "ssl_keyfile": str(pem["key"]),
        "ssl_password": "kp",
    }


def test_sasl_plaintext_plain_with_librdkafka_style_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanisms=PLAIN\nsasl.username=u\nsasl.password=p\n",
    )
    s = ConnectionSettings.from_command_config(path, "k:9092")
    assert (s.sasl_mechanism, s.username, s.password) == ("PLAIN", "u", "p")
    assert "ssl.endpoint.identification.algorithm" not in s.confluent_config()
    assert "ssl_check_hostname" not in s.kafka_python_config()


def test_jaas_password_with_escapes_and_equals(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={JAAS_PLAIN}\n",
    )
    s = ConnectionSettings.from_command_config(path, "k:9092")
    assert (s.username, s.password) == ("alice", "s3cr=t")


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("ssl.truststore.location=/etc/kafka/trust.jks\n", 1, "ssl.ca.location"),
        ("security.protocol=SSL\nssl.keystore.location=/k.jks\n", 2, "convert them to PEM"),
        ("bogus.key=1\n", 1, "unsupported property 'bogus.key'"),
        ("request.timeout.ms=soon\n", 1, "positive number of milliseconds"),
        ("ssl.endpoint.identification.algorithm=maybe\n", 1, "'https' or empty"),
        ("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=com.Foo required;\n", 3,
         "login module 'com.Foo' is not supported"),
        ("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
         "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
         'username="a";\n', 3, 'no password="..."'),
        ("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
         f"sasl.jaas.config={JAAS_SCRAM}\n", 3, "expected one of SCRAM-SHA-256, SCRAM-SHA-512"),
        (f"sasl.jaas.config={JAAS_PLAIN}\n", 1, "security.protocol is PLAINTEXT"),
    ],
)  # fmt: skip
def test_bad_command_config_names_file_and_line(tmp_path: Path, text: str, line: int, fragment: str) -> None:
    path = write(tmp_path, text)
    err = bad_input(ConnectionSettings.from_command_config, path, "k:9092")
    assert err.location == f"{path}:{line}", err.message
    assert fragment in err.detail, err.message


@pytest.mark.parametrize(
    ("text", "fragment", "where"),
    [
        ("security.protocol=TLS\n", "'TLS' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
         "security.protocol"),
        ("security.protocol=SASL_SSL\nsasl.username=u\nsasl.password=p\n", "needs sasl.mechanism",
         "sasl.mechanism"),
        ("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\nsasl.username=u\nsasl.password=p\n",
         "'GSSAPI' is not supported", "sasl.mechanism"),
        ("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=u\n", "needs a password",
         "sasl.password"),
        ("sasl.mechanism=PLAIN\n", "security.protocol is PLAINTEXT", "sasl.mechanism"),
        ("ssl.ca.location=/ca.pem\n", "use SSL or SASL_SSL", "ssl.ca.location"),
    ],
)  # fmt: skip
def test_inconsistent_settings_name_the_property(
    tmp_path: Path, text: str, fragment: str, where: str
) -> None:
    path = write(tmp_path, text)
    err = bad_input(ConnectionSettings.from_command_config, path, "k:9092")
    assert err.location == f"{path}: {where}", err.message
    assert fragment in err.detail, err.message


def test_client_certificate_needs_cert_and_key() -> None:
    err = bad_input(ConnectionSettings, "k:9092", security_protocol="SSL", ssl_certfile="/c.pem")
    assert err.location == "ssl.key.location" and "both" in err.detail


def test_missing_pem_file_is_bad_input(tmp_path: Path) -> None:
    path = write(tmp_path, "security.protocol=SSL\nssl.ca.location=missing-ca.pem\n")
    err = bad_input(ConnectionSettings.from_command_config, path, "k:9092")
    assert "ssl.ca.location file 'missing-ca.pem' not found" in err.message


def ssl_config(tmp_path: Path, **files: Path) -> Path:
    """An SSL command config naming ``files`` (``ca=``, ``cert=``, ``key=``)."""
    keys = {"ca": "ssl.ca.location", "cert": "ssl.certificate.location", "key": "ssl.key.location"}
    lines = ["security.protocol=SSL", *(f"{keys[n]}={p}" for n, p in files.items())]
    return write(tmp_path, "\n".join(lines) + "\n")


@pytest.mark.parametrize("content", [b"garbage\n", b"", b"-----BEGIN CERTIFICATE-----\nnot base64\n"])
def test_a_ca_file_without_a_certificate_is_bad_input_naming_setting_and_file(
    tmp_path: Path, content: bytes
) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_bytes(content)
    path = ssl_config(tmp_path, ca=ca)
    err = bad_input(ConnectionSettings.from_command_config, path, "k:9092")
    assert err.location == str(path), err.message
    assert f"ssl.ca.location file '{ca}' holds no usable PEM certificate" in err.detail, err.message


def test_a_client_certificate_file_without_a_certificate_is_bad_input(tmp_path: Path) -> None:
    pem = pem_files(tmp_path)
    pem["cert"].write_bytes(pem["key"].read_bytes())  # a key where the certificate belongs
    err = bad_input(
        ConnectionSettings.from_command_config,
        ssl_config(tmp_path, cert=pem["cert"], key=pem["key"]),
        "k:9092",
    )
    assert f"ssl.certificate.location file '{pem['cert']}' holds no usable PEM certificate" in err.detail


def test_a_key_file_without_a_key_is_bad_input(tmp_path: Path) -> None:
    pem = pem_files(tmp_path)
    pem["key"].write_bytes(b"not a key\n")
    err = bad_input(
        ConnectionSettings.from_command_config,
        ssl_config(tmp_path, cert=pem["cert"], key=pem["key"]),
        "k:9092",
    )
    assert f"ssl.key.location file '{pem['key']}' holds no usable PEM private key" in err.detail, err.message


def test_a_key_of_another_certificate_is_bad_input(tmp_path: Path) -> None:
    pem = pem_files(tmp_path)
    other = tmp_path / "other-key.pem"
    other.write_bytes(self_signed("other")[1])
    err = bad_input(
        ConnectionSettings.from_command_config, ssl_config(tmp_path, cert=pem["cert"], key=other), "k:9092"
    )
    assert f"'{other}' is not the key of the certificate in ssl.certificate.location" in err.detail


@pytest.mark.parametrize(
    ("password", "fragment"),
    [
        (None, "holds an encrypted key: set ssl.key.password"),
        ("wrong", "holds an encrypted key that ssl.key.password does not open"),
    ],
)
def test_an_encrypted_key_needs_its_password(tmp_path: Path, password: str | None, fragment: str) -> None:
    cert, key = self_signed("client", password=b"right")
    (tmp_path / "cert.pem").write_bytes(cert)
    (tmp_path / "key.pem").write_bytes(key)
    text = "security.protocol=SSL\nssl.certificate.location=cert.pem\nssl.key.location=key.pem\n"
    path = write(tmp_path, text + (f"ssl.key.password={password}\n" if password else ""))
    err = bad_input(ConnectionSettings.from_command_config, path, "k:9092")
    assert f"ssl.key.location file '{tmp_path / 'key.pem'}' {fragment}" in err.detail, err.message
    assert "right" not in err.message
    good = write(tmp_path, text + "ssl.key.password=right\n", "good.properties")
    assert ConnectionSettings.from_command_config(good, "k:9092").ssl_key_password == "right"


def test_timeouts_must_be_positive() -> None:
    assert bad_input(ConnectionSettings, "k:9092", request_timeout_s=0).location == "request.timeout.ms"
    err = bad_input(ConnectionSettings, "k:9092", connect_timeout_s=-1.0)
    assert err.location == "socket.connection.setup.timeout.ms"


@pytest.mark.parametrize(
    ("text", "accepted"),
    [
        ("socket.connection.setup.timeout.ms=999\n", False),  # librdkafka refuses < 1000
        ("socket.connection.setup.timeout.ms=1000\n", True),
        ("request.timeout.ms=9\n", False),  # librdkafka's socket.timeout.ms refuses < 10
        ("request.timeout.ms=10\n", True),
    ],
)
def test_timeouts_stay_within_librdkafkas_ranges(tmp_path: Path, text: str, accepted: bool) -> None:
    path = write(tmp_path, text)
    if accepted:
        ConnectionSettings.from_command_config(path, "k:9092").confluent_config()
        return
    err = bad_input(ConnectionSettings.from_command_config, path, "k:9092")
    assert err.location == f"{path}:1" and "from " in err.detail, err.message
    key = text.split("=", 1)[0]
    assert bad_input(ConnectionSettings, "k:9092", **{
        "request_timeout_s" if key == "request.timeout.ms" else "connect_timeout_s": 0.009
    }).location == key  # fmt: skip
