"""What a recall asks and what it returns: the arguments, their checks, and the result row.

``recall(principal, query, k, as_of, known_at, purpose, mode)`` of SSGM Eq. 5. Pure; the read side
(:mod:`memwarden.projections.recall`) runs it, the client validates with the same checks before it
sends anything.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal, get_args

from memwarden.errors import ValidationError

DEFAULT_PURPOSE = "general"
#: Version of the read policy (ABAC rules of :mod:`memwarden.commands.readmodel.permission` + Eq. 5 filter).
READ_POLICY_VERSION = "abac/1"
#: Largest ``k`` of one recall.
MAX_K = 100
#: Longest query, in characters.
MAX_QUERY_CHARS = 2_000

#: Retrieval path of a recall: ``hybrid`` (dense + lexical prefetch fused in the engine, the default),
#: ``dense`` (cosine only) or ``lexical`` (BM25 sparse only). Every path carries the same read filter.
RecallMode = Literal["hybrid", "dense", "lexical"]
RECALL_MODES: tuple[RecallMode, ...] = get_args(RecallMode)


@dataclass(frozen=True)
class RecalledMemory:
    """One recalled memory version: content, fused relevance score (dense + lexical, comparable within
    one recall only), provenance and ledger position."""

    memory_id: str
    version: int
    text: str
    score: float
    principal: str
    subject: str
    scope: str
    source_kind: str
    source_ref: str | None
    observed_at: str
    valid_from: str
    valid_to: str | None
    status: str
    ledger_topic: str
    ledger_partition: int
    ledger_offset: int
    unverified: bool = False
    tags: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """Plain dict for the HTTP response."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RecalledMemory:
        """Inverse of :meth:`to_json` (tags as a tuple)."""
        return cls(**{**data, "tags": tuple(data.get("tags") or ())})


def check_query(principal: Any, query: Any, k: Any, as_of: datetime | None, known_at: datetime | None = None,
                purpose: Any = DEFAULT_PURPOSE, mode: Any = "hybrid") -> None:
    """Validate recall arguments; raises ``ValidationError`` naming the field."""
    if mode not in RECALL_MODES:
        raise ValidationError("mode", f"must be one of {', '.join(RECALL_MODES)}, got {mode!r}")
    if not isinstance(purpose, str) or not purpose.strip() or purpose == "*":
        raise ValidationError("purpose", "must name one purpose")
    if known_at is not None and (not isinstance(known_at, datetime) or known_at.tzinfo is None):
        raise ValidationError("known_at", "must be a timezone-aware datetime")
    if not isinstance(principal, str) or not principal.strip():
        raise ValidationError("principal", "must be a non-empty string")
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("query", "must be a non-empty string")
    if len(query) > MAX_QUERY_CHARS:
        raise ValidationError("query", f"longer than {MAX_QUERY_CHARS} characters")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise ValidationError("k", f"must be an integer in [1, {MAX_K}]")
    if as_of is not None and (not isinstance(as_of, datetime) or as_of.tzinfo is None):
        raise ValidationError("as_of", "must be a timezone-aware datetime")
