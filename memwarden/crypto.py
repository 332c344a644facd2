"""Crypto-shredding primitives: per-record data keys, wrapped under a key-encryption key (KEK).

Decision (fixed by the ledger format, documented in README "Forgetting without rewriting the
ledger"): every memory text is encrypted with its own AES-256-GCM data key before it is published.
The ciphertext goes on the immutable ledger; the data key, wrapped under the KEK, goes on the
compacted keys topic keyed by ``key_id``. Forgetting publishes a tombstone for ``key_id``; after
compaction no copy of the key remains, so every ledger copy of the text is unreadable and a replay
from offset 0 cannot bring it back (seed 004 "Forgetting is an end-to-end operation", step 5).
A typed fact's value is sealed under the same data key (its own nonce, associated data marking it as
a fact value), so the same tombstone shreds it.
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from memwarden.errors import MemwardenError

NONCE_BYTES = 12
KEY_BYTES = 32


class ContentUnreadable(MemwardenError):
    """Ciphertext cannot be decrypted: the key is missing (shredded) or does not match."""


def new_data_key() -> bytes:
    """A fresh random 256-bit data key."""
    return secrets.token_bytes(KEY_BYTES)


def encrypt_text(text: str, key: bytes, key_id: str) -> tuple[bytes, bytes]:
    """Encrypt UTF-8 ``text`` under ``key``; ``key_id`` is bound as associated data.

    Returns ``(nonce (12 bytes), ciphertext with 16-byte tag)``.
    """
    nonce = secrets.token_bytes(NONCE_BYTES)
    return nonce, AESGCM(key).encrypt(nonce, text.encode("utf-8"), key_id.encode())


def decrypt_text(nonce: bytes, ciphertext: bytes, key: bytes, key_id: str) -> str:
    """Inverse of :func:`encrypt_text`. Raises ``ContentUnreadable`` on a wrong key or tampering."""
    try:
        return AESGCM(key).decrypt(nonce, ciphertext, key_id.encode()).decode("utf-8")
    except (InvalidTag, ValueError, UnicodeDecodeError) as exc:
        raise ContentUnreadable(f"content of key {key_id} does not decrypt: {type(exc).__name__}") from None


def open_content(content: Mapping[str, Any], keys: Mapping[str, bytes | None]) -> str | None:
    """Plaintext of an ``EncryptedContent`` record (``key_id``, ``nonce``, ``ciphertext``) with the data
    key found in ``keys``; ``None`` when the key is missing (shredded) or does not open it."""
    key = keys.get(content["key_id"])
    if key is None:
        return None
    try:
        return decrypt_text(content["nonce"], content["ciphertext"], key, content["key_id"])
    except ContentUnreadable:
        return None


#: Associated data of a sealed fact value: marks the bytes as a fact value (they never open as content,
#: nor content as a fact value) and binds them to the data key id.
FACT_VALUE_AAD = "memwarden.fact.value:"


def seal_fact_value(value: str, key: bytes, key_id: str) -> tuple[bytes, bytes]:
    """Encrypt a typed fact's UTF-8 ``value`` under the memory version's data ``key`` (the one of its
    content, so a forget shreds both), with a fresh nonce and associated data ``FACT_VALUE_AAD + key_id``.
    Returns ``(nonce, sealed bytes with tag)``."""
    nonce = secrets.token_bytes(NONCE_BYTES)
    return nonce, AESGCM(key).encrypt(nonce, value.encode("utf-8"), (FACT_VALUE_AAD + key_id).encode())


def open_fact_value(nonce: bytes, sealed: bytes, key: bytes, key_id: str) -> str:
    """Inverse of :func:`seal_fact_value`. Raises ``ContentUnreadable`` on a wrong key, another key id,
    content ciphertext or tampering."""
    try:
        return AESGCM(key).decrypt(nonce, sealed, (FACT_VALUE_AAD + key_id).encode()).decode("utf-8")
    except (InvalidTag, ValueError, UnicodeDecodeError) as exc:
        raise ContentUnreadable(f"fact value of key {key_id} does not decrypt: {type(exc).__name__}") from None


#: A ``source.quoted_span`` sealed by the client: ``sealed:v1:<base64 nonce>:<base64 ciphertext>``.
SPAN_PREFIX = "sealed:v1:"
#: Associated-data prefix of a sealed quoted span (never opens as content or a fact value).
SPAN_AAD = "memwarden.quoted_span:"


def seal_span(span: str, key: bytes, key_id: str) -> str:
    """A derived record's ``quoted_span`` (verbatim words of its sources) sealed under the record's
    data ``key`` (AES-256-GCM, fresh nonce, associated data ``SPAN_AAD + key_id``) and written as text
    (``SPAN_PREFIX``...), so the field keeps its schema and a forget shreds it with the content."""
    nonce = secrets.token_bytes(NONCE_BYTES)
    sealed = AESGCM(key).encrypt(nonce, span.encode("utf-8"), (SPAN_AAD + key_id).encode())
    return SPAN_PREFIX + base64.b64encode(nonce).decode() + ":" + base64.b64encode(sealed).decode()


def open_span(value: str | None, key_id: str, keys: Mapping[str, bytes | None]) -> str | None:
    """The words of a ``quoted_span`` of a write whose content has data key ``key_id``: opened when
    sealed, the value itself when written in clear by an older client (or ``None``); ``None`` when the
    key is missing (shredded) or the sealed text does not open."""
    if value is None or not value.startswith(SPAN_PREFIX):
        return value
    key = keys.get(key_id)
    if key is None:
        return None
    try:
        nonce_b64, sealed_b64 = value[len(SPAN_PREFIX):].split(":", 1)
        opened = AESGCM(key).decrypt(base64.b64decode(nonce_b64), base64.b64decode(sealed_b64),
                                     (SPAN_AAD + key_id).encode())
        return opened.decode("utf-8")
    except (InvalidTag, ValueError, UnicodeDecodeError):
        return None


def open_fact(fact: Mapping[str, Any], key_id: str, keys: Mapping[str, bytes | None]) -> str | None:
    """The value of a ``Fact`` record (``value``, ``value_nonce``, ``value_sealed``) of a write whose
    content has data key ``key_id``: opened with that key from ``keys`` when sealed, the clear
    ``value`` of a record written before values were sealed; ``None`` when the key is missing
    (shredded) or does not open it."""
    if fact.get("value_sealed") is None:
        return str(fact.get("value") or "")
    key = keys.get(key_id)
    if key is None or fact.get("value_nonce") is None:
        return None
    try:
        return open_fact_value(fact["value_nonce"], fact["value_sealed"], key, key_id)
    except ContentUnreadable:
        return None


def seal_vector(vector: Any, key: bytes, aad: str) -> tuple[bytes, bytes]:
    """Encrypt a dense vector (float32, little-endian) under data ``key`` with associated data ``aad``.
    Returns ``(nonce, sealed bytes with tag)``."""
    import numpy as np

    nonce = secrets.token_bytes(NONCE_BYTES)
    raw = np.asarray(vector, dtype="<f4").tobytes()
    return nonce, AESGCM(key).encrypt(nonce, raw, aad.encode())


def open_vector(nonce: bytes, sealed: bytes, key: bytes, aad: str) -> list[float]:
    """Inverse of :func:`seal_vector`: the float32 values as Python floats. Raises
    ``ContentUnreadable`` on a wrong key, another ``aad`` or tampering."""
    import numpy as np

    try:
        raw = AESGCM(key).decrypt(nonce, sealed, aad.encode())
    except (InvalidTag, ValueError) as exc:
        raise ContentUnreadable(f"vector ({aad}) does not decrypt: {type(exc).__name__}") from None
    values: list[float] = np.frombuffer(raw, dtype="<f4").astype(float).tolist()
    return values


@dataclass(frozen=True)
class Kek:
    """Key-encryption key: wraps data keys for the keys topic. ``kek_id`` is a hash prefix."""

    key: bytes

    @property
    def kek_id(self) -> str:
        return hashlib.sha256(b"memwarden-kek" + self.key).hexdigest()[:16]

    def wrap(self, data_key: bytes, key_id: str) -> tuple[bytes, bytes]:
        """Wrap ``data_key`` → ``(nonce, wrapped)``; ``key_id`` is associated data."""
        nonce = secrets.token_bytes(NONCE_BYTES)
        return nonce, AESGCM(self.key).encrypt(nonce, data_key, key_id.encode())

    def unwrap(self, nonce: bytes, wrapped: bytes, key_id: str) -> bytes:
        """Inverse of :meth:`wrap`. Raises ``ContentUnreadable`` if the KEK does not match."""
        try:
            return AESGCM(self.key).decrypt(nonce, wrapped, key_id.encode())
        except (InvalidTag, ValueError) as exc:
            raise ContentUnreadable(f"data key {key_id} does not unwrap: {type(exc).__name__}") from None


def uninitialised(what: str, path: Path, data_dir: Path) -> str:
    """The message for key material missing from ``data_dir``: most likely a script run from another
    directory than the checkout whose stack runs (the data folder defaults to ``./.memwarden`` of the
    current directory), which must not make keys of its own (newcomer trial, twenty-fourth session: a client
    that did wrapped every data key with a KEK the worker never had, and every write was refused
    ``CONTENT_UNREADABLE``)."""
    return (f"no {what} at {path}: the data folder {data_dir.resolve()} (MEMWARDEN_DATA_DIR, default ./.memwarden "
            "of the current directory) is not one `memwarden stack up` or a worker set up; run from the checkout "
            "whose stack runs, or set MEMWARDEN_DATA_DIR to its .memwarden")


def kek_path(data_dir: Path) -> Path:
    """Where the data folder ``data_dir`` keeps its key-encryption key (when ``MEMWARDEN_KEK`` does not give it)."""
    return data_dir / "keys" / "kek"


def load_kek(explicit: str | None, data_dir: Path, create: bool = True) -> Kek:
    """The KEK from ``explicit`` (base64, 32 bytes) or from ``data_dir/keys/kek``, created once (0600)
    when ``create`` (the stack and the worker, which own the data folder; clients pass ``False``).

    Raises ``MemwardenError`` when the explicit value is not 32 bytes of base64, or when the file is
    missing and ``create`` is false (:func:`uninitialised`, naming the folder and ``MEMWARDEN_KEK``).
    """
    if explicit:
        try:
            key = base64.b64decode(explicit, validate=True)
        except ValueError:
            raise MemwardenError("MEMWARDEN_KEK: not base64") from None
        if len(key) != KEY_BYTES:
            raise MemwardenError(f"MEMWARDEN_KEK: must decode to {KEY_BYTES} bytes, got {len(key)}")
        return Kek(key)
    path = kek_path(data_dir)
    if not path.exists() and not create:
        raise MemwardenError(uninitialised("key-encryption key", path, data_dir) + " (or MEMWARDEN_KEK)")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".kek-{os.getpid()}-{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(base64.b64encode(secrets.token_bytes(KEY_BYTES)))
        try:
            os.link(tmp, path)  # atomic: readers never see a partly written key
        except FileExistsError:  # another process won the race; use its key
            pass
        finally:
            tmp.unlink()
    return Kek(base64.b64decode(path.read_bytes().strip()))
