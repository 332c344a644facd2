"""The ``VectorIndex`` port: the derived index of seed 004 (candidates only, rebuilt from the ledger).

Two adapters implement it with identical results: :mod:`memwarden.projections.edge_index` (embedded
Qdrant Edge, the default) and :mod:`memwarden.projections.server_index` (a Qdrant server through
qdrant-client). Filters are a tiny AST translated by each adapter *into* the vector search, so that
isolation happens before candidate generation (SSGM Principle 3, Eq. 5), never after ranking.

Layout (version :data:`LAYOUT_VERSION`): every point holds the unnamed dense vector (cosine) and the
named sparse vector :data:`LEXICAL` (BM25 term-frequency weights from :mod:`memwarden.projections.sparse`).
:meth:`VectorIndex.query` is the hybrid read: a dense and a lexical prefetch stage, *each* carrying the
permission filter (and the root carrying it too), fused inside the engine (distribution-based score
fusion by default).

**Whose IDF** (:data:`LexicalIdf`, setting ``lexical_idf``):

* ``"namespace"``: the engine's ``IDF`` modifier over *every* point of the index. Free, but a reader's
  lexical scores then move with the words of memories it may not read: a registered user recovered a
  four-digit code from another user's RESTRICTED memory with one write and twenty lexical recalls
  (adversarial trial, twentieth session). The default until 2026-12-07 (twenty-third session).
* ``"reader"`` (the default): no engine modifier; the lexical query's weights carry the IDF of the
  points *the reader may read* (:func:`reader_weighted`: ``N`` = those points, ``n`` = those of them
  holding the term, counted exactly by the engine under :func:`idf_filter`, the read filter's access
  keys and as-of bounds; each point's term ids are kept in its payload, :data:`TERMS_FIELD`,
  integer-indexed). A score is then a function of the query and of readable points only. It costs one
  count per query and one per query term; the Edge adapter keeps them between recalls until a write
  makes them stale
  (:mod:`memwarden.projections.reader_frequencies`; README "Lexical IDF").

The two shapes differ in the engine's sparse-vector config, so a shard or collection is built for one
of them; opening it with the other is refused (it is derived: rebuild it from the ledger).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

from memwarden.commands.readmodel.filters import Condition, FieldIn, FieldRange, Filter, filter_is_empty
from memwarden.commands.readmodel.payload import ACL_FIELD, INTEGER_FIELDS, KEYWORD_FIELDS, OPEN_END_MS
from memwarden.errors import MemwardenError, ValidationError

#: Name of the sparse lexical vector of every point (BM25 term-frequency weights; see "Whose IDF").
LEXICAL = "lexical"
#: Payload field holding the ids of a point's lexical terms (the indices of its :data:`LEXICAL` vector)
#: under ``lexical_idf="reader"``, integer-indexed, so that the engine counts readable points holding a
#: term. Adapters write it from :attr:`IndexPoint.sparse` and never return it.
TERMS_FIELD = "terms"
#: Version of the point layout: 1 = dense only; 2 = dense + :data:`LEXICAL` (and, under
#: ``lexical_idf="reader"``, :data:`TERMS_FIELD`).
LAYOUT_VERSION = 2
#: The payload fields of a read's conditions on when a memory existed (valid from, decided by), which the
#: reader's IDF keeps (:func:`idf_filter`).
AS_OF_FIELDS: tuple[str, ...] = ("valid_from_ms", "decided_ms")
#: Whose document frequencies weigh the lexical stage (see "Whose IDF" in the module notes).
LexicalIdf = Literal["namespace", "reader"]
#: The default: the reader's (a score is a function of the query and of what the reader may read; the
#: counts are kept between recalls, README "Lexical IDF").
DEFAULT_LEXICAL_IDF: LexicalIdf = "reader"

#: How :meth:`VectorIndex.query` fuses its prefetch stages: reciprocal rank fusion (``"rrf"``,
#: score = sum over stages of 1 / (RRF_K + rank), rank from 0 as the engine counts) or
#: distribution-based score fusion (``"dbsf"``: each stage's scores mapped linearly so that its
#: mean - 3 sd .. mean + 3 sd becomes 0 .. 1, then summed over the stages a point appears in).
FusionMethod = Literal["rrf", "dbsf"]
#: The ``k`` constant of reciprocal rank fusion (the usual 60).
RRF_K = 60
#: Default fusion. DBSF scored best on LoCoMo (bench/locomo_hybrid_offline.py) and, being a function
#: of scores rather than of positions, does not depend on how an engine orders equal scores inside
#: a prefetch stage, so both adapters fuse to the same result.
DEFAULT_FUSION: FusionMethod = "dbsf"
#: Prefetch stage length as a multiple of the requested ``limit`` (``prefetch_limit = 2 * limit``).
PREFETCH_FACTOR = 2


@dataclass(frozen=True)
class SparseVector:
    """A sparse vector: distinct non-negative 32-bit term ids (``indices``) and their weights
    (``values``, same length). Built by :mod:`memwarden.projections.sparse`."""

    indices: tuple[int, ...] = ()
    values: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if len(self.indices) != len(self.values):
            raise ValidationError("sparse", "indices and values differ in length")
        if len(set(self.indices)) != len(self.indices):
            raise ValidationError("sparse", "duplicate indices")
        if any(not 0 <= i < 2**32 for i in self.indices):
            raise ValidationError("sparse", "indices must be 32-bit unsigned integers")


@dataclass(frozen=True)
class IndexPoint:
    """One point: deterministic UUID string id, dense vector (384 floats for MiniLM), payload, and
    the lexical sparse vector (``None`` stores an empty one: the point is never a lexical match)."""

    point_id: str
    vector: Sequence[float]
    payload: Mapping[str, Any] = field(default_factory=dict)
    sparse: SparseVector | None = None


@dataclass(frozen=True)
class Hit:
    """A scored candidate: point id, similarity score (cosine, higher is closer), payload."""

    point_id: str
    score: float
    payload: Mapping[str, Any]


class VectorIndex(Protocol):
    """Port of the derived vector index. All methods are synchronous and thread-safe enough to be
    called from one executor thread at a time. Errors: adapters raise ``IndexUnavailable``."""

    def ensure(self, dim: int) -> None:
        """Create the collection/shard with cosine distance and the payload indexes, if missing."""

    def upsert(self, points: Sequence[IndexPoint]) -> None:
        """Insert or replace points by id (idempotent)."""

    def set_payload(self, where: Filter, payload: Mapping[str, Any]) -> None:
        """Merge ``payload`` into every point matching ``where``."""

    def delete(self, where: Filter) -> None:
        """Delete every point matching ``where``."""

    def delete_points(self, point_ids: Sequence[str]) -> None:
        """Delete the points ``point_ids`` (unknown ids are ignored)."""

    def search(self, vector: Sequence[float], where: Filter, limit: int) -> list[Hit]:
        """Top-``limit`` points by cosine similarity among those matching ``where`` (filter applied
        inside the search, not after it). Ties are broken by point id so adapters agree."""

    def search_lexical(self, sparse: SparseVector, where: Filter | None, limit: int) -> list[Hit]:
        """Top-``limit`` points by lexical score alone: ``sparse`` against :data:`LEXICAL` with the IDF
        of the adapter's :data:`LexicalIdf` (BM25), among the points matching ``where`` (filter inside
        the search). Points
        sharing no term with ``sparse`` never come back; an empty ``sparse`` returns ``[]``. Sorted by
        ``(-score, point_id)``, boundary ties closed as in :meth:`search`."""

    def query(
        self,
        dense: Sequence[float],
        sparse: SparseVector,
        where: Filter | None,
        limit: int,
        prefetch_limit: int,
        fusion: FusionMethod = DEFAULT_FUSION,
    ) -> list[Hit]:
        """Hybrid top-``limit``: a dense prefetch (cosine, ``prefetch_limit`` points) and a lexical
        prefetch (``sparse`` against :data:`LEXICAL` with the IDF of the adapter's :data:`LexicalIdf`,
        ``prefetch_limit`` points), each
        filtered by ``where`` inside the stage, fused by ``fusion`` inside the engine with ``where``
        at the root as well. ``Hit.score`` is the fused score (not comparable across queries); ties
        broken by point id. Adapters agree on the result as long as no prefetch stage is cut inside a
        group of equal scores: lexical ties are broken at write time (``Bm25Encoder.document(key=)``);
        exact duplicate dense vectors straddling the ``prefetch_limit`` boundary remain engine-ordered.
        An empty
        ``sparse`` leaves only the dense stage. Raises ``ValidationError`` for ``2 * prefetch_limit <
        limit``."""

    def retrieve(self, point_ids: Sequence[str]) -> list[Hit]:
        """Points by id (score 0.0); missing ids are absent from the result."""

    def count(self, where: Filter | None = None) -> int:
        """Number of points matching ``where`` (all points when ``None``)."""

    def scan(self, where: Filter | None = None, batch: int = 1000) -> Iterator[IndexPoint]:
        """Every point matching ``where`` with its stored dense vector (as the engine keeps it:
        normalised for cosine), payload and lexical sparse vector, in point-id order, ``batch`` points
        per round trip. For digests and reconciliation, not for serving."""

    def close(self) -> None:
        """Flush and release resources."""


class IndexUnavailable(MemwardenError):
    """The vector index cannot be reached or opened."""


# -- helpers shared by the adapters (so that they validate, rank and break ties identically) -------


def canonical_id(point_id: str) -> str:
    """The canonical lower-case form of a UUID string point id (what both engines return).

    Raises ``ValidationError("point_id", ...)`` when ``point_id`` is not a UUID."""
    try:
        return str(uuid.UUID(str(point_id)))
    except ValueError as exc:
        raise ValidationError("point_id", f"not a UUID: {point_id!r}") from exc


def plain_vector(vector: Sequence[float]) -> list[float]:
    """A list of Python floats from any float sequence (list, tuple, numpy array)."""
    if type(vector) is list:
        return vector  # already a list (the engines convert its numbers themselves): no copy
    tolist = getattr(vector, "tolist", None)
    values = tolist() if callable(tolist) else vector
    return [float(x) for x in values]


def point_from_record(point_id: object, vector: object, payload: Mapping[str, Any] | None) -> IndexPoint:
    """The :class:`IndexPoint` of a point an engine returned with its vectors (a scroll record of either
    adapter): ``vector`` is the named-vector mapping of the layout (``""`` dense, :data:`LEXICAL` sparse, the
    sparse one any object with ``indices`` and ``values``) or a bare dense vector; a missing dense vector
    gives ``[]``, a missing sparse one ``None``. The payload comes without :data:`TERMS_FIELD`."""
    vectors: Mapping[str, Any] = vector if isinstance(vector, Mapping) else {"": vector}
    lexical = vectors.get(LEXICAL)
    sparse = SparseVector(tuple(lexical.indices), tuple(float(v) for v in lexical.values)) \
        if lexical is not None else None
    kept = {k: v for k, v in (payload or {}).items() if k != TERMS_FIELD}
    return IndexPoint(str(point_id), list(vectors.get("") or ()), kept, sparse)


def stored_payload(point: IndexPoint, idf: LexicalIdf) -> dict[str, Any]:
    """The payload an adapter stores for ``point``: its own, plus (``idf="reader"``) :data:`TERMS_FIELD`,
    the term ids of its lexical vector, when it has one. Raises ``ValidationError("payload", ...)`` when
    the point's payload already names :data:`TERMS_FIELD` (the field is the index's own)."""
    if TERMS_FIELD in point.payload:
        raise ValidationError("payload", f"{TERMS_FIELD!r} is reserved for the index's term ids")
    payload = dict(point.payload)
    if idf == "reader" and point.sparse is not None and point.sparse.indices:
        payload[TERMS_FIELD] = list(point.sparse.indices)
    return payload


def integer_fields(idf: LexicalIdf) -> tuple[str, ...]:
    """The integer-indexed payload fields of an index of lexical IDF ``idf`` (:data:`TERMS_FIELD` too for
    ``"reader"``)."""
    return (*INTEGER_FIELDS, TERMS_FIELD) if idf == "reader" else INTEGER_FIELDS


def check_lexical_idf(idf: object) -> LexicalIdf:
    """``idf`` as a :data:`LexicalIdf`; raises ``ValidationError("lexical_idf", ...)`` otherwise."""
    if idf not in ("namespace", "reader"):
        raise ValidationError("lexical_idf", f"must be 'namespace' or 'reader', got {idf!r}")
    return cast(LexicalIdf, idf)


def bm25_idf(n_docs: int, n_holding: int) -> float:
    """Okapi BM25 IDF ``ln(1 + (N - n + 0.5) / (n + 0.5))`` of a term held by ``n_holding`` of
    ``n_docs`` points (counts, ``0 <= n_holding <= n_docs``; larger ``n_holding`` is clamped). Always
    > 0. The formula Qdrant's ``IDF`` modifier applies, here over the points a reader may read."""
    n = min(max(n_holding, 0), max(n_docs, 0))
    return math.log(1.0 + (max(n_docs, 0) - n + 0.5) / (n + 0.5))


