"""Governance commands through the gate: the principal registry and its keys, the write policy,
protected core facts (``M_core`` of SSGM Eq. 6) and ABAC grants (Eq. 5's ``ACL``).

Each command needs its authority: an admin, the principal itself (its keys), the subject (its core
facts, grants on its own memories), the grantor (revocation). A refusal is a decision.

Grants: a non-admin grants only on its own memories; one that names no ``subjects`` grants on its own
memories (``subjects = (grantor,)``), one that names another subject is refused (``NOT_GRANTOR``). An
admin's grant that names no subjects covers any subject (:func:`grant_subjects`).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from memwarden.commands.facts import fact_key
from memwarden.commands.gate.effects import (
    Decision,
    GrantUpsert,
    PolicySet,
    PrincipalUpsert,
    ProtectionSet,
    accept,
    reject,
)
from memwarden.commands.gate.state import GateState, Outcome
from memwarden.commands.model import (
    Command,
    GrantAccess,
    ProtectFact,
    PublishPolicy,
    RegisterPrincipal,
    RevokeAccess,
    RevokeKey,
    Right,
    RotateKey,
)
from memwarden.commands.policy import PolicyError, parse_policy
from memwarden.commands.principals import ADMIN_ROLE, KeyRecord, PrincipalRecord, all_key_ids
from memwarden.commands.readmodel.permission import Grant
from memwarden.commands.reasons import Reason
from memwarden.epoch import to_ms


def _register(command: RegisterPrincipal, admin: bool, state: GateState) -> Decision:
    if not admin:
        return reject("NOT_AN_ADMIN", "only an admin registers principals", "envelope.principal")
    if command.principal_id in state.principals:
        return reject("PRINCIPAL_EXISTS", f"{command.principal_id} is already registered", "principal_id")
    if command.key.key_id in all_key_ids(state.principals):
        return reject("KEY_ID_IN_USE", f"key id {command.key.key_id!r} is taken", "key.key_id")
    return accept(registered(command))


def registered(command: RegisterPrincipal) -> PrincipalUpsert:
    """The registry record a registration creates: kind, roles, attributes, its first key valid from
    the command's issue time."""
    key = KeyRecord(command.key.key_id, command.key.public_key, to_ms(command.envelope.issued_at))
    return PrincipalUpsert(PrincipalRecord(command.principal_id, command.principal_kind, frozenset(command.roles),
                                           dict(command.attributes), (key,)))


def key_change(command: RotateKey | RevokeKey, target: PrincipalRecord, now: datetime) -> Decision:
    """The accepted key rotation (the new key valid from issue time, the others closed then) or
    revocation (from ``now``; an already revoked key changes nothing)."""
    if isinstance(command, RotateKey):
        issued_ms = to_ms(command.envelope.issued_at)
        return accept(PrincipalUpsert(target.with_key(KeyRecord(command.key.key_id, command.key.public_key, issued_ms),
                                                      issued_ms)))
    key = target.key(command.key_id)
    if key is not None and key.revoked_at_ms is not None:
        return Decision(Outcome.ACCEPTED, (Reason("KEY_ALREADY_REVOKED", "key was already revoked; nothing changed"),))
    return accept(PrincipalUpsert(target.with_revoked(command.key_id, to_ms(now))))


def _keys(command: RotateKey | RevokeKey, admin: bool, state: GateState, now: datetime) -> Decision:
    target = state.principals.get(command.principal_id)
    if target is None:
        return reject("UNKNOWN_PRINCIPAL", f"{command.principal_id} is not registered", "principal_id")
    if not admin and command.envelope.principal != command.principal_id:
        return reject("NOT_KEY_OWNER", "only the principal itself or an admin manages its keys", "envelope.principal")
    if isinstance(command, RotateKey) and command.key.key_id in all_key_ids(state.principals):
        return reject("KEY_ID_IN_USE", f"key id {command.key.key_id!r} is taken", "key.key_id")
    if isinstance(command, RevokeKey) and target.key(command.key_id) is None:
        return reject("UNKNOWN_KEY", f"{command.principal_id} has no key {command.key_id!r}", "key_id")
    return key_change(command, target, now)


def _policy(command: PublishPolicy, admin: bool, state: GateState) -> Decision:
    if not admin:
        return reject("NOT_AN_ADMIN", "only an admin publishes policy", "envelope.principal")
    try:
        policy = parse_policy(command.document, command.policy_id, command.version)
    except PolicyError as exc:
        return reject("POLICY_INVALID", exc.reason, exc.field)
    current = state.policy
    if policy.policy_id == current.policy_id and policy.version <= current.version:
        return reject("POLICY_VERSION_NOT_NEWER", f"version {policy.version} is not newer than {current.label}",
                      "version")
    return replace(accept(PolicySet(policy, command.document)), policy_version=policy.label)


def _protect(command: ProtectFact, admin: bool) -> Decision:
    env = command.envelope
    if not admin and env.principal != env.subject:
        return reject("NO_AUTHORITY_OVER_CORE_FACT", "only the subject or an admin protects its core facts",
                      "envelope.principal")
    return accept(protection(command))


def protection(command: ProtectFact) -> ProtectionSet:
    """The core-fact protection a ``ProtectFact`` sets or lifts on the subject's (entity, attribute)."""
    env = command.envelope
    return ProtectionSet(fact_key(env.subject, command.entity, command.attribute), command.protected)


