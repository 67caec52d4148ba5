"""The two Kafka clients of one gateway and how every call goes through them.

``KafkaClients`` lazily opens a confluent-kafka ``AdminClient`` (checked by one metadata request: a refused
authentication fails at once with its reason) and a kafka-python ``KafkaAdminClient`` (the admin APIs
librdkafka lacks), remembers what librdkafka's error callback said (why connections fail; whether a
broker of the metadata refused one), and runs each call with bounded retries and exponential backoff,
mapping failures to ours (kafka/failures.py). ``KafkaGateway`` (kafka/gateway.py) is the typed API on top.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import socket
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..model.errors import PlacementError
from . import access, api_support, failures
from .connection import ConnectionSettings
from .types import (
    KafkaAuthenticationError,
    KafkaAuthorizationError,
    KafkaOperationError,
    KafkaUnavailableError,
    KafkaUnsupportedError,
    OpError,
    T,
)

log = logging.getLogger(__name__)

CHECK_STEP_S = 1.0  # the connect check's longest wait for an answer before it polls the client's errors
CONTROLLER_WAIT_S = 0.5  # how often the metadata is asked again while it names a controller that refuses
_KNOWN_BROKER = re.compile(r"/\d+: ")  # librdkafka names a broker learned from metadata by its id
# librdkafka's own log, as the clients' callback passes it (named as before this module was split out)
LIBRDKAFKA_LOGGER = "kafka_placement.kafka.gateway.librdkafka"
_librdkafka_log = logging.getLogger(LIBRDKAFKA_LOGGER)
_librdkafka_log.addHandler(logging.NullHandler())  # librdkafka's chatter never reaches stderr by default


def kafka_python_admin(config: Mapping[str, Any]) -> Any:
    """kafka-python's ``KafkaAdminClient``. Its constructor starts an I/O thread before it bootstraps and
    leaves the thread running (connecting again and again) when the bootstrap fails, so a client whose
    constructor fails is closed here before the error goes on."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient.__new__(KafkaAdminClient)
    try:
        admin.__init__(**config)
    except BaseException:
        if hasattr(admin, "_net"):  # the I/O thread exists: close() stops it (and the connections)
            admin._closed = False  # (close() does nothing for a client whose constructor did not end)
            with contextlib.suppress(Exception):
                admin.close()
        raise
    return admin


