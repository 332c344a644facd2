"""Commands of the memory ledger as frozen pydantic models, and their explicit Avro mappers.

Commands are imperative (``RecordMemory``, ``SupersedeMemory``, ``ForgetMemory``); every one carries
the write ``Envelope`` of DESIGN.md / seed 004 "The write boundary is the first safety boundary".
Times are timezone-aware and normalised to UTC at millisecond precision (field case W8), so what is
validated here is exactly what Avro ``timestamp-millis`` stores.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, model_validator


def _utf8(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"not valid UTF-8 (lone surrogate at index {exc.start})") from None
    return value


def _nonblank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _uuid(value: str) -> str:
    try:
        return str(uuid.UUID(value))
    except (ValueError, AttributeError, TypeError):
        raise ValueError("must be a UUID") from None


def _utc_ms(value: datetime) -> datetime:
    value = value.astimezone(UTC)
    return value.replace(microsecond=(value.microsecond // 1000) * 1000)


Text = Annotated[str, AfterValidator(_utf8)]
Name = Annotated[str, AfterValidator(_utf8), AfterValidator(_nonblank), Field(max_length=256)]
Uuid = Annotated[str, AfterValidator(_uuid)]
UtcTime = Annotated[AwareDatetime, AfterValidator(_utc_ms)]


class SourceKind(StrEnum):
    """Where a memory came from; the last four are untrusted content (seed 004)."""

    USER_STATEMENT = "USER_STATEMENT"
    OBSERVED_TOOL_RESULT = "OBSERVED_TOOL_RESULT"
    IMPORTED_RECORD = "IMPORTED_RECORD"
    MODEL_INFERENCE = "MODEL_INFERENCE"
    APPROVED_RULE = "APPROVED_RULE"
    WEB_CONTENT = "WEB_CONTENT"
    EMAIL_CONTENT = "EMAIL_CONTENT"
    DOCUMENT_CONTENT = "DOCUMENT_CONTENT"
    TOOL_TEXT = "TOOL_TEXT"


class EpistemicStatus(StrEnum):
    """How sure the record is: quoted (attributed), observed, inferred, confirmed, disputed, revoked."""

    QUOTED = "QUOTED"
    OBSERVED = "OBSERVED"
    INFERRED = "INFERRED"
    CONFIRMED = "CONFIRMED"
    DISPUTED = "DISPUTED"
    REVOKED = "REVOKED"


class Sensitivity(StrEnum):
    """Sensitivity levels, least to most sensitive."""

    PUBLIC = "PUBLIC"
    INTERNAL = "INTERNAL"
    CONFIDENTIAL = "CONFIDENTIAL"
    RESTRICTED = "RESTRICTED"


class StoreKind(StrEnum):
    """The stores of seed 004: profile, experience, procedure, event."""

    PROFILE = "PROFILE"
    EXPERIENCE = "EXPERIENCE"
    PROCEDURE = "PROCEDURE"
    EVENT = "EVENT"


class FactCardinality(StrEnum):
    """Whether an attribute holds one value (contradictions possible) or many."""

    SINGLE = "SINGLE"
    MULTI = "MULTI"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_enum_values=False)


class Source(_Frozen):
    """Provenance: kind, reference inside the source, URI, lineage, quoted span."""

    kind: SourceKind
    reference: Text | None = Field(default=None, max_length=1024)
    uri: Text | None = Field(default=None, max_length=4096)
    derived_from: tuple[Uuid, ...] = ()
    quoted_span: Text | None = Field(default=None, max_length=20_000)


class WriteAuthority(_Frozen):
    """The policy (and optional grant or approver) that allowed the write."""

    policy_id: Name
    policy_version: Text | None = None
    grant_id: Text | None = None
    approved_by: Text | None = None


class Signature(_Frozen):
    """Ed25519 signature over the canonical Avro bytes of the command with ``signature`` null."""

    key_id: Name
    algorithm: Literal["Ed25519"] = "Ed25519"
    value: bytes


class Envelope(_Frozen):
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


class EncryptedContent(_Frozen):
    """AES-256-GCM ciphertext of the memory text under the per-record data key ``key_id``."""

    key_id: Uuid
    algorithm: Literal["AES-256-GCM"] = "AES-256-GCM"
    nonce: bytes = Field(min_length=12, max_length=12)
    ciphertext: bytes = Field(min_length=16)


class Fact(_Frozen):
    """Typed fact (entity, attribute, value) with the attribute's cardinality."""

    entity: Name
    attribute: Name
    value: Annotated[str, AfterValidator(_utf8), Field(max_length=4096)]
    cardinality: FactCardinality = FactCardinality.SINGLE


class RecordMemory(_Frozen):
    """Command: persist a new memory (version 1 of ``memory_id``)."""

    kind: Literal["RecordMemory"] = "RecordMemory"
    envelope: Envelope
    memory_id: Uuid
    content: EncryptedContent
    fact: Fact | None = None
    tags: tuple[Name, ...] = ()


class SupersedeMemory(_Frozen):
    """Command: a new version of the memory ``envelope.supersedes``; the prior version closes."""

    kind: Literal["SupersedeMemory"] = "SupersedeMemory"
    envelope: Envelope
    content: EncryptedContent
    fact: Fact | None = None
    evidence: tuple[Text, ...] = ()

    @model_validator(mode="after")
    def _names_target(self) -> SupersedeMemory:
        if self.envelope.supersedes is None:
            raise ValueError("envelope.supersedes: required for SupersedeMemory")
        return self

    @property
    def memory_id(self) -> str:
        """The memory receiving a new version (``envelope.supersedes``)."""
        assert self.envelope.supersedes is not None
        return self.envelope.supersedes


