"""How the gateways (REST, issue 10) answer a gate decision: the HTTP status of an outcome and its
machine-readable reason codes. Pure; the one table of the mapping, documented in README "REST API".

A refusal never looks like success: only an admitted command gets a 2xx other than 202, and every
answer carries the gate's reason codes.

| outcome | status |
|---|---|
| ``ACCEPTED``, ``ACCEPTED_UNVERIFIED`` | 201 for a write that creates (record, supersede, grant), else 200 |
| ``DEFERRED`` (a legal hold keeps a forget waiting) | 202 |
| ``QUARANTINED`` (held for a reviewer) | 422 |
| ``DUPLICATE`` | 409 |
| ``REJECTED`` | by its reason code: :data:`NOT_FOUND` 404, :data:`FORBIDDEN` 403, :data:`CONFLICT` 409, any other 422 |

Authentication refusals (:func:`auth_status`): 401 for a missing, malformed, unknown, revoked or
expired token; 403 ``PRINCIPAL_MISMATCH`` (the body names another principal than the token's) and
``NOT_PERMITTED`` (a read of something the token's principal may not see); 409 ``NO_SIGNING_KEY``
(the server holds no signing key for the token's principal: retrying will not help).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Outcomes that changed memory or governed state.
ADMITTED_OUTCOMES = frozenset({"ACCEPTED", "ACCEPTED_UNVERIFIED"})

#: Refusals because the thing named does not exist.
NOT_FOUND = frozenset({"UNKNOWN_MEMORY", "UNKNOWN_GRANT", "UNKNOWN_TOKEN", "UNKNOWN_HOLD", "NOT_QUARANTINED"})
#: Refusals of authority: the principal may not do this (write rules, ownership, roles) or the
#: signature does not prove it is the principal.
FORBIDDEN = frozenset({
    "NOT_OWNER", "NO_WRITE_AUTHORITY", "SCOPE_NOT_GRANTED", "NOT_AN_ADMIN", "NOT_ADMIN", "NOT_GRANTOR", "NOT_SUBJECT",
    "NOT_KEY_OWNER", "NOT_TOKEN_OWNER", "NO_AUTHORITY_OVER_CORE_FACT", "NOT_A_REVIEWER", "SELF_REVIEW",
    "PROCEDURE_NEEDS_APPROVER", "PROCEDURE_NEEDS_APPROVED_RULE", "RULE_WITHOUT_APPROVER", "UNSIGNED",
    "UNKNOWN_PRINCIPAL", "UNKNOWN_KEY", "KEY_REVOKED", "KEY_NOT_VALID_AT_ISSUE", "BAD_SIGNATURE",
    "UNSUPPORTED_ALGORITHM",
})
#: Refusals because the state already holds something that conflicts.
CONFLICT = frozenset({
    "DUPLICATE_COMMAND_ID", "DUPLICATE_CONTENT", "GRANT_EXISTS", "PRINCIPAL_EXISTS", "KEY_ID_IN_USE", "TOKEN_EXISTS",
    "TOKEN_HASH_IN_USE", "CORE_FACT_CONFLICT", "MEMORY_ID_EXISTS", "MEMORY_FORGOTTEN", "POLICY_VERSION_NOT_NEWER",
    "ALREADY_REVIEWED", "COMMAND_ID_TAKEN",
})
#: Codes that explain an outcome without refusing anything (skipped when choosing a refusal's status).
INFORMATIVE = frozenset({"OK", "DRY_RUN", "NOTHING_TO_FORGET", "ALREADY_FORGOTTEN", "LEGAL_HOLD", "NOT_PERMITTED"})

#: Authentication refusals and their status.
AUTH_STATUS: dict[str, int] = {
    "TOKEN_MISSING": 401, "TOKEN_MALFORMED": 401, "UNKNOWN_TOKEN": 401, "TOKEN_REVOKED": 401, "TOKEN_EXPIRED": 401,
    "PRINCIPAL_MISMATCH": 403, "NOT_PERMITTED": 403, "NO_SIGNING_KEY": 409,
}


def refusal_status(codes: Sequence[str]) -> int:
    """The status of a ``REJECTED`` decision with reason ``codes`` (in order): the first code that is
    not merely informative decides; 422 when none is known (content problems: text, status,
    attribution, scope, clock ...)."""
    for code in codes:
        if code in INFORMATIVE:
            continue
        if code in NOT_FOUND:
            return 404
        if code in FORBIDDEN:
            return 403
        if code in CONFLICT:
            return 409
        return 422
    return 422


def decision_status(outcome: str, codes: Sequence[str], *, creates: bool) -> int:
    """The status of a decided command (see the module table). ``creates``: the command makes a new
    thing (memory version, grant), so acceptance is 201 rather than 200. An unknown outcome is 502:
    the gateway cannot vouch for it."""
    if outcome in ADMITTED_OUTCOMES:
        return 201 if creates else 200
    if outcome == "DEFERRED":
        return 202
    if outcome == "QUARANTINED":
        return 422
    if outcome == "DUPLICATE":
        return 409
    if outcome == "REJECTED":
        return refusal_status(codes)
    return 502


#: A command id another principal's command holds (:func:`taken`).
COMMAND_ID_TAKEN = "COMMAND_ID_TAKEN"


def taken(decision: Mapping[str, Any], principal: str) -> dict[str, Any] | None:
    """The refusal to show ``principal`` when the decision stored under its command's id is another
    principal's (the id was reused: the gate decided the caller's copy ``DUPLICATE`` and keeps the first
    command's decision, which is not the caller's to see): ``REJECTED`` with ``COMMAND_ID_TAKEN`` (409) on
    ``command_id``, nothing of the other decision. ``None`` when the decision is the caller's own (a retry of
    its own command answers its first decision: idempotency by command id)."""
    owner = decision.get("principal")
    if owner is None or owner == principal:
        return None
    return {"outcome": "REJECTED", "reasons": [{
        "code": COMMAND_ID_TAKEN, "message": "this command id belongs to another principal's command; nothing of "
        "yours was decided under it: send the command again with a fresh command id", "field": "command_id"}],
        "memory_id": None, "memory_ids": [], "deferred_ids": [], "command_type": decision.get("command_type"),
        "principal": principal, "subject": None, "gate_version": decision.get("gate_version"),
        "policy_version": decision.get("policy_version"), "position": None, "decided_at": None, "review": None}


def auth_status(code: str) -> int:
    """The status of an authentication or authorisation refusal ``code`` (401 when unknown)."""
    return AUTH_STATUS.get(code, 401)


__all__ = ["ADMITTED_OUTCOMES", "AUTH_STATUS", "COMMAND_ID_TAKEN", "CONFLICT", "FORBIDDEN", "INFORMATIVE", "NOT_FOUND",
           "auth_status", "decision_status", "refusal_status", "taken"]
