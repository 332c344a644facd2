"""Authenticated reads (commands/read_auth.py): every refusal code, and what passes."""

from __future__ import annotations

import base64

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


def test_a_signature_seen_inside_the_window_is_a_replay_and_forgotten_after_it() -> None:
    from memwarden.commands.read_auth import ReplayGuard, replayed

    guard = ReplayGuard(window_ms=1000)
    signed = sign_request(BODY, ALICE, NOW)
    assert replayed(guard, signed, NOW) is None
    problem = replayed(guard, signed, NOW + 10)
    assert problem is not None and problem.code == "REPLAYED_REQUEST" and problem.field == "auth"
    assert replayed(guard, sign_request(BODY, ALICE, NOW), NOW + 20) is None  # a new signing is a new request
    assert len(guard) == 2
    assert guard.first_use("other", NOW + 5000, NOW + 5000) and len(guard) == 1  # both expired and dropped
    assert replayed(guard, {"principal": "x"}, NOW) is None  # unsigned: nothing to remember


def test_the_replay_guard_holds_at_most_max_entries() -> None:
    from memwarden.commands.read_auth import ReplayGuard

    guard = ReplayGuard(window_ms=10_000, max_entries=3)
    for i in range(5):
        assert guard.first_use(f"s{i}", NOW, NOW)
    assert len(guard) <= 3 and not guard.first_use("s4", NOW, NOW)