def reader_access_keys(where: Filter | None) -> tuple[str, ...] | None:
    """The reader's access keys of a read filter (:func:`memwarden.commands.readmodel.read_filter.read_filter`:
    a top-level ``must`` condition ``FieldIn(ACL_FIELD, keys)``), or ``None`` when the filter has none (a
    reader with too many keys gets the permission as a tree; a filter that is not a read's)."""
    if where is None:
        return None
    for cond in where.must:
        if isinstance(cond, FieldIn) and cond.key == ACL_FIELD and all(isinstance(v, str) for v in cond.values):
            return tuple(str(v) for v in cond.values)
    return None


def read_as_of(where: Filter | None) -> int | None:
    """The time a read looks from (epoch ms): the lowest ``lte`` bound of its top-level conditions on
    :data:`AS_OF_FIELDS` (``read_filter``: valid from by ``as_of``, decided by ``known_at``), ``None`` when
    it has none."""
    bounds = [c.lte for c in (where.must if where is not None else ())
              if isinstance(c, FieldRange) and c.key in AS_OF_FIELDS and c.lte is not None]
    return min(bounds) if bounds else None


def idf_filter(where: Filter | None) -> Filter | None:
    """The filter :func:`reader_weighted`'s counts run under for a read filtered by ``where``: the read's
    access keys (``acl`` holds one of the reader's keys: its ACL, purpose and trust, what separates
    principals) and its conditions on when a memory existed (:data:`AS_OF_FIELDS`: a read as of an earlier
    time weighs words by what the reader could read then). The other time conditions (validity end,
    expiry, freshness) narrow the candidates, not the IDF, so a reader's counts stay the same from one
    current recall to the next. ``where`` itself when it carries no access keys (the permission as a tree,
    :func:`reader_access_keys`)."""
    keys = reader_access_keys(where)
    if where is None or keys is None:
        return where
    as_of = tuple(c for c in where.must if isinstance(c, FieldRange) and c.key in AS_OF_FIELDS)
    return Filter(must=(FieldIn(ACL_FIELD, keys), *as_of))


