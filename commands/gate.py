"""The write gate G_write (SSGM Eq. 6) as a pure function: ``decide(command, ..., state, now) -> Decision``.

No Kafka, Faust, psycopg or Qdrant here: the processor loads the governed state, calls
:func:`decide`, stores and publishes the result (STYLE habits 2 and 3). A refusal is a decision,
never an exception (habit 4).

Order of the checks for every command (first failure decides):

1. idempotency by command id (``DUPLICATE``);
2. provenance σ(μ): an Ed25519 signature by a key of ``envelope.principal`` valid at issue time
   (issue 3 part 1; :mod:`memwarden.commands.principals`);
3. clock sanity (observed time, expiry);
4. per command: governance commands need their authority (admin, the principal itself, the subject,
   a reviewer); memory writes go through :func:`_decide_write`: text limits, declared scope, write
   authority from the policy *data* (:mod:`memwarden.commands.policy`) and grants, status and
   attribution rules (:mod:`memwarden.commands.attribution`), the instruction detector and the risk
   tier (:mod:`memwarden.commands.risk`), duplicates, protected core facts and contradictions
   (:mod:`memwarden.commands.facts`, :mod:`memwarden.commands.contradiction`).

Every decision names the gate version and the policy version it used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum

from memwarden.commands.access import Grant, may_write
from memwarden.commands.attribution import SourceRecord, derivation_problem, status_problem
from memwarden.commands.contradiction import DEFAULT_CLAIMS, Claim, ClaimExtractor, contradicts
from memwarden.commands.facts import FactKey, FactState, check_fact, fact_key, protected_supersede
from memwarden.commands.injection import DEFAULT_DETECTOR, InstructionDetector
from memwarden.commands.model import (
    ApproveQuarantined,
    Command,
    FactCardinality,
    ForgetMemory,
    GrantAccess,
    ProtectFact,
    PublishPolicy,
    RecordMemory,
    RegisterPrincipal,
    RejectQuarantined,
    RevokeAccess,
    RevokeKey,
    Right,
    RotateKey,
    SupersedeMemory,
)
from memwarden.commands.policy import PolicyError, WritePolicy, default_policy, parse_policy, write_rule
from memwarden.commands.principals import (
    ADMIN_ROLE,
    APPROVER_ROLE,
    REVIEWER_ROLE,
    KeyRecord,
    PrincipalRecord,
    all_key_ids,
    check_signature,
    kind_from_id,
)
from memwarden.commands.risk import UNTRUSTED_SOURCES, Tier, tier

GATE_VERSION = "gate/0.2.0"
#: How far in the future an observed time may lie (clock skew allowance).
MAX_FUTURE_SKEW = timedelta(minutes=5)
UNTRUSTED_TAG = "untrusted"


class Outcome(StrEnum):
    """What the gate decided for one command (``GateDecided.outcome``)."""

    ACCEPTED = "ACCEPTED"
    ACCEPTED_UNVERIFIED = "ACCEPTED_UNVERIFIED"
    QUARANTINED = "QUARANTINED"
    REJECTED = "REJECTED"
    DUPLICATE = "DUPLICATE"


ADMITTED = frozenset({Outcome.ACCEPTED, Outcome.ACCEPTED_UNVERIFIED})


@dataclass(frozen=True)
class Reason:
    """Machine-readable ``code``, human ``message``, and the ``field`` concerned (dotted path)."""

    code: str
    message: str
    field: str | None = None


@dataclass(frozen=True)
class Position:
    """A ledger position: topic, partition, offset."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True)
class MemoryState:
    """What the gate knows of one memory id: subject, owner (writing principal), live or forgotten,
    its current version number, scope, the fact slot it holds (if any) and the data-key ids of all
    its versions (shredded by a forget)."""

    memory_id: str
    subject: str
    owner: str
    version: int
    forgotten: bool = False
    scope: str = ""
    fact: FactKey | None = None
    key_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class PriorDecision:
    """A decision already taken for this command id, and where that command sat on the ledger."""

    outcome: Outcome
    position: Position


@dataclass(frozen=True)
class ClaimState:
    """A claim a live memory asserts (digests only, see :mod:`memwarden.commands.contradiction`)."""

    subject: str
    key_digest: str
    value_digest: str | None
    positive: bool
    memory_id: str

    def as_claim(self) -> Claim:
        """The stored claim as a :class:`Claim` over digests (comparable with a new claim's digests)."""
        return Claim(self.key_digest, self.value_digest, self.positive)