def _grant_scopes(command: GrantAccess, admin: bool, state: GateState) -> Decision | None:
    for i, scope in enumerate(command.scopes):
        if scope == "*" and not admin:
            return reject("UNKNOWN_SCOPE", "only an admin grants on every scope", f"scopes[{i}]")
        declared = state.policy.scope(scope) if scope != "*" else None
        if scope != "*" and declared is None:
            return reject("UNKNOWN_SCOPE", f"scope {scope!r} is not declared by policy {state.policy.label}",
                          f"scopes[{i}]")
        if declared is not None and not declared.open and Right.WRITE in command.rights and not admin:
            return reject("NOT_GRANTOR", f"only an admin grants WRITE on the closed scope {scope!r}", f"scopes[{i}]")
    return None


def _grant(command: GrantAccess, admin: bool, state: GateState) -> Decision:
    env = command.envelope
    if any(g.grant_id == command.grant_id for g in state.grants):
        return reject("GRANT_EXISTS", f"grant {command.grant_id!r} exists; revoke it and grant anew", "grant_id")
    if not admin and any(s != env.principal for s in command.subjects):
        return reject("NOT_GRANTOR", "only an admin, or a subject for its own memories, grants access",
                      "envelope.principal")
    problem = _grant_scopes(command, admin, state)
    if problem is not None:
        return problem
    starts = command.valid_from or env.issued_at
    if command.valid_to is not None and command.valid_to <= starts:
        return reject("INVALID_VALIDITY", f"valid_to {command.valid_to.isoformat()} is not later than the grant's "
                      f"start {starts.isoformat()} (valid_from, else the issue time): the grant would never hold",
                      "valid_to")
    decision = accept(granted(command, admin))
    if not command.grantee.startswith("role:") and command.grantee not in state.principals:
        # accepted (a grantee may be enrolled later), but said: a misspelt name is a grant nobody holds until
        # someone registers that name, and then it is theirs (newcomer trial, twenty-fourth session)
        decision = replace(decision, reasons=(*decision.reasons, Reason(
            "GRANTEE_NOT_REGISTERED", f"no principal {command.grantee!r} is registered: nobody holds this grant until "
            "one registers under that id, and then they do; revoke it if the id is misspelt", "grantee")))
    return decision


def grant_subjects(command: GrantAccess, admin: bool) -> tuple[str, ...]:
    """The subjects a ``GrantAccess`` covers: the ones it names; naming none, the grantor's own
    memories (``(grantor,)``) for a non-admin, and any subject (``()``) for an admin.

    The default is the gate's rule, not the client's: a subject granting access "to my memories"
    need not repeat its own id, and the recorded command folds back to the same grant on replay
    (the grantor's admin role is the registry's at that ledger position, as when it was decided)."""
    if command.subjects or admin:
        return tuple(command.subjects)
    return (command.envelope.principal,)


def granted(command: GrantAccess, admin: bool) -> GrantUpsert:
    """The grant a ``GrantAccess`` by an ``admin`` (or not) creates, on :func:`grant_subjects`, valid
    from ``valid_from`` (else its issue time), granted by its principal."""
    env = command.envelope
    return GrantUpsert(Grant(
        grant_id=command.grant_id, grantee=command.grantee, rights=frozenset(command.rights), scopes=command.scopes,
        subjects=grant_subjects(command, admin), purposes=command.purposes, store_kinds=command.store_kinds,
        sensitivity_ceiling=command.sensitivity_ceiling,
        valid_from_ms=to_ms(command.valid_from or env.issued_at),
        valid_to_ms=to_ms(command.valid_to) if command.valid_to else None, granted_by=env.principal,
        relationship=command.relationship))


def _revoke(command: RevokeAccess, admin: bool, state: GateState, now: datetime) -> Decision:
    grant = next((g for g in state.grants if g.grant_id == command.grant_id), None)
    if grant is None:
        return reject("UNKNOWN_GRANT", f"no grant {command.grant_id!r}", "grant_id")
    if not admin and command.envelope.principal != grant.granted_by:
        return reject("NOT_GRANTOR", "only the grantor or an admin revokes a grant", "envelope.principal")
    return grant_revoked(grant, now)


def grant_revoked(grant: Grant, now: datetime) -> Decision:
    """The accepted revocation of ``grant`` from ``now`` (an already revoked grant changes nothing)."""
    if grant.revoked_at_ms is not None:
        return Decision(Outcome.ACCEPTED, (Reason("GRANT_ALREADY_REVOKED", f"grant {grant.grant_id!r} was already "
                                                  "revoked; nothing changed"),))
    return accept(GrantUpsert(replace(grant, revoked_at_ms=to_ms(now))))


def decide_governance(command: Command, issuer: PrincipalRecord, state: GateState, now: datetime) -> Decision:
    """Principals and keys, policy, core-fact protection, grants and their revocation."""
    admin = issuer.has_role(ADMIN_ROLE)
    if isinstance(command, RegisterPrincipal):
        return _register(command, admin, state)
    if isinstance(command, RotateKey | RevokeKey):
        return _keys(command, admin, state, now)
    if isinstance(command, PublishPolicy):
        return _policy(command, admin, state)
    if isinstance(command, ProtectFact):
        return _protect(command, admin)
    if isinstance(command, GrantAccess):
        return _grant(command, admin, state)
    if isinstance(command, RevokeAccess):
        return _revoke(command, admin, state, now)
    return reject("UNSUPPORTED_COMMAND", f"{type(command).__name__} is not decided by this gate", "kind")
