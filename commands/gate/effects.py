"""What a gate decision says: the outcome, its reasons, and the governed-state changes (effects) that
:func:`memwarden.commands.gate.evolve.evolve` applies and the processor persists. Plain frozen data."""

from __future__ import annotations

from dataclasses import dataclass

from memwarden.commands.facts import FactKey, FactState
from memwarden.commands.gate.state import (
    ADMITTED,
    GATE_VERSION,
    ClaimState,
    DeferredForget,
    HoldState,
    MemoryState,
    Outcome,
    QuarantineState,
)
from memwarden.commands.model import Command
from memwarden.commands.policy import WritePolicy
from memwarden.commands.principals import PrincipalRecord
from memwarden.commands.readmodel.permission import Grant
from memwarden.commands.reasons import Reason
from memwarden.commands.tokens import TokenState


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


@dataclass(frozen=True)
class HoldSet:
    """Place or lift a legal hold (``state.active``)."""

    state: HoldState


@dataclass(frozen=True)
class DeferredSet:
    """Keep a forget waiting for holds (``memory_ids`` it still has to forget), or drop it when
    ``forget.memory_ids`` is empty."""

    forget: DeferredForget


@dataclass(frozen=True)
class TokenSet:
    """Store a gateway token, or its revocation (``state.revoked_at_ms`` set)."""

    state: TokenState


Effect = (PrincipalUpsert | PolicySet | GrantUpsert | ProtectionSet | MemoryFacts | MemoryCleared | QuarantineSet
          | HoldSet | DeferredSet | TokenSet)


@dataclass(frozen=True)
class Forgotten:
    """One memory a decision forgets beside ``Decision.memory``: its state after the forget and the
    forget command it carries out (the decision's own command, or a forget a legal hold deferred)."""

    memory: MemoryState
    command_id: str
    principal: str
    reason: str


@dataclass(frozen=True)
class Decision:
    """Outcome and reasons for one command; ``memory`` is the memory state after the command
    (``None`` when no memory changes), ``version`` the memory version it creates (0 for none),
    ``closes`` memories it supersedes automatically, ``effects`` governed-state changes,
    ``tags`` extra tags (``untrusted``), ``shred`` every data-key id to tombstone (the gate is the
    one owner of shredding: projectors only apply), ``released`` the command a reviewer released
    from quarantine (with the reviewer), ``forgets`` the memories forgotten beside ``memory``
    (derivatives, selector matches, forgets released by a lifted hold), ``listed`` the memory ids
    ``GateDecided.memory_ids`` names (what was forgotten, or what a dry run would forget), ``deferred``
    the memories a legal hold keeps waiting (``GateDecided.deferred_ids``)."""

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
    forgets: tuple[Forgotten, ...] = ()
    listed: tuple[str, ...] = ()
    deferred: tuple[str, ...] = ()

    @property
    def admitted(self) -> bool:
        """Whether the command changes memory (ACCEPTED or ACCEPTED_UNVERIFIED)."""
        return self.outcome in ADMITTED


def reject(code: str, message: str, field: str | None = None) -> Decision:
    """A ``REJECTED`` decision with one reason."""
    return Decision(Outcome.REJECTED, (Reason(code, message, field),))


def accept(*effects: Effect, message: str = "accepted") -> Decision:
    """An ``ACCEPTED`` decision (reason ``OK``) carrying ``effects``."""
    return Decision(Outcome.ACCEPTED, (Reason("OK", message),), effects=tuple(effects))
