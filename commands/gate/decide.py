"""The write gate G_write (SSGM Eq. 6) as a pure function: ``decide(command, ..., state, now) -> Decision``.

No Kafka, Faust, psycopg or Qdrant here: the processor loads the governed state, calls
:func:`decide`, stores and publishes the result, and :func:`memwarden.commands.gate.evolve.evolve`
folds the decision into the state for the next command (STYLE habits 2 and 3). A refusal is a
decision, never an exception (habit 4).

Order of the checks for every command (first failure decides):

1. idempotency by command id (``DUPLICATE``);
2. provenance σ(μ): an Ed25519 signature by a key of ``envelope.principal`` valid at issue time
   (:mod:`memwarden.commands.principals`);
3. clock sanity (observed time, expiry);
4. per command family: forgets by id, selector or subject and legal holds (:mod:`.forgetting`);
   memory writes (:mod:`.writes`: text limits, declared scope, write
   authority from the policy *data* and grants, status and attribution, the instruction detector and
   the risk tier, duplicates, protected core facts and contradictions), reviews (:mod:`.review`) and
   governance (:mod:`.governance`: principals, keys, policy, core-fact protection, grants) and the
   gateways' bearer tokens (:mod:`.tokens`).

Every decision names the gate version and the policy version it used.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from memwarden.commands.contradiction import DEFAULT_CLAIMS, ClaimExtractor
from memwarden.commands.gate.effects import Decision, reject
from memwarden.commands.gate.forgetting import decide_forget, decide_forget_many, decide_hold
from memwarden.commands.gate.governance import decide_governance
from memwarden.commands.gate.review import decide_approve, decide_reject
from memwarden.commands.gate.state import GateLimits, GateState, Outcome
from memwarden.commands.gate.tokens import decide_token
from memwarden.commands.gate.writes import decide_write
from memwarden.commands.injection import DEFAULT_DETECTOR, InstructionDetector
from memwarden.commands.ledger import Position
from memwarden.commands.model import (
    ApproveQuarantined,
    Command,
    ForgetMatching,
    ForgetMemory,
    ForgetSubject,
    IssueToken,
    LiftHold,
    PlaceHold,
    PublishPolicy,
    RecordMemory,
    RejectQuarantined,
    RevokeToken,
    SupersedeMemory,
)
from memwarden.commands.principals import PrincipalRecord, check_signature, kind_from_id
from memwarden.commands.reasons import Reason

#: Content limits when none are given.
DEFAULT_LIMITS = GateLimits()
#: How far in the future an observed time may lie (clock skew allowance).
MAX_FUTURE_SKEW = timedelta(minutes=5)


def decide(
    command: Command,
    plaintext: str | None,
    position: Position,
    state: GateState,
    now: datetime,
    limits: GateLimits = DEFAULT_LIMITS,
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
        state: governed state (see :class:`~memwarden.commands.gate.state.GateState`).
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
    if decision.policy_version != state.policy.label and not isinstance(command, PublishPolicy):
        return replace(decision, policy_version=state.policy.label)
    return decision


def _decide(command: Command, plaintext: str | None, position: Position, state: GateState, now: datetime,
            limits: GateLimits, signed_bytes: bytes | None, content_digest: str | None, verify_signatures: bool,
            detector: InstructionDetector, claims: ClaimExtractor) -> Decision:
    env = command.envelope
    if state.prior is not None and state.prior.position != position:
        return Decision(Outcome.DUPLICATE, (Reason("DUPLICATE_COMMAND_ID", "command id already decided at offset "
                                                   f"{state.prior.position.offset}", "envelope.command_id"),))
    if verify_signatures:
        problem = check_signature(command, signed_bytes, state.principals)
        if problem is not None:
            return reject(problem.code, problem.message, "envelope.signature")
    if env.observed_at > now + MAX_FUTURE_SKEW:
        return reject("OBSERVED_IN_FUTURE", "observed_at lies in the future", "envelope.observed_at")
    if env.expires_at is not None and env.expires_at <= env.valid_from:
        return reject("EXPIRES_BEFORE_VALID", "expires_at is not after the start of validity", "envelope.expires_at")
    issuer = state.principals.get(env.principal) or PrincipalRecord(env.principal, kind_from_id(env.principal))
    if isinstance(command, RecordMemory | SupersedeMemory):
        return decide_write(command, plaintext, issuer, state, now, limits, content_digest, detector, claims)
    if isinstance(command, ForgetMemory):
        return decide_forget(command, issuer, state)
    if isinstance(command, ForgetMatching | ForgetSubject):
        return decide_forget_many(command, issuer, state, now)
    if isinstance(command, PlaceHold | LiftHold):
        return decide_hold(command, issuer, state)
    if isinstance(command, ApproveQuarantined):
        return decide_approve(command, issuer, state, now, limits, detector, claims)
    if isinstance(command, RejectQuarantined):
        return decide_reject(command, issuer, state)
    if isinstance(command, IssueToken | RevokeToken):
        return decide_token(command, issuer, state, now)
    return decide_governance(command, issuer, state, now)
