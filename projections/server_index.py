"""``VectorIndex`` on a Qdrant server, through ``qdrant_client.QdrantClient(url=...)`` (REST).

Same layout as the Edge adapter: one collection with one *unnamed* dense vector (cosine distance) and
the named sparse vector :data:`LEXICAL` (``Modifier.IDF`` for ``lexical_idf="namespace"``; none for
``"reader"``, whose IDF rides on the query: :func:`reader_weighted`), a keyword payload index on every
:data:`KEYWORD_FIELDS` entry and an integer index on every :data:`INTEGER_FIELDS` entry (and on
:data:`TERMS_FIELD` for ``"reader"``). Filters
become a ``models.Filter`` (translated by :mod:`memwarden.projections.server_translate`) passed as
``query_filter`` of ``query_points`` (and as the ``filter`` of every ``Prefetch`` of a hybrid query),
so isolation happens inside the search. Writes use
``wait=True`` (visible to the next read). The client's local mode (``:memory:`` / ``path=``) is not a
supported deployment; :meth:`ServerVectorIndex.on_client` exists so that the contract test can run
this adapter's translation on it when no server is reachable. A collection of layout 1 (no sparse
vector) or built for the other lexical IDF is refused by :meth:`ensure` with ``IndexUnavailable``;
drop it and replay the ledger (it is a derived projection).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from qdrant_client import QdrantClient, models

from memwarden.errors import ValidationError

from .server_translate import SERVER_PAYLOAD, server_fusion, server_point, to_server_filter, to_server_sparse
from .vector_index import (
    DEFAULT_FUSION,
    DEFAULT_LEXICAL_IDF,
    KEYWORD_FIELDS,
    LEXICAL,
    TERMS_FIELD,
    Filter,
    FusionMethod,
    Hit,
    IndexPoint,
    IndexUnavailable,
    LexicalIdf,
    SparseVector,
    canonical_id,
    check_hybrid_limits,
    check_lexical_idf,
    idf_filter,
    integer_fields,
    plain_vector,
    point_from_record,
    reader_weighted,
    search_with_tie_closure,
)

__all__ = ["ServerVectorIndex"]


class ServerVectorIndex:
    """Collection ``collection`` on the Qdrant server at ``url``; implements :class:`VectorIndex`.

    The constructor opens no connection; :meth:`ensure` is the first call that reaches the server.
    ``idf`` chooses whose document frequencies weigh the lexical stage (:data:`LexicalIdf`); a
    collection is built for one of them.
    ``exact=True`` sends ``SearchParams(exact=True)`` with every query (full scan, for comparisons);
    the default lets the server use HNSW. A lock serialises calls, as in the Edge adapter.

    Errors: every client/transport failure is raised as ``IndexUnavailable``; malformed point ids
    and filter values raise ``ValidationError`` before anything is sent.
    """

    def __init__(
        self,
        url: str,
        collection: str,
        api_key: str | None = None,
        *,
        exact: bool = False,
        timeout_s: int = 30,
        idf: LexicalIdf = DEFAULT_LEXICAL_IDF,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValidationError("url", f"expected an http(s) URL of a Qdrant server, got {url!r}")
        self._url = url
        self._collection = collection
        self._exact = exact
        self._idf = check_lexical_idf(idf)
        self._lock = threading.RLock()
        self._closed = False
        self._client = QdrantClient(url=url, api_key=api_key, timeout=timeout_s, check_compatibility=False)

    @classmethod
    def on_client(cls, client: QdrantClient, collection: str, *, exact: bool = False,
                  idf: LexicalIdf = DEFAULT_LEXICAL_IDF) -> ServerVectorIndex:
        """The adapter over an already built client (tests: ``QdrantClient(":memory:")``, whose Python
        emulation of the server's query semantics checks the translation without a server)."""
        self = cls.__new__(cls)
        self._url = str(getattr(client, "init_options", {}).get("location") or "client")
        self._collection = collection
        self._exact = exact
        self._idf = check_lexical_idf(idf)
        self._lock = threading.RLock()
        self._closed = False
        self._client = client
        return self

    # -- VectorIndex -----------------------------------------------------------------------------

    def ensure(self, dim: int) -> None:
        """Create the collection (cosine, ``dim`` floats) if missing and the payload indexes
        (idempotent). Raises ``IndexUnavailable`` if it exists with another vector size."""
        if dim <= 0:
            raise ValidationError("dim", f"must be positive, got {dim}")
        with self._guard("ensure"):
            client = self._client
            if not client.collection_exists(self._collection):
                client.create_collection(
                    self._collection,
                    vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE),
                    sparse_vectors_config={LEXICAL: models.SparseVectorParams(modifier=self._modifier())},
                )
            else:
                params = client.get_collection(self._collection).config.params
                vectors = params.vectors
                size = vectors.size if isinstance(vectors, models.VectorParams) else None
                if size != dim:
                    raise IndexUnavailable(
                        f"collection {self._collection!r} has vector config {vectors!r}, expected {dim}"
                    )
                sparse = (params.sparse_vectors or {}).get(LEXICAL)
                if sparse is None or (sparse.modifier or models.Modifier.NONE) != self._modifier():
                    raise IndexUnavailable(
                        f"collection {self._collection!r} has no {LEXICAL!r} sparse vector built for lexical_idf"
                        f" {self._idf!r} (layout 1 has none; the other lexical IDF, MEMWARDEN_LEXICAL_IDF, differs in"
                        " its modifier). It is derived, but a namespace on a Qdrant server does not switch in place:"
                        " set MEMWARDEN_LEXICAL_IDF back, or rebuild the namespace from its ledger into a new one"
                        " with the setting (`memwarden replay --into`). Dropping the collection and its offsets is"
                        " not enough: the worker's consumer group resumes where it left the events topic"
                    )
            for key in KEYWORD_FIELDS:
                client.create_payload_index(self._collection, key, models.PayloadSchemaType.KEYWORD, wait=True)
            for key in integer_fields(self._idf):
                client.create_payload_index(self._collection, key, models.PayloadSchemaType.INTEGER, wait=True)

    def upsert(self, points: Sequence[IndexPoint]) -> None:
        """Insert or replace ``points`` by id in one request (empty input is a no-op)."""
        if not points:
            return
        structs = [server_point(p, self._idf) for p in points]
        with self._guard("upsert"):
            self._client.upsert(self._collection, points=structs, wait=True)

    def set_payload(self, where: Filter, payload: Mapping[str, Any]) -> None:
        """Merge ``payload`` keys into every point matching ``where`` (other keys are kept)."""
        selector = models.FilterSelector(filter=to_server_filter(where) or models.Filter())
        with self._guard("set_payload"):
            self._client.set_payload(self._collection, payload=dict(payload), points=selector, wait=True)

    def delete(self, where: Filter) -> None:
        """Delete every point matching ``where`` (an empty filter deletes every point)."""
        selector = models.FilterSelector(filter=to_server_filter(where) or models.Filter())
        with self._guard("delete"):
            self._client.delete(self._collection, points_selector=selector, wait=True)

    def delete_points(self, point_ids: Sequence[str]) -> None:
        """Delete the points ``point_ids`` (unknown ids are ignored)."""
        ids: list[models.ExtendedPointId] = [canonical_id(p) for p in point_ids]
        if ids:
            with self._guard("delete_points"):
                self._client.delete(self._collection, points_selector=models.PointIdsList(points=ids), wait=True)

    def search(self, vector: Sequence[float], where: Filter, limit: int) -> list[Hit]:
        """Top-``limit`` hits by cosine similarity among points matching ``where`` (``query_filter``
        inside ``query_points``), sorted by ``(-score, point_id)`` with boundary ties closed."""
        if limit <= 0:
            return []
        query_vec = plain_vector(vector)
        flt = to_server_filter(where)
        params = models.SearchParams(exact=True) if self._exact else None

        def fetch(n: int) -> list[Hit]:
            response = self._client.query_points(
                self._collection,
                query=query_vec,
                query_filter=flt,
                search_params=params,
                limit=n,
                with_payload=SERVER_PAYLOAD,
                with_vectors=False,
            )
            return [Hit(point_id=str(p.id), score=float(p.score), payload=p.payload or {}) for p in response.points]

        with self._guard("search"):
            return search_with_tie_closure(fetch, limit)

    def search_lexical(self, sparse: SparseVector, where: Filter | None, limit: int) -> list[Hit]:
        """Lexical-only top-``limit`` (see :meth:`VectorIndex.search_lexical`): ``query_points`` with the
        sparse query ``using`` :data:`LEXICAL` and ``query_filter``. Sorted by ``(-score, point_id)``."""
        if limit <= 0 or not sparse.indices:
            return []
        flt = to_server_filter(where)
        if self._idf == "reader":
            sparse = reader_weighted(sparse, self._counter(to_server_filter(idf_filter(where))))
            if not sparse.indices:
                return []
        query = to_server_sparse(sparse)

        def fetch(n: int) -> list[Hit]:
            response = self._client.query_points(self._collection, query=query, using=LEXICAL, query_filter=flt,
                                                 limit=n, with_payload=SERVER_PAYLOAD, with_vectors=False)
            return [Hit(point_id=str(p.id), score=float(p.score), payload=p.payload or {}) for p in response.points]

        with self._guard("search_lexical"):
            return search_with_tie_closure(fetch, limit)

    def query(
        self,
        dense: Sequence[float],
        sparse: SparseVector,
        where: Filter | None,
        limit: int,
        prefetch_limit: int,
        fusion: FusionMethod = DEFAULT_FUSION,
    ) -> list[Hit]:
        """Hybrid top-``limit`` (see :meth:`VectorIndex.query`): ``query_points`` with a dense and a
        lexical ``Prefetch``, each with the filter, fused by ``fusion`` on the server with the filter
        as ``query_filter`` too. Sorted by ``(-score, point_id)``, boundary ties closed."""
        check_hybrid_limits(limit, prefetch_limit)
        if limit <= 0:
            return []
        flt = to_server_filter(where)
        params = models.SearchParams(exact=True) if self._exact else None
        stages = [models.Prefetch(query=plain_vector(dense), filter=flt, params=params, limit=prefetch_limit)]
        if self._idf == "reader":
            sparse = reader_weighted(sparse, self._counter(to_server_filter(idf_filter(where))))
        if sparse.indices:
            stages.append(models.Prefetch(query=to_server_sparse(sparse), using=LEXICAL, filter=flt, params=params,
                                          limit=prefetch_limit))
        root = server_fusion(fusion)

        def fetch(n: int) -> list[Hit]:
            response = self._client.query_points(  # no root filter: fusion ranks the filtered stages' points
                self._collection,
                prefetch=stages,
                query=root,
                limit=n,
                with_payload=SERVER_PAYLOAD,
                with_vectors=False,
            )
            return [Hit(point_id=str(p.id), score=float(p.score), payload=p.payload or {}) for p in response.points]

        with self._guard("query"):
            return search_with_tie_closure(fetch, limit)

    def retrieve(self, point_ids: Sequence[str]) -> list[Hit]:
        """Points by id with score 0.0, in request order, duplicates and unknown ids dropped."""
        ids = list(dict.fromkeys(canonical_id(pid) for pid in point_ids))
        if not ids:
            return []
        with self._guard("retrieve"):
            records = self._client.retrieve(self._collection, ids=ids, with_payload=SERVER_PAYLOAD, with_vectors=False)
        found = {str(r.id): Hit(point_id=str(r.id), score=0.0, payload=r.payload or {}) for r in records}
        return [found[i] for i in ids if i in found]

    def scan(self, where: Filter | None = None, batch: int = 1000) -> Iterator[IndexPoint]:
        """Every point matching ``where`` with vectors and payload, in point-id order."""
        offset: Any = None
        while True:
            with self._guard("scan"):
                records, offset = self._client.scroll(self._collection, scroll_filter=to_server_filter(where),
                                                      limit=batch, offset=offset, with_payload=SERVER_PAYLOAD,
                                                      with_vectors=True)
            for r in records:
                yield point_from_record(r.id, r.vector, r.payload)
            if offset is None or not records:
                return

    def count(self, where: Filter | None = None) -> int:
        """Exact number of points matching ``where`` (all points when ``None`` or empty)."""
        flt = to_server_filter(where)
        with self._guard("count"):
            return int(self._client.count(self._collection, count_filter=flt, exact=True).count)

    def _modifier(self) -> models.Modifier:
        """The sparse vector's modifier for this adapter's lexical IDF."""
        return models.Modifier.IDF if self._idf == "namespace" else models.Modifier.NONE

    def _counter(self, flt: models.Filter | None) -> Callable[[int | None], int]:
        """The counts :func:`reader_weighted` asks for, under the translated filter ``flt`` (the read's
        :func:`idf_filter`; counted on every recall: other workers write the same collection): ``None``
        -> points matching it, a term id -> those of them holding the term (exact counts)."""

        def count(term: int | None) -> int:
            if term is None:
                where = flt
            else:
                held = models.FieldCondition(key=TERMS_FIELD, match=models.MatchAny(any=[term]))
                where = models.Filter(must=[held] if flt is None else [flt, held])
            with self._guard("count"):
                return int(self._client.count(self._collection, count_filter=where, exact=True).count)

        return count

    def close(self) -> None:
        """Close the HTTP client; idempotent (the server persists on its own)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._client.close()

    # -- extras (not in the port) ----------------------------------------------------------------

    def flush(self) -> None:
        """No-op: writes are sent with ``wait=True`` and the server owns durability."""

    # -- internals -------------------------------------------------------------------------------

    @contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        """Hold the lock, refuse when closed, and wrap client/transport errors."""
        with self._lock:
            if self._closed:
                raise IndexUnavailable(f"server index {self._collection!r} is closed")
            try:
                yield
            except (IndexUnavailable, ValidationError):
                raise
            except Exception as exc:
                raise IndexUnavailable(f"Qdrant {what} on {self._url} / {self._collection!r} failed: {exc}") from exc
