"""Memory writes through the gate: ``RecordMemory`` and ``SupersedeMemory`` (forgets: :mod:`.forgetting`).

SSGM Eq. 6 (admit ΔM only when it is authorised, consistent with ``M_core`` and not contradicting
protected facts) and seed 004 "The write boundary" (authority, scope, provenance, risk class,
instructions stay data, duplicates, supersession with evidence). Each step below is a small pure
function; :func:`decide_write` runs them in order and the first refusal decides.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from memwarden.commands.attribution import SourceRecord, derivation_problem, status_problem
from memwarden.commands.contradiction import ClaimExtractor, contradicts
from memwarden.commands.facts import FactState, check_fact, fact_key, protected_supersede
from memwarden.commands.gate.effects import Decision, Effect, MemoryCleared, MemoryFacts, QuarantineSet, reject
from memwarden.commands.gate.state import ClaimState, GateLimits, GateState, MemoryState, Outcome, QuarantineState
from memwarden.commands.injection import Detection, InstructionDetector
from memwarden.commands.model import (
    Command,
    FactCardinality,
    RecordMemory,
    Sensitivity,
    SourceKind,
    StoreKind,
    SupersedeMemory,
)
from memwarden.commands.policy import write_rule
from memwarden.commands.principals import ADMIN_ROLE, APPROVER_ROLE, REVIEWER_ROLE, PrincipalRecord
from memwarden.commands.readmodel.payload import UNTRUSTED_TAG, RecordAttrs
from memwarden.commands.readmodel.permission import Grant, may_read_for_a_purpose, may_write
from memwarden.commands.reasons import Reason
from memwarden.commands.risk import SUSPICION_SOURCES, UNTRUSTED_SOURCES, Tier, tier
from memwarden.epoch import to_ms

MemoryWrite = RecordMemory | SupersedeMemory


@dataclass(frozen=True)
class _Authority:
    """What the authority step found: the WRITE grant used (if any), whether the writer is an admin,
    and reasons that hold the write for review."""

    grant: Grant | None
    admin: bool
    needs_review: tuple[Reason, ...]


@dataclass(frozen=True)
class _Risk:
    """The risk step: tier, its reason code, what the detector found, the tags to add, and whether the
    content is tagged untrusted on a suspicion alone (``suspected``)."""

    tier: Tier
    code: str
    detection: Detection
    tags: tuple[str, ...]
    suspected: bool = False
    #: The exception's class name when the detector raised (the write is then held for review untrusted).
    detector_error: str | None = None


#: Reason code of an admitted write tagged untrusted on the detector's suspicion alone.
SUSPECTED_INSTRUCTIONS = "SUSPECTED_INSTRUCTIONS_AS_QUOTED_DATA"


def check_text(plaintext: str | None, limits: GateLimits) -> Decision | None:
    """Refuse unreadable, empty or oversize content (``limits.max_text_chars`` characters)."""
    if plaintext is None:
        return reject("CONTENT_UNREADABLE", "the data key of the content is missing or shredded", "content.key_id")
    if not plaintext.strip():
        return reject("EMPTY_TEXT", "memory text is empty", "content")
    if len(plaintext) > limits.max_text_chars:
        return reject("TEXT_TOO_LONG", f"memory text has {len(plaintext)} characters, limit {limits.max_text_chars}",
                      "content")
    return None


def live_target(memory_id: str, command: Command, issuer: PrincipalRecord, state: GateState) -> MemoryState | Decision:
    """The live memory ``command`` changes, or the refusal: unknown, forgotten, another subject's, or
    not the issuer's to change (owner, subject or admin only)."""
    target = state.memories.get(memory_id)
    if target is None:
        return reject("UNKNOWN_MEMORY", f"no memory {memory_id}", "memory_id")
    if target.forgotten:
        return reject("MEMORY_FORGOTTEN", f"memory {memory_id} was forgotten", "memory_id")
    refused = not_owners(target, command, issuer)
    return target if refused is None else refused


