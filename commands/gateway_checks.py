"""What a gateway (the REST API, issue 10) refuses before it publishes anything: a change of a memory
that does not exist or is not the caller's, a forget of another principal's memory, the revocation of
an unknown grant or of another grantor's, a forget of everything about another subject. Bad input must
leave the ledger untouched, so these are answered without a command.

There is one owner of each rule: the gate. Every check here runs the gate's own pure function
(:func:`~memwarden.commands.gate.writes.live_target`, :func:`~memwarden.commands.gate.forgetting.decide_forget`,
:func:`~memwarden.commands.gate.governance.decide_governance`) on the part of the governed state the
gateway read (:mod:`memwarden.stores.gateway_reads`) and a probe command of the caller; the answer is
the refusal the gate would give, as a :class:`~memwarden.commands.reasons.Reason`, or ``None``. What
passes is published and decided by the gate as always (state can change in between).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from memwarden.commands.gate.forgetting import decide_forget, decide_forget_many
from memwarden.commands.gate.governance import decide_governance
from memwarden.commands.gate.state import GateState, MemoryState, Outcome, QuarantineState
from memwarden.commands.gate.writes import live_target
from memwarden.commands.model import Envelope, ForgetMemory, ForgetSubject, RevokeAccess, Source, SourceKind
from memwarden.commands.principals import PrincipalRecord, kind_from_id
from memwarden.commands.readmodel.permission import Grant
from memwarden.commands.reasons import Reason


def issuer_of(principal: str, record: PrincipalRecord | None) -> PrincipalRecord:
    """The caller as the gate sees it: its registry record, or an unregistered principal of the kind its
    id names (no roles)."""
    return record or PrincipalRecord(principal, kind_from_id(principal))


def _probe(principal: str, subject: str, now: datetime) -> Envelope:
    return Envelope(command_id=str(uuid.uuid4()), principal=principal, subject=subject, scope="governance",
                    source=Source(kind=SourceKind.USER_STATEMENT), observed_at=now, issued_at=now)


def _first(decision_reasons: tuple[Reason, ...]) -> Reason:
    return decision_reasons[0] if decision_reasons else Reason("REJECTED", "refused by the gate's rule")


def change_refusal(memory_id: str, subject: str, issuer: PrincipalRecord, memory: MemoryState | None,
                   now: datetime) -> Reason | None:
    """Why the gate would refuse ``issuer`` changing (superseding) ``memory_id`` about ``subject``:
    ``UNKNOWN_MEMORY``, ``MEMORY_FORGOTTEN``, ``SUBJECT_MISMATCH``, ``NOT_OWNER``; ``None`` if it would not."""
    probe = ForgetMemory(envelope=_probe(issuer.principal_id, subject, now), memory_id=memory_id)
    state = GateState(memories={memory_id: memory} if memory is not None else {})
    found = live_target(memory_id, probe, issuer, state)
    return None if isinstance(found, MemoryState) else _first(found.reasons)


def forget_refusal(memory_id: str, issuer: PrincipalRecord, memory: MemoryState | None,
                   held: QuarantineState | None, now: datetime) -> Reason | None:
    """Why the gate would refuse ``issuer``'s ``ForgetMemory`` of ``memory_id`` (its subject taken from
    what the gate knows): ``UNKNOWN_MEMORY``, ``NOT_OWNER`` (also for a command held for review that is
    not the caller's to discard); ``None`` if it would decide otherwise (a forgotten memory is accepted
    again as ``ALREADY_FORGOTTEN``)."""
    subject = memory.subject if memory is not None else held.subject if held is not None else issuer.principal_id
    probe = ForgetMemory(envelope=_probe(issuer.principal_id, subject, now), memory_id=memory_id)
    state = GateState(memories={memory_id: memory} if memory is not None else {},
                      quarantine={held.command_id: held} if held is not None else {})
    decision = decide_forget(probe, issuer, state)
    return _first(decision.reasons) if decision.outcome is Outcome.REJECTED else None


def revoke_grant_refusal(grant_id: str, issuer: PrincipalRecord, grant: Grant | None,
                         now: datetime) -> Reason | None:
    """Why the gate would refuse ``issuer`` revoking grant ``grant_id``: ``UNKNOWN_GRANT``,
    ``NOT_GRANTOR``; ``None`` if it would not."""
    probe = RevokeAccess(envelope=_probe(issuer.principal_id, issuer.principal_id, now), grant_id=grant_id)
    decision = decide_governance(probe, issuer, GateState(grants=(grant,) if grant is not None else ()), now)
    return _first(decision.reasons) if decision.outcome is Outcome.REJECTED else None


def forget_subject_refusal(subject: str, issuer: PrincipalRecord, now: datetime) -> Reason | None:
    """Why the gate would refuse ``issuer``'s ``ForgetSubject`` of ``subject``: ``NOT_SUBJECT`` (only the
    subject itself or an admin); ``None`` if it would not."""
    probe = ForgetSubject(envelope=_probe(issuer.principal_id, subject, now))
    decision = decide_forget_many(probe, issuer, GateState(), now)
    return _first(decision.reasons) if decision.outcome is Outcome.REJECTED else None


__all__ = ["change_refusal", "forget_refusal", "forget_subject_refusal", "issuer_of", "revoke_grant_refusal"]
