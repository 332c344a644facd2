"""Recency in ranking for current-value questions (issue 12 item 5). Pure: no I/O.

"As of now, what is the project's current budget?" is answered by the latest statement of the budget,
not by the statement that happens to share the most words with the question: a store that keeps every
turn holds the old values next to the new one, and the relevance of each is nearly the same. When the
caller asks for recency (or, by default, when the query asks for a current, latest or final value:
:func:`asks_for_current`), each candidate's fused score is multiplied by

    1 + weight * rank(t) / (n - 1)

where ``t`` is the start of the candidate's validity interval (``valid_from_ms``: when what it says
became true) and ``rank(t)`` its dense rank among the ``n`` distinct times of the candidate pool
(0 = oldest). The factor is relative to the pool, so it means the same for a store of hours or of
years, and it never lets a candidate in: it reorders what the filtered search found (isolation is
untouched, SSGM Eq. 5). Supersession needs no weight: a superseded version is out of its validity
interval and never a candidate.

The weight :data:`CURRENT_WEIGHT` was chosen on GateMem's dev split and reported on its held-out
split (README, "GateMem").
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace

from memwarden.commands.readmodel.thread_context import Lifted

__all__ = ["CURRENT_WEIGHT", "MAX_RECENCY", "asks_for_current", "by_recency", "check_recency", "recency_factors",
           "recency_weight"]

#: Recency weight applied when a query asks for a current value and the caller left it unset.
CURRENT_WEIGHT = 2.0
#: Largest recency weight a caller may set (the newest candidate's score times 101 at most).
MAX_RECENCY = 100.0

#: Words and phrases that ask for the present state of something (English; case-insensitive, whole words).
_CURRENT = re.compile(
    r"\b(current(ly)?|now|latest|most\s+recent(ly)?|up[\s-]to[\s-]date|at\s+present|presently|as\s+of\s+today"
    r"|these\s+days|still|newest|final|anymore|any\s+more)\b",
    re.IGNORECASE,
)


def asks_for_current(query: str) -> bool:
    """Whether ``query`` asks for the present state of something ("what is the *current* budget",
    "where does she live *now*", "the *latest* release date", "the *final* state"): the whole words of
    :data:`_CURRENT`, case-insensitive. English only."""
    return _CURRENT.search(query) is not None


def check_recency(recency: float | None) -> None:
    """Raises ``ValueError`` unless ``recency`` is ``None`` (decide from the query) or a number in
    ``[0, MAX_RECENCY]`` (0 = rank by relevance alone; a bool or a string is refused)."""
    if recency is None:
        return
    if isinstance(recency, bool) or not isinstance(recency, (int, float)) or not math.isfinite(recency) \
            or not 0 <= recency <= MAX_RECENCY:
        raise ValueError(f"must be a number in [0, {MAX_RECENCY:g}] or null, got {recency!r}")


def recency_weight(query: str, recency: float | None) -> float:
    """The weight a recall applies: ``recency`` when the caller set it, else :data:`CURRENT_WEIGHT`
    when :func:`asks_for_current` holds for ``query``, else 0. Raises ``ValueError`` as
    :func:`check_recency`."""
    check_recency(recency)
    if recency is not None:
        return float(recency)
    return CURRENT_WEIGHT if asks_for_current(query) else 0.0


def recency_factors(times_ms: Sequence[int], weight: float) -> list[float]:
    """The factor ``1 + weight * rank / (n - 1)`` of each time in ``times_ms`` (epoch ms, one per
    candidate, in any order): ``rank`` is the dense rank of the time among the ``n`` distinct times
    (0 = oldest), so equal times get equal factors, the newest gets ``1 + weight`` and a pool of one
    distinct time gets 1 throughout. Raises ``ValueError`` for a negative or non-finite ``weight``."""
    check_recency(weight)
    distinct = sorted(set(times_ms))
    if weight == 0 or len(distinct) < 2:
        return [1.0] * len(times_ms)
    rank = {t: i for i, t in enumerate(distinct)}
    top = len(distinct) - 1
    return [1.0 + weight * rank[t] / top for t in times_ms]


def by_recency(ranked: Sequence[Lifted], weight: float, field: str = "valid_from_ms") -> list[Lifted]:
    """``ranked`` with each score multiplied by its :func:`recency_factors` factor (a negative score
    divided by it: a newer candidate never loses, and the order among equal times is kept; the time is the
    payload's ``field``; a candidate without it counts as the oldest), best first by
    ``(-score, point id)``. ``weight`` 0 returns the candidates in the same order, unchanged. The
    lift bookkeeping (``own``, ``by``, ``gain``) is kept, so :func:`.thread_context.without_lifts`
    still applies to the result's input. Raises ``ValueError`` as :func:`recency_factors`."""
    check_recency(weight)
    if weight == 0 or not ranked:
        return list(ranked)
    oldest = min((int(e.payload[field]) for e in ranked if e.payload.get(field) is not None), default=0)
    times = [int(e.payload[field]) if e.payload.get(field) is not None else oldest for e in ranked]
    factors = recency_factors(times, weight)
    out = [replace(e, score=e.score * f if e.score >= 0 else e.score / f) for e, f in zip(ranked, factors, strict=True)]
    return sorted(out, key=lambda e: (-e.score, e.point_id))
