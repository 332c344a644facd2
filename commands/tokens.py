"""Bearer tokens for the gateways (REST, issue 10): what a token looks like, how it is stored, and
whether one presented with a request is good. Pure: bytes, strings, the stored state and the clock in;
a token, a hash or a :class:`~memwarden.commands.reasons.Reason` out.

A token is ``mwt_`` followed by 32 random bytes in URL-safe base64 without padding (47 characters).
It exists in clear only twice: when ``memwarden token issue`` prints it, and in the header of a
request. The ledger (``IssueToken``), the gate's state and every log hold its SHA-256 only, so a
leaked ledger or database yields no usable token. Tokens are governance: issued by an admin and
revoked by an admin or the token's principal, each a signed command decided by the gate
(:mod:`memwarden.commands.gate.tokens`).

Checks of a presented token (:func:`token_problem`), each a reason code the API answers 401 with:
``TOKEN_MISSING`` (no ``Authorization: Bearer`` header), ``TOKEN_MALFORMED`` (not ``mwt_`` + 43
URL-safe base64 characters), ``UNKNOWN_TOKEN`` (no token has this hash), ``TOKEN_REVOKED``,
``TOKEN_EXPIRED`` (at or after ``expires_ms``). The stored hash is compared in constant time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass

from memwarden.commands.reasons import Reason

#: Every token starts with this (secret scanners and humans recognise it).
TOKEN_PREFIX = "mwt_"
#: Random bytes of a token.
TOKEN_BYTES = 32
#: Length of a token: the prefix and 32 bytes in unpadded base64 (43 characters).
TOKEN_CHARS = len(TOKEN_PREFIX) + 43
_TOKEN_RE = re.compile(r"mwt_[A-Za-z0-9_-]{43}")
#: Field every authentication refusal names.
AUTH_FIELD = "Authorization"


@dataclass(frozen=True)
class TokenState:
    """A token as the gate keeps it: id, the principal it acts for, the SHA-256 of the token (32
    bytes, never the token), who issued it and when (UTC epoch ms), its expiry (``None``: none) and
    its revocation time (``None``: in force)."""

    token_id: str
    principal: str
    token_sha256: bytes
    issued_by: str
    issued_at_ms: int
    expires_ms: int | None = None
    revoked_at_ms: int | None = None

    def in_force(self, now_ms: int) -> bool:
        """Neither revoked nor expired at ``now_ms``."""
        return self.revoked_at_ms is None and (self.expires_ms is None or now_ms < self.expires_ms)


def make_token(random_bytes: bytes) -> str:
    """The token text of ``random_bytes`` (exactly :data:`TOKEN_BYTES` of them, from a CSPRNG such as
    ``secrets.token_bytes``). Raises ``ValueError`` for another length."""
    if len(random_bytes) != TOKEN_BYTES:
        raise ValueError(f"a token takes {TOKEN_BYTES} random bytes, got {len(random_bytes)}")
    return TOKEN_PREFIX + base64.urlsafe_b64encode(random_bytes).decode().rstrip("=")


def token_hash(token: str) -> bytes:
    """SHA-256 (32 bytes) of the token's UTF-8 text: the only form stored anywhere."""
    return hashlib.sha256(token.encode("utf-8")).digest()


def _refused(code: str, message: str) -> Reason:
    return Reason(code, message, AUTH_FIELD)


def bearer_token(header: str | None) -> str | Reason:
    """The token of an ``Authorization`` header value (``Bearer mwt_...``, scheme case-insensitive),
    or the refusal: ``TOKEN_MISSING`` (no header, or another scheme), ``TOKEN_MALFORMED``."""
    if header is None or not header.strip():
        return _refused("TOKEN_MISSING", "send Authorization: Bearer mwt_...")
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return _refused("TOKEN_MISSING", f"the Authorization scheme must be Bearer, not {scheme[:20]!r}")
    value = value.strip()
    if not _TOKEN_RE.fullmatch(value):
        return _refused("TOKEN_MALFORMED", f"a token is {TOKEN_PREFIX!r} and 43 URL-safe base64 characters")
    return value


def token_problem(presented: bytes, stored: TokenState | None, now_ms: int) -> Reason | None:
    """Whether a token whose SHA-256 is ``presented`` may act now, given the token ``stored`` under
    that hash (``None``: no such token). Returns ``None`` when it may, else ``UNKNOWN_TOKEN``,
    ``TOKEN_REVOKED`` or ``TOKEN_EXPIRED``. The hashes are compared in constant time."""
    if stored is None or not hmac.compare_digest(stored.token_sha256, presented):
        return _refused("UNKNOWN_TOKEN", "no token with this value was issued")
    if stored.revoked_at_ms is not None:
        return _refused("TOKEN_REVOKED", f"token {stored.token_id} was revoked")
    if stored.expires_ms is not None and now_ms >= stored.expires_ms:
        return _refused("TOKEN_EXPIRED", f"token {stored.token_id} expired")
    return None


__all__ = ["AUTH_FIELD", "TOKEN_BYTES", "TOKEN_CHARS", "TOKEN_PREFIX", "TokenState", "bearer_token", "make_token",
           "token_hash", "token_problem"]