class ForgetMemory(_Frozen):
    """Command: forget every version of ``memory_id``."""

    kind: Literal["ForgetMemory"] = "ForgetMemory"
    envelope: Envelope
    memory_id: Uuid
    reason: Text = ""


class PrincipalKind(StrEnum):
    """Kinds of principals (issue 3)."""

    USER = "USER"
    AGENT = "AGENT"
    SERVICE = "SERVICE"
    REVIEWER = "REVIEWER"


class Right(StrEnum):
    """What a grant allows on the records it covers (issue 4 ABAC)."""

    READ = "READ"
    WRITE = "WRITE"


class PublicKey(_Frozen):
    """A raw 32-byte Ed25519 public key and its id."""

    key_id: Name
    algorithm: Literal["Ed25519"] = "Ed25519"
    public_key: bytes = Field(min_length=32, max_length=32)


class RegisterPrincipal(_Frozen):
    """Command (admin): register ``principal_id`` with kind, roles, attributes and its first key."""

    kind: Literal["RegisterPrincipal"] = "RegisterPrincipal"
    envelope: Envelope
    principal_id: Name
    principal_kind: PrincipalKind = PrincipalKind.USER
    roles: tuple[Name, ...] = ()
    attributes: dict[Name, Text] = Field(default_factory=dict)
    key: PublicKey


class RotateKey(_Frozen):
    """Command: a new signing key for ``principal_id`` (by the principal itself or an admin)."""

    kind: Literal["RotateKey"] = "RotateKey"
    envelope: Envelope
    principal_id: Name
    key: PublicKey


class RevokeKey(_Frozen):
    """Command: revoke ``key_id`` of ``principal_id`` at once."""

    kind: Literal["RevokeKey"] = "RevokeKey"
    envelope: Envelope
    principal_id: Name
    key_id: Name
    reason: Text = ""


class PublishPolicy(_Frozen):
    """Command (admin): version ``version`` of the write-authority policy ``policy_id`` (JSON text)."""

    kind: Literal["PublishPolicy"] = "PublishPolicy"
    envelope: Envelope
    policy_id: Name
    version: int = Field(ge=1)
    document: Annotated[str, AfterValidator(_utf8), Field(max_length=1_000_000)]


class ProtectFact(_Frozen):
    """Command: mark the subject's ``(entity, attribute)`` as protected core fact (M_core, Eq. 6)."""

    kind: Literal["ProtectFact"] = "ProtectFact"
    envelope: Envelope
    entity: Name
    attribute: Name
    protected: bool = True


class ApproveQuarantined(_Frozen):
    """Command (reviewer): admit the quarantined memory command ``quarantined_command_id``."""

    kind: Literal["ApproveQuarantined"] = "ApproveQuarantined"
    envelope: Envelope
    quarantined_command_id: Uuid
    note: Text = ""


class RejectQuarantined(_Frozen):
    """Command (reviewer): reject the quarantined memory command; its data key is shredded."""

    kind: Literal["RejectQuarantined"] = "RejectQuarantined"
    envelope: Envelope
    quarantined_command_id: Uuid
    note: Text = ""


class GrantAccess(_Frozen):
    """Command: an ABAC grant (issue 4). ``grantee`` is a principal id or ``role:<name>``."""

    kind: Literal["GrantAccess"] = "GrantAccess"
    envelope: Envelope
    grant_id: Name
    grantee: Name
    rights: tuple[Right, ...] = Field(min_length=1)
    scopes: tuple[Name, ...] = Field(min_length=1)
    subjects: tuple[Name, ...] = ()
    purposes: tuple[Name, ...] = ()
    store_kinds: tuple[StoreKind, ...] = ()
    sensitivity_ceiling: Sensitivity = Sensitivity.INTERNAL
    valid_from: UtcTime | None = None
    valid_to: UtcTime | None = None
    relationship: Name | None = None

    @model_validator(mode="after")
    def _interval(self) -> GrantAccess:
        if self.valid_from and self.valid_to and self.valid_to <= self.valid_from:
            raise ValueError("valid_to: must be later than valid_from")
        return self


class RevokeAccess(_Frozen):
    """Command: revoke grant ``grant_id`` from the next read and write on."""

    kind: Literal["RevokeAccess"] = "RevokeAccess"
    envelope: Envelope
    grant_id: Name
    reason: Text = ""


MemoryCommand = RecordMemory | SupersedeMemory | ForgetMemory
GovernanceCommand = (
    RegisterPrincipal | RotateKey | RevokeKey | PublishPolicy | ProtectFact | ApproveQuarantined | RejectQuarantined
    | GrantAccess | RevokeAccess
)
Command = MemoryCommand | GovernanceCommand
COMMAND_MODELS: dict[str, type[Any]] = {
    m.model_fields["kind"].default: m
    for m in (RecordMemory, SupersedeMemory, ForgetMemory, RegisterPrincipal, RotateKey, RevokeKey, PublishPolicy,
              ProtectFact, ApproveQuarantined, RejectQuarantined, GrantAccess, RevokeAccess)
}


def to_avro(model: BaseModel) -> dict[str, Any]:
    """Map a command model to the Avro record dict of its schema (drops the ``kind`` tag)."""
    data = model.model_dump(mode="python", exclude={"kind"})
    return _plain(data)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, StrEnum):
        return value.value
    return value


def from_avro(name: str, record: dict[str, Any]) -> Command:
    """Build and validate the command model ``name`` from a decoded Avro record.

    Raises ``pydantic.ValidationError`` (with field locations) when the record breaks a rule that
    Avro cannot express (empty text, naive time, ordering of the validity interval ...).
    """
    return COMMAND_MODELS[name].model_validate(record)