@dataclass(frozen=True)
class QuarantineState:
    """A quarantined memory command awaiting review: who wrote it, about whom, and its status
    (``pending``, ``approved``, ``rejected``)."""

    command_id: str
    memory_id: str
    principal: str
    subject: str
    status: str = "pending"
    key_id: str | None = None


@dataclass(frozen=True)
class GateState:
    """Governed state the gate reads (loaded by the processor in the decision's transaction).

    ``memories``: referenced memories by id. ``principals``: the registry, trust anchor included.
    ``policy``: write policy in force. ``grants``: ABAC grants. ``facts``: current single-valued fact
    slots. ``protected``: protected core slots (M_core). ``claims``: claims of live memories by
    (subject, key digest). ``twins``: live memory id by content digest (same subject). ``quarantine``:
    pending reviews by command id. ``sources``: cited source records of derived commands.
    ``review_target``: for ``ApproveQuarantined``, the quarantined command and its plaintext.
    """

    prior: PriorDecision | None = None
    memories: Mapping[str, MemoryState] = field(default_factory=dict)
    principals: Mapping[str, PrincipalRecord] = field(default_factory=dict)
    policy: WritePolicy = field(default_factory=default_policy)
    grants: tuple[Grant, ...] = ()
    facts: Mapping[FactKey, FactState] = field(default_factory=dict)
    protected: frozenset[FactKey] = frozenset()
    claims: Mapping[tuple[str, str], tuple[ClaimState, ...]] = field(default_factory=dict)
    twins: Mapping[str, str] = field(default_factory=dict)
    quarantine: Mapping[str, QuarantineState] = field(default_factory=dict)
    sources: Mapping[str, SourceRecord] = field(default_factory=dict)
    review_target: tuple[Command, str | None, str | None] | None = None


@dataclass(frozen=True)
class GateLimits:
    """Content limits: ``max_text_chars`` in characters."""

    max_text_chars: int = 20_000


# -- effects: the governed state a decision changes (the processor persists them) ----------------------
@dataclass(frozen=True)
class PrincipalUpsert:
    """Register or replace a registry record (RegisterPrincipal, RotateKey, RevokeKey)."""

    record: PrincipalRecord


@dataclass(frozen=True)
class PolicySet:
    """Adopt a new write-policy version and keep its JSON document."""

    policy: WritePolicy
    document: str


@dataclass(frozen=True)
class GrantUpsert:
    """Store a grant, or its revocation (``revoked_at_ms`` set)."""

    grant: Grant


@dataclass(frozen=True)
class ProtectionSet:
    """Mark or unmark a fact slot as protected core (M_core)."""

    key: FactKey
    protected: bool


@dataclass(frozen=True)
class MemoryFacts:
    """The fact slot, claims and content digest a newly admitted memory version holds."""

    memory_id: str
    fact: FactState | None
    claims: tuple[ClaimState, ...]
    digest: tuple[str, str] | None  # (subject, content digest)


@dataclass(frozen=True)
class MemoryCleared:
    """Drop the fact slots, claims and digests of a memory (forgotten or superseded away)."""

    memory_id: str


@dataclass(frozen=True)
class QuarantineSet:
    """Hold a command for review (status ``pending``) or record the review outcome."""

    state: QuarantineState


Effect = PrincipalUpsert | PolicySet | GrantUpsert | ProtectionSet | MemoryFacts | MemoryCleared | QuarantineSet


@dataclass(frozen=True)
class Decision:
    """Outcome and reasons for one command; ``memory`` is the memory state after the command
    (``None`` when no memory changes), ``version`` the memory version it creates (0 for none),
    ``closes`` memories it supersedes automatically, ``effects`` governed-state changes,
    ``tags`` extra tags (``untrusted``), ``shred`` data-key ids to tombstone, ``released`` the
    command a reviewer released from quarantine (with the reviewer)."""

    outcome: Outcome
    reasons: tuple[Reason, ...]
    memory: MemoryState | None = None
    version: int = 0
    gate_version: str = GATE_VERSION
    policy_version: str = "default/1"
    closes: tuple[str, ...] = ()
    effects: tuple[Effect, ...] = ()
    tags: tuple[str, ...] = ()
    shred: tuple[str, ...] = ()
    released: tuple[Command, str] | None = None

    @property
    def admitted(self) -> bool:
        """Whether the command changes memory (ACCEPTED or ACCEPTED_UNVERIFIED)."""
        return self.outcome in ADMITTED


