"""How to reach a Kafka cluster: one ``ConnectionSettings`` mapped to both Kafka clients.

See docs/architecture.md ("Kafka clients").

Settings come from ``--bootstrap-server`` plus an optional Kafka-style ``--command-config`` properties
file (``bootstrap.servers``, ``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config`` or
``sasl.username``/``sasl.password``, PEM files via ``ssl.ca.location``/``ssl.certificate.location``/
``ssl.key.location``), or from a ``KafkaCluster`` resource. They are validated once, with precise
``BadInputError``s, and mapped to librdkafka keys (``confluent_config``) and to kafka-python
``KafkaAdminClient`` keyword arguments (``kafka_python_config``). Pure: no I/O except reading the file
and the PEM files it names, which are loaded the way the clients will load them (``tls_files``), so a
file a client cannot use is bad input naming the setting and the file, not a failure of the client.
Timeouts (``request.timeout.ms``, ``socket.connection.setup.timeout.ms``) are whole milliseconds within
librdkafka's ranges (at least 10 and 1000 ms) and at most ``MAX_TIMEOUT_MS`` (5 minutes), so no
connection attempt waits forever.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..model.crd_parts import SASL_MECHANISMS
from ..model.documents import read_input_text
from ..model.errors import BadInputError
from ..model.jsonio import brief
from .tls_files import check_tls_files

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_REQUEST_TIMEOUT_S = 30.0
# every timeout is bounded, so no command (verify, snapshot...) can wait on one connection forever
MAX_TIMEOUT_MS = 300_000
_MILLIS = re.compile(r"[0-9]{1,9}")

_HOST_PORT = re.compile(r"^(?:\[(?P<ip6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9_.-]+)):(?P<port>[0-9]{1,5})$")
_JAAS_MODULES = {
    "org.apache.kafka.common.security.plain.PlainLoginModule": ("PLAIN",),
    "org.apache.kafka.common.security.scram.ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
}
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
_KEYSTORE_HINT = (
    "Java keystores/truststores are not supported; convert them to PEM files and set "
    "ssl.ca.location (CA certificates), ssl.certificate.location (client certificate) and "
    "ssl.key.location (client key, with ssl.key.password if encrypted)"
)
# property -> ConnectionSettings field (string-valued); aliases are librdkafka's spellings
_STRING_KEYS = {
    "bootstrap.servers": "bootstrap_servers",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "username",
    "sasl.password": "password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_key_password",
    "client.id": "client_id",
}
# property -> (ConnectionSettings field, librdkafka's minimum in ms: socket.timeout.ms >= 10,
# socket.connection.setup.timeout.ms >= 1000; a smaller value fails the client's creation)
_TIMEOUT_KEYS = {
    "request.timeout.ms": ("request_timeout_s", 10),
    "socket.connection.setup.timeout.ms": ("connect_timeout_s", 1000),
}
_OTHER_KEYS = ("sasl.jaas.config", "ssl.endpoint.identification.algorithm")


@dataclass(frozen=True, slots=True)
class ConnectionSettings:
    """Everything needed to open admin connections to one cluster; validated on construction."""

    bootstrap_servers: str
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    username: str | None = None
    password: str | None = None
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_key_password: str | None = None
    ssl_check_hostname: bool = True
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    client_id: str = "kafka-placement"

    def __post_init__(self) -> None:
        _validate(self)

    def __repr__(self) -> str:  # never print the password
        shown = "***" if self.password is not None else None
        return (
            f"ConnectionSettings(bootstrap_servers={self.bootstrap_servers!r}, "
            f"security_protocol={self.security_protocol!r}, sasl_mechanism={self.sasl_mechanism!r}, "
            f"username={self.username!r}, password={shown!r}, ssl_cafile={self.ssl_cafile!r})"
        )

    @property
    def servers(self) -> tuple[str, ...]:
        return tuple(s.strip() for s in self.bootstrap_servers.split(",") if s.strip())

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    @property
    def uses_ssl(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    # ---- sources ---------------------------------------------------------------------------------

    @staticmethod
    def from_command_config(
        path: str | Path | None, bootstrap_servers: str | None = None
    ) -> ConnectionSettings:
        """Settings from a Kafka-style properties file; ``bootstrap_servers`` (the CLI flag) wins over
        the file's ``bootstrap.servers``. ``path=None`` means plain settings from the flag alone."""
        if bootstrap_servers:
            parse_bootstrap_servers(bootstrap_servers, "--bootstrap-server")
        if path is None:
            if not bootstrap_servers:
                raise BadInputError("no bootstrap servers given", "--bootstrap-server")
            return ConnectionSettings(bootstrap_servers=bootstrap_servers)
        source = str(path)
        text = read_input_text(path, "command config")
        props = parse_properties(text, source)
        settings = settings_from_properties(props, source, bootstrap_servers)
        return settings.resolve_files(Path(path).parent, source)

    def resolve_files(self, base: Path, source: str) -> ConnectionSettings:
        """Make relative PEM paths absolute (relative to ``base``), check that the files exist and that
        the clients can load them (``tls_files.check_tls_files``)."""
        changes: dict[str, Any] = {}
        for fld, key in (
            ("ssl_cafile", "ssl.ca.location"),
            ("ssl_certfile", "ssl.certificate.location"),
            ("ssl_keyfile", "ssl.key.location"),
        ):
            value = getattr(self, fld)
            if value is None:
                continue
            p = Path(value)
            if not p.is_absolute() and not p.exists():
                p = base / p
            if not p.is_file():
                raise BadInputError(f"{key} file {brief(value)} not found", source)
            changes[fld] = str(p)
        done = replace(self, **changes) if changes else self
        check_tls_files(done.ssl_cafile, done.ssl_certfile, done.ssl_keyfile, done.ssl_key_password, source)
        return done

    # ---- client mappings -------------------------------------------------------------------------

    def confluent_config(self) -> dict[str, Any]:
        """librdkafka configuration for ``confluent_kafka.admin.AdminClient``."""
        conf: dict[str, Any] = {
            "bootstrap.servers": ",".join(self.servers),
            "client.id": self.client_id,
            "security.protocol": self.security_protocol,
            "socket.timeout.ms": int(self.request_timeout_s * 1000),
            "socket.connection.setup.timeout.ms": int(self.connect_timeout_s * 1000),
        }
        if self.uses_sasl:
            conf["sasl.mechanism"] = self.sasl_mechanism
            conf["sasl.username"] = self.username
            conf["sasl.password"] = self.password
        if self.uses_ssl:
            for key, value in (
                ("ssl.ca.location", self.ssl_cafile),
                ("ssl.certificate.location", self.ssl_certfile),
                ("ssl.key.location", self.ssl_keyfile),
                ("ssl.key.password", self.ssl_key_password),
            ):
                if value is not None:
                    conf[key] = value
            conf["ssl.endpoint.identification.algorithm"] = "https" if self.ssl_check_hostname else "none"
        return conf

    def kafka_python_config(self) -> dict[str, Any]:
        """Keyword arguments for kafka-python's ``KafkaAdminClient``."""
        conf: dict[str, Any] = {
            "bootstrap_servers": list(self.servers),
            "client_id": self.client_id,
            "security_protocol": self.security_protocol,
            "request_timeout_ms": int(self.request_timeout_s * 1000),
            "bootstrap_timeout_ms": int(self.connect_timeout_s * 1000),
        }
        if self.uses_sasl:
            conf["sasl_mechanism"] = self.sasl_mechanism
            conf["sasl_plain_username"] = self.username
            conf["sasl_plain_password"] = self.password
        if self.uses_ssl:
            conf["ssl_check_hostname"] = self.ssl_check_hostname
            for key, value in (
                ("ssl_cafile", self.ssl_cafile),
                ("ssl_certfile", self.ssl_certfile),
                ("ssl_keyfile", self.ssl_keyfile),
                ("ssl_password", self.ssl_key_password),
            ):
                if value is not None:
                    conf[key] = value
        return conf


