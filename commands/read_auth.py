"""Authenticated reads: a recall request carries an Ed25519 signature by a key of the principal it
reads as (seed 004 "Shared memory needs principal-aware isolation": identity is established, not
asserted). Pure: the request, the principal's registry record and the clock in; a problem or ``None`` out.

The signed bytes are the canonical JSON of the request body without its ``auth`` member (keys sorted,
no whitespace, UTF-8), which includes ``signed_at_ms`` and a ``nonce``; a request older or newer than
:data:`MAX_SKEW_MS` is refused, so a captured request cannot be replayed later than that, and
:func:`replayed` refuses a request served before within that window (``REPLAYED_REQUEST``), so it
cannot be replayed sooner either: the window is a table every read-API process of the namespace shares
(``served_requests``, claimed in the reader's registry statement: :mod:`memwarden.stores.registry`),
so a replay sent to another replica, or after a restart, is refused too.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
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


#: How long a served request's digest is kept (ms after its ``signed_at_ms``): past it the skew check
#: refuses the request anyway.
REPLAY_WINDOW_MS = 2 * MAX_SKEW_MS


def replay_claim(body: Mapping[str, Any], now_ms: int, max_skew_ms: int = MAX_SKEW_MS) -> tuple[bytes, int] | None:
    """What the shared replay window (``served_requests``) holds of a signed request: (SHA-256 of its
    canonical bytes and its *decoded* signature, 32 bytes; the end of its window in ms since the
    epoch, ``now_ms`` + :data:`REPLAY_WINDOW_MS`, past which the skew check refuses it anyway), or
    ``None`` when there is nothing to claim: an unsigned body, a signature that is not base64, or a
    ``signed_at_ms`` that is not an integer within ``max_skew_ms`` of ``now_ms`` (:func:`check_request`
    refuses all of them, so a forged request never holds a row longer than the window).

    The digest covers the body, so a copy with another body is another digest (it claims nothing the
    genuine request needs), and the signature's bytes rather than its text, so another base64 spelling of
    the same signature (the unused low bits of its last character) is the same request."""
    auth = body.get("auth")
    signature = auth.get("signature") if isinstance(auth, Mapping) else None
    signed_at = body.get("signed_at_ms")
    if not isinstance(signature, str) or isinstance(signed_at, bool) or not isinstance(signed_at, int) \
            or abs(now_ms - signed_at) > max_skew_ms:
        return None
    try:
        raw = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        return None
    return hashlib.sha256(request_bytes(body) + b"\x00" + raw).digest(), now_ms + REPLAY_WINDOW_MS


def replayed(first_use: bool | None) -> Reason | None:
    """``REPLAYED_REQUEST`` (field ``auth``) when a request (already verified by :func:`check_request`)
    was not the first use of its digest in the shared window (``first_use`` ``False``); ``None`` otherwise."""
    if first_use is False:
        return _problem("REPLAYED_REQUEST", "this signed request was already served; sign every request anew")
    return None
