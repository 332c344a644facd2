"""The write gate G_write (SSGM Eq. 6) as a pure function: ``decide(input, state, now) -> Decision``.

No Kafka, Faust, psycopg or Qdrant here: the processor loads the governed state, calls
:func:`decide`, stores and publishes the result (STYLE habits 2 and 3). A refusal is a decision,
never an exception (habit 4).

Walking-skeleton rules (later issues add signatures, authority, risk tiers and contradiction):
idempotency by command id; the content must be readable (its data key exists), non-empty and within
the size limit; a supersede or forget must name a known, live memory of the same subject, written by
the same principal (owner-only); a new memory id must be new.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum

from memwarden.commands.model import Command, ForgetMemory, RecordMemory, SupersedeMemory

GATE_VERSION = "gate/0.1.0"
POLICY_VERSION = "owner-only/1"
#: How far in the future an observed time may lie (clock skew allowance).
MAX_FUTURE_SKEW = timedelta(minutes=5)


class Outcome(StrEnum):
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
    and its current version number."""

    memory_id: str
    subject: str
    owner: str
    version: int
    forgotten: bool = False


@dataclass(frozen=True)
class PriorDecision:
    """A decision already taken for this command id, and where that command sat on the ledger."""

    outcome: Outcome
    position: Position


@dataclass(frozen=True)
class GateState:
    """Governed state the gate reads: the prior decision for the command id (if any) and the
    memories the command refers to, by memory id."""

    prior: PriorDecision | None = None
    memories: Mapping[str, MemoryState] = field(default_factory=dict)


@dataclass(frozen=True)
class GateLimits:
    """Content limits: ``max_text_chars`` in characters."""

    max_text_chars: int = 20_000


@dataclass(frozen=True)
class Decision:
    """Outcome and reasons for one command; ``memory`` is the memory state after the command
    (``None`` when nothing changes), ``version`` the memory version it creates (0 for none)."""

    outcome: Outcome
    reasons: tuple[Reason, ...]
    memory: MemoryState | None = None
    version: int = 0
    gate_version: str = GATE_VERSION
    policy_version: str = POLICY_VERSION

    @property
    def admitted(self) -> bool:
        return self.outcome in ADMITTED


def _reject(code: str, message: str, field_: str | None = None) -> Decision:
    return Decision(Outcome.REJECTED, (Reason(code, message, field_),))


def decide(
    command: Command,
    plaintext: str | None,
    position: Position,
    state: GateState,
    now: datetime,
    limits: GateLimits = GateLimits(),
) -> Decision:
    """Decide one decoded, schema-valid command (SSGM Eq. 6: admit ΔM or nothing).

    Args:
        command: the command model.
        plaintext: decrypted memory text, or ``None`` when the data key is unavailable (or the
            command carries no content, as ``ForgetMemory``).
        position: where the command sits on the ledger.
        state: prior decision for the command id and the referenced memories.
        now: the gate's clock (UTC, aware).
        limits: content limits.
    Returns:
        A ``Decision``; never raises for any valid command.
    """
    env = command.envelope
    if state.prior is not None and state.prior.position != position:
        return Decision(
            Outcome.DUPLICATE,
            (Reason("DUPLICATE_COMMAND_ID", f"command id already decided at offset {state.prior.position.offset}",
                    "envelope.command_id"),),
        )
    if env.observed_at > now + MAX_FUTURE_SKEW:
        return _reject("OBSERVED_IN_FUTURE", "observed_at lies in the future", "envelope.observed_at")
    if env.expires_at is not None and env.expires_at <= env.valid_from:
        return _reject("EXPIRES_BEFORE_VALID", "expires_at is not after the start of validity", "envelope.expires_at")

    if isinstance(command, ForgetMemory):
        return _decide_forget(command, state)
    problem = _check_text(plaintext, limits)
    if problem is not None:
        return problem
    if isinstance(command, RecordMemory):
        if command.memory_id in state.memories:
            return _reject("MEMORY_ID_EXISTS", "memory id already recorded; use SupersedeMemory", "memory_id")
        memory = MemoryState(command.memory_id, env.subject, env.principal, 1)
        return Decision(Outcome.ACCEPTED, (Reason("OK", "accepted"),), memory=memory, version=1)
    return _decide_supersede(command, state)


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


def _live_target(memory_id: str, command: Command, state: GateState) -> MemoryState | Decision:
    target = state.memories.get(memory_id)
    env = command.envelope
    if target is None:
        return _reject("UNKNOWN_MEMORY", f"no memory {memory_id}", "memory_id")
    if target.forgotten:
        return _reject("MEMORY_FORGOTTEN", f"memory {memory_id} was forgotten", "memory_id")
    if target.subject != env.subject:
        return _reject("SUBJECT_MISMATCH", "memory belongs to another subject", "envelope.subject")
    if env.principal not in (target.owner, target.subject):
        return _reject("NOT_OWNER", "only the owner or the subject may change this memory", "envelope.principal")
    return target


def _decide_supersede(command: SupersedeMemory, state: GateState) -> Decision:
    target = _live_target(command.memory_id, command, state)
    if isinstance(target, Decision):
        return target
    memory = replace(target, version=target.version + 1)
    return Decision(Outcome.ACCEPTED, (Reason("OK", "accepted"),), memory=memory, version=memory.version)


def _decide_forget(command: ForgetMemory, state: GateState) -> Decision:
    target = state.memories.get(command.memory_id)
    if target is not None and target.forgotten:
        return Decision(Outcome.ACCEPTED, (Reason("ALREADY_FORGOTTEN", "memory was already forgotten"),))
    live = _live_target(command.memory_id, command, state)
    if isinstance(live, Decision):
        return live
    return Decision(Outcome.ACCEPTED, (Reason("OK", "accepted"),), memory=replace(live, forgotten=True))
