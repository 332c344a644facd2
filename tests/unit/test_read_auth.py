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


def test_the_claim_binds_the_signed_bytes_and_the_signatures_bytes() -> None:
    from memwarden.commands.read_auth import replay_claim

    signed = sign_request(BODY, ALICE, NOW)
    claim = replay_claim(signed, NOW)
    assert claim is not None and len(claim[0]) == 32
    digest = claim[0]

    def digest_of(body: dict) -> bytes | None:
        found = replay_claim(body, NOW)
        return None if found is None else found[0]

    assert digest_of(json.loads(json.dumps(signed))) == digest  # the same bytes: the same request
    assert digest_of(sign_request(BODY, ALICE, NOW)) != digest  # a new signing is a new request
    assert digest_of({**signed, "k": 50}) != digest  # a forged body claims nothing of the genuine one
    other_sig = {**signed, "auth": {**signed["auth"], "signature": "AAAA"}}
    assert digest_of(other_sig) != digest  # nor does a forged signature
    # another base64 spelling of the same signature (the unused low bits of its last character) is the
    # same request: it still verifies, and it is still a replay
    text = signed["auth"]["signature"]
    assert text.endswith("==")
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    last = alphabet.index(text[-3])
    respelt = text[:-3] + alphabet[last ^ 1] + "=="
    assert respelt != text and base64.b64decode(respelt) == base64.b64decode(text)
    twin = {**signed, "auth": {**signed["auth"], "signature": respelt}}
    assert code(twin) is None and digest_of(twin) == digest


def test_nothing_is_claimed_for_a_request_the_checks_refuse() -> None:
    from memwarden.commands.read_auth import MAX_SKEW_MS, REPLAY_WINDOW_MS, replay_claim

    signed = sign_request(BODY, ALICE, NOW)
    assert REPLAY_WINDOW_MS >= 2 * MAX_SKEW_MS  # a request accepted now is refused by the skew check by then
    assert replay_claim(signed, NOW + MAX_SKEW_MS) == (replay_claim(signed, NOW)[0], NOW + MAX_SKEW_MS
                                                       + REPLAY_WINDOW_MS)  # type: ignore[index]
    for body in (BODY, {**BODY, "auth": "x"}, {**signed, "signed_at_ms": "soon"},
                 {**signed, "signed_at_ms": True}, {**signed, "signed_at_ms": 9 * 10**18},
                 {**signed, "auth": {**signed["auth"], "signature": "not base64!"}}):
        assert replay_claim(body, NOW) is None
    assert replay_claim(signed, NOW + MAX_SKEW_MS + 1) is None  # stale: no row for it
