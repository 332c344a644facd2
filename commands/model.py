"""Commands of the memory ledger as frozen pydantic models, and their explicit Avro mappers.

Commands are imperative (``RecordMemory``, ``SupersedeMemory``, ``ForgetMemory``); every one carries
the write ``Envelope`` of DESIGN.md / seed 004 "The write boundary is the first safety boundary".
Times are timezone-aware and normalised to UTC at millisecond precision (field case W8), so what is
validated here is exactly what Avro ``timestamp-millis`` stores.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from memwarden.commands.envelope import (
    EncryptedContent,
    Envelope,
    Fact,
    FrozenModel,
    Name,
    Signature,
    Source,
    Text,
    UtcTime,
    Uuid,
    WriteAuthority,
)
from memwarden.commands.forget_commands import ForgetMatching, ForgetSelector, ForgetSubject, LiftHold, PlaceHold
from memwarden.commands.token_commands import IssueToken, RevokeToken
from memwarden.commands.vocabulary import (
    EpistemicStatus,
    FactCardinality,
    PrincipalKind,
    Right,
    Sensitivity,
    SourceKind,
    StoreKind,
)


class RecordMemory(FrozenModel):
    """Command: persist a new memory (version 1 of ``memory_id``)."""

    kind: Literal["RecordMemory"] = "RecordMemory"
    envelope: Envelope
    memory_id: Uuid
    content: EncryptedContent
    fact: Fact | None = None
    tags: tuple[Name, ...] = ()
    #: The memory this one follows in its conversation or thread (the previous turn of a session):
    #: ranking context for hybrid recall only (issue 12 item 6), never lineage nor access.
    follows: Uuid | None = None

    @model_validator(mode="after")
    def _follows_another(self) -> RecordMemory:
        if self.follows is not None and self.follows == self.memory_id:
            raise ValueError("follows: a memory cannot follow itself")
        return self


class SupersedeMemory(FrozenModel):
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


class ForgetMemory(FrozenModel):
    """Command: forget every version of ``memory_id``."""

    kind: Literal["ForgetMemory"] = "ForgetMemory"
    envelope: Envelope
    memory_id: Uuid
    reason: Text = ""


class PublicKey(FrozenModel):
    """A raw 32-byte Ed25519 public key and its id."""

    key_id: Name
    algorithm: Literal["Ed25519"] = "Ed25519"
    public_key: bytes = Field(min_length=32, max_length=32)


class RegisterPrincipal(FrozenModel):
    """Command (admin): register ``principal_id`` with kind, roles, attributes and its first key."""

    kind: Literal["RegisterPrincipal"] = "RegisterPrincipal"
    envelope: Envelope
    principal_id: Name
    principal_kind: PrincipalKind = PrincipalKind.USER
    roles: tuple[Name, ...] = ()
    attributes: dict[Name, Text] = Field(default_factory=dict)
    key: PublicKey


class RotateKey(FrozenModel):
    """Command: a new signing key for ``principal_id`` (by the principal itself or an admin)."""

    kind: Literal["RotateKey"] = "RotateKey"
    envelope: Envelope
    principal_id: Name
    key: PublicKey


class RevokeKey(FrozenModel):
    """Command: revoke ``key_id`` of ``principal_id`` at once."""

    kind: Literal["RevokeKey"] = "RevokeKey"
    envelope: Envelope
    principal_id: Name
    key_id: Name
    reason: Text = ""


class PublishPolicy(FrozenModel):
    """Command (admin): version ``version`` of the write-authority policy ``policy_id`` (JSON text)."""

    kind: Literal["PublishPolicy"] = "PublishPolicy"
    envelope: Envelope
    policy_id: Name
    version: int = Field(ge=1)
    document: Annotated[Text, Field(max_length=1_000_000)]


class ProtectFact(FrozenModel):
    """Command: mark the subject's ``(entity, attribute)`` as protected core fact (M_core, Eq. 6)."""

    kind: Literal["ProtectFact"] = "ProtectFact"
    envelope: Envelope
    entity: Name
    attribute: Name
    protected: bool = True


class ApproveQuarantined(FrozenModel):
    """Command (reviewer): admit the quarantined memory command ``quarantined_command_id``."""

    kind: Literal["ApproveQuarantined"] = "ApproveQuarantined"
    envelope: Envelope
    quarantined_command_id: Uuid
    note: Text = ""


class RejectQuarantined(FrozenModel):
    """Command (reviewer): reject the quarantined memory command; its data key is shredded."""

    kind: Literal["RejectQuarantined"] = "RejectQuarantined"
    envelope: Envelope
    quarantined_command_id: Uuid
    note: Text = ""


class GrantAccess(FrozenModel):
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


class RevokeAccess(FrozenModel):
    """Command: revoke grant ``grant_id`` from the next read and write on."""

    kind: Literal["RevokeAccess"] = "RevokeAccess"
    envelope: Envelope
    grant_id: Name
    reason: Text = ""


MemoryCommand = RecordMemory | SupersedeMemory | ForgetMemory | ForgetMatching | ForgetSubject
GovernanceCommand = (
    RegisterPrincipal | RotateKey | RevokeKey | PublishPolicy | ProtectFact | ApproveQuarantined | RejectQuarantined
    | GrantAccess | RevokeAccess | PlaceHold | LiftHold | IssueToken | RevokeToken
)
Command = MemoryCommand | GovernanceCommand
COMMAND_MODELS: dict[str, type[Any]] = {
    m.model_fields["kind"].default: m
    for m in (RecordMemory, SupersedeMemory, ForgetMemory, RegisterPrincipal, RotateKey, RevokeKey, PublishPolicy,
              ProtectFact, ApproveQuarantined, RejectQuarantined, GrantAccess, RevokeAccess, ForgetMatching,
              ForgetSubject, PlaceHold, LiftHold, IssueToken, RevokeToken)
}


def to_avro(model: BaseModel) -> dict[str, Any]:
    """Map a command model to the Avro record dict of its schema (drops the ``kind`` tag)."""
    data: dict[str, Any] = _plain(model.model_dump(mode="python", exclude={"kind"}))
    return data


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
    command: Command = COMMAND_MODELS[name].model_validate(record)
    return command


__all__ = [
    "ApproveQuarantined", "COMMAND_MODELS", "Command", "EncryptedContent", "Envelope", "EpistemicStatus", "Fact",
    "FactCardinality", "ForgetMatching", "ForgetMemory", "ForgetSelector", "ForgetSubject", "GrantAccess", "IssueToken",
    "LiftHold",
    "PlaceHold", "PrincipalKind", "ProtectFact", "PublicKey", "PublishPolicy", "RecordMemory", "RegisterPrincipal",
    "RejectQuarantined", "RevokeAccess", "RevokeKey", "RevokeToken", "Right", "RotateKey", "Sensitivity", "Signature",
    "Source", "SourceKind", "StoreKind", "SupersedeMemory", "WriteAuthority", "from_avro", "to_avro",
]
