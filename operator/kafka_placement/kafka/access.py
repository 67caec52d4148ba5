"""Who we are to Kafka and what we may do: authentication failures, ACLs, the client certificate.

Used by the gateway (kafka/gateway.py) and its error mapping (kafka/failures.py) only; pure: the gateway
does the reads. ``authentication_failure`` turns the clients' transport errors into a specific
``KafkaAuthenticationError`` (wrong SASL credentials, a broker certificate the CA file does not trust, a
client certificate the broker rejects); ``check_client_certificate`` refuses an expired or not yet valid
client certificate before anything is sent. ``REQUIRED_ACLS`` is the least-privilege set the CLI and the
operator need (README, "Security"); ``check`` finds every grant the work lacks in the operations Kafka
says the principal may do (``Authorized``); ``denied_message`` names what an authorization failure denied.
No secret (password, key) is ever part of a message: only user names and file paths.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..model.jsonio import brief, clip
from .connection import ConnectionSettings
from .types import DENIED, ConfigTarget, KafkaAuthenticationError, KafkaAuthorizationError

CLUSTER = "CLUSTER"
TOPIC = "TOPIC"
CLUSTER_NAME = "kafka-cluster"  # the one cluster resource of Kafka's ACLs
PROBE_TOPIC = "kafka-placement-acl-probe-7c1e"  # never created: see ``Authorized.probe``


@dataclass(frozen=True, slots=True)
class Acl:
    """One ALLOW ACL the principal needs: operation on a resource type (and name), and why."""

    operation: str
    resource_type: str
    why: str

    def on(self, name: str) -> str:
        return f"{self.operation} on {self.resource_type} {name}"


# Least privilege (found by removing each in turn on the secure rig; tests/integration/test_security.py).
# Kafka implies DESCRIBE from ALTER and DESCRIBE_CONFIGS from ALTER_CONFIGS, so four grants cover all.
CLUSTER_ALTER = Acl(
    "ALTER",
    CLUSTER,
    "to submit and cancel reassignments, move replicas between log dirs and elect leaders; implies "
    "DESCRIBE, for log dirs and reassignment progress",
)
CLUSTER_ALTER_CONFIGS = Acl(
    "ALTER_CONFIGS",
    CLUSTER,
    "to set and remove broker throttle rates and cordoned.log.dirs; implies DESCRIBE_CONFIGS",
)
TOPIC_DESCRIBE = Acl(
    "DESCRIBE", TOPIC, "to see the topics: Kafka hides a topic from a principal that may not describe it"
)
TOPIC_ALTER_CONFIGS = Acl(
    "ALTER_CONFIGS",
    TOPIC,
    "to set and remove the topics' throttled-replica lists; implies DESCRIBE_CONFIGS, to read each topic's "
    "min.insync.replicas before moving it",
)
REQUIRED_ACLS = (CLUSTER_ALTER, CLUSTER_ALTER_CONFIGS, TOPIC_DESCRIBE, TOPIC_ALTER_CONFIGS)
# the operations checked (KIP-430 authorized operations include implied ones) -> the grant that allows them
CLUSTER_CHECKS = (
    ("DESCRIBE", CLUSTER_ALTER),
    ("ALTER", CLUSTER_ALTER),
    ("DESCRIBE_CONFIGS", CLUSTER_ALTER_CONFIGS),
    ("ALTER_CONFIGS", CLUSTER_ALTER_CONFIGS),
)
TOPIC_CHECKS = (
    ("DESCRIBE", TOPIC_DESCRIBE),
    ("DESCRIBE_CONFIGS", TOPIC_ALTER_CONFIGS),
    ("ALTER_CONFIGS", TOPIC_ALTER_CONFIGS),
)
CONFIG_OPS = frozenset({"DESCRIBE_CONFIGS", "ALTER_CONFIGS"})


def who(settings: ConnectionSettings) -> str:
    """The identity we connect as, for messages (never a secret)."""
    if settings.uses_sasl:
        return f"SASL user '{settings.username}'"
    if settings.ssl_certfile:
        return f"the principal of client certificate {settings.ssl_certfile}"
    return "the anonymous principal"


def denied_item(name: str, acl: Acl) -> str:
    """The grant ``acl`` on resource ``name`` is missing: what to grant and why."""
    return f"{acl.on(name)} ({acl.why})"


def shown(names: Sequence[str]) -> str:
    """The first five ``names`` (resources, in a message) and how many more there are."""
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


ON_CLUSTER = denied_item(CLUSTER_NAME, CLUSTER_ALTER)  # what a denied cluster read or change lacks


def on_topics(names: Sequence[str]) -> str:
    """What a denied read of the topics ``names`` lacks."""
    return denied_item(shown(names), TOPIC_DESCRIBE)


def on_configs(batch: Sequence[ConfigTarget]) -> str:
    """What a denied config request on ``batch`` (one broker, or topics) lacks."""
    if batch and batch[0].kind == "broker":
        return denied_item(CLUSTER_NAME, CLUSTER_ALTER_CONFIGS)
    return denied_item(shown([t.name for t in batch]), TOPIC_ALTER_CONFIGS)


def denied_message(settings: ConnectionSettings, denied: Iterable[str], what: str) -> str:
    """One line naming every denied operation and resource (``denied_item``s) and why each is needed."""
    items = list(dict.fromkeys(denied))
    more = f"; and {len(items) - 5} more" if len(items) > 5 else ""
    return (
        f"not authorized: {who(settings)} at {settings.bootstrap_servers} is denied {'; '.join(items[:5])}"
        f"{more} [{what}]; grant the ACLs of README 'Security': nothing was changed by this request"
    )


def not_authorized(
    settings: ConnectionSettings, what: str, code: str, needs: str | None
) -> KafkaAuthorizationError:
    """Request ``what`` was denied with error ``code``; ``needs`` names the grant it lacks (None: a
    request the least-privilege set does not cover)."""
    item = needs if needs is not None else f"{code} (an operation not in README 'Security')"
    return KafkaAuthorizationError(denied_message(settings, [item], what))


@dataclass(frozen=True, slots=True)
class Authorized:
    """What Kafka says the principal may do (KIP-430 authorized operations, implied ones included)."""

    cluster: frozenset[str]  # operations on the cluster
    # the error a DescribeTopics of PROBE_TOPIC got. Kafka hides the topics a principal may not DESCRIBE
    # (from metadata and DescribeLogDirs alike), so a snapshot cannot tell them from no topics; asked for
    # a topic that does not exist, a principal allowed to describe any topic hears
    # UNKNOWN_TOPIC_OR_PARTITION, one that is not hears TOPIC_AUTHORIZATION_FAILED
    probe: str
    topics: Mapping[str, frozenset[str] | None]  # operations on each topic asked (None: not even DESCRIBE)


def check(
    settings: ConnectionSettings, found: Authorized, *, configs: bool, moves: bool, when: str = ""
) -> None:
    """Raise ``KafkaAuthorizationError`` naming every grant the work lacks: DESCRIBE on the cluster and on
    every topic, DESCRIBE on the topics asked; with ``moves`` ALTER on the cluster and DESCRIBE_CONFIGS on
    the topics (their min.insync.replicas); with ``configs`` (throttles, cordons) DESCRIBE_CONFIGS and
    ALTER_CONFIGS on the cluster and on the topics."""
    wanted = {"DESCRIBE"} | ({"ALTER"} if moves else set()) | (CONFIG_OPS if configs else set())
    denied = [denied_item(CLUSTER_NAME, acl) for op, acl in CLUSTER_CHECKS if op in wanted - found.cluster]
    if found.probe.endswith(DENIED):
        denied.append(denied_item("* (every topic)", TOPIC_DESCRIBE))
    topic_wanted = wanted | ({"DESCRIBE_CONFIGS"} if moves else set())  # min.insync.replicas
    for op, acl in TOPIC_CHECKS:
        if op in topic_wanted:
            missing = [t for t, ops in found.topics.items() if op not in (ops or ())]
            if missing:
                denied.append(denied_item(shown(missing), acl))
    if denied:
        raise KafkaAuthorizationError(denied_message(settings, denied, when or "checked before acting"))


def authentication_failure(text: str, settings: ConnectionSettings) -> KafkaAuthenticationError | None:
    """A specific error when ``text`` (a client's transport error) says the cluster refused who we are."""
    low = text.lower()
    servers = settings.bootstrap_servers
    detail = clip(text, 400)
    if settings.uses_sasl and ("sasl authentication" in low or "invalid credentials" in low):
        return KafkaAuthenticationError(
            f"SASL {settings.sasl_mechanism} authentication of user '{settings.username}' failed at "
            f"{servers}: "
            f"wrong username or password, or no such user (Kafka said: {detail})"
        )
    if "certificate verify failed" in low:
        trust = f"ssl.ca.location {settings.ssl_cafile}" if settings.ssl_cafile else "the system trust store"
        return KafkaAuthenticationError(
            f"TLS: the certificate of the brokers at {servers} is not trusted: it is not signed by a CA in "
            f"{trust} (or names another host) (client said: {detail})"
        )
    if settings.uses_ssl and any(
        a in low
        for a in ("alert certificate", "alert bad certificate", "alert unknown ca", "certificate required")
    ):
        cert = settings.ssl_certfile or "(none: ssl.certificate.location is not set)"
        return KafkaAuthenticationError(
            f"TLS: the brokers at {servers} rejected the client certificate {cert}: not signed by a CA they "
            f"trust, expired, or missing where the listener requires one (client said: {detail})"
        )
    return None


def check_client_certificate(settings: ConnectionSettings, now: datetime.datetime | None = None) -> None:
    """Refuse an expired or not yet valid client certificate before connecting (the broker would only
    answer with an opaque TLS alert)."""
    if not settings.uses_ssl or not settings.ssl_certfile:
        return
    from cryptography import x509

    path = settings.ssl_certfile
    try:
        cert = x509.load_pem_x509_certificate(Path(path).read_bytes())
    except (OSError, ValueError) as e:
        raise KafkaAuthenticationError(
            f"TLS: cannot read the client certificate {path} (ssl.certificate.location) as PEM: "
            f"{brief(str(e), 200)}"
        ) from None
    at = now or datetime.datetime.now(datetime.UTC)
    if cert.not_valid_after_utc < at:
        raise KafkaAuthenticationError(
            f"TLS: the client certificate {path} (ssl.certificate.location) expired at "
            f"{cert.not_valid_after_utc:%Y-%m-%dT%H:%M:%SZ}: renew it; nothing was sent to "
            f"{settings.bootstrap_servers}"
        )
    if cert.not_valid_before_utc > at:
        raise KafkaAuthenticationError(
            f"TLS: the client certificate {path} (ssl.certificate.location) is not valid before "
            f"{cert.not_valid_before_utc:%Y-%m-%dT%H:%M:%SZ}; nothing was sent to "
            f"{settings.bootstrap_servers}"
        )