# ---- properties files ----------------------------------------------------------------------------


def parse_properties(text: str, source: str) -> dict[str, tuple[str, int]]:
    """Java ``.properties`` subset: ``key=value`` / ``key: value`` / ``key value``, ``#``/``!`` comments,
    backslash line continuations. Returns key -> (value, line number); a repeated key is an error."""
    props: dict[str, tuple[str, int]] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        line = lines[i].lstrip()
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip()
            i += 1
        if _continues(line):
            line = line[:-1]
        m = re.match(r"^((?:[^\s=:\\]|\\.)+)\s*[=:\s]\s*(.*)$", line) or re.match(
            r"^((?:[^\s=:\\]|\\.)+)()$", line
        )
        if m is None:
            raise BadInputError(
                f"cannot parse {brief(line.strip())} (expected key=value)", f"{source}:{start + 1}"
            )
        key, value = _unescape(m.group(1)), _unescape(m.group(2).strip())
        if key in props:
            raise BadInputError(
                f"{brief(key)} is set twice (also on line {props[key][1]})", f"{source}:{start + 1}"
            )
        props[key] = (value, start + 1)
    return props


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n", "r": "\r"}.get(m.group(1), m.group(1)), text)


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def settings_from_properties(
    props: dict[str, tuple[str, int]], source: str, bootstrap_servers: str | None = None
) -> ConnectionSettings:
    """Validated settings from parsed properties (see ``from_command_config``)."""
    fields: dict[str, Any] = {}
    for key, (value, line) in props.items():
        where = f"{source}:{line}"
        if key.startswith(("ssl.truststore.", "ssl.keystore.")):
            raise BadInputError(f"{brief(key)}: {_KEYSTORE_HINT}", where)
        if key in _STRING_KEYS:
            if not value:
                continue  # an empty value leaves the setting unset, as in Kafka's clients
            fields[_STRING_KEYS[key]] = value if key != "security.protocol" else value.upper()
        elif key in _TIMEOUT_KEYS:
            fld, low = _TIMEOUT_KEYS[key]
            if not _MILLIS.fullmatch(value) or not low <= int(value) <= MAX_TIMEOUT_MS:
                raise BadInputError(
                    f"'{key}' must be a positive number of milliseconds from {low} to {MAX_TIMEOUT_MS}, "
                    f"not {brief(value)}",
                    where,
                )
            fields[fld] = int(value) / 1000.0
        elif key == "ssl.endpoint.identification.algorithm":
            if value.lower() not in ("", "https", "none"):
                raise BadInputError(f"'{key}' must be 'https' or empty, not {brief(value)}", where)
            fields["ssl_check_hostname"] = value.lower() == "https"
        elif key == "sasl.jaas.config":
            module, username, password = parse_jaas(value, where)
            fields["_jaas_module"] = (module, where)
            fields.setdefault("username", username)
            fields.setdefault("password", password)
        else:
            supported = sorted([*_STRING_KEYS, *_TIMEOUT_KEYS, *_OTHER_KEYS])
            raise BadInputError(
                f"unsupported property {brief(key)} (supported: {', '.join(supported)})", where
            )
    if bootstrap_servers:
        fields["bootstrap_servers"] = bootstrap_servers
    if not fields.get("bootstrap_servers"):
        raise BadInputError("no bootstrap servers: pass --bootstrap-server or set bootstrap.servers", source)
    jaas = fields.pop("_jaas_module", None)
    protocol = str(fields.get("security_protocol", "PLAINTEXT"))
    if jaas is not None and not protocol.startswith("SASL_"):
        raise BadInputError(
            f"sasl.jaas.config is set but security.protocol is {protocol} (use SASL_PLAINTEXT or SASL_SSL)",
            jaas[1],
        )
    settings = _construct(fields, source)
    if jaas is not None:
        module, where = jaas
        if settings.sasl_mechanism not in _JAAS_MODULES[module]:
            raise BadInputError(
                f"sasl.jaas.config uses {module.rsplit('.', 1)[-1]} but sasl.mechanism is "
                f"{settings.sasl_mechanism} (expected one of {', '.join(_JAAS_MODULES[module])})",
                where,
            )
    return settings


