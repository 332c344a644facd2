"""What a recall asks and what it returns: the arguments, their checks, and the result row.

``recall(principal, query, k, as_of, known_at, purpose, mode, min_score)`` of SSGM Eq. 5 (``min_score``:
the relevance floor of issue 12, :mod:`memwarden.commands.readmodel.relevance`). Pure; the read side
(:mod:`memwarden.projections.recall`) runs it, the client validates with the same checks before it
sends anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal, get_args

from memwarden.commands.readmodel.recency import check_recency
from memwarden.commands.readmodel.relevance import check_min_score
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
    """One recalled memory version: content, ``score`` (the ranking score of its mode: fused dense +
    lexical, comparable within one recall only), ``relevance`` (in [0, 1], the same scale for every
    query: :mod:`memwarden.commands.readmodel.relevance`), provenance and ledger position."""

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
    relevance: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """Plain dict for the HTTP response."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RecalledMemory:
        """Inverse of :meth:`to_json` (tags as a tuple)."""
        return cls(**{**data, "tags": tuple(data.get("tags") or ())})


class Recalled(list[RecalledMemory]):
    """The memories of one recall, best first, and how its relevance floor acted: ``min_score`` (the
    floor asked for, 0 = none) and ``below_floor`` (hits of the ranking the floor dropped). A list, so
    callers that only iterate the memories see no difference."""

    def __init__(self, memories: Iterable[RecalledMemory] = (), min_score: float = 0.0, below_floor: int = 0) -> None:
        super().__init__(memories)
        self.min_score = min_score
        self.below_floor = below_floor

    @property
    def nothing_relevant(self) -> bool:
        """True when hits were found but none reached the floor (the answer is "nothing relevant")."""
        return not self and self.below_floor > 0

    def to_json(self) -> dict[str, Any]:
        """The HTTP response body: ``memories``, ``min_score``, ``below_floor`` and, when every hit was
        below the floor, ``reason: "BELOW_FLOOR"``."""
        out: dict[str, Any] = {"memories": [m.to_json() for m in self], "min_score": self.min_score,
                               "below_floor": self.below_floor}
        if self.nothing_relevant:
            out["reason"] = "BELOW_FLOOR"
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Recalled:
        """Inverse of :meth:`to_json` (a response without the floor keys reads as floor 0)."""
        return cls((RecalledMemory.from_json(m) for m in data["memories"]), float(data.get("min_score") or 0.0),
                   int(data.get("below_floor") or 0))


def _not_an_aware_datetime(value: object) -> str:
    """Why ``value`` is no time a read can take: a naive ``datetime``, or not a ``datetime`` at all (text
    included: "2026-12-01T00:00:00Z" read as refused for a missing zone, newcomer trial)."""
    if isinstance(value, datetime):
        return "must be a timezone-aware datetime, got one without a zone (add tzinfo, e.g. UTC)"
    hint = " (parse text first: datetime.fromisoformat(...))" if isinstance(value, str) else ""
    return f"must be a timezone-aware datetime object, got {type(value).__name__}{hint}"


def check_query(principal: Any, query: Any, k: Any, as_of: datetime | None, known_at: datetime | None = None,
                purpose: Any = DEFAULT_PURPOSE, mode: Any = "hybrid", min_score: Any = 0.0,
                recency: Any = None) -> None:
    """Validate recall arguments; raises ``ValidationError`` naming the field."""
    try:
        check_min_score(min_score)
    except ValueError as exc:
        raise ValidationError("min_score", str(exc)) from None
    try:
        check_recency(recency)
    except ValueError as exc:
        raise ValidationError("recency", str(exc)) from None
    if mode not in RECALL_MODES:
        raise ValidationError("mode", f"must be one of {', '.join(RECALL_MODES)}, got {mode!r}")
    if not isinstance(purpose, str) or not purpose.strip() or purpose == "*":
        raise ValidationError("purpose", "must name one purpose")
    if known_at is not None and (not isinstance(known_at, datetime) or known_at.tzinfo is None):
        raise ValidationError("known_at", _not_an_aware_datetime(known_at))
    if not isinstance(principal, str) or not principal.strip():
        raise ValidationError("principal", "must be a non-empty string")
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("query", "must be a non-empty string")
    if len(query) > MAX_QUERY_CHARS:
        raise ValidationError("query", f"longer than {MAX_QUERY_CHARS} characters")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise ValidationError("k", f"must be an integer in [1, {MAX_K}]")
    if as_of is not None and (not isinstance(as_of, datetime) or as_of.tzinfo is None):
        raise ValidationError("as_of", _not_an_aware_datetime(as_of))