def not_owners(target: MemoryState, command: Command, issuer: PrincipalRecord) -> Decision | None:
    """The refusal when its issuer is neither ``target``'s owner, its subject nor an admin (``NOT_OWNER``,
    whatever subject ``command`` names: a ``SUBJECT_MISMATCH`` to a stranger told it whose memory an id is), or
    when ``command`` names another subject than ``target``'s (``SUBJECT_MISMATCH``); ``None`` when it may change
    it. Forgotten or not: a forget of a forgotten memory answers ``ALREADY_FORGOTTEN`` only to those."""
    env = command.envelope
    if env.principal not in (target.owner, target.subject) and not issuer.has_role(ADMIN_ROLE):
        return reject("NOT_OWNER", "only the owner, the subject or an admin may change this memory",
                      "envelope.principal")
    if target.subject != env.subject:
        return reject("SUBJECT_MISMATCH", "memory belongs to another subject", "envelope.subject")
    return None


def _may_cite(writer: str, issuer: PrincipalRecord, source: SourceRecord, grants: tuple[Grant, ...],
              now: datetime) -> bool:
    """Whether ``writer`` may read ``source`` for some purpose now, as a derived write citing it must
    (:func:`~memwarden.commands.readmodel.permission.may_read_for_a_purpose`); an unknown owner: no one."""
    if not source.owner or not source.subject:
        return False
    attrs = RecordAttrs(source.owner, source.subject, source.scope, StoreKind(source.store_kind), source.sensitivity,
                        source.purposes)
    return may_read_for_a_purpose(writer, issuer.roles, to_ms(now), grants, attrs)


#: A protected core fact a writer may not read refuses its write without naming the memory that holds it.
_PROTECTED_UNREAD = ("the write contradicts a protected core fact of its subject; only the subject or an admin "
                     "changes it, with SupersedeMemory and evidence")


def sees(writer: str, issuer: PrincipalRecord, memory: MemoryState | None, grants: tuple[Grant, ...],
         now: datetime) -> bool:
    """Whether ``writer`` may read the live ``memory`` for some purpose now (its owner or subject, or a READ
    grant covering it; the gate's state holds no purpose tags of a memory, so a grant's purposes are not
    compared). A write about a subject is compared only with the memories its writer may read: a duplicate,
    a fact slot or a contradiction of one it may not read is no answer to give it (each named the memory and
    told what it said) and no change it may cause (a contradiction closed it)."""
    if memory is None or memory.forgotten:
        return False
    attrs = RecordAttrs(memory.owner, memory.subject, memory.scope or "-", StoreKind(memory.store_kind),
                        Sensitivity(memory.sensitivity))
    return may_read_for_a_purpose(writer, issuer.roles, to_ms(now), grants, attrs)


def _authority(command: MemoryWrite, issuer: PrincipalRecord, state: GateState, now: datetime,
               released_by: str | None) -> _Authority | Decision:
    """Declared scope, the policy's write rule for the store kind, WRITE grants on closed scopes and
    about other subjects, epistemic status and derivation (seed 004 "The write boundary")."""
    env = command.envelope
    policy = state.policy
    scope_rule = policy.scope(env.scope)
    if scope_rule is None:
        return reject("UNKNOWN_SCOPE", f"scope {env.scope!r} is not declared by policy {policy.label}",
                      "envelope.scope")
    rule = write_rule(policy, issuer, env.store_kind)
    if rule is None:
        return reject("NO_WRITE_AUTHORITY", f"{env.principal} may not write {env.store_kind.value} memories under "
                      f"policy {policy.label}", "envelope.store_kind")
    grant = may_write(env.principal, issuer.roles, to_ms(now), state.grants, env.subject, env.scope, env.store_kind,
                      env.sensitivity)
    admin = issuer.has_role(ADMIN_ROLE)
    if not scope_rule.open and grant is None and not admin:
        return reject("SCOPE_NOT_GRANTED", f"{env.principal} holds no WRITE grant on scope {env.scope!r}",
                      "envelope.scope")
    own = env.principal == env.subject
    if not own and rule.subjects == "self":
        return reject("NO_WRITE_AUTHORITY", f"rule {rule.id} lets {env.principal} write only about itself",
                      "envelope.subject")
    needs_review: tuple[Reason, ...] = ()
    if not own and rule.subjects == "granted" and grant is None:
        needs_review = (Reason("SUBJECT_NOT_GRANTED", f"{env.principal} writes about {env.subject} without a "
                               "WRITE grant: held for review", "envelope.subject"),)
    reviewer = issuer.has_role(REVIEWER_ROLE, APPROVER_ROLE) or released_by is not None
    citable = {m: s for m, s in state.sources.items() if _may_cite(env.principal, issuer, s, state.grants, now)}
    for check in (status_problem(env, reviewer), derivation_problem(env, citable, reviewer)):
        if check is not None:
            return reject(check.code, check.message, check.field)
    return _Authority(grant, admin, needs_review)