def reader_weighted(sparse: SparseVector, count: Callable[[int | None], int]) -> SparseVector:
    """``sparse`` (query weights) multiplied term by term by the IDF of the points the reader may read
    (``lexical_idf="reader"``): ``count(None)`` is ``N``, those points, and ``count(term_id)`` is ``n``,
    those of them whose :data:`TERMS_FIELD` holds the term (an adapter answers with exact engine counts
    under :func:`idf_filter` of the read filter). Terms no readable point holds are dropped (they match
    nothing the reader may see); so is everything when nothing is readable. The lexical stage then
    scores BM25 over the readable points alone, whatever else the index holds."""
    if not sparse.indices:
        return sparse
    n_docs = count(None)
    if n_docs <= 0:
        return SparseVector()
    weights: dict[int, float] = {}
    for tid, value in zip(sparse.indices, sparse.values, strict=True):
        if value > 0 and (held := count(tid)) > 0:
            weights[tid] = value * bm25_idf(n_docs, held)
    ordered = sorted(weights.items())
    return SparseVector(tuple(i for i, _ in ordered), tuple(w for _, w in ordered))


def match_values(cond: FieldIn) -> list[str] | list[int]:
    """``cond.values`` as a homogeneous list (engines match on all-str or all-int lists only).

    Raises ``ValidationError(cond.key, ...)`` for bools or a str/int mix."""
    values = list(cond.values)
    if all(isinstance(v, str) for v in values):
        return [str(v) for v in values]
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return [int(v) for v in values]
    raise ValidationError(cond.key, "FieldIn values must be all str or all int")