def _construct(fields: dict[str, Any], source: str) -> ConnectionSettings:
    try:
        return ConnectionSettings(**fields)
    except BadInputError as e:
        raise BadInputError(e.detail, f"{source}: {e.location}" if e.location else source) from None


def parse_jaas(value: str, where: str) -> tuple[str, str, str]:
    """(login module, username, password) of a PLAIN/SCRAM ``sasl.jaas.config`` value."""
    parts = value.split(None, 2)
    module = parts[0] if parts else ""
    if module not in _JAAS_MODULES:
        raise BadInputError(
            f"sasl.jaas.config login module {brief(module)} is not supported "
            f"(supported: {', '.join(sorted(_JAAS_MODULES))})",
            where,
        )
    if len(parts) < 2 or parts[1].rstrip(";") != "required":
        raise BadInputError(
            f'sasl.jaas.config must read \'{module} required username="..." password="...";\'', where
        )
    options = {
        k: re.sub(r"\\(.)", r"\1", v) for k, v in _JAAS_OPTION.findall(parts[2] if len(parts) > 2 else "")
    }
    missing = [k for k in ("username", "password") if k not in options]
    if missing:
        raise BadInputError(f'sasl.jaas.config has no {" and no ".join(missing)}="..."', where)
    return module, options["username"], options["password"]


