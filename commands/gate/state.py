"""What the write gate reads: the governed state of SSGM Eq. 6 (``M_core``, the registry, policy,
grants, live memories, claims, quarantine) and the outcome vocabulary. Plain frozen data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from memwarden.commands.attribution import SourceRecord
from memwarden.commands.contradiction import Claim
from memwarden.commands.facts import FactKey, FactState
from memwarden.commands.ledger import Position
from memwarden.commands.model import Command
from memwarden.commands.policy import WritePolicy, default_policy
from memwarden.commands.principals import PrincipalRecord
from memwarden.commands.readmodel.permission import Grant
from memwarden.commands.tokens import TokenState

GATE_VERSION = "gate/0.2.0"


class Outcome(StrEnum):
    """What the gate decided for one command (``GateDecided.outcome``)."""

    ACCEPTED = "ACCEPTED"
    ACCEPTED_UNVERIFIED = "ACCEPTED_UNVERIFIED"
    QUARANTINED = "QUARANTINED"
    REJECTED = "REJECTED"
    DUPLICATE = "DUPLICATE"
    DEFERRED = "DEFERRED"


ADMITTED = frozenset({Outcome.ACCEPTED, Outcome.ACCEPTED_UNVERIFIED})


@dataclass(frozen=True)
class MemoryState:
    """What the gate knows of one memory id: subject, owner (writing principal), live or forgotten,
    its current version number, scope, the fact slot it holds (if any) and the data-key ids of all
    its versions (shredded by a forget). For forgetting by selector and lineage (issue 14):
    ``store_kind``, ``tags`` and ``observed_ms`` / ``expires_ms`` (UTC epoch ms) of the current
    version; ``sources`` (source references), ``writers`` (principals) and ``signer_keys`` (signing
    key ids) of every version; ``derived_from`` the memory ids its versions cite; ``admitted_ms``
    when the gate admitted the current version (its decision's clock; what a writer cannot back-date);
    ``sensitivity`` of the current version (a ``FORGET`` grant covers it up to its ceiling)."""

    memory_id: str
    subject: str
    owner: str
    version: int
    forgotten: bool = False
    scope: str = ""
    fact: FactKey | None = None
    key_ids: tuple[str, ...] = ()
    store_kind: str = "PROFILE"
    tags: tuple[str, ...] = ()
    observed_ms: int = 0
    expires_ms: int | None = None
    sources: tuple[str, ...] = ()
    writers: tuple[str, ...] = ()
    signer_keys: tuple[str, ...] = ()
    derived_from: tuple[str, ...] = ()
    admitted_ms: int = 0
    sensitivity: str = "INTERNAL"


@dataclass(frozen=True)
class HoldState:
    """A legal hold: the subjects and scopes it covers, and whether it is still in force."""

    hold_id: str
    subjects: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    active: bool = True

    def covers(self, memory: MemoryState) -> bool:
        """Whether this hold, while in force, keeps ``memory`` from being forgotten."""
        return self.active and (memory.subject in self.subjects or memory.scope in self.scopes)


@dataclass(frozen=True)
class DeferredForget:
    """A forget waiting for legal holds: the forget command, who issued it, why, and the memories
    it still has to forget when no hold covers them any more."""

    command_id: str
    principal: str
    reason: str
    memory_ids: tuple[str, ...]


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

    ``prior``: the decision already taken for this command id, if any. ``memories``: referenced
    memories by id. ``principals``: the registry, trust anchor included. ``policy``: write policy in
    force. ``grants``: ABAC grants. ``facts``: current single-valued fact slots. ``protected``:
    protected core slots (M_core). ``claims``: claims of live memories by (subject, key digest).
    ``twins``: live memory id by keyed content digest (the subject is inside the digest).
    ``quarantine``: reviews by command id. ``sources``: cited source records of derived commands.
    ``review_target``: for ``ApproveQuarantined``, the quarantined command, its plaintext and digest.
    ``holds``: legal holds by id. ``deferred``: forgets waiting for holds, by command id.
    ``tokens``: gateway bearer tokens by token id (the ones the batch names, by id or hash).
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
    holds: Mapping[str, HoldState] = field(default_factory=dict)
    deferred: Mapping[str, DeferredForget] = field(default_factory=dict)
    tokens: Mapping[str, TokenState] = field(default_factory=dict)


@dataclass(frozen=True)
class GateLimits:
    """Content limits and write policy switches: ``max_text_chars`` in characters; ``hearsay_suspicion``:
    a user statement recorded by a principal other than its subject (an agent writing down what the user
    said) that the detector only suspects is tagged untrusted like a tool result (off by default; seed 004:
    "anything that can expand capabilities should require stronger evidence")."""

    max_text_chars: int = 20_000
    hearsay_suspicion: bool = False
