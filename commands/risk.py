"""Risk tiers of a write (issue 3 part 3; seed 004 "The write boundary ...", "Poisoning turns memory
into a delayed attack"; SSGM Table 2, memory poisoning and hallucination).

:func:`tier` maps (source kind, store kind, sensitivity, instructions found, approval) to one of
four tiers. The table (also in README "Risk tiers"):

============================  ===========================  ==========================================
source kind                   tier                         exceptions
============================  ===========================  ==========================================
USER_STATEMENT                ACCEPT
OBSERVED_TOOL_RESULT          ACCEPT
APPROVED_RULE                 ACCEPT if approved           REJECT without an approver
IMPORTED_RECORD               ACCEPT_UNVERIFIED            RESTRICTED → QUARANTINE
MODEL_INFERENCE               ACCEPT_UNVERIFIED            RESTRICTED → QUARANTINE
WEB/EMAIL/DOCUMENT/TOOL_TEXT  ACCEPT_UNVERIFIED (quoted)   RESTRICTED → QUARANTINE
============================  ===========================  ==========================================

Overrides, strongest first: the PROCEDURE store takes only an approved APPROVED_RULE (anything else
is REJECT: untrusted content can never become a procedure); content that carries instructions is
QUARANTINE whatever its source (kept only as quoted data tagged ``untrusted``, released only by a
reviewer). The tier does not depend on a mere suspicion (``Detection.suspect``): the gate tags such
content from :data:`SUSPICION_SOURCES` ``untrusted`` without holding it. Pure function, no I/O.
"""

from __future__ import annotations

from enum import StrEnum

from memwarden.commands.model import Sensitivity, SourceKind, StoreKind

UNTRUSTED_SOURCES = frozenset({SourceKind.WEB_CONTENT, SourceKind.EMAIL_CONTENT, SourceKind.DOCUMENT_CONTENT,
                               SourceKind.TOOL_TEXT})
#: Sources a default read returns although no person stated them: content from them that the detector
#: only *suspects* of carrying instructions (``Detection.suspect``) is tagged untrusted, i.e. kept as
#: quoted data out of default reads (seed 004: "Instructions discovered inside ... tool output should
#: default to untrusted data"; "anything that can expand capabilities should require stronger evidence").
#: A user's own statement and an approved rule are judged by the decision threshold alone.
SUSPICION_SOURCES = frozenset({SourceKind.OBSERVED_TOOL_RESULT, SourceKind.IMPORTED_RECORD,
                               SourceKind.MODEL_INFERENCE})


class Tier(StrEnum):
    """The four risk tiers of a write (issue 3 part 3)."""

    ACCEPT = "ACCEPT"
    ACCEPT_UNVERIFIED = "ACCEPT_UNVERIFIED"
    QUARANTINE = "QUARANTINE"
    REJECT = "REJECT"


def tier(source_kind: SourceKind, store_kind: StoreKind, sensitivity: Sensitivity, carries_instructions: bool,
         approved: bool) -> tuple[Tier, str]:
    """The risk tier of a write and the reason code that chose it.

    Args:
        source_kind: provenance kind of the content.
        store_kind: target store.
        sensitivity: declared sensitivity.
        carries_instructions: the instruction detector found directives in the content.
        approved: the command is signed by a principal with the approver role.
    Returns:
        ``(tier, reason_code)``.
    """
    if store_kind is StoreKind.PROCEDURE:
        if source_kind is not SourceKind.APPROVED_RULE:
            return Tier.REJECT, "PROCEDURE_NEEDS_APPROVED_RULE"
        if not approved:
            return Tier.REJECT, "PROCEDURE_NEEDS_APPROVER"
        return Tier.ACCEPT, "APPROVED_PROCEDURE"
    if carries_instructions:
        return Tier.QUARANTINE, "INSTRUCTIONS_IN_CONTENT"
    if source_kind is SourceKind.APPROVED_RULE:
        return (Tier.ACCEPT, "APPROVED_RULE") if approved else (Tier.REJECT, "RULE_WITHOUT_APPROVER")
    if source_kind in (SourceKind.USER_STATEMENT, SourceKind.OBSERVED_TOOL_RESULT):
        return Tier.ACCEPT, "TRUSTED_SOURCE"
    if sensitivity is Sensitivity.RESTRICTED:
        return Tier.QUARANTINE, "RESTRICTED_FROM_UNVERIFIED_SOURCE"
    if source_kind in UNTRUSTED_SOURCES:
        return Tier.ACCEPT_UNVERIFIED, "UNTRUSTED_SOURCE_AS_QUOTED_DATA"
    return Tier.ACCEPT_UNVERIFIED, "UNVERIFIED_SOURCE"
