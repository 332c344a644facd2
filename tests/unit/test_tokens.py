"""Gateway bearer tokens (issue 10): the token format and hash, the check of a presented token, the
gate's decisions on ``IssueToken`` / ``RevokeToken`` (every reason code), their replay from the ledger
(``from_record`` folds to the live state, step by step) and the Avro round trip."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import replace
from datetime import timedelta

import pytest

from memwarden.commands import gate
from memwarden.commands.gate import GateState, Outcome, Position, TokenSet
from memwarden.commands.model import IssueToken, RevokeToken, from_avro, to_avro
from memwarden.commands.tokens import (
    TOKEN_CHARS,
    TokenState,
    bearer_token,
    make_token,
    token_hash,
    token_problem,
)
from memwarden.epoch import to_ms
from memwarden.schemas.codec import GOVERNANCE_COMMANDS, default_codec
from tests import factories as f
from tests.unit.test_recorded import NOW, Ledger, _replay

TOKEN = make_token(bytes(range(32)))


# -- format and hash -------------------------------------------------------------------------------

def test_a_token_is_the_prefix_and_32_bytes_of_urlsafe_base64() -> None:
    token = make_token(secrets.token_bytes(32))
    assert token.startswith("mwt_") and len(token) == TOKEN_CHARS == 47
    assert "=" not in token and "+" not in token and "/" not in token
    assert make_token(bytes(32)) != make_token(bytes(31) + b"\x01")


@pytest.mark.parametrize("size", [0, 16, 31, 33, 64])
def test_a_token_takes_exactly_32_random_bytes(size: int) -> None:
    with pytest.raises(ValueError, match="32 random bytes"):
        make_token(bytes(size))


def test_only_the_sha256_of_the_token_is_stored() -> None:
    assert token_hash(TOKEN) == hashlib.sha256(TOKEN.encode()).digest() and len(token_hash(TOKEN)) == 32
    assert token_hash(TOKEN) != token_hash(TOKEN[:-1] + ("A" if TOKEN[-1] != "A" else "B"))


@pytest.mark.parametrize(("header", "code"), [
    (None, "TOKEN_MISSING"), ("", "TOKEN_MISSING"), ("   ", "TOKEN_MISSING"), ("Basic dXNlcjpwdw==", "TOKEN_MISSING"),
    (TOKEN, "TOKEN_MISSING"),  # no scheme
    ("Bearer", "TOKEN_MALFORMED"), ("Bearer ", "TOKEN_MALFORMED"), ("Bearer abc", "TOKEN_MALFORMED"),
    ("Bearer " + TOKEN[:-1], "TOKEN_MALFORMED"), ("Bearer " + TOKEN + "x", "TOKEN_MALFORMED"),
    ("Bearer mwx_" + TOKEN[4:], "TOKEN_MALFORMED"), ("Bearer " + TOKEN[:-1] + "=", "TOKEN_MALFORMED"),
    ("Bearer " + TOKEN[:-1] + "/", "TOKEN_MALFORMED"), ("Bearer " + TOKEN + " extra", "TOKEN_MALFORMED"),
])
def test_a_header_without_a_well_formed_bearer_token_is_refused(header: str | None, code: str) -> None:
    got = bearer_token(header)
    assert not isinstance(got, str) and got.code == code and got.field == "Authorization"


@pytest.mark.parametrize("header", ["Bearer " + TOKEN, "bearer " + TOKEN, "BEARER  " + TOKEN, " Bearer " + TOKEN + " "])
def test_the_bearer_scheme_is_case_insensitive_and_spaces_are_trimmed(header: str) -> None:
    assert bearer_token(header) == TOKEN


def _stored(**over: object) -> TokenState:
    return replace(TokenState("tok-1", "user:alice", token_hash(TOKEN), "service:admin", 1_000), **over)  # type: ignore[arg-type]


@pytest.mark.parametrize(("stored", "now", "code"), [
    (None, 5_000, "UNKNOWN_TOKEN"),
    (_stored(token_sha256=b"\x00" * 32), 5_000, "UNKNOWN_TOKEN"),  # a row that does not hold this hash
    (_stored(revoked_at_ms=4_000), 5_000, "TOKEN_REVOKED"),
    (_stored(revoked_at_ms=4_000, expires_ms=3_000), 5_000, "TOKEN_REVOKED"),  # revocation named first
    (_stored(expires_ms=5_000), 5_000, "TOKEN_EXPIRED"),  # expiry is exclusive
    (_stored(expires_ms=4_999), 5_000, "TOKEN_EXPIRED"),
])
def test_a_token_not_in_force_is_refused_with_its_reason(stored: TokenState | None, now: int, code: str) -> None:
    problem = token_problem(token_hash(TOKEN), stored, now)
    assert problem is not None and problem.code == code and problem.field == "Authorization"


def test_a_token_in_force_passes() -> None:
    assert token_problem(token_hash(TOKEN), _stored(), 5_000) is None
    assert token_problem(token_hash(TOKEN), _stored(expires_ms=5_001), 5_000) is None
    assert _stored().in_force(10**15) and not _stored(expires_ms=10).in_force(10)


# -- the gate --------------------------------------------------------------------------------------

def _issue(principal: str = "service:admin", token_id: str = "tok-1", for_: str = "user:alice",
           token: str = TOKEN, **over: object) -> IssueToken:
    return IssueToken(envelope=f.envelope(principal, for_, scope="governance"), token_id=token_id,
                      principal_id=for_, token_sha256=token_hash(token), **over)  # type: ignore[arg-type]


def _revoke(principal: str = "service:admin", token_id: str = "tok-1") -> RevokeToken:
    return RevokeToken(envelope=f.envelope(principal, principal, scope="governance"), token_id=token_id)


def _decide(command: object, state: GateState) -> gate.Decision:
    signed, data = f.sign(command)
    return gate.decide(signed, None, Position("mw.commands", 0, 1), state, NOW, signed_bytes=data)


def _state(*tokens: TokenState) -> GateState:
    return GateState(principals=f.registry(), tokens={t.token_id: t for t in tokens})


def test_an_admin_issues_a_token_for_a_registered_principal() -> None:
    d = _decide(_issue(expires_at=NOW + timedelta(days=30)), _state())
    assert d.outcome is Outcome.ACCEPTED and d.reasons[0].code == "OK"
    (effect,) = d.effects
    assert effect == TokenSet(TokenState("tok-1", "user:alice", token_hash(TOKEN), "service:admin", to_ms(f.T0),
                                         to_ms(NOW + timedelta(days=30))))
    assert gate.evolve(_state(), d).tokens["tok-1"] == effect.state


@pytest.mark.parametrize(("command", "state", "code", "field"), [
    (_issue(principal="user:alice"), _state(), "NOT_AN_ADMIN", "envelope.principal"),
    (_issue(for_="user:nobody"), _state(), "UNKNOWN_PRINCIPAL", "principal_id"),
    (_issue(token=make_token(b"\x07" * 32)), _state(_stored()), "TOKEN_EXISTS", "token_id"),
    (_issue(token_id="tok-2"), _state(_stored()), "TOKEN_HASH_IN_USE", "token_sha256"),
    (_issue(expires_at=NOW), _state(), "TOKEN_ALREADY_EXPIRED", "expires_at"),
    (_issue(expires_at=NOW - timedelta(days=1)), _state(), "TOKEN_ALREADY_EXPIRED", "expires_at"),
    (_revoke(token_id="tok-9"), _state(_stored()), "UNKNOWN_TOKEN", "token_id"),
    (_revoke(principal="user:bob"), _state(_stored()), "NOT_TOKEN_OWNER", "envelope.principal"),
])
def test_every_refusal_names_its_reason_and_changes_nothing(command: object, state: GateState, code: str,
                                                            field: str) -> None:
    d = _decide(command, state)
    assert d.outcome is Outcome.REJECTED and [(r.code, r.field) for r in d.reasons] == [(code, field)]
    assert d.effects == () and gate.evolve(state, d) == state


def test_an_unsigned_or_forged_token_command_is_rejected_like_any_command() -> None:
    unsigned = _issue()
    d = gate.decide(unsigned, None, Position("mw.commands", 0, 1), _state(), NOW)
    assert d.outcome is Outcome.REJECTED and d.reasons[0].code == "UNSIGNED"
    forged, _ = f.sign(_issue(), by=f.signer("user:alice"))  # alice's key under the admin's name
    d = gate.decide(forged, None, Position("mw.commands", 0, 1), _state(), NOW,
                    signed_bytes=f.sign(_issue())[1])
    assert d.outcome is Outcome.REJECTED and d.reasons[0].code in ("UNKNOWN_KEY", "BAD_SIGNATURE")


@pytest.mark.parametrize("by", ["service:admin", "user:alice"])
def test_the_admin_or_the_tokens_own_principal_revokes_it(by: str) -> None:
    d = _decide(_revoke(principal=by), _state(_stored()))
    assert d.outcome is Outcome.ACCEPTED
    assert gate.evolve(_state(_stored()), d).tokens["tok-1"].revoked_at_ms == to_ms(NOW)


def test_revoking_a_revoked_token_changes_nothing() -> None:
    revoked = _stored(revoked_at_ms=123)
    d = _decide(_revoke(), _state(revoked))
    assert d.outcome is Outcome.ACCEPTED and d.reasons[0].code == "TOKEN_ALREADY_REVOKED" and d.effects == ()


def test_token_decisions_replay_from_the_ledger_to_the_same_state() -> None:
    """Issue, refusals, revocation by its principal, a second revocation, a new token for the same
    principal: ``from_record`` of each recorded decision gives the live effects, step by step."""
    led = Ledger()
    other = make_token(b"\x09" * 32)
    assert led.run(_issue(expires_at=NOW + timedelta(days=90))).outcome is Outcome.ACCEPTED
    assert led.run(_issue()).outcome is Outcome.REJECTED  # TOKEN_EXISTS
    assert led.run(_issue(token_id="tok-2")).outcome is Outcome.REJECTED  # TOKEN_HASH_IN_USE
    assert led.run(_issue(principal="user:bob", token_id="tok-3", token=other)).outcome is Outcome.REJECTED
    assert led.run(_revoke(principal="user:bob")).outcome is Outcome.REJECTED  # NOT_TOKEN_OWNER
    assert led.run(_revoke(principal="user:alice")).outcome is Outcome.ACCEPTED
    assert led.run(_revoke()).reasons[0].code == "TOKEN_ALREADY_REVOKED"
    assert led.run(_issue(token_id="tok-2", token=other)).outcome is Outcome.ACCEPTED
    assert led.run(_revoke(token_id="tok-404")).outcome is Outcome.REJECTED
    replayed = _replay(led)
    assert replayed == led.state
    assert replayed.tokens["tok-1"].revoked_at_ms is not None and replayed.tokens["tok-2"].revoked_at_ms is None


# -- the contract ------------------------------------------------------------------------------------

def test_token_commands_are_governance_commands_and_round_trip_through_avro() -> None:
    assert {"IssueToken", "RevokeToken"} <= set(GOVERNANCE_COMMANDS)
    codec = default_codec()
    for command in (_issue(expires_at=NOW + timedelta(days=1)), _issue(), _revoke()):
        name, decoded = codec.decode(codec.encode(command.kind, to_avro(command)))
        assert name == command.kind and from_avro(name, decoded) == command


def test_an_issue_token_command_holds_the_hash_never_the_token() -> None:
    data = default_codec().encode("IssueToken", to_avro(_issue()))
    assert TOKEN.encode() not in data and TOKEN[4:].encode() not in data and token_hash(TOKEN) in data


@pytest.mark.parametrize("size", [0, 31, 33])
def test_a_hash_of_another_size_is_refused_by_the_model(size: int) -> None:
    with pytest.raises(ValueError, match="token_sha256"):
        IssueToken(envelope=f.envelope("service:admin"), token_id="t", principal_id="user:alice",
                   token_sha256=bytes(size))