# ---- validation ----------------------------------------------------------------------------------


def parse_bootstrap_servers(value: str, location: str = "bootstrap.servers") -> tuple[tuple[str, int], ...]:
    """``"h:p,h:p"`` -> ((host, port), ...); IPv6 hosts in brackets (``[::1]:9092``)."""
    items = [s.strip() for s in value.split(",")]
    if not value.strip() or not all(items):
        raise BadInputError(f"{brief(value)} is not a comma-separated list of host:port", location)
    out: list[tuple[str, int]] = []
    for item in items:
        m = _HOST_PORT.match(item)
        if m is None:
            raise BadInputError(f"{brief(item)} is not host:port (e.g. kafka-0.example:9092)", location)
        host = m.group("ip6") or m.group("host")
        if len(host) > 253 or any(len(label) > 63 for label in host.split(".")):
            raise BadInputError(
                f"host of {brief(item)} is longer than DNS allows (253 characters, 63 per label)", location
            )
        port = int(m.group("port"))
        if not 1 <= port <= 65535:
            raise BadInputError(f"port {port} of {brief(item)} is out of range 1-65535", location)
        out.append((m.group("ip6") or m.group("host"), port))
    return tuple(out)


def _validate(s: ConnectionSettings) -> None:
    parse_bootstrap_servers(s.bootstrap_servers)
    if s.security_protocol not in SECURITY_PROTOCOLS:
        raise BadInputError(
            f"{brief(s.security_protocol)} is not one of {', '.join(SECURITY_PROTOCOLS)}", "security.protocol"
        )
    if s.uses_sasl:
        if s.sasl_mechanism is None:
            raise BadInputError(
                f"security.protocol {s.security_protocol} needs sasl.mechanism "
                f"({', '.join(SASL_MECHANISMS)})",
                "sasl.mechanism",
            )
        if s.sasl_mechanism not in SASL_MECHANISMS:
            raise BadInputError(
                f"{brief(s.sasl_mechanism)} is not supported (supported: {', '.join(SASL_MECHANISMS)})",
                "sasl.mechanism",
            )
        for fld, key in (("username", "username"), ("password", "password")):
            if not getattr(s, fld):
                raise BadInputError(
                    f'SASL {s.sasl_mechanism} needs a {key} (sasl.jaas.config {key}="..." or sasl.{key})',
                    f"sasl.{key}",
                )
    else:
        for fld, key in (
            ("sasl_mechanism", "sasl.mechanism"),
            ("username", "sasl.username"),
            ("password", "sasl.password"),
        ):
            if getattr(s, fld) is not None:
                raise BadInputError(
                    f"{key} is set but security.protocol is {s.security_protocol} "
                    "(use SASL_PLAINTEXT or SASL_SSL)",
                    key,
                )
    if not s.uses_ssl:
        for fld, key in (
            ("ssl_cafile", "ssl.ca.location"),
            ("ssl_certfile", "ssl.certificate.location"),
            ("ssl_keyfile", "ssl.key.location"),
        ):
            if getattr(s, fld) is not None:
                raise BadInputError(
                    f"{key} is set but security.protocol is {s.security_protocol} (use SSL or SASL_SSL)", key
                )
    if (s.ssl_certfile is None) != (s.ssl_keyfile is None):
        raise BadInputError(
            "a client certificate needs both ssl.certificate.location and ssl.key.location",
            "ssl.key.location" if s.ssl_keyfile is None else "ssl.certificate.location",
        )
    for key, (fld, low) in _TIMEOUT_KEYS.items():
        value = getattr(s, fld)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not low <= value * 1000 <= MAX_TIMEOUT_MS  # NaN fails this too
        ):
            raise BadInputError(
                f"must be a duration from {low / 1000:g} s to {MAX_TIMEOUT_MS // 1000} s, not {brief(value)}",
                key,
            )
