"""Request bodies of the REST API: pydantic models that refuse unknown fields, take strict strings,
integers and booleans (``"k": "5"`` is a wrong type, not 5), timezone-aware times only (a naive time
names its field), and bound every list and text. A body that breaks any of it is a 400 naming the
field (:mod:`memwarden.api.errors`) and nothing is published.

``principal`` may be given in any body; it must then be the token's principal (else 403
``PRINCIPAL_MISMATCH``): a token acts for one principal only. Envelope fields have the client's
defaults (:data:`memwarden.producers.building.ENVELOPE_DEFAULTS`)."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    field_validator,
)

from memwarden.commands.envelope import storable_text
from memwarden.commands.readmodel.query import DEFAULT_PURPOSE, MAX_K, MAX_QUERY_CHARS
from memwarden.commands.readmodel.recency import CURRENT_WEIGHT, MAX_RECENCY, check_recency
from memwarden.commands.vocabulary import EpistemicStatus, FactCardinality, Right, Sensitivity, SourceKind, StoreKind

#: A name as every store keeps it: 1 to 256 characters, valid UTF-8, no NUL (what the command models require,
#: checked before a path or body value reaches a lookup in PostgreSQL).
Name = Annotated[StrictStr, Field(min_length=1, max_length=256), AfterValidator(storable_text)]
Names = Annotated[list[Name], Field(max_length=64)]
Reason = Annotated[StrictStr, Field(max_length=1000)]


class Body(BaseModel):
    """Base of every body: unknown fields refused, frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class FactBody(Body):
    """A typed fact (entity, attribute, value); the server seals the value with the memory's data key."""

    entity: Name
    attribute: Name
    value: Annotated[StrictStr, Field(min_length=1, max_length=4096)]
    cardinality: FactCardinality = FactCardinality.SINGLE


class EnvelopeBody(Body):
    """The write envelope a caller may set (seed 004 "The write boundary"); the rest is the server's:
    command id (unless given, for an idempotent retry), issue time, signature, gateway attributes."""

    principal: Name | None = Field(None, description="must be the token's principal when given")
    subject: Name | None = Field(None, description="whom the memory concerns (default: the principal)")
    scope: Name = "account:default"
    store_kind: StoreKind = StoreKind.PROFILE
    source_kind: SourceKind = SourceKind.USER_STATEMENT
    source_ref: Annotated[StrictStr, Field(min_length=1, max_length=1024)] | None = None
    source_uri: Annotated[StrictStr, Field(min_length=1, max_length=4096)] | None = None
    derived_from: Annotated[list[UUID], Field(max_length=64)] = []
    quoted_span: Annotated[StrictStr, Field(min_length=1, max_length=20_000)] | None = None
    observed_at: AwareDatetime | None = None
    effective_from: AwareDatetime | None = None
    effective_to: AwareDatetime | None = None
    expires_at: AwareDatetime | None = None
    epistemic_status: EpistemicStatus = EpistemicStatus.QUOTED
    sensitivity: Sensitivity = Sensitivity.INTERNAL
    purposes: Names = []
    command_id: UUID | None = Field(None, description="idempotency key: a retry with the same id is a DUPLICATE")


class RecordBody(EnvelopeBody):
    """``POST /v1/memories``: a new memory (its text, optional id, typed fact, tags, and the memory it
    follows in its conversation)."""

    text: Annotated[StrictStr, Field(min_length=1)]
    memory_id: UUID | None = None
    fact: FactBody | None = None
    tags: Names = []
    follows: UUID | None = Field(None, description="the memory this one follows in its conversation (the previous "
                                 "turn): ranking context for hybrid recall, never lineage nor access")


class SupersedeBody(EnvelopeBody):
    """``POST /v1/memories/{id}/supersede``: a new version (the prior one closes), with evidence."""

    text: Annotated[StrictStr, Field(min_length=1)]
    fact: FactBody | None = None
    evidence: Annotated[list[Annotated[StrictStr, Field(min_length=1, max_length=4096)]], Field(max_length=16)] = []