def _reject(code: str, message: str, field_: str | None = None) -> Decision:
    return Decision(Outcome.REJECTED, (Reason(code, message, field_),))


def _ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


def decide(
    command: Command,
    plaintext: str | None,
    position: Position,
    state: GateState,
    now: datetime,
    limits: GateLimits = GateLimits(),
    *,
    signed_bytes: bytes | None = None,
    content_digest: str | None = None,
    verify_signatures: bool = True,
    detector: InstructionDetector = DEFAULT_DETECTOR,
    claims: ClaimExtractor = DEFAULT_CLAIMS,
) -> Decision:
    """Decide one decoded, schema-valid command (SSGM Eq. 6: admit ΔM or nothing).

    Args:
        command: the command model.
        plaintext: decrypted memory text, or ``None`` when the data key is unavailable (or the
            command carries no content).
        position: where the command sits on the ledger.
        state: governed state (see :class:`GateState`).
        now: the gate's clock (UTC, aware).
        limits: content limits.
        signed_bytes: the canonical unsigned bytes σ(μ) covers (``AvroCodec.unsigned_bytes``).
        content_digest: keyed digest of the normalised text (duplicate detection, W1).
        verify_signatures: ``False`` only for the skeleton-gate benchmark baseline.
        detector: instruction detector port (issue 3 part 4).
        claims: claim extractor port for untyped contradiction (issue 3 part 5).
    Returns:
        A ``Decision`` carrying ``state.policy``'s version; never raises for any valid command.
    """
    decision = _decide(command, plaintext, position, state, now, limits, signed_bytes, content_digest,
                       verify_signatures, detector, claims)
    return replace(decision, policy_version=state.policy.label) if decision.policy_version != state.policy.label \
        and not isinstance(command, PublishPolicy) else decision


def _decide(command: Command, plaintext: str | None, position: Position, state: GateState, now: datetime,
            limits: GateLimits, signed_bytes: bytes | None, content_digest: str | None, verify_signatures: bool,
            detector: InstructionDetector, claims: ClaimExtractor) -> Decision:
    env = command.envelope
    if state.prior is not None and state.prior.position != position:
        return Decision(
            Outcome.DUPLICATE,
            (Reason("DUPLICATE_COMMAND_ID", f"command id already decided at offset {state.prior.position.offset}",
                    "envelope.command_id"),),
        )
    if verify_signatures:
        problem = check_signature(command, signed_bytes, state.principals)
        if problem is not None:
            return _reject(problem.code, problem.message, "envelope.signature")
    if env.observed_at > now + MAX_FUTURE_SKEW:
        return _reject("OBSERVED_IN_FUTURE", "observed_at lies in the future", "envelope.observed_at")
    if env.expires_at is not None and env.expires_at <= env.valid_from:
        return _reject("EXPIRES_BEFORE_VALID", "expires_at is not after the start of validity", "envelope.expires_at")
    issuer = state.principals.get(env.principal) or PrincipalRecord(env.principal, kind_from_id(env.principal))
    if isinstance(command, RecordMemory | SupersedeMemory):
        return _decide_write(command, plaintext, issuer, state, now, limits, content_digest, detector, claims)
    if isinstance(command, ForgetMemory):
        return _decide_forget(command, issuer, state)
    if isinstance(command, ApproveQuarantined):
        return _decide_approve(command, issuer, state, now, limits, content_digest, detector, claims)
    return _decide_governance(command, issuer, state, now)


def _check_text(plaintext: str | None, limits: GateLimits) -> Decision | None:
    if plaintext is None:
        return _reject("CONTENT_UNREADABLE", "the data key of the content is missing or shredded", "content.key_id")
    if not plaintext.strip():
        return _reject("EMPTY_TEXT", "memory text is empty", "content")
    if len(plaintext) > limits.max_text_chars:
        return _reject(
            "TEXT_TOO_LONG", f"memory text has {len(plaintext)} characters, limit {limits.max_text_chars}", "content"
        )
    return None


