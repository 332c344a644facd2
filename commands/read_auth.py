"""Authenticated reads: a recall request carries an Ed25519 signature by a key of the principal it
reads as (seed 004 "Shared memory needs principal-aware isolation": identity is established, not
asserted). Pure: the request, the principal's registry record and the clock in; a problem or ``None`` out.

The signed bytes are the canonical JSON of the request body without its ``auth`` member (keys sorted,
no whitespace, UTF-8), which includes ``signed_at_ms`` and a ``nonce``; a request older or newer than
:data:`MAX_SKEW_MS` is refused, so a captured request cannot be replayed later than that, and
:class:`ReplayGuard` refuses a signature seen before within that window (``REPLAYED_REQUEST``), so it
cannot be replayed sooner either.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from collections.abc import Mapping
from typing import Any

from memwarden.commands.principals import PrincipalRecord
from memwarden.commands.reasons import Reason
from memwarden.commands.signing import Signer, verify

#: How far a request's ``signed_at_ms`` may lie from the server's clock, in milliseconds.
MAX_SKEW_MS = 60_000


def request_bytes(body: Mapping[str, Any]) -> bytes:
    """Canonical bytes of a request body (without ``auth``)."""
    return json.dumps({k: v for k, v in body.items() if k != "auth"}, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode("utf-8")


def sign_request(body: dict[str, Any], signer: Signer, now_ms: int, nonce: str | None = None) -> dict[str, Any]:
    """A copy of ``body`` with ``signed_at_ms``, a ``nonce`` (``nonce`` or 16 random hex digits: two
    identical reads in one millisecond are two requests, not a replay) and ``auth`` (``key_id``, base64
    ``signature``)."""
    signed = {**{k: v for k, v in body.items() if k != "auth"}, "signed_at_ms": now_ms,
              "nonce": nonce if nonce is not None else secrets.token_hex(8)}
    value = base64.b64encode(signer.sign(request_bytes(signed))).decode()
    return {**signed, "auth": {"key_id": signer.key_id, "signature": value}}


def _problem(code: str, message: str) -> Reason:
    return Reason(code, message, "auth")


def check_request(body: Mapping[str, Any], record: PrincipalRecord | None, now_ms: int,
                  max_skew_ms: int = MAX_SKEW_MS) -> Reason | None:
    """Verify the request's signature against ``record`` (the registry entry of ``body['principal']``).

    Returns ``None`` when it verifies, else a :class:`Reason` (field ``auth``) with one of the codes
    ``READ_UNSIGNED``, ``UNKNOWN_PRINCIPAL``, ``UNKNOWN_KEY``, ``KEY_REVOKED``, ``KEY_NOT_VALID``,
    ``STALE_REQUEST``, ``BAD_SIGNATURE``. Never raises for any body.
    """
    auth = body.get("auth")
    if not isinstance(auth, Mapping) or not isinstance(auth.get("key_id"), str) \
            or not isinstance(auth.get("signature"), str):
        return _problem("READ_UNSIGNED", "the request carries no auth.key_id and auth.signature")
    if record is None:
        return _problem("UNKNOWN_PRINCIPAL", f"principal {body.get('principal')!r} is not registered")
    key = record.key(auth["key_id"])
    if key is None:
        return _problem("UNKNOWN_KEY", f"key {auth['key_id']!r} is not a key of {record.principal_id}")
    if key.revoked_at_ms is not None:
        return _problem("KEY_REVOKED", f"key {auth['key_id']!r} was revoked")
    if now_ms < key.valid_from_ms or (key.valid_to_ms is not None and now_ms >= key.valid_to_ms):
        return _problem("KEY_NOT_VALID", f"key {auth['key_id']!r} is not valid now")
    signed_at = body.get("signed_at_ms")
    if isinstance(signed_at, bool) or not isinstance(signed_at, int) or abs(now_ms - signed_at) > max_skew_ms:
        return _problem("STALE_REQUEST", f"signed_at_ms must be within {max_skew_ms} ms of the server clock")
    try:
        signature = base64.b64decode(auth["signature"], validate=True)
    except (binascii.Error, ValueError):
        return _problem("BAD_SIGNATURE", "auth.signature is not base64")
    if not verify(key.public_key, signature, request_bytes(body)):
        return _problem("BAD_SIGNATURE", "the signature does not verify over the request")
    return None


class ReplayGuard:
    """The signatures of verified requests still inside the skew window: a second request with a
    signature already held is a replay (Ed25519 signatures are deterministic, and every request the
    client signs carries its own ``nonce``). No I/O; one instance per read-API process (a replay sent
    to another replica is caught by that replica's window only: pin clients to one, or keep the
    window short). Entries expire ``window_ms`` after their ``signed_at_ms``; at most ``max_entries``
    are held (past it, the oldest are dropped first: a replay then still meets the skew check)."""

    def __init__(self, window_ms: int = 2 * MAX_SKEW_MS, max_entries: int = 1_000_000) -> None:
        self.window_ms = window_ms
        self.max_entries = max_entries
        self._expiry: dict[str, int] = {}  # insertion order = arrival order

    def first_use(self, signature: str, signed_at_ms: int, now_ms: int) -> bool:
        """``True`` the first time ``signature`` is seen (and remember it), ``False`` for a replay."""
        self._prune(now_ms)
        if signature in self._expiry:
            return False
        self._expiry[signature] = signed_at_ms + self.window_ms
        return True

    def _prune(self, now_ms: int) -> None:
        while self._expiry:
            oldest = next(iter(self._expiry))
            if self._expiry[oldest] > now_ms and len(self._expiry) < self.max_entries:
                break
            del self._expiry[oldest]

    def __len__(self) -> int:
        return len(self._expiry)


def replayed(guard: ReplayGuard, body: Mapping[str, Any], now_ms: int) -> Reason | None:
    """``REPLAYED_REQUEST`` (field ``auth``) when ``body`` (already verified by :func:`check_request`)
    carries a signature ``guard`` has seen in its window; ``None`` otherwise (and it is remembered)."""
    auth = body.get("auth")
    signature = auth.get("signature") if isinstance(auth, Mapping) else None
    signed_at = body.get("signed_at_ms")
    if not isinstance(signature, str) or isinstance(signed_at, bool) or not isinstance(signed_at, int):
        return None
    if guard.first_use(signature, signed_at, now_ms):
        return None
    return _problem("REPLAYED_REQUEST", "this signed request was already served; sign every request anew")

