"""What the REST gateway refuses before publishing (:mod:`memwarden.commands.gateway_checks`): each
check is the gate's own rule on the state the gateway read, so it refuses exactly what the gate would
(unknown memory, another principal's memory, a forgotten one, another grantor's grant, another
subject's erasure) and lets through what the gate would decide otherwise."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from memwarden.commands.gate import MemoryState, QuarantineState
from memwarden.commands.gateway_checks import (
    change_refusal,
    forget_refusal,
    forget_subject_refusal,
    issuer_of,
    revoke_grant_refusal,
)
from memwarden.commands.model import Right
from memwarden.commands.principals import ADMIN_ROLE
from memwarden.commands.readmodel.permission import Grant
from tests import factories as f

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
MID = str(uuid.uuid4())
REG = f.registry()
ALICE, BOB, ADMIN = REG["user:alice"], REG["user:bob"], REG["service:admin"]


def _memory(**over: object) -> MemoryState:
    base = MemoryState(MID, "user:alice", "user:alice", 1)
    return MemoryState(**{**base.__dict__, **over})  # type: ignore[arg-type]


def _code(reason: object) -> str | None:
    return getattr(reason, "code", None)


def test_an_unregistered_caller_is_an_issuer_without_roles() -> None:
    who = issuer_of("user:zed", None)
    assert who.principal_id == "user:zed" and not who.roles and issuer_of("user:alice", ALICE) is ALICE


@pytest.mark.parametrize(("issuer", "subject", "memory", "code"), [
    (ALICE, "user:alice", None, "UNKNOWN_MEMORY"),
    (ALICE, "user:alice", _memory(forgotten=True), "MEMORY_FORGOTTEN"),
    (ALICE, "user:bob", _memory(), "SUBJECT_MISMATCH"),
    (BOB, "user:alice", _memory(), "NOT_OWNER"),
    (ALICE, "user:alice", _memory(), None),
    (ADMIN, "user:alice", _memory(), None),
    (BOB, "user:alice", _memory(owner="user:bob"), None),  # the writer about alice
])
def test_a_change_is_refused_as_the_gate_would(issuer, subject, memory, code) -> None:
    assert _code(change_refusal(MID, subject, issuer, memory, NOW)) == code


@pytest.mark.parametrize(("issuer", "memory", "held", "code"), [
    (ALICE, None, None, "UNKNOWN_MEMORY"),
    (BOB, _memory(), None, "NOT_OWNER"),
    (ALICE, _memory(), None, None),
    (ADMIN, _memory(), None, None),
    (ALICE, _memory(forgotten=True), None, None),  # the gate answers ALREADY_FORGOTTEN, accepted
    (BOB, None, QuarantineState("c1", MID, "agent:helper", "user:alice"), "NOT_OWNER"),
    (ALICE, None, QuarantineState("c1", MID, "agent:helper", "user:alice"), None),  # the subject discards it
])
def test_a_forget_is_refused_as_the_gate_would(issuer, memory, held, code) -> None:
    assert _code(forget_refusal(MID, issuer, memory, held, NOW)) == code


def _grant(**over: object) -> Grant:
    base = dict(grant_id="g1", grantee="user:bob", rights=frozenset({Right.READ}), scopes=("account:default",),
                valid_from_ms=0, granted_by="user:alice")
    return Grant(**{**base, **over})  # type: ignore[arg-type]


@pytest.mark.parametrize(("issuer", "grant", "code"), [
    (ALICE, None, "UNKNOWN_GRANT"), (BOB, _grant(), "NOT_GRANTOR"), (ALICE, _grant(), None), (ADMIN, _grant(), None),
    (ALICE, _grant(revoked_at_ms=5), None),  # already revoked: accepted, changes nothing
])
def test_a_grant_revocation_is_refused_as_the_gate_would(issuer, grant, code) -> None:
    assert _code(revoke_grant_refusal("g1", issuer, grant, NOW)) == code


@pytest.mark.parametrize(("issuer", "subject", "code"), [
    (ALICE, "user:alice", None), (ADMIN, "user:alice", None), (BOB, "user:alice", "NOT_SUBJECT"),
])
def test_an_erasure_of_a_subject_is_its_own_or_an_admins(issuer, subject, code) -> None:
    assert _code(forget_subject_refusal(subject, issuer, NOW)) == code
    assert ADMIN.has_role(ADMIN_ROLE)
