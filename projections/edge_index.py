"""``VectorIndex`` on embedded Qdrant Edge (``qdrant_edge`` from PyPI ``qdrant-edge-py``).

One Edge shard lives in the directory ``path / name``. It holds one *unnamed* dense vector (cosine
distance) and the named sparse vector :data:`LEXICAL` per point (with the engine's IDF modifier for
``lexical_idf="namespace"``, none for ``"reader"``), a keyword payload index on every
:data:`KEYWORD_FIELDS` entry and an integer index on every :data:`INTEGER_FIELDS` entry (and on
:data:`TERMS_FIELD` for ``"reader"``). Point ids are UUID strings (canonical lower-case form).

Layout migration: a shard created by layout 1 (dense only), or for the other lexical IDF, cannot be
opened with this adapter's config; :meth:`EdgeVectorIndex.ensure` then raises ``IndexUnavailable``
saying so. The shard is a derived projection: stop the worker and run ``memwarden replay --in-place`` with
the settings the worker will have; it rebuilds the namespace from its ledger beside it and switches in one
step (:meth:`EdgeVectorIndex.adopt`, which refuses a rebuild made for another lexical IDF than its own).
Deleting the shard and its ``index:edge`` offsets is not enough: the worker's consumer group resumes where
it left the events topic, and the new shard stays empty (a fresh namespace builds it by construction).

Things worth knowing about Edge (0.9):

* There is no background optimizer: new points are searched brute force (exact) until
  :meth:`EdgeVectorIndex.optimize` builds HNSW for segments above the indexing threshold. Call it
  after a bulk rebuild, not after every small write (it is synchronous).
* Only one process may hold a shard open (the WAL is locked); a second open fails with
  ``IndexUnavailable``.
* Every engine error surfaces as a bare ``Exception``; this adapter wraps them in
  ``IndexUnavailable``. Malformed ids and filter values raise ``ValidationError`` first.
* Hybrid queries (:meth:`EdgeVectorIndex.query`) run as one ``QueryRequest`` with two ``Prefetch``
  stages (dense ``Nearest`` and sparse ``Nearest(using=LEXICAL)``), each with the filter, and a
  ``Fusion.Rrf`` / ``Fusion.Dbsf`` root query with the filter too, fused in the engine. Edge 0.9's IDF
  modifier is ``ln(1 + (N - n + 0.5) / (n + 0.5))`` over the points of the shard holding a sparse
  vector; under ``lexical_idf="reader"`` the lexical query's weights carry that IDF over the points the
  reader may read instead (:func:`reader_weighted`: ``1 + terms`` exact counts under the read's access
  keys and as-of bounds, :func:`idf_filter`), kept between recalls for reads no point postdates until a
  write makes them stale
  (:class:`~memwarden.projections.reader_frequencies.ReaderFrequencies`; this adapter owns its shard, so it
  sees every write).
  Measured on 0.9: DBSF maps each stage's scores with the *sample* standard deviation and gives 0.5
  to a stage of a single point; RRF scores are ``1 / (k + rank)`` with rank from 0;
  ``Fusion.Rrf(weights=...)`` barely changes the result (so it is not used); a root filter is also
  applied inside every prefetch by the engine, so the explicit per-stage filter is defence in depth
  that costs one more filter pass (about 1.5-3 ms per query at 100k points).
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import qdrant_edge as qe

from memwarden.commands.readmodel.payload import ACL_FIELD
from memwarden.errors import ValidationError

from .edge_template import CONFIG_FILE as _CONFIG_FILE
from .edge_template import copy_empty_shard, create_indexes, shard_lexical_idf
from .edge_translate import (
    EDGE_PAYLOAD,
    edge_config,
    edge_fusion,
    edge_point,
    to_edge_filter,
    to_edge_sparse,
)
from .reader_frequencies import ReaderFrequencies
from .vector_index import (
    AS_OF_FIELDS,
    DEFAULT_FUSION,
    DEFAULT_LEXICAL_IDF,
    LEXICAL,
    TERMS_FIELD,
    FieldIn,
    FieldRange,
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
    plain_vector,
    point_from_record,
    read_as_of,
    reader_access_keys,
    reader_weighted,
    search_with_tie_closure,
)

__all__ = ["EdgeVectorIndex"]



class EdgeVectorIndex:
    """Embedded Qdrant Edge shard at ``path / name``; implements :class:`VectorIndex`.

    The constructor loads the shard if its directory already holds one; otherwise the shard is
    created by :meth:`ensure` (which needs the dimension). Every public method holds one lock, so the
    adapter may be driven from a worker thread (calls are serialised, one at a time).

    ``idf`` chooses whose document frequencies weigh the lexical stage (:data:`LexicalIdf`: the
    engine's over every point, or the reader's, counted under the read's access keys and kept between
    recalls until a write of this adapter makes them stale); a shard is built for one of them.

    ``exact=True`` asks the engine for exact (full-scan) search on every query. Without it, search
    is exact anyway until :meth:`optimize` builds HNSW for large segments; after that it is HNSW
    (approximate) except where the query planner chooses the payload index for selective filters.

    Errors: ``IndexUnavailable`` when the shard cannot be opened, was closed, or the engine fails;
    ``ValidationError`` for malformed point ids or filter values.
    """

    def __init__(self, path: Path, name: str, *, exact: bool = False,
                 idf: LexicalIdf = DEFAULT_LEXICAL_IDF) -> None:
        self._dir = Path(path) / name
        self._exact = exact
        self._idf = check_lexical_idf(idf)
        self._lock = threading.RLock()
        self._shard: qe.EdgeShard | None = None
        self._closed = False
        #: the reader document frequencies kept between recalls (``idf="reader"`` only)
        self.frequencies = ReaderFrequencies() if self._idf == "reader" else None
        #: the latest valid-from or decision time of a point (epoch ms), ``None`` until read from the engine
        self._latest_ms: int | None = None
        if (self._dir / _CONFIG_FILE).exists():
            try:
                self._shard = qe.EdgeShard.load(str(self._dir))
            except Exception as exc:
                raise IndexUnavailable(f"cannot load Edge shard at {self._dir}: {exc}") from exc

    @property
    def directory(self) -> Path:
        """The shard directory (``path / name``)."""
        return self._dir

    # -- VectorIndex -----------------------------------------------------------------------------

    def ensure(self, dim: int) -> None:
        """Create the shard (cosine, ``dim`` floats) if missing, else reopen it with that config so
        Edge checks compatibility (``IndexUnavailable`` on another dimension); then create the
        payload indexes (idempotent)."""
        if dim <= 0:
            raise ValidationError("dim", f"must be positive, got {dim}")
        config = edge_config(dim, self._idf)
        with self._guard("ensure", need_shard=False):
            if self._shard is None and copy_empty_shard(self._dir, dim, self._idf):
                self._shard = qe.EdgeShard.load(str(self._dir), config)
            elif self._shard is None:
                self._dir.mkdir(parents=True, exist_ok=True)
                self._shard = qe.EdgeShard.create(str(self._dir), config)
            else:
                old, self._shard = self._shard, None
                old.close()
                try:
                    self._shard = qe.EdgeShard.load(str(self._dir), config)
                except Exception as exc:
                    if LEXICAL in str(exc):
                        raise IndexUnavailable(
                            f"Edge shard at {self._dir} was built for another layout (layout 1 has no {LEXICAL!r}"
                            " vector; a shard built for the other lexical IDF, MEMWARDEN_LEXICAL_IDF, has another"
                            f" one; this index is lexical_idf {self._idf!r}). It is derived: stop the worker, run"
                            f" `memwarden replay --in-place` with MEMWARDEN_LEXICAL_IDF={self._idf} (it rebuilds the"
                            " namespace from its ledger beside it and switches in one step), then start the worker"
                            " with that setting; or set MEMWARDEN_LEXICAL_IDF back"
                        ) from exc
                    raise
            create_indexes(self._shard, self._idf)
            self._stale_all()

    def upsert(self, points: Sequence[IndexPoint]) -> None:
        """Insert or replace ``points`` by id, in one update operation (empty input is a no-op)."""
        if not points:
            return
        edge_points = [edge_point(p, self._idf) for p in points]
        with self._guard("upsert") as shard:
            replaced = self._held_terms(shard, [canonical_id(p.point_id) for p in points])
            shard.update(qe.UpdateOperation.upsert_points(edge_points))
            if self.frequencies is not None:
                self.frequencies.written([*replaced, *((_acl(p.payload), p.sparse.indices if p.sparse else ())
                                                        for p in points)])
                if self._latest_ms is not None:
                    self._latest_ms = max([self._latest_ms, *(_int_of(p.payload.get(key)) for p in points
                                                              for key in AS_OF_FIELDS)])

    def set_payload(self, where: Filter, payload: Mapping[str, Any]) -> None:
        """Merge ``payload`` keys into every point matching ``where`` (other keys are kept)."""
        operation = qe.UpdateOperation.set_payload_by_filter(to_edge_filter(where) or qe.Filter(), dict(payload))
        with self._guard("set_payload") as shard:
            shard.update(operation)
            if ACL_FIELD in payload or TERMS_FIELD in payload or set(AS_OF_FIELDS) & set(payload):
                self._stale_all()

    def delete(self, where: Filter) -> None:
        """Delete every point matching ``where`` (an empty filter deletes every point)."""
        operation = qe.UpdateOperation.delete_points_by_filter(to_edge_filter(where) or qe.Filter())
        with self._guard("delete") as shard:
            shard.update(operation)
            self._stale_all()

    def delete_points(self, point_ids: Sequence[str]) -> None:
        """Delete the points ``point_ids`` (unknown ids are ignored)."""
        ids: list[qe.PointId] = [canonical_id(p) for p in point_ids]
        if ids:
            with self._guard("delete_points") as shard:
                held = self._held_terms(shard, ids)
                shard.update(qe.UpdateOperation.delete_points(ids))
                if self.frequencies is not None:
                    self.frequencies.written(held)

    def search(self, vector: Sequence[float], where: Filter, limit: int) -> list[Hit]:
        """Top-``limit`` hits by cosine similarity among points matching ``where``; the filter is
        part of the engine query. Sorted by ``(-score, point_id)``, boundary ties closed (see
        :func:`search_with_tie_closure`)."""
        if limit <= 0:
            return []
        query = qe.Query.Nearest(plain_vector(vector))
        flt = to_edge_filter(where)
        params = qe.SearchParams(exact=True) if self._exact else None
        with self._guard("search") as shard:

            def fetch(n: int) -> list[Hit]:
                request = qe.QueryRequest(
                    limit=n, query=query, filter=flt, with_payload=EDGE_PAYLOAD, with_vector=False, params=params
                )
                return [Hit(str(p.id), float(p.score), p.payload or {}) for p in shard.query(request)]

            return search_with_tie_closure(fetch, limit)

    def search_lexical(self, sparse: SparseVector, where: Filter | None, limit: int) -> list[Hit]:
        """Lexical-only top-``limit`` (see :meth:`VectorIndex.search_lexical`): one ``Nearest`` query on
        :data:`LEXICAL` with the filter in the request. Sorted by ``(-score, point_id)``."""
        if limit <= 0 or not sparse.indices:
            return []
        flt = to_edge_filter(where)
        if self._idf == "reader":
            sparse = self._reader_weighted(sparse, where)
            if not sparse.indices:
                return []
        query = qe.Query.Nearest(to_edge_sparse(sparse), using=LEXICAL)
        with self._guard("search_lexical") as shard:

            def fetch(n: int) -> list[Hit]:
                request = qe.QueryRequest(limit=n, query=query, filter=flt, with_payload=EDGE_PAYLOAD,
                                          with_vector=False)
                return [Hit(str(p.id), float(p.score), p.payload or {}) for p in shard.query(request)]

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
        """Hybrid top-``limit`` (see :meth:`VectorIndex.query`): one ``QueryRequest`` whose dense and
        lexical ``Prefetch`` stages each carry the filter, fused by ``fusion`` in the engine (the
        root needs no filter of its own: it only ranks the stages' points). Sorted by ``(-score,
        point_id)``, boundary ties closed."""
        check_hybrid_limits(limit, prefetch_limit)
        if limit <= 0:
            return []
        flt = to_edge_filter(where)
        params = qe.SearchParams(exact=True) if self._exact else None
        stages = [qe.Prefetch(limit=prefetch_limit, query=qe.Query.Nearest(plain_vector(dense)), filter=flt,
                              params=params)]
        if self._idf == "reader":
            sparse = self._reader_weighted(sparse, where)
        if sparse.indices:
            lexical = qe.Query.Nearest(to_edge_sparse(sparse), using=LEXICAL)
            stages.append(qe.Prefetch(limit=prefetch_limit, query=lexical, filter=flt, params=params))
        # Fusion.Rrf and Fusion.Dbsf are subclasses of Fusion at runtime (a PyO3 enum); the stubs do not say so
        root = cast(qe.Fusion, edge_fusion(fusion))
        with self._guard("query") as shard:

            def fetch(n: int) -> list[Hit]:
                # no root filter: fusion only ranks what the filtered prefetch stages returned
                request = qe.QueryRequest(limit=n, prefetches=stages, query=root, with_payload=EDGE_PAYLOAD,
                                          with_vector=False)
                return [Hit(str(p.id), float(p.score), p.payload or {}) for p in shard.query(request)]

            return search_with_tie_closure(fetch, limit)

    def retrieve(self, point_ids: Sequence[str]) -> list[Hit]:
        """Points by id with score 0.0, in request order, duplicates and unknown ids dropped."""
        ids = list(dict.fromkeys(canonical_id(pid) for pid in point_ids))
        if not ids:
            return []
        edge_ids: list[qe.PointId] = list(ids)  # annotation only: PointId exists in the stubs
        with self._guard("retrieve") as shard:
            records = shard.retrieve(edge_ids, with_payload=EDGE_PAYLOAD, with_vector=False)
        found = {str(r.id): Hit(str(r.id), 0.0, r.payload or {}) for r in records}
        return [found[i] for i in ids if i in found]

    def scan(self, where: Filter | None = None, batch: int = 1000) -> Iterator[IndexPoint]:
        """Every point matching ``where`` with vectors and payload, in point-id order."""
        offset: Any = None
        while True:
            request = qe.ScrollRequest(offset=offset, limit=batch, filter=to_edge_filter(where),
                                       with_payload=EDGE_PAYLOAD, with_vector=True)
            with self._guard("scan") as shard:
                records, offset = shard.scroll(request)
            for r in records:
                yield point_from_record(r.id, r.vector, r.payload)
            if offset is None or not records:
                return

    def count(self, where: Filter | None = None) -> int:
        """Exact number of points matching ``where`` (all points when ``None`` or empty)."""
        request = qe.CountRequest(exact=True, filter=to_edge_filter(where))
        with self._guard("count") as shard:
            return int(shard.count(request))

    def close(self) -> None:
        """Flush and close the shard; idempotent. Later calls raise ``IndexUnavailable``."""
        with self._lock:
            shard, self._shard, self._closed = self._shard, None, True
            if shard is None:
                return
            try:
                shard.flush()
            finally:
                shard.close()

    # -- extras (not in the port) ----------------------------------------------------------------

    def flush(self) -> None:
        """Persist pending segment changes to disk (the WAL already makes each update durable)."""
        with self._guard("flush") as shard:
            shard.flush()

    def recreate(self, dim: int) -> None:
        """Delete the shard directory and create an empty shard of the current layout. For a shard
        of an older layout (see the module notes); the caller replays the ledger into it."""
        with self._lock:
            shard, self._shard = self._shard, None
            if shard is not None:
                shard.close()
            shutil.rmtree(self._dir, ignore_errors=True)
        self.ensure(dim)

    def check_adoptable(self, name: str) -> None:
        """Raise ``IndexUnavailable`` unless the shard ``name`` beside this one exists and was built for this
        index's lexical IDF (a rebuild made under another ``MEMWARDEN_LEXICAL_IDF`` than this worker's); a
        switch calls it before it changes anything."""
        rebuilt = self._dir.parent / name
        if not (rebuilt / _CONFIG_FILE).exists():
            raise IndexUnavailable(f"no Edge shard at {rebuilt}")
        built_for = shard_lexical_idf(rebuilt)
        if built_for is not None and built_for != self._idf:
            raise IndexUnavailable(f"the Edge shard at {rebuilt} was built for lexical_idf {built_for!r}; this index"
                                   f" serves {self._idf!r} (MEMWARDEN_LEXICAL_IDF): stop the worker, then switch")

    def adopt(self, name: str, retire_as: str) -> None:
        """Switch this index to the shard ``name`` beside it (a rebuild), in one step under the lock:
        close the shard, move this directory to ``retire_as`` and ``name``'s to this one, open it.
        Calls wait meanwhile. Raises ``IndexUnavailable`` when ``name`` holds no shard or one built for another
        lexical IDF (:meth:`check_adoptable`; nothing moves)."""
        rebuilt, retired = self._dir.parent / name, self._dir.parent / retire_as
        self.check_adoptable(name)
        with self._lock:
            shard, self._shard = self._shard, None
            if shard is not None:
                shard.close()
            if self._dir.exists():
                self._dir.rename(retired)
            rebuilt.rename(self._dir)
            self._stale_all()
            try:
                self._shard = qe.EdgeShard.load(str(self._dir))
            except Exception as exc:
                raise IndexUnavailable(f"cannot load the adopted Edge shard at {self._dir}: {exc}") from exc

    def optimize(self) -> bool:
        """Run Edge's optimizers synchronously (merge segments, build HNSW above the indexing
        threshold). True when something was optimized. Takes seconds to minutes at 100k points."""
        with self._guard("optimize") as shard:
            return bool(shard.optimize())

    # -- internals -------------------------------------------------------------------------------

    def _reader_weighted(self, sparse: SparseVector, where: Filter | None) -> SparseVector:
        """:func:`reader_weighted` for a read filtered by ``where``: counts under :func:`idf_filter`. A read
        whose as-of conditions exclude none of the points its access keys admit (none of them is valid from
        or decided after the read's time: always so when no point of the shard is,
        :meth:`_holds_nothing_after`, else asked with one count, :meth:`_admits_nothing_after`) has the counts
        of its access keys alone, taken from :attr:`frequencies` while no write made them stale; any other
        read of the past is counted afresh. So a memory dated in the future slows only the readers who may
        read it. Under the lock, so no write lands between a lookup and its bookkeeping."""
        keys = reader_access_keys(where)
        with self._lock:
            as_of = read_as_of(where)
            if keys is not None and self.frequencies is not None and (
                    self._holds_nothing_after(as_of) or self._admits_nothing_after(keys, as_of)):
                access = to_edge_filter(Filter(must=(FieldIn(ACL_FIELD, keys),)))
                return reader_weighted(sparse, self.frequencies.counter(keys, self._counter(access)))
            return reader_weighted(sparse, self._counter(to_edge_filter(idf_filter(where))))

    def _admits_nothing_after(self, keys: tuple[str, ...], as_of_ms: int | None) -> bool:
        """True when no point the access ``keys`` admit is valid from or decided after ``as_of_ms`` (one exact
        count; ``None``: the read has no such bound)."""
        if as_of_ms is None:
            return True
        later = Filter(must=(FieldIn(ACL_FIELD, keys),),
                       should=tuple(FieldRange(key, gt=as_of_ms) for key in AS_OF_FIELDS))
        return self.count(later) == 0

    def _holds_nothing_after(self, as_of_ms: int | None) -> bool:
        """True when no point of the shard is valid from or decided after ``as_of_ms`` (``None``: the read has
        no such bound). The latest such time is read from the engine once (ordered scrolls) and then kept
        up to date by upserts; writes that may move it otherwise forget it."""
        if as_of_ms is None:
            return True
        if self._latest_ms is None:
            latest = 0
            with self._guard("scroll") as shard:
                for key in AS_OF_FIELDS:
                    records, _ = shard.scroll(qe.ScrollRequest(
                        limit=1, with_payload=qe.PayloadSelector.Include([key]), with_vector=False,
                        order_by=qe.OrderBy(key, qe.Direction.Desc)))
                    latest = max([latest, *(_int_of((r.payload or {}).get(key)) for r in records)])
            self._latest_ms = latest
        return as_of_ms >= self._latest_ms

    def _held_terms(self, shard: qe.EdgeShard, ids: list[qe.PointId]) -> list[tuple[list[str], list[int]]]:
        """``(access keys, term ids)`` of the points ``ids`` the shard holds now (``idf="reader"``; else
        nothing): what a replace or delete takes away from the reader document frequencies."""
        if self.frequencies is None or not ids:
            return []
        records = shard.retrieve(ids, with_payload=qe.PayloadSelector.Include([ACL_FIELD, TERMS_FIELD]),
                                 with_vector=False)
        return [(_acl(r.payload or {}), [int(t) for t in (r.payload or {}).get(TERMS_FIELD) or ()]) for r in records]

    def _stale_all(self) -> None:
        """Every kept reader document frequency is stale, and the latest valid-from or decision time unknown
        (a write whose points are not known one by one)."""
        self._latest_ms = None
        if self.frequencies is not None:
            self.frequencies.reset()

    def _counter(self, flt: qe.Filter | None) -> Callable[[int | None], int]:
        """The counts :func:`reader_weighted` asks for, under the translated filter ``flt``: ``None``
        -> the points matching it, a term id -> those of them holding the term (exact counts)."""

        def count(term: int | None) -> int:
            if term is None:
                request = qe.CountRequest(exact=True, filter=flt)
            else:
                held = qe.FieldCondition(key=TERMS_FIELD, match=qe.MatchAny([term]))
                request = qe.CountRequest(exact=True, filter=qe.Filter(must=[held] if flt is None else [flt, held]))
            with self._guard("count") as shard:
                return int(shard.count(request))

        return count

    @contextmanager
    def _guard(self, what: str, *, need_shard: bool = True) -> Iterator[qe.EdgeShard]:
        """Hold the lock, refuse when closed (or when no shard exists yet and ``need_shard``), and
        wrap engine errors (bare ``Exception`` from Edge) in ``IndexUnavailable``."""
        with self._lock:
            if self._closed:
                raise IndexUnavailable(f"Edge shard at {self._dir} is closed")
            if need_shard and self._shard is None:
                raise IndexUnavailable(f"no Edge shard at {self._dir}; call ensure(dim) first")
            try:
                yield self._shard  # type: ignore[misc]  # None only when need_shard is False
            except (IndexUnavailable, ValidationError):
                raise
            except Exception as exc:
                raise IndexUnavailable(f"Edge {what} at {self._dir} failed: {exc}") from exc


def _int_of(value: Any) -> int:
    """An epoch-ms payload value as an int; 0 when absent or not a number."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _acl(payload: Mapping[str, Any]) -> list[str]:
    """A point payload's access keys (:data:`ACL_FIELD`), ``[]`` when it has none."""
    keys = payload.get(ACL_FIELD)
    return [str(k) for k in keys] if isinstance(keys, (list, tuple)) else []
