"""Attribution and epistemic status are never inflated (issue 3 part 6; field case W7; seed 004
"The write boundary ...": derived records keep provenance; SSGM Table 2, hallucination).

Pure checks over a command's envelope and, for derived records, the records it cites:

* a model inference is never stored as ``CONFIRMED`` or ``OBSERVED``; untrusted content only as
  ``QUOTED`` or ``DISPUTED``; ``CONFIRMED`` needs the subject speaking for itself or a reviewer /
  approver (:func:`status_problem`);
* a derived record (``source.derived_from``) must cite live sources, carry a ``quoted_span`` that
  occurs in one of them, not broaden scope, not lower sensitivity, and not raise epistemic status
  above its weakest source ("said X on Friday" must not become a confirmed "X")
  (:func:`derivation_problem`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memwarden.commands.model import Envelope, EpistemicStatus, Sensitivity, SourceKind
from memwarden.commands.risk import UNTRUSTED_SOURCES

#: Strength of an epistemic status: a derived record may not exceed its weakest source.
STATUS_RANK: Mapping[EpistemicStatus, int] = {
    EpistemicStatus.REVOKED: 0, EpistemicStatus.DISPUTED: 0, EpistemicStatus.QUOTED: 1,
    EpistemicStatus.INFERRED: 1, EpistemicStatus.OBSERVED: 2, EpistemicStatus.CONFIRMED: 3,
}
SENSITIVITY_RANK: Mapping[Sensitivity, int] = {
    Sensitivity.PUBLIC: 0, Sensitivity.INTERNAL: 1, Sensitivity.CONFIDENTIAL: 2, Sensitivity.RESTRICTED: 3,
}
_ALLOWED: Mapping[SourceKind, frozenset[EpistemicStatus]] = {
    SourceKind.MODEL_INFERENCE: frozenset({EpistemicStatus.INFERRED, EpistemicStatus.QUOTED,
                                           EpistemicStatus.DISPUTED}),
    **{k: frozenset({EpistemicStatus.QUOTED, EpistemicStatus.DISPUTED}) for k in UNTRUSTED_SOURCES},
}


@dataclass(frozen=True)
class Problem:
    """A reason ``code``, human ``message`` and the ``field`` concerned."""

    code: str
    message: str
    field: str


@dataclass(frozen=True)
class SourceRecord:
    """A cited source record as the gate knows it: its scope, sensitivity, status and (decrypted)
    current text (``None`` when forgotten or unreadable); its owner (writing principal), subject, store
    kind and purpose tags decide who may cite it (only a principal that may read it: its quoted span
    must not become an oracle on a text the writer cannot read; empty ``owner``: unknown, citable by no one)."""

    memory_id: str
    scope: str
    sensitivity: Sensitivity
    epistemic_status: EpistemicStatus
    text: str | None
    owner: str = ""
    subject: str = ""
    store_kind: str = "PROFILE"
    purposes: tuple[str, ...] = ()


def status_problem(env: Envelope, may_confirm: bool) -> Problem | None:
    """Whether ``env.epistemic_status`` is more than its source kind allows. ``may_confirm``: the
    writer is a reviewer/approver. Returns ``None`` when allowed."""
    status, kind = env.epistemic_status, env.source.kind
    allowed = _ALLOWED.get(kind)
    if allowed is not None and status not in allowed:
        what = "a model inference" if kind is SourceKind.MODEL_INFERENCE else f"{kind.value} content"
        return Problem("STATUS_INFLATED", f"{what} cannot be stored as {status.value}", "envelope.epistemic_status")
    if status is EpistemicStatus.CONFIRMED and not may_confirm and not (
            kind in (SourceKind.USER_STATEMENT, SourceKind.APPROVED_RULE) and env.principal == env.subject):
        return Problem("STATUS_INFLATED", "only the subject itself or a reviewer may store a CONFIRMED record",
                       "envelope.epistemic_status")
    return None


def normalise(text: str) -> str:
    """NFKC, casefold, whitespace collapsed: the form in which a quoted span must occur."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()


def derivation_problem(env: Envelope, sources: Mapping[str, SourceRecord], approved: bool) -> Problem | None:
    """W7 rules for a record derived from ``env.source.derived_from``. ``sources`` holds the live
    cited records the writer may read, by memory id (a source it may not read is unknown to it: the same
    ``UNKNOWN_SOURCE`` as a forgotten one, before any span, scope or sensitivity is compared);
    ``approved``: a reviewer/approver writes it (may raise status). A derived record keeps its sources'
    scope, sensitivity (at least) and purposes (at most those every purpose-limited source allows:
    ``PURPOSE_BROADENED``; a derivative without them stayed readable to anyone after the grant that let its
    writer read the source was revoked). Returns ``None`` for a record that is not derived or passes."""
    cited: Sequence[str] = env.source.derived_from
    if not cited:
        return None
    missing = [m for m in cited if m not in sources or sources[m].text is None]
    if missing:
        return Problem("UNKNOWN_SOURCE", f"cited source {missing[0]} is unknown, forgotten or unreadable",
                       "envelope.source.derived_from")
    span = env.source.quoted_span
    if span is None or not span.strip():
        return Problem("DERIVED_WITHOUT_SPAN", "a derived record must quote the span it rests on",
                       "envelope.source.quoted_span")
    needle = normalise(span)
    if not any(needle in normalise(sources[m].text or "") for m in cited):
        return Problem("SPAN_NOT_IN_SOURCES", "the quoted span does not occur in any cited source",
                       "envelope.source.quoted_span")
    if any(sources[m].scope != env.scope for m in cited):
        return Problem("SCOPE_BROADENED", "a derived record must stay in the scope of its sources", "envelope.scope")
    floor = max(SENSITIVITY_RANK[sources[m].sensitivity] for m in cited)
    if SENSITIVITY_RANK[env.sensitivity] < floor:
        return Problem("SENSITIVITY_LOWERED", "a derived record may not be less sensitive than its sources",
                       "envelope.sensitivity")
    limited = [set(sources[m].purposes) for m in cited if sources[m].purposes and "*" not in sources[m].purposes]
    if limited:  # purpose limitation travels with what was derived, as sensitivity does
        allowed, mine = set.intersection(*limited), set(env.purposes)
        if not mine or "*" in mine or not mine <= allowed:
            return Problem("PURPOSE_BROADENED", "a derived record must keep to its sources' purposes: name only "
                           f"purposes each purpose-limited source allows ({', '.join(sorted(allowed)) or 'none'})",
                           "envelope.purposes")
    weakest = min(STATUS_RANK[sources[m].epistemic_status] for m in cited)
    if STATUS_RANK[env.epistemic_status] > weakest and not approved:
        quoted = any(sources[m].epistemic_status is EpistemicStatus.QUOTED for m in cited)
        code = "ATTRIBUTION_DROPPED" if quoted else "STATUS_INFLATED"
        return Problem(code, f"{env.epistemic_status.value} is stronger than the weakest cited source",
                       "envelope.epistemic_status")
    return None