def _live_target(memory_id: str, command: Command, issuer: PrincipalRecord, state: GateState) -> MemoryState | Decision:
    target = state.memories.get(memory_id)
    env = command.envelope
    if target is None:
        return _reject("UNKNOWN_MEMORY", f"no memory {memory_id}", "memory_id")
    if target.forgotten:
        return _reject("MEMORY_FORGOTTEN", f"memory {memory_id} was forgotten", "memory_id")
    if target.subject != env.subject:
        return _reject("SUBJECT_MISMATCH", "memory belongs to another subject", "envelope.subject")
    if env.principal not in (target.owner, target.subject) and not issuer.has_role(ADMIN_ROLE):
        return _reject("NOT_OWNER", "only the owner, the subject or an admin may change this memory",
                       "envelope.principal")
    return target


def _decide_write(command: RecordMemory | SupersedeMemory, plaintext: str | None, issuer: PrincipalRecord,
                  state: GateState, now: datetime, limits: GateLimits, content_digest: str | None,
                  detector: InstructionDetector, claims: ClaimExtractor, released_by: str | None = None) -> Decision:
    """Memory writes: authority, scope, status, derivation, risk tier, duplicates, Eq. 6 checks."""
    env = command.envelope
    problem = _check_text(plaintext, limits)
    if problem is not None:
        return problem
    assert plaintext is not None
    policy = state.policy
    scope_rule = policy.scope(env.scope)
    if scope_rule is None:
        return _reject("UNKNOWN_SCOPE", f"scope {env.scope!r} is not declared by policy {policy.label}",
                       "envelope.scope")
    rule = write_rule(policy, issuer, env.store_kind)
    if rule is None:
        return _reject("NO_WRITE_AUTHORITY", f"{env.principal} may not write {env.store_kind.value} memories under "
                       f"policy {policy.label}", "envelope.store_kind")
    now_ms = _ms(now)
    grant = may_write(env.principal, issuer.roles, now_ms, state.grants, env.subject, env.scope, env.store_kind,
                      env.sensitivity)
    admin = issuer.has_role(ADMIN_ROLE)
    if not scope_rule.open and grant is None and not admin:
        return _reject("SCOPE_NOT_GRANTED", f"{env.principal} holds no WRITE grant on scope {env.scope!r}",
                       "envelope.scope")
    own = env.principal == env.subject
    needs_review: list[Reason] = []
    if not own and rule.subjects == "self":
        return _reject("NO_WRITE_AUTHORITY", f"rule {rule.id} lets {env.principal} write only about itself",
                       "envelope.subject")
    if not own and rule.subjects == "granted" and grant is None:
        needs_review.append(Reason("SUBJECT_NOT_GRANTED", f"{env.principal} writes about {env.subject} without a "
                                   "WRITE grant: held for review", "envelope.subject"))
    reviewer = issuer.has_role(REVIEWER_ROLE, APPROVER_ROLE) or released_by is not None
    for check in (status_problem(env, reviewer), derivation_problem(env, state.sources, reviewer)):
        if check is not None:
            return _reject(check.code, check.message, check.field)
    detection = detector.detect(plaintext)
    risk, risk_code = tier(env.source.kind, env.store_kind, env.sensitivity, detection.carries_instructions,
                           issuer.has_role(APPROVER_ROLE))
    if risk is Tier.REJECT:
        return _reject(risk_code, f"risk tier REJECT: {risk_code}", "envelope.source.kind")
    if risk is Tier.QUARANTINE:
        kinds = ", ".join(sorted(k.value for k in detection.kinds)) if detection.carries_instructions else ""
        found = f": instructions found ({kinds})" if kinds else ""
        needs_review.append(Reason(risk_code, f"held for review{found}", "content"))
    tags = (UNTRUSTED_TAG,) if env.source.kind in UNTRUSTED_SOURCES or detection.carries_instructions else ()

    effects: list[Effect] = []
    closes: list[str] = []
    if isinstance(command, RecordMemory):
        if command.memory_id in state.memories:
            return _reject("MEMORY_ID_EXISTS", "memory id already recorded; use SupersedeMemory", "memory_id")
        twin = state.twins.get(content_digest) if content_digest else None
        if twin is not None and twin in state.memories and not state.memories[twin].forgotten:
            return Decision(Outcome.DUPLICATE, (Reason("DUPLICATE_CONTENT", f"same text is already memory {twin}",
                                                       "content"),))
        memory = MemoryState(command.memory_id, env.subject, env.principal, 1, scope=env.scope,
                             key_ids=(command.content.key_id,))
        superseding = None
    else:
        target = _live_target(command.memory_id, command, issuer, state)
        if isinstance(target, Decision):
            return target
        if target.fact is not None:
            guard = protected_supersede(target.fact in state.protected, admin or own, bool(command.evidence))
            if guard.code is not None:
                return _reject(guard.code, guard.message, "evidence")
        memory = replace(target, version=target.version + 1, scope=env.scope,
                         key_ids=(*target.key_ids, command.content.key_id))
        superseding = target.memory_id

    fact = command.fact
    fact_state: FactState | None = None
    if fact is not None and fact.cardinality is FactCardinality.SINGLE:
        key = fact_key(env.subject, fact.entity, fact.attribute)
        check = check_fact(fact, state.facts.get(key), key in state.protected, superseding, admin or own,
                           bool(getattr(command, "evidence", ())))
        if check.code is not None:
            return _reject(check.code, check.message, "fact.value")
        if check.closes is not None:
            closes.append(check.closes)
        fact_state = FactState(key, fact.value, memory.memory_id)
        memory = replace(memory, fact=key)
    elif superseding is not None:
        memory = replace(memory, fact=None)

    new_claims = tuple(ClaimState(env.subject, c.digest, c.value_digest, c.positive, memory.memory_id)
                       for c in claims.claims(plaintext))
    core_holders = {state.facts[k].memory_id for k in state.protected if k in state.facts}
    for c in new_claims:
        for old in state.claims.get((env.subject, c.key_digest), ()):
            if old.memory_id not in (memory.memory_id, *closes) and contradicts(c.as_claim(), old.as_claim()):
                if old.memory_id in core_holders:  # Eq. 6: untyped text cannot close M_core either
                    return _reject("CORE_FACT_CONFLICT", f"the text contradicts memory {old.memory_id}, which holds "
                                   "a protected core fact; change it with SupersedeMemory, authority and evidence",
                                   "content")
                closes.append(old.memory_id)

    if needs_review and released_by is None:
        key_id = command.content.key_id
        q = QuarantineState(env.command_id, memory.memory_id, env.principal, env.subject, "pending", key_id)
        return Decision(Outcome.QUARANTINED, tuple(needs_review), effects=(QuarantineSet(q),),
                        tags=(UNTRUSTED_TAG,) if detection.carries_instructions else tags)
    if superseding is not None:
        effects.append(MemoryCleared(superseding))
    effects += [MemoryCleared(m) for m in closes]
    effects.append(MemoryFacts(memory.memory_id, fact_state, new_claims,
                               (env.subject, content_digest) if content_digest else None))
    verified = risk is Tier.ACCEPT and released_by is None
    outcome = Outcome.ACCEPTED if verified else Outcome.ACCEPTED_UNVERIFIED
    reasons = [Reason("OK" if verified else risk_code, "accepted" if verified else "accepted as unverified")]
    if released_by is not None:
        reasons = [Reason("RELEASED_BY_REVIEW", f"released from quarantine by {released_by}")]
    if closes:
        reasons.append(Reason("SUPERSEDES_CONTRADICTED", "closes contradicted memories " + ", ".join(closes)))
    return Decision(outcome, tuple(reasons), memory=memory, version=memory.version, closes=tuple(closes),
                    effects=tuple(effects), tags=tags)


