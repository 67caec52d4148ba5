"""The PEM files of a command config, loaded before any Kafka client is created.

librdkafka loads ``ssl.ca.location``, ``ssl.certificate.location`` and ``ssl.key.location`` only when a
client is created, and refuses a file it cannot use with an opaque ``KafkaException`` (``_INVALID_ARG``);
kafka-python only in its first TLS handshake. ``check_tls_files`` loads them as both clients do, with
OpenSSL through Python's ``ssl``: the CA file must hold at least one certificate, the certificate file a
certificate (chain), and the key file a private key that opens with ``ssl.key.password`` (none for an
unencrypted key) and belongs to that certificate. Each problem is a ``BadInputError`` naming the setting
and the file, at ``source`` (the command config): exit 2, nothing contacted. Validity dates are not
checked here: an expired certificate is well-formed input that the brokers refuse
(``access.check_client_certificate``). No password or key material is ever part of a message.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Callable

from ..model.errors import BadInputError
from ..model.jsonio import brief, clip

PATH_ECHO_LIMIT = 300  # file paths are shown whole up to this length (the user must recognise them)
_SCAN_BYTES = 1 << 20  # how much of a key file is searched for an encryption header
_SSL_LOCATION = re.compile(r"\s*\(_ssl\.c:\d+\)$")


def check_tls_files(
    cafile: str | None,
    certfile: str | None,
    keyfile: str | None,
    key_password: str | None,
    source: str,
) -> None:
    """Refuse (``BadInputError`` at ``source``) a PEM file the Kafka clients could not load."""
    if cafile is not None:
        _load_certificates("ssl.ca.location", cafile, source)
    if certfile is not None:
        _load_certificates("ssl.certificate.location", certfile, source)
        if keyfile is not None:
            _load_key_pair(certfile, keyfile, key_password, source)


def _context() -> ssl.SSLContext:
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # loads no system certificates of its own


def _shown(path: str) -> str:
    return brief(path, PATH_ECHO_LIMIT)


def _openssl_says(e: ssl.SSLError) -> str:
    """OpenSSL's reason without Python's source location: ``[X509: ...] no certificate or crl found``."""
    text = str(e.args[1]) if len(e.args) > 1 else str(e)
    return clip(_SSL_LOCATION.sub("", text), 160)


def _load_certificates(key: str, path: str, source: str) -> None:
    try:
        _context().load_verify_locations(cafile=path)
    except ssl.SSLError as e:
        raise BadInputError(
            f"{key} file {_shown(path)} holds no usable PEM certificate (OpenSSL: {_openssl_says(e)})", source
        ) from None
    except OSError as e:
        raise BadInputError(f"{key} file {_shown(path)} cannot be read: {e.strerror or e}", source) from None


def _password(password: str | None) -> Callable[[], str]:
    """A password callback: never None, which would make OpenSSL prompt on the terminal."""
    return lambda: password or ""


def _load_key_pair(certfile: str, keyfile: str, password: str | None, source: str) -> None:
    try:
        _context().load_cert_chain(certfile, keyfile, password=_password(password))
    except ssl.SSLError as e:
        raise BadInputError(_key_problem(certfile, keyfile, password, e), source) from None
    except ValueError as e:  # e.g. a password longer than OpenSSL takes
        raise BadInputError(f"ssl.key.password cannot be used: {clip(str(e), 120)}", source) from None
    except OSError as e:
        raise BadInputError(
            f"ssl.key.location file {_shown(keyfile)} cannot be read: {e.strerror or e}", source
        ) from None


def _key_problem(certfile: str, keyfile: str, password: str | None, e: ssl.SSLError) -> str:
    """What is wrong with the key file (the certificate file loaded on its own already)."""
    where = f"ssl.key.location file {_shown(keyfile)}"
    if e.reason == "KEY_VALUES_MISMATCH":
        return f"{where} is not the key of the certificate in ssl.certificate.location {_shown(certfile)}"
    if _encrypted(keyfile):
        if not password:
            return f"{where} holds an encrypted key: set ssl.key.password"
        return f"{where} holds an encrypted key that ssl.key.password does not open"
    return f"{where} holds no usable PEM private key (OpenSSL: {_openssl_says(e)})"


def _encrypted(keyfile: str) -> bool:
    """A PKCS#8 ``ENCRYPTED PRIVATE KEY`` block or a traditional ``Proc-Type: 4,ENCRYPTED`` header."""
    try:
        with open(keyfile, "rb") as f:
            head = f.read(_SCAN_BYTES)
    except OSError:
        return False
    return b"ENCRYPTED" in head