def _risk(command: MemoryWrite, plaintext: str, issuer: PrincipalRecord,
          detector: InstructionDetector, hearsay_suspicion: bool = False) -> _Risk | Decision:
    """The risk tier of seed 004 from source kind, store kind, sensitivity and what the instruction
    detector finds (instructions in untrusted content stay data, never procedure). Content the
    detector only suspects (``Detection.suspect``) from a source of ``SUSPICION_SOURCES`` is tagged
    untrusted: kept, out of default reads (``suspected`` says so in the decision's reasons); with
    ``hearsay_suspicion`` (``GateLimits``) so is a suspected ``USER_STATEMENT`` that its principal records
    about another subject (hearsay: an agent writing down what the user said), never a person's own. A
    detector that raises (the port says it never does) fails closed: the write takes the tier of content with
    instructions, held for review as ``DETECTOR_FAILED`` and tagged untrusted, and the gate goes on deciding."""
    env = command.envelope
    error: str | None = None
    try:
        detection = detector.detect(plaintext)
    except Exception as exc:  # noqa: BLE001 - the port never raises; if a detector does, fail closed, never stop
        detection, error = Detection(), type(exc).__name__
    risk, code = tier(env.source.kind, env.store_kind, env.sensitivity,
                      detection.carries_instructions or error is not None, issuer.has_role(APPROVER_ROLE))
    if risk is Tier.REJECT:
        return reject(code, f"risk tier REJECT: {code}", "envelope.source.kind")
    if error is not None:
        failed = "DETECTOR_FAILED" if risk is Tier.QUARANTINE else code
        return _Risk(risk, failed, detection, (UNTRUSTED_TAG,), detector_error=error)
    hearsay = (hearsay_suspicion and env.source.kind == SourceKind.USER_STATEMENT
               and env.principal != env.subject)
    suspected = (detection.suspect and not detection.carries_instructions
                 and (env.source.kind in SUSPICION_SOURCES or hearsay))
    untrusted = env.source.kind in UNTRUSTED_SOURCES or detection.carries_instructions or suspected
    return _Risk(risk, code, detection, (UNTRUSTED_TAG,) if untrusted else (), suspected)