def _decide_forget(command: ForgetMemory, issuer: PrincipalRecord, state: GateState) -> Decision:
    target = state.memories.get(command.memory_id)
    if target is not None and target.forgotten:
        return Decision(Outcome.ACCEPTED, (Reason("ALREADY_FORGOTTEN", "memory was already forgotten"),))
    live = _live_target(command.memory_id, command, issuer, state)
    if isinstance(live, Decision):
        return live
    return Decision(Outcome.ACCEPTED, (Reason("OK", "accepted"),), memory=replace(live, forgotten=True),
                    effects=(MemoryCleared(live.memory_id),), shred=live.key_ids)


def _decide_approve(command: ApproveQuarantined, issuer: PrincipalRecord, state: GateState, now: datetime,
                    limits: GateLimits, content_digest: str | None, detector: InstructionDetector,
                    claims: ClaimExtractor) -> Decision:
    q = _pending(command.quarantined_command_id, command.envelope.subject, issuer, state)
    if isinstance(q, Decision):
        return q
    if state.review_target is None:
        return _reject("QUARANTINED_COMMAND_UNAVAILABLE", "the quarantined command could not be read",
                       "quarantined_command_id")
    original, text, digest = state.review_target
    if not isinstance(original, RecordMemory | SupersedeMemory):
        return _reject("QUARANTINED_COMMAND_UNAVAILABLE", "only memory writes are quarantined",
                       "quarantined_command_id")
    writer = state.principals.get(original.envelope.principal) or PrincipalRecord(
        original.envelope.principal, kind_from_id(original.envelope.principal))
    inner = _decide_write(original, text, writer, state, now, limits, digest, detector, claims,
                          released_by=command.envelope.principal)
    resolved = QuarantineSet(replace(q, status="approved" if inner.admitted else "rejected"))
    if not inner.admitted:
        return replace(inner, effects=(*inner.effects, resolved), shred=(q.key_id,) if q.key_id else ())
    return replace(inner, effects=(*inner.effects, resolved), released=(original, command.envelope.principal))


