"""Per-hit relevance on one scale for every query: what ``recall(min_score=...)`` filters on.

The fused score of a hybrid recall (DBSF or RRF) ranks the hits of *one* recall: a nonsense query
over unrelated memories still gets scores near the top of that scale (issue 12, field case Q1). A
floor needs a number that means the same whatever the query and whatever else was found, so each
returned memory also carries a ``relevance`` in [0, 1] computed from that memory and the query alone:

* ``cosine``: the dense cosine similarity of the query and the memory (all-MiniLM-L6-v2; negative
  similarities count as 0);
* ``coverage``: the share of the query's distinct index terms the memory contains (the terms of
  :func:`memwarden.projections.sparse.tokens`, so a CJK memory found only lexically still counts
  through its character n-grams);
* ``relevance = max(cosine, coverage ** COVERAGE_POWER)``: either signal alone can clear a floor.
  ``COVERAGE_POWER`` damps partial term matches; it was chosen with the floor on the calibration split
  (1, 2 and 3 tried: 1 cost the least recall for the same share of nonsense recalls emptied), so
  today ``relevance = max(cosine, coverage)``.

The floor itself (:data:`RECOMMENDED_MIN_SCORE`) is calibrated on LoCoMo (``bench/relevance_floor.py``;
figures in the README). Everything here is pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

__all__ = ["COVERAGE_POWER", "RECOMMENDED_MIN_SCORE", "check_min_score", "cosine", "coverage", "relevance"]

#: Exponent damping partial lexical coverage (see the module notes).
COVERAGE_POWER = 1.0
#: The floor recommended by the LoCoMo calibration (README, "Relevance floor"). ``min_score=0`` (the
#: default of every recall) keeps every hit.
RECOMMENDED_MIN_SCORE = 0.35


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of ``a`` and ``b`` clamped to [0, 1]; 0 when either is a zero vector, when
    they differ in length or are empty, or when a value is not finite."""
    if len(a) != len(b) or not a:
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    if not (math.isfinite(dot) and math.isfinite(na) and math.isfinite(nb)) or na == 0.0 or nb == 0.0:
        return 0.0
    return clamp(dot / (na * nb))


def coverage(query_terms: Iterable[str], memory_terms: Iterable[str]) -> float:
    """Share of the distinct ``query_terms`` found among ``memory_terms``, in [0, 1]; 0 when the
    query has no term (all stopwords, punctuation only)."""
    wanted = set(query_terms)
    if not wanted:
        return 0.0
    return len(wanted & set(memory_terms)) / len(wanted)


def clamp(value: float) -> float:
    """``value`` limited to [0, 1] (NaN gives 0)."""
    if not value > 0.0:  # also NaN
        return 0.0
    return min(value, 1.0)


def relevance(cos: float, cov: float) -> float:
    """The per-hit relevance in [0, 1]: ``max(cos, cov ** COVERAGE_POWER)``, both clamped first,
    rounded to 6 decimals (the figure a client compares with its floor)."""
    return round(max(clamp(cos), math.pow(clamp(cov), COVERAGE_POWER)), 6)


def check_min_score(value: object) -> float:
    """``value`` as a floor in [0, 1] (an int or float, not a bool). Raises ``ValueError`` otherwise
    (callers turn it into ``ValidationError("min_score", ...)``)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"must be a number in [0, 1], got {value!r}")
    return float(value)