def _new_version(command: MemoryWrite, issuer: PrincipalRecord, state: GateState, content_digest: str | None,
                 authority: _Authority, seen: Callable[[str], bool]) -> tuple[MemoryState, str | None] | Decision:
    """The memory state after the write and the id it supersedes (``None`` for a new record), or the
    refusal: a taken memory id, a duplicate of a live memory's text the writer may read (W1; ``seen``), a
    supersession the target or its protected fact slot does not allow, or one whose text is the target's own
    current text (``DUPLICATE``: no version that repeats the one before; newcomer trial, twenty-fifth session).
    ``state.twins`` holds the digests of current versions only: a supersede clears the one it replaces, so a text
    an earlier version held may come back (Lyon, Oslo, Lyon)."""
    env = command.envelope
    if isinstance(command, RecordMemory):
        if command.memory_id in state.memories:
            return reject("MEMORY_ID_EXISTS", "memory id already recorded; use SupersedeMemory", "memory_id")
        twin = state.twins.get(content_digest) if content_digest else None
        if twin is not None and seen(twin):
            # the decision names the memory that holds the text (GateDecided.memory_ids): the id the write
            # asked for is never created, and a caller keeping it could neither read nor forget it (newcomer trial)
            return Decision(Outcome.DUPLICATE, (Reason("DUPLICATE_CONTENT", f"same text is already memory {twin}",
                                                       "content"),), listed=(twin,))
        return next_version(command, None), None
    target = live_target(command.memory_id, command, issuer, state)
    if isinstance(target, Decision):
        return target
    if target.fact is not None:
        guard = protected_supersede(target.fact in state.protected, authority.admin or env.principal == env.subject,
                                    bool(command.evidence))
        if guard.code is not None:
            return reject(guard.code, guard.message, "evidence")
    if content_digest is not None and state.twins.get(content_digest) == target.memory_id:
        return Decision(Outcome.DUPLICATE, (Reason("DUPLICATE_CONTENT", f"memory {target.memory_id} already says this"
                                                   " in its current version: no new version", "content"),),
                        listed=(target.memory_id,))
    return next_version(command, target), target.memory_id


def next_version(command: MemoryWrite, target: MemoryState | None) -> MemoryState:
    """The memory state a write creates: version 1 of a new record owned by its principal, or the
    next version of ``target`` (scope of the new envelope, one more data key). The fact slot is
    set by :func:`fact_slot`."""
    env = command.envelope
    lineage = _lineage(command, target)
    if target is None:
        tags = command.tags if isinstance(command, RecordMemory) else ()
        return MemoryState(command.memory_id, env.subject, env.principal, 1, scope=env.scope,
                           key_ids=(command.content.key_id,), tags=tuple(tags), **lineage)
    return replace(target, version=target.version + 1, scope=env.scope,
                   key_ids=(*target.key_ids, command.content.key_id), **lineage)


def _added(old: tuple[str, ...], new: str | None) -> tuple[str, ...]:
    return old if new is None or new in old else (*old, new)


def _lineage(command: MemoryWrite, target: MemoryState | None) -> dict[str, Any]:
    """What forgetting by selector and lineage reads of a write (see :class:`MemoryState`)."""
    env = command.envelope
    base = target or MemoryState("", "", "", 0)
    derived = base.derived_from
    for m in env.source.derived_from:
        derived = _added(derived, m)
    return {"store_kind": env.store_kind.value, "sensitivity": env.sensitivity.value,
            "observed_ms": to_ms(env.observed_at),
            "expires_ms": to_ms(env.expires_at) if env.expires_at is not None else None,
            "sources": _added(base.sources, env.source.reference), "writers": _added(base.writers, env.principal),
            "signer_keys": _added(base.signer_keys, env.signature.key_id if env.signature else None),
            "derived_from": derived}


def fact_slot(command: MemoryWrite, memory: MemoryState, superseding: str | None) -> tuple[MemoryState,
                                                                                            FactState | None]:
    """The single-valued fact slot a write takes (``M_core`` candidates, Eq. 6), without the checks:
    the memory holding it and the slot; a supersession without a typed fact leaves no slot. The slot
    keeps the fact's value as compared (its keyed digest, :func:`~memwarden.commands.facts.keyed_fact`);
    a fact still sealed (its data key shredded: a replayed write of a forgotten memory) names the slot
    but holds no value."""
    fact = command.fact
    if fact is None or fact.cardinality is not FactCardinality.SINGLE:
        return (replace(memory, fact=None) if superseding is not None else memory), None
    key = fact_key(command.envelope.subject, fact.entity, fact.attribute)
    if fact.sealed:
        return replace(memory, fact=key), None
    return replace(memory, fact=key), FactState(key, fact.value, memory.memory_id)


