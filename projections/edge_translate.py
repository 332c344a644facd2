"""Translation of the port's types into Qdrant Edge's: the filter tree (:mod:`memwarden.commands.readmodel.filters`)
into ``qe.Filter`` conditions (keyword match, integer range, nested filters), sparse vectors, points,
the fusion method and the shard config. Pure mapping; :mod:`memwarden.projections.edge_index` runs it."""

from __future__ import annotations

import qdrant_edge as qe

from memwarden.errors import ValidationError

from .vector_index import (
    DEFAULT_LEXICAL_IDF,
    LEXICAL,
    RRF_K,
    TERMS_FIELD,
    Condition,
    FieldIn,
    FieldRange,
    Filter,
    FusionMethod,
    IndexPoint,
    LexicalIdf,
    SparseVector,
    canonical_id,
    filter_is_empty,
    match_values,
    plain_vector,
    stored_payload,
)


def _condition(cond: Condition | Filter) -> qe.FieldCondition | qe.Filter:
    """One port filter entry -> one Edge ``FieldCondition`` (or a nested Edge ``Filter``)."""
    if isinstance(cond, Filter):
        return _filter(cond)
    if isinstance(cond, FieldIn):
        return qe.FieldCondition(key=cond.key, match=qe.MatchAny(match_values(cond)))
    if isinstance(cond, FieldRange):
        rng = qe.RangeFloat(gt=cond.gt, gte=cond.gte, lt=cond.lt, lte=cond.lte)
        return qe.FieldCondition(key=cond.key, range=rng)
    raise ValidationError("where", f"unsupported condition {type(cond).__name__}")


def to_edge_filter(where: Filter | None) -> qe.Filter | None:
    """Translate the port's filter AST into an Edge ``Filter`` (``None`` when it has no conditions).

    Ranges use ``RangeFloat``: integer payload values (epoch ms up to 2.5e14) are exact in float64.
    An empty ``FieldIn.values`` in ``must`` matches nothing; in ``must_not`` it excludes nothing.
    """
    if where is None or filter_is_empty(where):
        return None
    return _filter(where)


def _filter(where: Filter) -> qe.Filter:
    """Recursive translation; an empty nested ``Filter`` becomes ``Filter()``, which matches all."""
    return qe.Filter(
        must=[_condition(c) for c in where.must] or None,
        must_not=[_condition(c) for c in where.must_not] or None,
        should=[_condition(c) for c in where.should] or None,
    )


#: What every read asks back of a point's payload: all of it but the index's term ids.
EDGE_PAYLOAD = qe.PayloadSelector.Exclude([TERMS_FIELD])


def to_edge_sparse(sparse: SparseVector) -> qe.SparseVector:
    """The port's sparse vector as an Edge ``SparseVector``."""
    return qe.SparseVector(list(sparse.indices), [float(v) for v in sparse.values])


def edge_point(point: IndexPoint, idf: LexicalIdf = DEFAULT_LEXICAL_IDF) -> qe.Point:
    """Dense vector under the default name, the lexical sparse vector (when present), payload (with the
    term ids under ``idf="reader"``: :func:`stored_payload`)."""
    dense = plain_vector(point.vector)
    vector: dict[str, list[float] | qe.SparseVector | list[list[float]]] = {"": dense}  # qe.Point's named vectors
    if point.sparse is not None and point.sparse.indices:
        vector[LEXICAL] = to_edge_sparse(point.sparse)
    return qe.Point(canonical_id(point.point_id), vector, stored_payload(point, idf))


def edge_fusion(fusion: FusionMethod) -> qe.Fusion.Rrf | qe.Fusion.Dbsf:
    """The engine's fusion of the hybrid query's prefetch stages: RRF with :data:`RRF_K`, or DBSF."""
    if fusion == "rrf":
        return qe.Fusion.Rrf(k=RRF_K)
    if fusion == "dbsf":
        return qe.Fusion.Dbsf()
    raise ValidationError("fusion", f"unknown fusion method {fusion!r}")


#: Where a shard keeps its payloads: in RAM (``Memory.Cached``; Edge's default, ``Cold``, reads them from an
#: mmap). The read filter's conditions that the access keys do not answer are checked point by point
#: against the payload of every point the keys admit, in each prefetch leg: on a 100k shard, alternating
#: per query in one process (500 queries, identical results), ``hybrid_in_context`` took p50 5.71 / 6.14 ms
#: with the payloads in RAM against 6.90 / 6.91 ms from the mmap. The price is the payloads' size in
#: memory (88 MB at 100k points). Segments written before keep their storage until the shard is rebuilt.
PAYLOAD_MEMORY = qe.Memory.Cached


def edge_config(dim: int, idf: LexicalIdf = DEFAULT_LEXICAL_IDF) -> qe.EdgeConfig:
    """Layout 2: unnamed dense vector (cosine, ``dim``) + :data:`LEXICAL` sparse vector, with the engine's
    IDF modifier for ``idf="namespace"`` and none for ``"reader"`` (the IDF then rides on the query:
    :func:`reader_weighted`); payloads in RAM (:data:`PAYLOAD_MEMORY`)."""
    lexical = qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf) if idf == "namespace" else qe.EdgeSparseVectorParams()
    return qe.EdgeConfig(
        vectors=qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine),
        sparse_vectors={LEXICAL: lexical},
        payload_memory=PAYLOAD_MEMORY,
    )
