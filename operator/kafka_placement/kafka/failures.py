"""How the two clients' failures become ours: the gateway's error mapping (kafka/gateway.py).

``classify`` maps a failed call of either client (confluent-kafka's ``KafkaException`` with librdkafka's
short error names, kafka-python's error classes, a socket's ``OSError``) to ``KafkaUnavailableError`` (or
its ``KafkaAuthenticationError`` when the cluster refused who we are), ``KafkaAuthorizationError`` or
``KafkaOperationError``, and says whether the call is worth retrying; the gateway's ``_call`` retries.
``confluent_op_error`` and ``py_op_error`` turn one item's error of a batch request into an ``OpError``
spelled with Kafka's error names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..model.errors import PlacementError
from . import access
from .connection import ConnectionSettings
from .types import DENIED, KafkaOperationError, KafkaUnavailableError, OpError

UNREACHABLE = frozenset(
    {
        "_TRANSPORT",
        "_ALL_BROKERS_DOWN",
        "_RESOLVE",
        "_SSL",
        "_AUTHENTICATION",
        "SASL_AUTHENTICATION_FAILED",
        "_NO_BROKERS",
    }
)
RETRIABLE_CODES = frozenset(
    {
        "_TIMED_OUT",
        "REQUEST_TIMED_OUT",
        "NOT_CONTROLLER",
        "LEADER_NOT_AVAILABLE",
        "NOT_LEADER_OR_FOLLOWER",
        "COORDINATOR_NOT_AVAILABLE",
        "CONCURRENT_TRANSACTIONS",
    }
)
UNKNOWN_TOPIC = frozenset({"UNKNOWN_TOPIC_OR_PART", "UNKNOWN_TOPIC_OR_PARTITION"})  # librdkafka's, Kafka's
_LIBRDKAFKA_NAMES = {
    "UNKNOWN_TOPIC_OR_PART": "UNKNOWN_TOPIC_OR_PARTITION",
    "NOT_LEADER_FOR_PARTITION": "NOT_LEADER_OR_FOLLOWER",
    "INVALID_REPLICA_ASSIGNMENT": "INVALID_REPLICATION_ASSIGNMENT",
}

# The client's state after it served its error callbacks: the transport error seen since the call
# started (None: none) and whether a broker known from the metadata refused a connection.
ClientState = Callable[[], tuple[str | None, bool]]


def unavailable(settings: ConnectionSettings, reason: str) -> KafkaUnavailableError:
    """The cluster cannot be reached for ``reason``, or refused who we are (``KafkaAuthenticationError``)."""
    refused = access.authentication_failure(reason, settings)
    return refused or KafkaUnavailableError(f"cannot reach Kafka at {settings.bootstrap_servers}: {reason}")


def classify(
    what: str, e: Exception, settings: ConnectionSettings, needs: str | None, client: ClientState
) -> tuple[PlacementError, bool] | None:
    """Our error for call ``what`` failing with ``e``, and whether to retry it (None: not a Kafka failure,
    a bug). ``needs`` names the grant a denial lacks (``access.denied_item``). A timeout is an unreachable
    cluster when a transport error arrived during the call (``client``): librdkafka reports a refused
    connection once per reconnect, so an error seen during the call is kept, not asked for after it."""
    from confluent_kafka import KafkaException
    from kafka.errors import (
        AuthorizationError,
        KafkaConnectionError,
        NodeNotReadyError,
        SaslAuthenticationFailedError,
        UnknownBrokerIdError,
    )
    from kafka.errors import KafkaError as PyKafkaError

    if isinstance(e, KafkaException):
        err: Any = e.args[0] if e.args else None
        code = str(err.name()) if hasattr(err, "name") else "UNKNOWN"
        text = str(err.str()) if hasattr(err, "str") else str(e)
        if code.endswith(DENIED):
            return access.not_authorized(settings, what, code, needs), False
        transport, known_broker_down = client()
        if code == "_TIMED_OUT" and "controller" in text.lower() and known_broker_down:
            # the metadata named a controller that just died (KRaft names a live broker again once the
            # dead one is fenced): not an unreachable cluster
            return KafkaOperationError(f"{what} failed: {text}"), True
        if code in UNREACHABLE or (code == "_TIMED_OUT" and transport):
            return unavailable(settings, transport or text), False
        retriable = bool(err.retriable()) if hasattr(err, "retriable") else False
        return KafkaOperationError(f"{what} failed: {text}"), retriable or code in RETRIABLE_CODES
    if isinstance(e, AuthorizationError):
        return access.not_authorized(settings, what, type(e).__name__, needs), False
    if isinstance(e, SaslAuthenticationFailedError):
        return unavailable(settings, py_error_text(e)), False
    if isinstance(e, KafkaConnectionError):
        return unavailable(settings, f"{what}: {py_error_text(e)}"), True
    if isinstance(e, UnknownBrokerIdError):  # gone from the client's metadata: stopped or fenced
        broker = e.args[0] if e.args else "?"
        return unavailable(settings, f"{what}: broker {broker} is not in the metadata"), True
    if isinstance(e, NodeNotReadyError):  # no connection to it now (backing off after a failed one)
        return unavailable(settings, f"{what}: not ready ({py_error_text(e)})"), True
    if isinstance(e, PyKafkaError):
        return KafkaOperationError(f"{what} failed: {py_error_text(e)}"), bool(e.retriable)
    if isinstance(e, TimeoutError):
        return KafkaOperationError(f"{what} timed out: {e}"), True
    if isinstance(e, OSError):
        return unavailable(settings, f"{what}: {e}"), False
    return None


def confluent_op_error(err: Any) -> OpError:
    """An OpError from a confluent-kafka KafkaError, with librdkafka's short names spelled as Kafka's."""
    code = str(err.name())
    return OpError(_LIBRDKAFKA_NAMES.get(code, code), str(err.str()), bool(err.retriable()))


def py_op_error(err: Any) -> OpError:
    """An OpError from a kafka-python error class or instance."""
    cls = err if isinstance(err, type) else type(err)
    code = str(getattr(cls, "message", None) or cls.__name__)
    text = str(getattr(cls, "description", "") or "")
    if not isinstance(err, type) and err.args:
        text = str(err.args[0]) or text
    return OpError(code, text, bool(getattr(cls, "retriable", False)))


def py_error_text(e: Exception) -> str:
    """A kafka-python error's text (its class name when it has none)."""
    text = str(e)
    return text if text else type(e).__name__
