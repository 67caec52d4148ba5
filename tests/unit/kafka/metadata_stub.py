"""A Kafka listener that answers two requests the way a KRaft broker does while every broker is fenced:
ApiVersions, and Metadata listing no broker (and no controller). Hostile input for the clients, not a
Kafka: it answers ApiVersions (v0-v3) and Metadata (v1) and closes any other request's connection.

While ``listing`` is set, and for the first ``brokers_first`` Metadata answers (over all connections;
None: no limit), an answer lists the listener itself as broker 1 and controller, as a broker serving
does; any other answer lists no broker (``listing`` False: every broker has just been fenced). Each topic a
request names is answered UNKNOWN_TOPIC_OR_PARTITION, as Kafka does, so an answer is empty only when the
request named no topic (DescribeCluster's). With ``dead_controller`` (a port nothing listens on), a
listing answer names a second broker there, broker 2, as controller: a broker the metadata lists that
has just died. The ApiVersions answer lists the admin APIs the operator
requires (kafka/api_support.py) too, so that the clients get as far as DescribeCluster.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager

APIS = ((18, 0, 3), (3, 0, 1), (32, 0, 0), (34, 0, 0), (35, 0, 0), (44, 0, 0), (45, 0, 0), (46, 0, 0))
UNKNOWN_TOPIC_OR_PARTITION = 3


def _uvarint(n: int) -> bytes:
    out = b""
    while True:
        low, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([low])
        out += bytes([low | 0x80])


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def _api_versions(version: int) -> bytes:
    if version >= 3:  # flexible body (the response header stays v0 for ApiVersions)
        entries = b"".join(struct.pack(">hhh", *a) + b"\0" for a in APIS)
        return struct.pack(">h", 0) + _uvarint(len(APIS) + 1) + entries + struct.pack(">i", 0) + b"\0"
    body = struct.pack(">hi", 0, len(APIS)) + b"".join(struct.pack(">hhh", *a) for a in APIS)
    return body + (struct.pack(">i", 0) if version >= 1 else b"")


def _topics_named(request: bytes) -> list[str] | None:
    """The topics a Metadata v0/v1 request names (after its header: api key, version, correlation id,
    client id)."""
    (client_id_len,) = struct.unpack(">h", request[8:10])
    pos = 10 + max(0, client_id_len)
    (count,) = struct.unpack(">i", request[pos : pos + 4])
    pos += 4
    if count < 0:
        return None  # all topics
    names = []
    for _ in range(count):
        (n,) = struct.unpack(">h", request[pos : pos + 2])
        names.append(request[pos + 2 : pos + 2 + n].decode())
        pos += 2 + n
    return names


class MetadataStub:
    def __init__(self, brokers_first: int | None, dead_controller: int | None = None) -> None:
        self.brokers_first = brokers_first
        self.dead_controller = dead_controller
        self.listing = True
        self.metadata_answers = 0
        self._lock = threading.Lock()
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen()
        self.port: int = self._sock.getsockname()[1]
        self._closed = False

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _metadata(self, request: bytes) -> bytes:
        names = _topics_named(request)
        with self._lock:
            self.metadata_answers += 1
            limit = self.brokers_first
            listed = self.listing and (limit is None or self.metadata_answers <= limit)
        brokers = struct.pack(">i", 0)
        controller = -1
        if listed:
            brokers = struct.pack(">ii", 1, 1) + _string("127.0.0.1") + struct.pack(">ih", self.port, -1)
            controller = 1
            if self.dead_controller is not None:
                dead = (
                    struct.pack(">i", 2) + _string("127.0.0.1") + struct.pack(">ih", self.dead_controller, -1)
                )
                brokers = struct.pack(">i", 2) + brokers[4:] + dead
                controller = 2
        names = names or []
        topics = struct.pack(">i", len(names)) + b"".join(
            struct.pack(">h", UNKNOWN_TOPIC_OR_PARTITION) + _string(t) + struct.pack(">?i", False, 0)
            for t in names
        )
        return brokers + struct.pack(">i", controller) + topics

    def _serve(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):  # (a client may reset its connection when it closes)
            while True:
                head = conn.recv(4, socket.MSG_WAITALL)
                if len(head) < 4:
                    return
                (size,) = struct.unpack(">i", head)
                request = conn.recv(size, socket.MSG_WAITALL)
                key, version, correlation = struct.unpack(">hhi", request[:8])
                if key == 18:
                    body = _api_versions(version)
                elif key == 3 and version <= 1:
                    body = self._metadata(request)
                else:
                    return
                answer = struct.pack(">i", correlation) + body
                conn.sendall(struct.pack(">i", len(answer)) + answer)

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self._sock.close()


@contextmanager
def metadata_stub(
    brokers_first: int | None = None, dead_controller: int | None = None
) -> Iterator[MetadataStub]:
    stub = MetadataStub(brokers_first, dead_controller)
    threading.Thread(target=stub._accept, daemon=True).start()
    try:
        yield stub
    finally:
        stub.close()
