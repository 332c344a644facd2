"""Review of quarantined writes: ``ApproveQuarantined`` re-decides the held write with the reviewer as
its releaser; ``RejectQuarantined`` closes the review and shreds the held content's key.

Seed 004 "Writes need a gate": risky writes wait for a human; a reviewer never releases its own write.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from memwarden.commands.contradiction import ClaimExtractor
from memwarden.commands.gate.effects import Decision, QuarantineSet, accept, reject
from memwarden.commands.gate.state import GateLimits, GateState, QuarantineState
from memwarden.commands.gate.writes import decide_write
from memwarden.commands.injection import InstructionDetector
from memwarden.commands.model import ApproveQuarantined, Command, RecordMemory, RejectQuarantined, SupersedeMemory
from memwarden.commands.principals import REVIEWER_ROLE, PrincipalRecord, kind_from_id
from memwarden.commands.reasons import Reason

#: Reason code added when an approval re-decides the held write and refuses it: the review closes.
REVIEW_CLOSED = "REVIEW_CLOSED"


def pending(command_id: str, subject: str, issuer: PrincipalRecord, state: GateState) -> QuarantineState | Decision:
    """The pending review ``command_id`` that ``issuer`` may close, or the refusal: not a reviewer,
    not in quarantine, already reviewed, another subject, or the reviewer's own write."""
    if not issuer.has_role(REVIEWER_ROLE):
        return reject("NOT_A_REVIEWER", f"{issuer.principal_id} holds no reviewer role", "envelope.principal")
    q = state.quarantine.get(command_id)
    if q is None:
        return reject("NOT_QUARANTINED", f"command {command_id} is not in quarantine", "quarantined_command_id")
    if q.status != "pending":
        return reject("ALREADY_REVIEWED", f"command {command_id} was already {q.status}", "quarantined_command_id")
    if q.subject != subject:
        return reject("SUBJECT_MISMATCH", f"the quarantined command concerns {q.subject}", "envelope.subject")
    if q.principal == issuer.principal_id:
        return reject("SELF_REVIEW", "a reviewer may not release its own write", "envelope.principal")
    return q


def decide_approve(command: ApproveQuarantined, issuer: PrincipalRecord, state: GateState, now: datetime,
                   limits: GateLimits, detector: InstructionDetector, claims: ClaimExtractor) -> Decision:
    """Re-decide the held write (``state.review_target``) as released by the reviewer: admitted, it
    carries ``released``; refused on today's state, the review closes as rejected and the held
    content's key is shredded."""
    q = pending(command.quarantined_command_id, command.envelope.subject, issuer, state)
    if isinstance(q, Decision):
        return q
    if state.review_target is None:
        return reject("QUARANTINED_COMMAND_UNAVAILABLE", "the quarantined command could not be read",
                      "quarantined_command_id")
    original, text, digest = state.review_target
    if not isinstance(original, RecordMemory | SupersedeMemory):
        return reject("QUARANTINED_COMMAND_UNAVAILABLE", "only memory writes are quarantined",
                      "quarantined_command_id")
    writer = state.principals.get(original.envelope.principal) or PrincipalRecord(
        original.envelope.principal, kind_from_id(original.envelope.principal))
    inner = decide_write(original, text, writer, state, now, limits, digest, detector, claims,
                         released_by=command.envelope.principal)
    if not inner.admitted:
        closed = Reason(REVIEW_CLOSED, "the released write was refused: the review closes as rejected and the held "
                        "content's key is shredded", "quarantined_command_id")
        return replace(review_closed(q), outcome=inner.outcome, reasons=(*inner.reasons, closed))
    return released(inner, q, original, command.envelope.principal)


def released(inner: Decision, q: QuarantineState, original: Command, reviewer: str) -> Decision:
    """The approval that releases a held write: the write's own decision (decided as released by
    ``reviewer``), the review closing as approved, and the original command to publish."""
    resolved = QuarantineSet(replace(q, status="approved"))
    return replace(inner, effects=(*inner.effects, resolved), released=(original, reviewer))


def review_closed(q: QuarantineState) -> Decision:
    """A review closing as rejected: the held content's data key is shredded."""
    return replace(accept(QuarantineSet(replace(q, status="rejected")), message="quarantined command rejected"),
                   shred=(q.key_id,) if q.key_id else ())


def decide_reject(command: RejectQuarantined, issuer: PrincipalRecord, state: GateState) -> Decision:
    """Close the review as rejected; the held content's data key is shredded."""
    q = pending(command.quarantined_command_id, command.envelope.subject, issuer, state)
    if isinstance(q, Decision):
        return q
    return review_closed(q)
