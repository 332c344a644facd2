"""The vocabulary of the write envelope (DESIGN.md "The write envelope"; seed 004 "The write boundary
is the first safety boundary"): where a memory came from, how sure it is, how sensitive, which store,
fact cardinality, principal kinds and grant rights. Enum values are the Avro symbols."""

from __future__ import annotations

from enum import StrEnum


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
    FORGET = "FORGET"