def rank_hits(hits: Sequence[Hit], limit: int) -> list[Hit]:
    """The first ``limit`` hits in the port's order: score descending, then point id ascending."""
    return sorted(hits, key=lambda h: (-h.score, h.point_id))[: max(limit, 0)]


def search_with_tie_closure(fetch: Callable[[int], list[Hit]], limit: int) -> list[Hit]:
    """Run ``fetch(n)`` (engine top-``n``, filter inside) until the ``limit`` boundary is decided.

    Engines cut ties at the boundary arbitrarily, so a score tied with the ``limit``-th hit may be
    left out by one adapter and kept by another (identical vectors: the same text stored twice).
    Fetch ``limit + 1``; while the last fetched score still equals the ``limit``-th score and the
    engine returned all ``n`` asked for, double ``n``. Then every point scoring at least the
    boundary is in hand and :func:`rank_hits` is deterministic. One query in the usual case."""
    if limit <= 0:
        return []
    n = limit + 1
    while True:
        hits = fetch(n)
        ranked = rank_hits(hits, len(hits))
        if len(ranked) < n or ranked[-1].score < ranked[limit - 1].score:
            return ranked[:limit]
        n *= 2


def check_hybrid_limits(limit: int, prefetch_limit: int) -> None:
    """Validate :meth:`VectorIndex.query` limits: the two prefetch stages together must be able to
    fill the result, ``2 * prefetch_limit >= limit`` (``limit = 2 * prefetch_limit`` asks for every
    fused candidate, as the thread-context lift of the read path does). Raises ``ValidationError``."""
    if limit > 0 and 2 * prefetch_limit < limit:
        raise ValidationError("prefetch_limit", f"must be >= limit / 2 ({limit} / 2), got {prefetch_limit}")


__all__ = [
    "AS_OF_FIELDS", "DEFAULT_FUSION", "DEFAULT_LEXICAL_IDF", "INTEGER_FIELDS", "KEYWORD_FIELDS", "LAYOUT_VERSION",
    "LEXICAL", "OPEN_END_MS", "PREFETCH_FACTOR", "RRF_K", "TERMS_FIELD", "Condition", "FieldIn", "FieldRange", "Filter",
    "FusionMethod", "Hit", "IndexPoint", "IndexUnavailable", "LexicalIdf", "SparseVector", "VectorIndex", "bm25_idf",
    "canonical_id", "check_hybrid_limits", "check_lexical_idf", "filter_is_empty", "idf_filter", "integer_fields",
    "match_values", "plain_vector", "point_from_record", "rank_hits", "read_as_of", "reader_access_keys",
    "reader_weighted",
    "search_with_tie_closure", "stored_payload",
]