def _pending(command_id: str, subject: str, issuer: PrincipalRecord, state: GateState) -> QuarantineState | Decision:
    if not issuer.has_role(REVIEWER_ROLE):
        return _reject("NOT_A_REVIEWER", f"{issuer.principal_id} holds no reviewer role", "envelope.principal")
    q = state.quarantine.get(command_id)
    if q is None:
        return _reject("NOT_QUARANTINED", f"command {command_id} is not in quarantine", "quarantined_command_id")
    if q.status != "pending":
        return _reject("ALREADY_REVIEWED", f"command {command_id} was already {q.status}", "quarantined_command_id")
    if q.subject != subject:
        return _reject("SUBJECT_MISMATCH", f"the quarantined command concerns {q.subject}", "envelope.subject")
    if q.principal == issuer.principal_id:
        return _reject("SELF_REVIEW", "a reviewer may not release its own write", "envelope.principal")
    return q


def _ok(*effects: Effect, message: str = "accepted") -> Decision:
    return Decision(Outcome.ACCEPTED, (Reason("OK", message),), effects=tuple(effects))


def _decide_governance(command: Command, issuer: PrincipalRecord, state: GateState, now: datetime) -> Decision:
    """Principals and keys, policy, core-fact protection, grants, quarantine rejection."""
    env = command.envelope
    admin = issuer.has_role(ADMIN_ROLE)
    now_ms = _ms(now)
    issued_ms = _ms(env.issued_at)
    if isinstance(command, RegisterPrincipal):
        if not admin:
            return _reject("NOT_AN_ADMIN", "only an admin registers principals", "envelope.principal")
        if command.principal_id in state.principals:
            return _reject("PRINCIPAL_EXISTS", f"{command.principal_id} is already registered", "principal_id")
        if command.key.key_id in all_key_ids(state.principals):
            return _reject("KEY_ID_IN_USE", f"key id {command.key.key_id!r} is taken", "key.key_id")
        record = PrincipalRecord(command.principal_id, command.principal_kind, frozenset(command.roles),
                                 dict(command.attributes),
                                 (KeyRecord(command.key.key_id, command.key.public_key, issued_ms),))
        return _ok(PrincipalUpsert(record))
    if isinstance(command, RotateKey | RevokeKey):
        target = state.principals.get(command.principal_id)
        if target is None:
            return _reject("UNKNOWN_PRINCIPAL", f"{command.principal_id} is not registered", "principal_id")
        if not admin and env.principal != command.principal_id:
            return _reject("NOT_KEY_OWNER", "only the principal itself or an admin manages its keys",
                           "envelope.principal")
        if isinstance(command, RotateKey):
            if command.key.key_id in all_key_ids(state.principals):
                return _reject("KEY_ID_IN_USE", f"key id {command.key.key_id!r} is taken", "key.key_id")
            return _ok(PrincipalUpsert(target.with_key(KeyRecord(command.key.key_id, command.key.public_key,
                                                                 issued_ms), issued_ms)))
        key = target.key(command.key_id)
        if key is None:
            return _reject("UNKNOWN_KEY", f"{command.principal_id} has no key {command.key_id!r}", "key_id")
        if key.revoked_at_ms is not None:
            return _ok(message="key was already revoked")
        return _ok(PrincipalUpsert(target.with_revoked(command.key_id, now_ms)))
    if isinstance(command, PublishPolicy):
        if not admin:
            return _reject("NOT_AN_ADMIN", "only an admin publishes policy", "envelope.principal")
        try:
            policy = parse_policy(command.document, command.policy_id, command.version)
        except PolicyError as exc:
            return _reject("POLICY_INVALID", exc.reason, exc.field)
        current = state.policy
        if policy.policy_id == current.policy_id and policy.version <= current.version:
            return _reject("POLICY_VERSION_NOT_NEWER", f"version {policy.version} is not newer than "
                           f"{current.label}", "version")
        return replace(_ok(PolicySet(policy, command.document)), policy_version=policy.label)
    if isinstance(command, ProtectFact):
        if not admin and env.principal != env.subject:
            return _reject("NO_AUTHORITY_OVER_CORE_FACT", "only the subject or an admin protects its core facts",
                           "envelope.principal")
        return _ok(ProtectionSet(fact_key(env.subject, command.entity, command.attribute), command.protected))
    if isinstance(command, GrantAccess):
        return _decide_grant(command, admin, state)
    if isinstance(command, RevokeAccess):
        grant = next((g for g in state.grants if g.grant_id == command.grant_id), None)
        if grant is None:
            return _reject("UNKNOWN_GRANT", f"no grant {command.grant_id!r}", "grant_id")
        if not admin and env.principal != grant.granted_by:
            return _reject("NOT_GRANTOR", "only the grantor or an admin revokes a grant", "envelope.principal")
        if grant.revoked_at_ms is not None:
            return _ok(message="grant was already revoked")
        return _ok(GrantUpsert(replace(grant, revoked_at_ms=now_ms)))
    if isinstance(command, RejectQuarantined):
        q = _pending(command.quarantined_command_id, command.envelope.subject, issuer, state)
        if isinstance(q, Decision):
            return q
        return replace(_ok(QuarantineSet(replace(q, status="rejected")), message="quarantined command rejected"),
                       shred=(q.key_id,) if q.key_id else ())
    return _reject("UNSUPPORTED_COMMAND", f"{type(command).__name__} is not decided by this gate", "kind")