class RecallBody(Body):
    """``POST /v1/recall``: SSGM Eq. 5's ``recall(principal, query, k, as_of, known_at, purpose)``."""

    principal: Name | None = None
    query: Annotated[StrictStr, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
    k: Annotated[StrictInt, Field(ge=1, le=MAX_K)] = 10
    as_of: AwareDatetime | None = None
    known_at: AwareDatetime | None = None
    purpose: Name = DEFAULT_PURPOSE
    mode: Literal["hybrid", "dense", "lexical"] = "hybrid"
    include_untrusted: StrictBool = False
    freshness: StrictBool = True
    min_score: Annotated[float, Field(ge=0.0, le=1.0, strict=False, description=(
        "relevance floor in [0, 1] (same scale for every query; 0 = none, 0.35 recommended): memories whose "
        "relevance is below it are dropped and counted in below_floor"))] = 0.0
    recency: Annotated[float | None, Field(description=(
        f"weight of recency in the ranking, in [0, {MAX_RECENCY:g}]: each candidate's score times "
        "1 + recency x rank / (n - 1), rank = its validity start's rank among the n distinct ones of the "
        f"candidates (0 = oldest); null = {CURRENT_WEIGHT:g} when the query asks for a current, latest or final "
        "value, else 0"))] = None
    repeats: StrictBool = Field(True, description=(
        "hybrid mode: move memories whose words nearly repeat a better-ranked one's behind the others "
        "(false: rank order)"))
    decompose: StrictBool = Field(True, description=(
        "hybrid mode: a question that enumerates what it asks for ('the current date, amount, and blocker') "
        "is recalled once per part and the part rankings are merged in turn (false: one ranking)"))

    @field_validator("recency", mode="before")
    @classmethod
    def _recency(cls, value: object) -> object:
        check_recency(value)  # type: ignore[arg-type]
        return value

    @field_validator("min_score", mode="before")
    @classmethod
    def _a_number(cls, value: object) -> object:
        # a JSON number only ("0.3" and true were taken as 0.3 and 1.0 while "k": "5" was refused)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"must be a number in [0, 1], got {value!r}")
        return value

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class GrantBody(Body):
    """``POST /v1/grants``: an ABAC grant by the token's principal (its own memories, unless admin)."""

    principal: Name | None = None
    grant_id: Name | None = None
    grantee: Name
    rights: Annotated[list[Right], Field(min_length=1, max_length=8)]
    scopes: Annotated[list[Name], Field(min_length=1, max_length=64)]
    subjects: Names = []
    purposes: Names = []
    store_kinds: Annotated[list[StoreKind], Field(max_length=8)] = []
    sensitivity_ceiling: Sensitivity = Sensitivity.INTERNAL
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None
    relationship: Name | None = None


class ForgetBody(Body):
    """``POST /v1/forget``: ``subject`` alone forgets everything about it (the right to erasure);
    otherwise every memory matching all the criteria given (AND across, OR within a list) that the
    principal may forget, with derivatives when ``cascade``; ``query`` is resolved by a read, never
    sent to the ledger. ``dry_run`` lists and forgets nothing. No criterion at all is refused."""

    principal: Name | None = None
    subject: Name | None = None
    subjects: Names = []
    scopes: Names = []
    source_references: Names = []
    writers: Names = []
    key_ids: Names = []
    tags: Names = []
    memory_ids: Annotated[list[UUID], Field(max_length=1000)] = []
    observed_from: AwareDatetime | None = None
    observed_to: AwareDatetime | None = None
    admitted_from: AwareDatetime | None = None
    admitted_to: AwareDatetime | None = None
    query: Annotated[StrictStr, Field(min_length=1, max_length=MAX_QUERY_CHARS)] | None = None
    purposes: Names = Field([], description="the purposes the query is also read for (a memory tagged with "
                            "purposes is read only for one of them); the default purpose always")
    reason: Reason = ""
    dry_run: StrictBool = False
    cascade: StrictBool = True

    def criteria(self) -> bool:
        """Whether any selector criterion besides ``subject`` is given."""
        return any((self.subjects, self.scopes, self.source_references, self.writers, self.key_ids, self.tags,
                    self.memory_ids, self.observed_from, self.observed_to, self.admitted_from, self.admitted_to,
                    self.query))


__all__ = ["EnvelopeBody", "FactBody", "ForgetBody", "GrantBody", "RecallBody", "RecordBody", "SupersedeBody"]