def claim_states(subject: str, memory_id: str, claims: ClaimExtractor, plaintext: str | None) -> tuple[ClaimState, ...]:
    """The claims a memory version asserts (digests only), empty when its text is unreadable."""
    if plaintext is None:
        return ()
    return tuple(ClaimState(subject, c.digest, c.value_digest, c.positive, memory_id) for c in claims.claims(plaintext))


def write_effects(memory: MemoryState, superseding: str | None, closes: tuple[str, ...], fact: FactState | None,
                  new_claims: tuple[ClaimState, ...], content_digest: str | None) -> tuple[Effect, ...]:
    """The governed-state changes of an admitted write: the superseded and contradicted memories lose
    their slots, claims and digests; the new version takes its own."""
    effects: list[Effect] = [MemoryCleared(superseding)] if superseding is not None else []
    effects += [MemoryCleared(m) for m in closes]
    digest = (memory.subject, content_digest) if content_digest else None
    effects.append(MemoryFacts(memory.memory_id, fact, new_claims, digest))
    return tuple(effects)


def _fact_slot(command: MemoryWrite, memory: MemoryState, superseding: str | None, state: GateState,
               authority: _Authority, seen: Callable[[str], bool]
               ) -> tuple[MemoryState, FactState | None, tuple[str, ...]] | Decision:
    """A typed single-valued fact (Eq. 6 ``M_core``): the slot it takes, the memory it closes, or the
    refusal when it contradicts a protected fact without authority and evidence. A slot held with another value
    by a memory the writer may not read (``seen``) is left to it: the write keeps no slot, closes nothing, is
    told nothing (the same value takes the slot as before: the answer is the same either way)."""
    env = command.envelope
    if command.fact is not None and command.fact.sealed:
        return reject("FACT_UNREADABLE", "the typed fact's value does not open under the content's data key",
                      "fact.value_sealed")
    slotted, slot = fact_slot(command, memory, superseding)
    if slot is None or command.fact is None:
        return slotted, None, ()
    held = state.facts.get(slot.key)
    hidden = held is not None and held.memory_id != superseding and not seen(held.memory_id)
    check = check_fact(command.fact, held, slot.key in state.protected, superseding,
                       authority.admin or env.principal == env.subject, bool(getattr(command, "evidence", ())))
    if check.code is not None:  # a protected core fact holds against every writer; unread, it is not named
        return reject(check.code, _PROTECTED_UNREAD if hidden else check.message, "fact.value")
    if hidden and check.closes is not None:  # another value: it would close what the writer may not read
        return memory, None, ()
    return slotted, slot, (check.closes,) if check.closes is not None else ()


def _contradictions(subject: str, memory_id: str, new_claims: tuple[ClaimState, ...], closes: tuple[str, ...],
                    state: GateState, seen: Callable[[str], bool]) -> tuple[str, ...] | Decision:
    """Untyped contradiction (issue 3 part 5): live memories the writer may read (``seen``) whose claims the
    new text contradicts are closed, unless one holds a protected core fact (Eq. 6: ``ΔM ∧ M_core ⊨ ⊥`` →
    reject, the memory named only to a writer that may read it); one it may not read is neither closed nor
    named."""
    core_holders = {state.facts[k].memory_id for k in state.protected if k in state.facts}
    out = list(closes)
    for c in new_claims:
        for old in state.claims.get((subject, c.key_digest), ()):
            if old.memory_id in (memory_id, *out) or not contradicts(c.as_claim(), old.as_claim()):
                continue
            visible = seen(old.memory_id)
            if old.memory_id in core_holders:  # a protected core fact holds against every writer
                return reject("CORE_FACT_CONFLICT", f"the text contradicts memory {old.memory_id}, which holds "
                              "a protected core fact; change it with SupersedeMemory, authority and evidence"
                              if visible else _PROTECTED_UNREAD, "content")
            if visible:
                out.append(old.memory_id)
    return tuple(out)


