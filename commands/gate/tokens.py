"""The gateways' bearer tokens through the gate (issue 10): ``IssueToken`` and ``RevokeToken``.
Pure functions of the command, the governed state and the clock.

* ``IssueToken`` — an admin only (``NOT_AN_ADMIN``), for a registered principal (``UNKNOWN_PRINCIPAL``),
  under a new token id (``TOKEN_EXISTS``) and a hash no other token has (``TOKEN_HASH_IN_USE``), with an
  expiry after the decision's clock (``TOKEN_ALREADY_EXPIRED``).
* ``RevokeToken`` — an admin or the token's own principal (``NOT_TOKEN_OWNER``), of a known token
  (``UNKNOWN_TOKEN``); revoked from the decision's clock on. Revoking a revoked token is accepted and
  changes nothing (``TOKEN_ALREADY_REVOKED``).

The effect (:class:`~memwarden.commands.gate.effects.TokenSet`) is built by :func:`issued` and
:func:`token_revoked`, which a replay uses too (:mod:`.recorded`).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from memwarden.commands.gate.effects import Decision, TokenSet, accept, reject
from memwarden.commands.gate.state import GateState, Outcome
from memwarden.commands.principals import ADMIN_ROLE, PrincipalRecord
from memwarden.commands.reasons import Reason
from memwarden.commands.token_commands import IssueToken, RevokeToken
from memwarden.commands.tokens import TokenState
from memwarden.epoch import to_ms


def issued(command: IssueToken) -> TokenSet:
    """The token an ``IssueToken`` creates: issued by its principal at its issue time."""
    env = command.envelope
    return TokenSet(TokenState(command.token_id, command.principal_id, command.token_sha256, env.principal,
                               to_ms(env.issued_at), to_ms(command.expires_at) if command.expires_at else None))


def token_revoked(token: TokenState, now: datetime) -> Decision:
    """The accepted revocation of ``token`` from ``now`` (an already revoked token changes nothing)."""
    if token.revoked_at_ms is not None:
        return Decision(Outcome.ACCEPTED, (Reason("TOKEN_ALREADY_REVOKED", f"token {token.token_id} was revoked"
                                                  " before"),))
    return accept(TokenSet(replace(token, revoked_at_ms=to_ms(now))), message=f"token {token.token_id} revoked")


def _issue(command: IssueToken, admin: bool, state: GateState, now: datetime) -> Decision:
    if not admin:
        return reject("NOT_AN_ADMIN", "only an admin issues tokens", "envelope.principal")
    if command.principal_id not in state.principals:
        return reject("UNKNOWN_PRINCIPAL", f"{command.principal_id} is not registered", "principal_id")
    if command.token_id in state.tokens:
        return reject("TOKEN_EXISTS", f"token {command.token_id!r} exists", "token_id")
    if any(t.token_sha256 == command.token_sha256 for t in state.tokens.values()):
        return reject("TOKEN_HASH_IN_USE", "another token has this hash", "token_sha256")
    if command.expires_at is not None and command.expires_at <= now:
        return reject("TOKEN_ALREADY_EXPIRED", "expires_at is not in the future", "expires_at")
    return accept(issued(command), message=f"token {command.token_id} issued for {command.principal_id}")


def _revoke(command: RevokeToken, admin: bool, state: GateState, now: datetime) -> Decision:
    token = state.tokens.get(command.token_id)
    if token is None:
        return reject("UNKNOWN_TOKEN", f"no token {command.token_id!r}", "token_id")
    if not admin and command.envelope.principal != token.principal:
        return reject("NOT_TOKEN_OWNER", "only the token's principal or an admin revokes it", "envelope.principal")
    return token_revoked(token, now)


def decide_token(command: IssueToken | RevokeToken, issuer: PrincipalRecord, state: GateState,
                 now: datetime) -> Decision:
    """``IssueToken`` / ``RevokeToken`` (see the module doc for the rules and reason codes)."""
    admin = issuer.has_role(ADMIN_ROLE)
    if isinstance(command, IssueToken):
        return _issue(command, admin, state, now)
    return _revoke(command, admin, state, now)


__all__ = ["decide_token", "issued", "token_revoked"]