def _decide_grant(command: GrantAccess, admin: bool, state: GateState) -> Decision:
    env = command.envelope
    if any(g.grant_id == command.grant_id for g in state.grants):
        return _reject("GRANT_EXISTS", f"grant {command.grant_id!r} exists; revoke it and grant anew", "grant_id")
    own = bool(command.subjects) and all(s == env.principal for s in command.subjects)
    if not admin and not own:
        return _reject("NOT_GRANTOR", "only an admin, or a subject for its own memories, grants access",
                       "envelope.principal")
    for i, scope in enumerate(command.scopes):
        if scope == "*" and not admin:
            return _reject("UNKNOWN_SCOPE", "only an admin grants on every scope", f"scopes[{i}]")
        declared = state.policy.scope(scope) if scope != "*" else None
        if scope != "*" and declared is None:
            return _reject("UNKNOWN_SCOPE", f"scope {scope!r} is not declared by policy {state.policy.label}",
                           f"scopes[{i}]")
        if declared is not None and not declared.open and Right.WRITE in command.rights and not admin:
            return _reject("NOT_GRANTOR", f"only an admin grants WRITE on the closed scope {scope!r}", f"scopes[{i}]")
    grant = Grant(
        grant_id=command.grant_id, grantee=command.grantee, rights=frozenset(command.rights), scopes=command.scopes,
        subjects=command.subjects, purposes=command.purposes, store_kinds=command.store_kinds,
        sensitivity_ceiling=command.sensitivity_ceiling,
        valid_from_ms=_ms(command.valid_from) if command.valid_from else _ms(env.issued_at),
        valid_to_ms=_ms(command.valid_to) if command.valid_to else None, granted_by=env.principal,
        relationship=command.relationship)
    return _ok(GrantUpsert(grant))