def _admitted(memory: MemoryState, closes: tuple[str, ...], effects: tuple[Effect, ...], risk: _Risk,
              released_by: str | None) -> Decision:
    verified = risk.tier is Tier.ACCEPT and released_by is None
    reasons = [Reason("OK" if verified else risk.code, "accepted" if verified else "accepted as unverified")]
    if released_by is not None:
        reasons = [Reason("RELEASED_BY_REVIEW", f"released from quarantine by {released_by}")]
    if risk.suspected:
        reasons.append(Reason(SUSPECTED_INSTRUCTIONS, "tagged untrusted, out of default reads: the content reads "
                              "like instructions to an agent and no person stated it", "content"))
    if closes:
        reasons.append(Reason("SUPERSEDES_CONTRADICTED", "closes contradicted memories " + ", ".join(closes)))
    return Decision(Outcome.ACCEPTED if verified else Outcome.ACCEPTED_UNVERIFIED, tuple(reasons), memory=memory,
                    version=memory.version, closes=closes, effects=effects, tags=risk.tags)


def decide_write(command: MemoryWrite, plaintext: str | None, issuer: PrincipalRecord, state: GateState,
                 now: datetime, limits: GateLimits, content_digest: str | None, detector: InstructionDetector,
                 claims: ClaimExtractor, released_by: str | None = None) -> Decision:
    """Decide a memory write: text limits, authority, risk tier, the new version, the fact slot,
    contradictions, then quarantine (when any step asked for review and no reviewer released it) or
    admission. ``released_by`` is the reviewer when an ``ApproveQuarantined`` re-decides the write."""
    problem = check_text(plaintext, limits)
    if problem is not None or plaintext is None:
        return problem or reject("CONTENT_UNREADABLE", "no content", "content")
    authority = _authority(command, issuer, state, now, released_by)
    if isinstance(authority, Decision):
        return authority
    risk = _risk(command, plaintext, issuer, detector, limits.hearsay_suspicion)
    if isinstance(risk, Decision):
        return risk
    env = command.envelope

    def seen(memory_id: str) -> bool:
        return sees(env.principal, issuer, state.memories.get(memory_id), state.grants, now)

    version = _new_version(command, issuer, state, content_digest, authority, seen)
    if isinstance(version, Decision):
        return version
    slot = _fact_slot(command, *version, state, authority, seen)
    if isinstance(slot, Decision):
        return slot
    memory, fact_state, fact_closes = slot
    memory = replace(memory, admitted_ms=to_ms(now))
    new_claims = claim_states(env.subject, memory.memory_id, claims, plaintext)
    closes = _contradictions(env.subject, memory.memory_id, new_claims, fact_closes, state, seen)
    if isinstance(closes, Decision):
        return closes
    needs_review = list(authority.needs_review)
    if risk.tier is Tier.QUARANTINE:
        found = risk.detection.carries_instructions
        kinds = ", ".join(sorted(k.value for k in risk.detection.kinds)) if found else ""
        why = (f": instructions found ({kinds})" if kinds else
               f": the instruction detector failed ({risk.detector_error})" if risk.detector_error else "")
        needs_review.append(Reason(risk.code, "held for review" + why, "content"))
    if needs_review and released_by is None:
        q = QuarantineState(env.command_id, memory.memory_id, env.principal, env.subject, "pending",
                            command.content.key_id)
        tags = (UNTRUSTED_TAG,) if risk.detection.carries_instructions else risk.tags
        return Decision(Outcome.QUARANTINED, tuple(needs_review), effects=(QuarantineSet(q),), tags=tags)
    effects = write_effects(memory, version[1], closes, fact_state, new_claims, content_digest)
    return _admitted(memory, closes, effects, risk, released_by)
