"""The write envelope every command carries (DESIGN.md "The write envelope"; seed 004 "The write
boundary is the first safety boundary"): principal and subject, provenance, scope, times, epistemic
status, sensitivity and purposes, supersession link, write authority, signature; and the encrypted
content and typed fact of memory writes. Frozen pydantic models; times are timezone-aware and
normalised to UTC at millisecond precision (field case W8), exactly what Avro ``timestamp-millis``
stores."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from memwarden.commands.vocabulary import EpistemicStatus, FactCardinality, Sensitivity, SourceKind, StoreKind


def storable_text(value: str) -> str:
    """``value`` when it is text every store keeps: valid UTF-8 and no NUL character (PostgreSQL's ``text``
    refuses U+0000, so a command carrying one would stop the gate's batch on every redelivery)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"not valid UTF-8 (lone surrogate at index {exc.start})") from None
    if "\x00" in value:
        raise ValueError(f"contains a NUL character (U+0000) at index {value.index(chr(0))}")
    return value


def _nonblank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _uuid_text(value: object) -> object:
    """A ``uuid.UUID`` given where an id is expected is its canonical text (field case F1)."""
    return str(value) if isinstance(value, uuid.UUID) else value


def _uuid(value: str) -> str:
    try:
        return str(uuid.UUID(value))
    except (ValueError, AttributeError, TypeError):
        raise ValueError("must be a UUID") from None


def _utc_ms(value: datetime) -> datetime:
    value = value.astimezone(UTC)
    return value.replace(microsecond=(value.microsecond // 1000) * 1000)


Text = Annotated[str, AfterValidator(storable_text)]
Name = Annotated[str, AfterValidator(storable_text), AfterValidator(_nonblank), Field(max_length=256)]
Uuid = Annotated[str, BeforeValidator(_uuid_text), AfterValidator(_uuid)]
UtcTime = Annotated[AwareDatetime, AfterValidator(_utc_ms)]


class FrozenModel(BaseModel):
    """Base of every command and envelope model: frozen, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_enum_values=False)


class Source(FrozenModel):
    """Provenance: kind, reference inside the source, URI, lineage, quoted span."""

    kind: SourceKind
    reference: Text | None = Field(default=None, max_length=1024)
    uri: Text | None = Field(default=None, max_length=4096)
    derived_from: tuple[Uuid, ...] = ()
    quoted_span: Text | None = Field(default=None, max_length=20_000)


class WriteAuthority(FrozenModel):
    """The policy (and optional grant or approver) that allowed the write."""

    policy_id: Name
    policy_version: Text | None = None
    grant_id: Text | None = None
    approved_by: Text | None = None


class Signature(FrozenModel):
    """Ed25519 signature over the canonical Avro bytes of the command with ``signature`` null."""

    key_id: Name
    algorithm: Literal["Ed25519"] = "Ed25519"
    value: bytes


class Envelope(FrozenModel):
    """The write envelope (seed 004): who, about whom, from where, in which scope, when, how sure,
    how sensitive, for which purposes, superseding what, under which authority, signed how."""

    command_id: Uuid
    principal: Name
    subject: Name
    source: Source
    scope: Name
    store_kind: StoreKind = StoreKind.PROFILE
    observed_at: UtcTime
    issued_at: UtcTime
    effective_from: UtcTime | None = None
    effective_to: UtcTime | None = None
    expires_at: UtcTime | None = None
    last_verified_at: UtcTime | None = None
    epistemic_status: EpistemicStatus = EpistemicStatus.QUOTED
    sensitivity: Sensitivity = Sensitivity.INTERNAL
    purposes: tuple[Name, ...] = ()
    supersedes: Uuid | None = None
    write_authority: WriteAuthority | None = None
    attributes: dict[Name, Text] = Field(default_factory=dict)
    signature: Signature | None = None

    @model_validator(mode="after")
    def _interval_is_ordered(self) -> Envelope:
        start = self.effective_from or self.observed_at
        if self.effective_to is not None and self.effective_to <= start:
            raise ValueError("effective_to: must be later than effective_from (or observed_at)")
        return self

    @property
    def valid_from(self) -> datetime:
        """Start of the validity interval: ``effective_from`` or else ``observed_at``."""
        return self.effective_from or self.observed_at


class EncryptedContent(FrozenModel):
    """AES-256-GCM ciphertext of the memory text under the per-record data key ``key_id``."""

    key_id: Uuid
    algorithm: Literal["AES-256-GCM"] = "AES-256-GCM"
    nonce: bytes = Field(min_length=12, max_length=12)
    ciphertext: bytes = Field(min_length=16)


class Fact(FrozenModel):
    """Typed fact (entity, attribute, value) with the attribute's cardinality.

    On the ledger the value is sealed (``value_nonce``, ``value_sealed``: AES-256-GCM under the
    content's data key, :func:`memwarden.crypto.seal_fact_value`) and ``value`` is empty; a record of
    an older writer carries ``value`` in clear. Entity and attribute stay in clear (slot names)."""

    entity: Name
    attribute: Name
    value: Annotated[Text, Field(max_length=4096)]
    cardinality: FactCardinality = FactCardinality.SINGLE
    value_nonce: bytes | None = Field(default=None, min_length=12, max_length=12)
    value_sealed: bytes | None = Field(default=None, min_length=16, max_length=4 * 4096 + 16)

    @model_validator(mode="after")
    def _sealed_or_clear(self) -> Fact:
        if (self.value_nonce is None) != (self.value_sealed is None):
            raise ValueError("value_sealed: needs value_nonce (and the other way round)")
        if self.value_sealed is not None and self.value:
            raise ValueError("value: must be empty when the value is sealed")
        return self

    @property
    def sealed(self) -> bool:
        """The value is sealed (not yet opened)."""
        return self.value_sealed is not None
