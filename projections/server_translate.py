"""Translation of the port's types into ``qdrant_client.models``: the filter tree
(:mod:`memwarden.commands.readmodel.filters`) into ``models.Filter`` conditions (keyword match, range,
nested filters), sparse vectors, points and the fusion method of a hybrid query. Pure mapping;
:mod:`memwarden.projections.server_index` runs it."""

from __future__ import annotations

from qdrant_client import models

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


def _condition(cond: Condition | Filter) -> models.FieldCondition | models.Filter:
    """One port filter entry -> one ``models.FieldCondition`` (or a nested ``models.Filter``)."""
    if isinstance(cond, Filter):
        return _filter(cond)
    if isinstance(cond, FieldIn):
        return models.FieldCondition(key=cond.key, match=models.MatchAny(any=match_values(cond)))
    if isinstance(cond, FieldRange):
        rng = models.Range(gt=cond.gt, gte=cond.gte, lt=cond.lt, lte=cond.lte)
        return models.FieldCondition(key=cond.key, range=rng)
    raise ValidationError("where", f"unsupported condition {type(cond).__name__}")


def to_server_filter(where: Filter | None) -> models.Filter | None:
    """Translate the port's filter AST into ``models.Filter`` (``None`` when it has no conditions)."""
    if where is None or filter_is_empty(where):
        return None
    return _filter(where)


def _filter(where: Filter) -> models.Filter:
    """Recursive translation; an empty nested ``Filter`` becomes ``Filter()``, which matches all."""
    return models.Filter(
        must=[_condition(c) for c in where.must] or None,
        must_not=[_condition(c) for c in where.must_not] or None,
        should=[_condition(c) for c in where.should] or None,
    )


def to_server_sparse(sparse: SparseVector) -> models.SparseVector:
    """The port's sparse vector as ``models.SparseVector``."""
    return models.SparseVector(indices=list(sparse.indices), values=[float(v) for v in sparse.values])


#: What every read asks back of a point's payload: all of it but the index's term ids.
SERVER_PAYLOAD = models.PayloadSelectorExclude(exclude=[TERMS_FIELD])


def server_point(point: IndexPoint, idf: LexicalIdf = DEFAULT_LEXICAL_IDF) -> models.PointStruct:
    """Dense vector under the default name, the lexical sparse vector (when present), payload (with the
    term ids under ``idf="reader"``: :func:`stored_payload`)."""
    vector: dict[str, models.Vector] = {"": plain_vector(point.vector)}
    if point.sparse is not None and point.sparse.indices:
        vector[LEXICAL] = to_server_sparse(point.sparse)
    return models.PointStruct(id=canonical_id(point.point_id), vector=vector, payload=stored_payload(point, idf))


def server_fusion(fusion: FusionMethod) -> models.RrfQuery | models.FusionQuery:
    """The root query fusing a hybrid query's prefetch stages: RRF with :data:`RRF_K`, or DBSF.
    Raises ``ValidationError`` for any other method."""
    if fusion == "rrf":
        return models.RrfQuery(rrf=models.Rrf(k=RRF_K))
    if fusion == "dbsf":
        return models.FusionQuery(fusion=models.Fusion.DBSF)
    raise ValidationError("fusion", f"unknown fusion method {fusion!r}")
