"""The gate's decisions as the ledger recorded them, folded back into state: ``from_record``.

Replay rebuilds the governed state from the ledger without deciding anything again (SSGM Principle 4,
Eq. 7: the immutable log is the source of truth): a recorded ``GateDecided`` (outcome, reason codes,
the clock ``decided_at``) and, for an admitted write, its recorded ``MemoryRecorded`` (version,
``closes``) determine the effects, which :func:`memwarden.commands.gate.evolve.evolve` applies as it
does live. Recorded outcomes are authoritative: a detector, policy or key that changed since, or a
data key shredded since, does not change what was decided then (re-deciding history is ``regate``'s
job). The only inputs recomputed are the claims and keyed content digest of a live memory's text,
which the ledger never carries; a text whose key is shredded holds none (its memory is forgotten).

Each effect is built by the same function the checks of :mod:`.writes`, :mod:`.review` and
:mod:`.governance` use, so a decision and its recorded form fold to the same state (tested on every
command family in tests/unit/test_recorded.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from memwarden.commands.contradiction import DEFAULT_CLAIMS, ClaimExtractor
from memwarden.commands.gate.effects import Decision, Forgotten, HoldSet, MemoryCleared, PolicySet, QuarantineSet
from memwarden.commands.gate.forgetting import decide_forget, decide_forget_many, decide_hold
from memwarden.commands.gate.governance import grant_revoked, granted, key_change, protection, registered
from memwarden.commands.gate.review import REVIEW_CLOSED, released, review_closed
from memwarden.commands.gate.state import ADMITTED, GateState, HoldState, Outcome, QuarantineState
from memwarden.commands.gate.tokens import issued, token_revoked
from memwarden.commands.gate.writes import claim_states, fact_slot, next_version, write_effects
from memwarden.commands.model import (
    ApproveQuarantined,
    Command,
    ForgetMatching,
    ForgetMemory,
    ForgetSubject,
    GrantAccess,
    IssueToken,
    LiftHold,
    PlaceHold,
    ProtectFact,
    PublishPolicy,
    RecordMemory,
    RegisterPrincipal,
    RejectQuarantined,
    RevokeAccess,
    RevokeKey,
    RevokeToken,
    RotateKey,
    SupersedeMemory,
)
from memwarden.commands.policy import parse_policy
from memwarden.commands.principals import ADMIN_ROLE, PrincipalRecord, kind_from_id
from memwarden.commands.reasons import Reason
from memwarden.epoch import to_ms


@dataclass(frozen=True)
class RecordedDecision:
    """What the ledger holds of one decision: outcome, reasons, the gate's clock, versions (from the
    ``GateDecided`` record) and, for an admitted memory write, the version it created and the memories
    it closed (from its ``MemoryRecorded``); ``memory_ids`` the ids ``GateDecided.memory_ids`` lists
    (what a forget forgot)."""

    outcome: Outcome
    reasons: tuple[Reason, ...]
    decided_at: datetime
    policy_version: str
    gate_version: str
    version: int = 0
    closes: tuple[str, ...] = ()
    memory_ids: tuple[str, ...] = ()

    @property
    def codes(self) -> tuple[str, ...]:
        """The reason codes, in order."""
        return tuple(r.code for r in self.reasons)


def _as_recorded(decision: Decision, rec: RecordedDecision) -> Decision:
    return replace(decision, outcome=rec.outcome, reasons=rec.reasons, policy_version=rec.policy_version,
                   gate_version=rec.gate_version)


def _write(command: RecordMemory | SupersedeMemory, rec: RecordedDecision, state: GateState, plaintext: str | None,
           content_digest: str | None, claims: ClaimExtractor) -> Decision:
    target = state.memories.get(command.memory_id) if isinstance(command, SupersedeMemory) else None
    memory = next_version(command, target)
    superseding = target.memory_id if target is not None else None
    memory, slot = fact_slot(command, memory, superseding)
    if rec.version:
        memory = replace(memory, version=rec.version)
    memory = replace(memory, admitted_ms=to_ms(rec.decided_at))
    new_claims = claim_states(command.envelope.subject, memory.memory_id, claims, plaintext)
    effects = write_effects(memory, superseding, rec.closes, slot, new_claims,
                            content_digest if plaintext is not None else None)
    return Decision(rec.outcome, rec.reasons, memory=memory, version=memory.version, closes=rec.closes,
                    effects=effects)


def _held(command: RecordMemory | SupersedeMemory) -> Decision:
    env = command.envelope
    q = QuarantineState(env.command_id, command.memory_id, env.principal, env.subject, "pending",
                        command.content.key_id)
    return Decision(Outcome.QUARANTINED, (), effects=(QuarantineSet(q),))


def _governance(command: Command, state: GateState, now: datetime) -> Decision | None:
    if isinstance(command, RegisterPrincipal):
        return Decision(Outcome.ACCEPTED, (), effects=(registered(command),))
    if isinstance(command, RotateKey | RevokeKey):
        target = state.principals.get(command.principal_id)
        return key_change(command, target, now) if target is not None else None
    if isinstance(command, PublishPolicy):
        policy = parse_policy(command.document, command.policy_id, command.version)
        return Decision(Outcome.ACCEPTED, (), effects=(PolicySet(policy, command.document),))
    if isinstance(command, ProtectFact):
        return Decision(Outcome.ACCEPTED, (), effects=(protection(command),))
    if isinstance(command, GrantAccess):
        issuer = state.principals.get(command.envelope.principal)  # its role then, as the gate saw it
        return Decision(Outcome.ACCEPTED, (), effects=(granted(command, issuer is not None
                                                                 and issuer.has_role(ADMIN_ROLE)),))
    if isinstance(command, RevokeAccess):
        grant = next((g for g in state.grants if g.grant_id == command.grant_id), None)
        return grant_revoked(grant, now) if grant is not None else None
    if isinstance(command, IssueToken):
        return Decision(Outcome.ACCEPTED, (), effects=(issued(command),))
    if isinstance(command, RevokeToken):
        token = state.tokens.get(command.token_id)
        return token_revoked(token, now) if token is not None else None
    if isinstance(command, PlaceHold):
        return Decision(Outcome.ACCEPTED, (), effects=(HoldSet(HoldState(command.hold_id, tuple(command.subjects),
                                                                         tuple(command.scopes))),))
    return None


def _review(command: ApproveQuarantined | RejectQuarantined, rec: RecordedDecision, state: GateState,
            claims: ClaimExtractor) -> Decision | None:
    q = state.quarantine.get(command.quarantined_command_id)
    if q is None:
        return None
    if isinstance(command, RejectQuarantined) or REVIEW_CLOSED in rec.codes:
        return review_closed(q)
    if state.review_target is None:
        return None
    original, text, digest = state.review_target
    if not isinstance(original, RecordMemory | SupersedeMemory):
        return None
    return released(_write(original, rec, state, text, digest, claims), q, original, command.envelope.principal)


def _admitted(command: Command, rec: RecordedDecision, state: GateState, plaintext: str | None,
              content_digest: str | None, claims: ClaimExtractor) -> Decision | None:
    if isinstance(command, RecordMemory | SupersedeMemory):
        return _write(command, rec, state, plaintext, content_digest, claims)
    return _governance(command, state, rec.decided_at)


def _forgets(command: ForgetMemory | ForgetMatching | ForgetSubject | LiftHold, rec: RecordedDecision,
             state: GateState) -> Decision:
    """A recorded forget (or hold lift) folded back. The memories forgotten are the ones the ledger
    lists (authoritative; a forget recorded before lists existed names its one memory); what waits for
    a legal hold, and which waiting forget a lift carries out, come from the same pure decision taken
    again on the same state at the recorded clock."""
    issuer = state.principals.get(command.envelope.principal) or PrincipalRecord(
        command.envelope.principal, kind_from_id(command.envelope.principal))
    if isinstance(command, ForgetMemory):
        again = decide_forget(command, issuer, state)
        recorded = rec.memory_ids or ((command.memory_id,) if rec.outcome in ADMITTED else ())
    elif isinstance(command, LiftHold):
        again = decide_hold(command, issuer, state)
        recorded = rec.memory_ids
    else:
        again = decide_forget_many(command, issuer, state, rec.decided_at)
        recorded = rec.memory_ids
    if getattr(command, "dry_run", False):
        return replace(again, listed=tuple(recorded))  # a dry run lists, and forgets nothing
    credited = {f.memory.memory_id: f for f in again.forgets}
    env = command.envelope
    forgets = []
    for m in recorded:
        target = state.memories.get(m)
        if target is None or target.forgotten:
            continue
        waiting = next((d for d in state.deferred.values() if m in d.memory_ids), None)
        forgets.append(credited.get(m) or Forgotten(
            replace(target, forgotten=True), *((waiting.command_id, waiting.principal, waiting.reason)
                                               if isinstance(command, LiftHold) and waiting is not None
                                               else (env.command_id, env.principal, getattr(command, "reason", "")))))
    ids = {f.memory.memory_id for f in forgets}
    # held commands discarded: only when the ledger says so (a forget recorded before forgets of many
    # discarded held commands left them pending, and replay keeps what was decided)
    discarded = "QUARANTINE_DISCARDED" in rec.codes
    effects = [e for e in again.effects if (not isinstance(e, MemoryCleared) or e.memory_id in ids)
               and (discarded or not isinstance(e, QuarantineSet))]
    cleared = {e.memory_id for e in effects if isinstance(e, MemoryCleared)}
    effects += [MemoryCleared(m) for m in recorded if m in ids and m not in cleared]
    memory_keys = {k for f in again.forgets for k in f.memory.key_ids}
    others = tuple(k for k in again.shred if k not in memory_keys and discarded)  # held commands discarded
    return replace(again, forgets=tuple(forgets), effects=tuple(effects), listed=tuple(recorded),
                   shred=(*others, *(k for f in forgets for k in f.memory.key_ids)))


def from_record(command: Command, rec: RecordedDecision, state: GateState, plaintext: str | None = None,
                content_digest: str | None = None, claims: ClaimExtractor = DEFAULT_CLAIMS) -> Decision:
    """The decision the ledger recorded for ``command``, with the effects it had on ``state``.

    ``state`` is the governed state before the command (as :func:`~memwarden.commands.gate.decide.decide`
    would see it, ``review_target`` included for an approval); ``plaintext`` and ``content_digest``
    are the command's text and keyed digest when its data key still exists (``None`` otherwise).
    The result carries the recorded outcome, reasons and versions; refusals and duplicates carry no
    effects. A record that cannot apply to ``state`` (a target the state does not hold: a replay that
    skipped part of the ledger) yields the recorded outcome without effects. Never raises for a
    schema-valid command; raises ``memwarden.commands.policy.PolicyError`` only for a recorded
    accepted policy that no longer parses.
    """
    decision: Decision | None = None
    if rec.outcome is Outcome.QUARANTINED and isinstance(command, RecordMemory | SupersedeMemory):
        decision = _held(command)
    elif isinstance(command, ApproveQuarantined | RejectQuarantined) and (
            rec.outcome in ADMITTED or REVIEW_CLOSED in rec.codes):
        decision = _review(command, rec, state, claims)
    elif isinstance(command, ForgetMemory | ForgetMatching | ForgetSubject | LiftHold) and (
            rec.outcome in ADMITTED or rec.outcome is Outcome.DEFERRED):
        decision = _forgets(command, rec, state)
    elif rec.outcome in ADMITTED:
        decision = _admitted(command, rec, state, plaintext, content_digest, claims)
    return _as_recorded(decision or Decision(rec.outcome, ()), rec)


def recorded_of(decision: Decision, decided_at: datetime) -> RecordedDecision:
    """The recorded form of a live ``decision`` taken at ``decided_at`` (what the ledger keeps of it)."""
    return RecordedDecision(decision.outcome, decision.reasons, decided_at, decision.policy_version,
                            decision.gate_version, decision.version, decision.closes, decision.listed)