class KafkaClients:
    """The clients of one cluster, opened on first use, and the retrying call that every request uses."""

    def __init__(self, settings: ConnectionSettings, *, attempts: int = 3, backoff_s: float = 0.5) -> None:
        self.settings = settings
        self._attempts = max(1, attempts)
        self._backoff_s = backoff_s
        self._confluent: Any = None
        self._kafka_python: Any = None
        self._last_client_error: str | None = None
        self._last_client_error_at = 0.0  # time.monotonic() of the error above
        self._known_broker_down = False  # a broker named by the metadata refused a connection
        self._all_down_at = 0.0  # time.monotonic() librdkafka last reported every broker it knows down
        self._unsupported: str | None = None  # why the brokers are not supported (an API we need missing)
        self._endpoints: dict[int, tuple[str, int]] = {}  # broker -> its address, as the connect check read

    def close(self) -> None:
        self._confluent = None  # the librdkafka handle is freed when it is garbage collected
        self._close_py()

    def _close_py(self) -> None:
        """Close the kafka-python client; the next call that needs one bootstraps a new one."""
        py, self._kafka_python = self._kafka_python, None
        if py is not None:
            try:
                py.close()
            except Exception as e:  # closing must not hide the caller's outcome
                log.debug("closing kafka-python admin client failed: %s", e)

    @property
    def servers(self) -> str:
        return self.settings.bootstrap_servers

    def _unavailable(self, reason: str) -> KafkaUnavailableError:
        return failures.unavailable(self.settings, reason)

    def _refused(self) -> KafkaAuthenticationError | None:
        """The authentication failure a client reported so far (None: none yet)."""
        return access.authentication_failure(self._last_client_error or "", self.settings)

    def _on_client_error(self, err: Any) -> None:
        """librdkafka's error_cb: remember why connections fail (a refused connect says more than
        "all brokers are down")."""
        text = str(err.str()) if hasattr(err, "str") else str(err)
        code = str(err.name()) if hasattr(err, "name") else ""
        if code in failures.UNREACHABLE - {"_ALL_BROKERS_DOWN"} or self._last_client_error is None:
            self._last_client_error = text
        self._last_client_error_at = time.monotonic()  # "all brokers down" renews the reason before it
        if code == "_ALL_BROKERS_DOWN":
            self._all_down_at = self._last_client_error_at
        if _KNOWN_BROKER.search(text):  # "host:port/3: Connect to ... failed": a broker of the metadata
            self._known_broker_down = True

    def _admin(self) -> Any:
        """The confluent-kafka AdminClient, created and checked (one DescribeCluster) on first use."""
        if self._confluent is None:
            from confluent_kafka.admin import AdminClient

            access.check_client_certificate(self.settings)
            conf = self.settings.confluent_config()
            conf["error_cb"] = self._on_client_error
            conf["logger"] = _librdkafka_log
            conf["allow.auto.create.topics"] = False  # (``_connected`` asks for a topic that never exists)
            admin = AdminClient(conf)
            self._confluent = admin
            try:
                self._call("connect", functools.partial(self._connected, admin), attempts=1)
            except KafkaOperationError as e:
                e.__traceback__ = None  # its frames hold the client: freed with its last reference
                self._confluent = None
                raise self._unavailable(e.message) from None
            except KafkaUnavailableError:
                self._confluent = None
                raise
        return self._confluent

    def _dead_controller(self, message: str) -> bool:
        """The call waited in vain for the controller the metadata named, and a broker known from the
        metadata (not a bootstrap address) refused a connection: that controller has just died or is cut
        off from this operator (KRaft names a live broker again once a dead one is fenced, seconds later;
        one cut off it may name for long); the cluster answered."""
        return "controller" in message.lower() and self._known_broker_down

    def _connected(self, admin: Any) -> None:
        """One metadata request for ``access.PROBE_TOPIC`` (never created: the client may not ask for it to
        be), polling the client's errors meanwhile: a refused authentication fails at once with its reason
        instead of after the whole connect timeout, and so does every bootstrap server failing to connect
        (librdkafka's "all brokers down"). An answer connects, whatever it says of the topic (unknown, or
        not to be described by this principal), unless it lists no broker (every broker fenced: a cluster
        starting or restarting as a whole serves none yet).

        A metadata request goes to any broker librdkafka reaches. Not a DescribeTopics or a
        DescribeCluster: librdkafka (2.x) sends those to the broker the metadata names controller, which
        KRaft picks among the registered brokers, right after a broker died perhaps the dead one; the
        request then waited out the connect timeout for it, and meanwhile librdkafka connected to it again
        and again without pause (each refused connect woke the waiting request, which asked for another):
        a core busy for the whole wait (11 s of CPU in a 10 s wait, librdkafka 2.13 to 2.16), at every
        reconcile of a cluster that had just lost a broker. ``list_topics`` blocks, so it is asked with a
        short timeout, doubled each time no broker answered (at most ``CHECK_STEP_S``), and the client's
        errors are polled in between (a thread waiting out the whole timeout would keep a refused client
        alive, retrying its login, after the gateway gave up)."""
        from confluent_kafka import KafkaException

        started = time.monotonic()
        deadline = started + self.settings.connect_timeout_s
        step = 0.2
        while True:
            wait = max(0.1, min(step, deadline - time.monotonic()))
            try:
                found = admin.list_topics(topic=access.PROBE_TOPIC, timeout=wait)
            except KafkaException as e:
                if e.args[0].name() not in ("_TRANSPORT", "_TIMED_OUT"):  # no broker answered in ``wait``
                    raise
            else:
                if not found.brokers:
                    raise self._unavailable("the cluster answered but lists no broker (every broker fenced?)")
                self._learn_endpoints(found)
                return
            admin.poll(0)  # serves error_cb
            refused = self._refused()
            if refused is not None:
                try:
                    raise refused from None
                finally:  # this frame holds ``admin``: see _call
                    del refused
            if self._all_down_at >= started or time.monotonic() >= deadline:
                # every bootstrap server failed (refused, unresolvable, timed out): the reason now,
                # not after the connect timeout (a mistyped address answered in a second, not 20)
                raise self._unavailable(self._last_client_error or "no broker answered") from None
            step = min(2 * step, CHECK_STEP_S)

    def _learn_endpoints(self, metadata: Any) -> None:
        """Every broker's address, as a metadata answer lists it (``_refused_by`` connects there)."""
        self._endpoints = {int(b): (m.host, int(m.port)) for b, m in metadata.brokers.items()}

    def _controller_admin(self) -> Any:
        """The AdminClient, for a request librdkafka sends to the broker its metadata names controller
        (DescribeTopics, ElectLeaders, a config request of topics alone), once a fresh metadata answer
        (one topic: a small request to any broker, which also renews librdkafka's own idea of the
        controller) names a controller whose address accepts a TCP connection. While the cluster names one
        that refuses (a broker that has just died, named until KRaft fences it, seconds later), librdkafka
        would connect to it again and again without pause for the whole request (``_connected``): this
        asks the metadata again every ``CONTROLLER_WAIT_S`` instead, for at most the request timeout, and
        then fails the call naming that broker."""
        admin = self._admin()
        timeout = self.settings.request_timeout_s
        deadline = time.monotonic() + timeout
        while True:
            found = admin.list_topics(topic=access.PROBE_TOPIC, timeout=timeout)
            self._learn_endpoints(found)
            controller = int(found.controller_id)
            refused = self._refused_by(controller)
            if refused is None:
                return admin
            if time.monotonic() + CONTROLLER_WAIT_S > deadline:
                host, port = self._endpoints[controller]
                raise KafkaOperationError(
                    f"the broker the cluster names controller, {controller} ({host}:{port}), refused "
                    f"connections for {timeout:g} s (it died and is not fenced yet?)"
                )
            time.sleep(CONTROLLER_WAIT_S)

    def _refused_by(self, broker: int) -> KafkaUnavailableError | None:
        """The error for a request that would go to ``broker`` alone when its address (as the connect
        check read it) refuses a TCP connection at once: a broker that has just died, still listed until it
        is fenced. librdkafka would send the request there and, while it waits for that broker, connect to
        it again and again without pause (a core busy for the request timeout, ``_connected``). None: the
        broker accepts a connection, or does not answer at once (then librdkafka's connect waits, no loop),
        or its address is unknown."""
        address = self._endpoints.get(broker)
        if address is None:
            return None
        try:
            socket.create_connection(address, timeout=min(1.0, self.settings.connect_timeout_s)).close()
        except ConnectionRefusedError:
            host, port = address
            return self._unavailable(f"broker {broker} ({host}:{port}) refused the connection")
        except OSError:
            return None
        return None

    def _py(self) -> Any:
        """The kafka-python KafkaAdminClient (it bootstraps eagerly, bounded by connect_timeout_s). The
        confluent client connects first: its errors say why a connection fails (kafka-python's only time
        out). Each new client's ApiVersions answer is checked for the APIs the operator
        needs (``_check_supported``) before it is handed out: a broker without them raises
        ``KafkaUnsupportedError`` before anything is sent."""
        if self._unsupported is not None:
            raise KafkaUnsupportedError(self._unsupported)
        if self._kafka_python is None:
            self._admin()
            from kafka.errors import KafkaError as PyKafkaError

            try:
                py = kafka_python_admin(self.settings.kafka_python_config())
            except PyKafkaError as e:
                raise self._unavailable(failures.py_error_text(e)) from None
            except OSError as e:  # TLS files, DNS
                raise self._unavailable(str(e)) from None
            try:
                self._check_supported(py)
            except KafkaUnsupportedError:
                with contextlib.suppress(Exception):
                    py.close()
                raise
            self._kafka_python = py
        return self._kafka_python

    def _check_supported(self, py: Any) -> None:
        """The API version ranges the client's bootstrap broker answered ApiVersions with (read when it
        connected: no request of its own), against ``api_support.REQUIRED``; the verdict is kept for the
        life of these clients. Ranges the client cannot give (none read) are not a verdict."""
        try:
            ranges = {int(key): (int(lo), int(hi)) for key, (lo, hi) in py.api_versions().items()}
        except Exception as e:
            log.debug("no ApiVersions ranges from the kafka-python client: %s", e)
            return
        lacking = api_support.missing(ranges)
        if not lacking:
            return
        from kafka.protocol.broker_version_data import infer_broker_version_from_api_versions

        try:
            release: str | None = ".".join(map(str, infer_broker_version_from_api_versions(ranges)))
        except Exception:
            release = None
        self._unsupported = api_support.unsupported_message(self.servers, ranges, release, lacking)
        raise KafkaUnsupportedError(self._unsupported)

    def _require_supported(self) -> None:
        """Before a request sent through librdkafka alone that changes the cluster: the ApiVersions check
        of ``_py`` has passed (it opens the kafka-python client when none is open yet)."""
        self._py()

    # ---- error handling ------------------------------------------------------------------------

    def _call(
        self, what: str, fn: Callable[[], T], attempts: int | None = None, needs: str | None = None
    ) -> T:
        """Run ``fn`` with bounded retries (exponential backoff) on retriable errors; map failures to
        ours (``failures.classify``; ``needs``: the grant a denial lacks, ``access.denied_item``)."""
        total = attempts or self._attempts
        delay = self._backoff_s
        for attempt in range(1, total + 1):
            started = time.monotonic()
            try:
                return fn()
            except PlacementError:
                raise
            except Exception as e:
                classified = failures.classify(
                    what, e, self.settings, needs, functools.partial(self._client_state, started)
                )
                if classified is None:  # not a Kafka failure: a bug, shown as such by the CLI
                    raise
                # Kafka's error is replaced by ours, and its traceback dropped: it holds the frames of
                # ``fn`` (a client) and a Future that holds the error back (a reference cycle), which
                # kept the librdkafka client alive, reconnecting, long after the gateway closed.
                e.__traceback__ = None
                failure, retriable = classified
                if not retriable or attempt == total:
                    try:
                        raise failure from None
                    finally:  # this frame holding its own exception would be such a cycle too
                        del failure, classified
                if isinstance(failure, KafkaOperationError) and self._dead_controller(failure.message):
                    # the client's metadata names a controller that died: a new client (the calls ask
                    # ``_admin()`` for theirs each time) learns the live one
                    self._confluent = None
                log.info(
                    "%s failed (%s); retry %d/%d in %.1fs", what, failure.message, attempt, total - 1, delay
                )
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def _client_state(self, since: float) -> tuple[str | None, bool]:
        """``failures.ClientState``: librdkafka's error callbacks served, the transport error seen since
        ``since`` (a call's start) and whether a broker known from the metadata refused a connection."""
        if self._confluent is not None:
            self._confluent.poll(0)  # serve error_cb: the transport error says why
        fresh = self._last_client_error_at >= since
        return (self._last_client_error if fresh else None), self._known_broker_down

    def _raise_denied(self, what: str, errors: Mapping[Any, OpError], needs: str) -> None:
        """Per-item authorization failures of a batch request are the principal's, not the items'."""
        if any(e.denied for e in errors.values()):
            raise KafkaAuthorizationError(access.denied_message(self.settings, [needs], what))
