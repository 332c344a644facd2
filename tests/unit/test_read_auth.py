"""Authenticated reads (commands/read_auth.py): every refusal code, and what passes."""

from __future__ import annotations

import base64
import json

from memwarden.commands.model import PrincipalKind
from memwarden.commands.principals import KeyRecord, PrincipalRecord
from memwarden.commands.read_auth import MAX_SKEW_MS, check_request, request_bytes, sign_request
from memwarden.commands.signing import Signer

NOW = 1_780_000_000_000
ALICE = Signer.generate("user:alice")
RECORD = PrincipalRecord("user:alice", PrincipalKind.USER, frozenset(), {},
                         (KeyRecord(ALICE.key_id, ALICE.public_key, 0),))
BODY = {"principal": "user:alice", "query": "what does alice drink?", "k": 5, "purpose": "support"}


def code(body: dict, record: PrincipalRecord | None = RECORD, now: int = NOW) -> str | None:
    problem = check_request(body, record, now)
    return None if problem is None else problem.code


def test_a_signed_request_passes_and_the_signature_covers_every_field() -> None:
    signed = sign_request(BODY, ALICE, NOW)
    assert code(signed) is None
    for field, value in (("query", "what does bob drink?"), ("principal", "user:bob"), ("k", 100),
                         ("purpose", "marketing"), ("signed_at_ms", NOW + 1)):
        assert code({**signed, field: value}) == "BAD_SIGNATURE", field


def test_unsigned_unknown_and_foreign_keys_are_refused() -> None:
    assert code(BODY) == "READ_UNSIGNED"
    assert code({**BODY, "auth": {"key_id": ALICE.key_id}}) == "READ_UNSIGNED"
    assert code(sign_request(BODY, ALICE, NOW), record=None) == "UNKNOWN_PRINCIPAL"
    assert code(sign_request(BODY, Signer.generate("user:alice"), NOW)) == "UNKNOWN_KEY"
    forged = sign_request(BODY, Signer.generate("user:alice", key_id=ALICE.key_id), NOW)
    assert code(forged) == "BAD_SIGNATURE"
    garbled = {**sign_request(BODY, ALICE, NOW), "auth": {"key_id": ALICE.key_id, "signature": "%%%"}}
    assert code(garbled) == "BAD_SIGNATURE"


def test_revoked_rotated_and_stale_keys_or_requests_are_refused() -> None:
    signed = sign_request(BODY, ALICE, NOW)
    revoked = RECORD.with_revoked(ALICE.key_id, NOW - 1)
    assert code(signed, revoked) == "KEY_REVOKED"
    rotated = RECORD.with_key(KeyRecord("user:alice#2", Signer.generate("user:alice").public_key, NOW - 1), NOW - 1)
    assert code(signed, rotated) == "KEY_NOT_VALID"
    assert code(sign_request(BODY, ALICE, NOW - MAX_SKEW_MS - 1)) == "STALE_REQUEST"
    assert code(sign_request(BODY, ALICE, NOW + MAX_SKEW_MS + 1)) == "STALE_REQUEST"
    assert code(sign_request(BODY, ALICE, NOW - MAX_SKEW_MS)) is None


def test_canonical_bytes_ignore_key_order_and_the_auth_member() -> None:
    a = request_bytes({"b": 1, "a": "é", "auth": {"x": 1}})
    assert a == request_bytes({"a": "é", "b": 1}) == '{"a":"é","b":1}'.encode()
    assert base64.b64decode(sign_request(BODY, ALICE, NOW)["auth"]["signature"])


def test_two_signings_of_one_body_differ_by_their_nonce_and_both_verify() -> None:
    first, second = sign_request(BODY, ALICE, NOW), sign_request(BODY, ALICE, NOW)
    assert first["nonce"] != second["nonce"] and first["auth"]["signature"] != second["auth"]["signature"]
    assert code(first) is None and code(second) is None


def test_a_request_is_a_replay_only_when_its_digest_was_claimed_before() -> None:
    from memwarden.commands.read_auth import replayed

    assert replayed(True) is None and replayed(None) is None  # first use; nothing claimed (unsigned)
    problem = replayed(False)
    assert problem is not None and problem.code == "REPLAYED_REQUEST" and problem.field == "auth"


def test_the_digest_binds_the_signed_bytes_and_the_signature() -> None:
    from memwarden.commands.read_auth import request_digest

    signed = sign_request(BODY, ALICE, NOW)
    digest = request_digest(signed)
    assert digest is not None and len(digest) == 32
    assert request_digest(json.loads(json.dumps(signed))) == digest  # the same bytes: the same request
    assert request_digest(sign_request(BODY, ALICE, NOW)) != digest  # a new signing is a new request
    assert request_digest({**signed, "k": 50}) != digest  # a forged body claims nothing of the genuine one
    other_sig = {**signed, "auth": {**signed["auth"], "signature": "AAAA"}}
    assert request_digest(other_sig) != digest  # nor does a forged signature
    assert request_digest(BODY) is None and request_digest({**BODY, "auth": "x"}) is None  # unsigned


def test_the_replay_window_outlives_the_skew_check() -> None:
    from memwarden.commands.read_auth import MAX_SKEW_MS, REPLAY_WINDOW_MS, replay_window_end

    signed = sign_request(BODY, ALICE, NOW)
    assert REPLAY_WINDOW_MS > MAX_SKEW_MS
    assert replay_window_end(signed, NOW) == NOW + REPLAY_WINDOW_MS
    assert replay_window_end(signed, NOW + 1000) == NOW + 1000 + REPLAY_WINDOW_MS  # never ends before now + window
    early = sign_request(BODY, ALICE, NOW + MAX_SKEW_MS)  # signed ahead of the server's clock, still accepted
    assert replay_window_end(early, NOW) - MAX_SKEW_MS > NOW + MAX_SKEW_MS  # held past its last accepted moment
    assert replay_window_end({**signed, "signed_at_ms": "soon"}, NOW) == NOW + REPLAY_WINDOW_MS
