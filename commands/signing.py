"""Ed25519 signatures over canonical command bytes: σ(μ) of SSGM Principle 2 (provenance).

The signed bytes are the command's single-object Avro encoding with ``envelope.signature`` null
(:meth:`memwarden.schemas.codec.AvroCodec.unsigned_bytes` derives them back from a signed command).
Pure: key material in, bytes and booleans out. Keys are raw 32-byte Ed25519 keys (RFC 8032).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

ALGORITHM = "Ed25519"


def verify(public_key: bytes, signature: bytes, data: bytes) -> bool:
    """``True`` iff ``signature`` (64 bytes) is a valid Ed25519 signature of ``data`` under the raw
    32-byte ``public_key``. Never raises for malformed keys or signatures (they are ``False``)."""
    try:
        Ed25519PublicKey.from_public_bytes(bytes(public_key)).verify(bytes(signature), data)
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


@dataclass(frozen=True)
class Signer:
    """A principal's signing key: ``principal_id``, ``key_id`` and the Ed25519 private key."""

    principal_id: str
    key_id: str
    private_key: Ed25519PrivateKey

    @classmethod
    def generate(cls, principal_id: str, key_id: str | None = None) -> Signer:
        """A fresh key; ``key_id`` defaults to ``<principal_id>#<8 hex>``."""
        return cls(principal_id, key_id or f"{principal_id}#{uuid.uuid4().hex[:8]}", Ed25519PrivateKey.generate())

    @classmethod
    def from_private_bytes(cls, principal_id: str, key_id: str, raw: bytes) -> Signer:
        """Rebuild from the raw 32-byte private key. Raises ``ValueError`` on a malformed key."""
        return cls(principal_id, key_id, Ed25519PrivateKey.from_private_bytes(raw))

    def private_bytes(self) -> bytes:
        """Raw 32-byte private key (store it 0600; never on the ledger)."""
        return self.private_key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())

    @property
    def public_key(self) -> bytes:
        """Raw 32-byte public key."""
        return self.private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    def sign(self, data: bytes) -> bytes:
        """64-byte Ed25519 signature of ``data``."""
        return self.private_key.sign(data)
