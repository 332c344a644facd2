"""Contract of the ``VectorIndex`` port, run once per adapter.

``VectorIndexContract`` holds every case; ``TestEdgeIndex`` runs it on an embedded Edge shard in
``tmp_path`` (no service needed) and ``TestServerIndex`` on a Qdrant server at
``MEMWARDEN_QDRANT_URL`` (skipped, with the reason, when unset or not answering). Both adapters run
with ``exact=True`` so that results are compared with a NumPy brute-force reference (float64 cosine)
and, when a server is there, with each other (ids equal, scores within 1e-5).

Data: 300 seeded random 384-d points over 5 owners, validity windows in ms, list payload
``purposes``.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memwarden.projections.edge_index import EdgeVectorIndex
from memwarden.projections.vector_index import (
    OPEN_END_MS,
    Condition,
    FieldIn,
    FieldRange,
    Filter,
    Hit,
    IndexPoint,
    IndexUnavailable,
    VectorIndex,
)

DIM = 384
N_POINTS = 300
SEED = 20240611
OWNERS = ("alice", "bob", "carol", "dave", "erin")
PURPOSES = ("support", "billing", "research")
SCORE_TOL = 1e-5

# -- deterministic data and a NumPy reference ---------------------------------------------------


def point_id(i: int) -> str:
    """Deterministic UUID string for point number ``i``."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"memwarden-contract/{i}"))


def make_points(n: int = N_POINTS, seed: int = SEED) -> list[IndexPoint]:
    """``n`` points: unit-free normal vectors (float32, ``DIM``), owner/status/purposes payload and
    a validity window ``[valid_from_ms, valid_to_ms)`` inside [0, 2000) or open-ended."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    points = []
    for i in range(n):
        start = int(rng.integers(0, 1000))
        end = OPEN_END_MS if rng.random() < 0.3 else start + int(rng.integers(1, 1000))
        purposes = sorted(str(p) for p in rng.choice(PURPOSES, size=int(rng.integers(1, 3)), replace=False))
        payload: dict[str, Any] = {
            "memory_id": f"m-{i}",
            "owner": OWNERS[i % len(OWNERS)],
            "status": "active" if rng.random() < 0.8 else "superseded",
            "purposes": purposes,
            "valid_from_ms": start,
            "valid_to_ms": end,
        }
        points.append(IndexPoint(point_id(i), vectors[i].tolist(), payload))
    return points


def valid_at(t_ms: int) -> tuple[Condition, ...]:
    """``valid_from_ms <= t < valid_to_ms`` as two range conditions."""
    return (FieldRange("valid_from_ms", lte=t_ms), FieldRange("valid_to_ms", gt=t_ms))


def _holds(payload: Mapping[str, Any], cond: Condition) -> bool:
    value = payload.get(cond.key)
    if value is None:
        return False
    values = value if isinstance(value, list) else [value]
    if isinstance(cond, FieldIn):
        return any(v in cond.values for v in values)
    bounds = (
        (cond.gt, lambda v, b: v > b),
        (cond.gte, lambda v, b: v >= b),
        (cond.lt, lambda v, b: v < b),
        (cond.lte, lambda v, b: v <= b),
    )
    return any(all(b is None or op(v, b) for b, op in bounds) for v in values)


def matches(payload: Mapping[str, Any], where: Filter | None) -> bool:
    """Reference semantics of the filter AST (list payloads match when any element does)."""
    if where is None:
        return True
    return all(_holds(payload, c) for c in where.must) and not any(_holds(payload, c) for c in where.must_not)


def reference_search(
    points: Sequence[IndexPoint], query: Sequence[float], where: Filter | None, limit: int
) -> list[tuple[str, float]]:
    """Brute-force cosine top-``limit`` as ``(point_id, score)``, sorted by (-score, point_id)."""
    kept = [p for p in points if matches(p.payload, where)]
    if not kept:
        return []
    mat = np.asarray([p.vector for p in kept], dtype=np.float64)
    q = np.asarray(query, dtype=np.float64)
    scores = mat @ q / (np.linalg.norm(mat, axis=1) * np.linalg.norm(q))
    ranked = sorted(zip((p.point_id for p in kept), scores.tolist(), strict=True), key=lambda x: (-x[1], x[0]))
    return ranked[:limit]


def assert_same_ranking(hits: Sequence[Hit], expected: Sequence[tuple[str, float]]) -> None:
    """Same ids in the same order, scores within ``SCORE_TOL``."""
    assert [h.point_id for h in hits] == [pid for pid, _ in expected]
    for hit, (_, score) in zip(hits, expected, strict=True):
        assert hit.score == pytest.approx(score, abs=SCORE_TOL)


@pytest.fixture(scope="module")
def points() -> list[IndexPoint]:
    return make_points()


@pytest.fixture(scope="module")
def queries() -> np.ndarray:
    return np.random.default_rng(SEED + 1).standard_normal((8, DIM)).astype(np.float32)


# -- the contract ---------------------------------------------------------------------------------


class VectorIndexContract:
    """Cases every ``VectorIndex`` adapter must pass. Subclasses provide the ``index`` fixture: an
    adapter after ``ensure(DIM)``, empty, built with ``exact=True``."""

    @pytest.fixture
    def index(self) -> Iterator[VectorIndex]:
        raise NotImplementedError

    @pytest.fixture
    def loaded(self, index: VectorIndex, points: list[IndexPoint]) -> VectorIndex:
        index.upsert(points)
        return index

    def test_upsert_then_search_returns_nearest_first(self, loaded: VectorIndex, points: list[IndexPoint]) -> None:
        target = points[42]
        query = (np.asarray(target.vector) + 0.05 * np.random.default_rng(1).standard_normal(DIM)).tolist()
        hits = loaded.search(query, Filter(), 5)
        assert hits[0].point_id == target.point_id
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert_same_ranking(hits, reference_search(points, query, None, 5))
        assert dict(hits[0].payload) == dict(target.payload)

    def test_unfiltered_and_filtered_search_match_bruteforce(
        self, loaded: VectorIndex, points: list[IndexPoint], queries: np.ndarray
    ) -> None:
        filters = [
            Filter(),
            Filter(must=(FieldIn("owner", ("alice",)),)),
            Filter(must=(FieldIn("owner", ("bob", "carol")), *valid_at(600))),
            Filter(must=valid_at(250), must_not=(FieldIn("status", ("superseded",)),)),
        ]
        for where in filters:
            for q in queries:
                assert_same_ranking(loaded.search(q.tolist(), where, 10), reference_search(points, q, where, 10))

    def test_owner_filter_isolates_inside_the_search(self, index: VectorIndex, points: list[IndexPoint]) -> None:
        alice = [p for p in points if p.payload["owner"] == "alice"][:20]
        query = points[1].vector  # an exact copy of it will belong to "mallory"
        intruder = IndexPoint(point_id(10_000), query, {"owner": "mallory", "status": "active"})
        index.upsert([*alice, intruder])
        assert index.search(query, Filter(), 1)[0].point_id == intruder.point_id
        hits = index.search(query, Filter(must=(FieldIn("owner", ("alice",)),)), 5)
        assert len(hits) == 5
        assert all(h.payload["owner"] == "alice" for h in hits)
        everything = index.search(query, Filter(must=(FieldIn("owner", ("alice",)),)), 1000)
        assert intruder.point_id not in {h.point_id for h in everything}
        assert len(everything) == len(alice)

    def test_validity_range_filter(self, loaded: VectorIndex, points: list[IndexPoint], queries: np.ndarray) -> None:
        for t in (0, 500, 999, 1500):
            where = Filter(must=valid_at(t))
            expected = {p.point_id for p in points if matches(p.payload, where)}
            hits = loaded.search(queries[0].tolist(), where, N_POINTS)
            assert {h.point_id for h in hits} == expected
            assert all(h.payload["valid_from_ms"] <= t < h.payload["valid_to_ms"] for h in hits)
            assert loaded.count(where) == len(expected)

    def test_list_payload_matches_any_element(self, loaded: VectorIndex, points: list[IndexPoint]) -> None:
        where = Filter(must=(FieldIn("purposes", ("billing",)),))
        expected = {p.point_id for p in points if "billing" in p.payload["purposes"]}
        assert 0 < len(expected) < N_POINTS
        assert loaded.count(where) == len(expected)
        hits = loaded.search(points[0].vector, where, N_POINTS)
        assert {h.point_id for h in hits} == expected
        either = Filter(must=(FieldIn("purposes", ("billing", "research")),))
        assert loaded.count(either) == sum(1 for p in points if {"billing", "research"} & set(p.payload["purposes"]))

    def test_must_not_excludes(self, loaded: VectorIndex, points: list[IndexPoint]) -> None:
        where = Filter(must_not=(FieldIn("owner", ("alice", "bob")),))
        assert loaded.count(where) == sum(1 for p in points if p.payload["owner"] not in ("alice", "bob"))
        assert all(h.payload["owner"] not in ("alice", "bob") for h in loaded.search(points[0].vector, where, 50))

    def test_set_payload_by_filter_changes_what_filters_match(
        self, loaded: VectorIndex, points: list[IndexPoint]
    ) -> None:
        carol = Filter(must=(FieldIn("owner", ("carol",)),))
        n_carol = loaded.count(carol)
        active = Filter(must=(FieldIn("status", ("active",)),))
        n_active_carol = sum(1 for p in points if matches(p.payload, carol) and matches(p.payload, active))
        n_active = loaded.count(active)

        loaded.set_payload(carol, {"status": "forgotten", "sensitivity": "high"})

        assert loaded.count(Filter(must=(FieldIn("status", ("forgotten",)),))) == n_carol
        assert loaded.count(active) == n_active - n_active_carol
        hits = loaded.search(points[2].vector, active, N_POINTS)
        assert all(h.payload["owner"] != "carol" for h in hits)
        carol_id = next(p for p in points if p.payload["owner"] == "carol")
        (got,) = loaded.retrieve([carol_id.point_id])
        assert got.payload["status"] == "forgotten" and got.payload["sensitivity"] == "high"
        assert got.payload["memory_id"] == carol_id.payload["memory_id"]  # merged, not overwritten

    def test_delete_by_filter_removes_points(self, loaded: VectorIndex, points: list[IndexPoint]) -> None:
        dave = [p for p in points if p.payload["owner"] == "dave"]
        loaded.delete(Filter(must=(FieldIn("owner", ("dave",)),)))
        assert loaded.count() == N_POINTS - len(dave)
        assert loaded.count(Filter(must=(FieldIn("owner", ("dave",)),))) == 0
        assert loaded.retrieve([p.point_id for p in dave]) == []
        hits = loaded.search(dave[0].vector, Filter(), N_POINTS)
        assert len(hits) == N_POINTS - len(dave)
        assert all(h.payload["owner"] != "dave" for h in hits)

    def test_upsert_same_id_twice_keeps_one_point(self, index: VectorIndex, points: list[IndexPoint]) -> None:
        first, other = points[0], points[1]
        index.upsert([first])
        index.upsert([IndexPoint(first.point_id, other.vector, {**first.payload, "status": "superseded"})])
        assert index.count() == 1
        (got,) = index.retrieve([first.point_id])
        assert got.payload["status"] == "superseded"
        (hit,) = index.search(other.vector, Filter(), 5)
        assert hit.point_id == first.point_id and hit.score == pytest.approx(1.0, abs=SCORE_TOL)

    def test_retrieve_unknown_ids_returns_nothing(self, loaded: VectorIndex, points: list[IndexPoint]) -> None:
        assert loaded.retrieve([str(uuid.uuid4()), str(uuid.uuid4())]) == []
        known = points[7].point_id
        got = loaded.retrieve([str(uuid.uuid4()), known, known])
        assert [h.point_id for h in got] == [known]
        assert got[0].score == 0.0 and dict(got[0].payload) == dict(points[7].payload)

    def test_retrieve_keeps_request_order(self, loaded: VectorIndex, points: list[IndexPoint]) -> None:
        wanted = [points[i].point_id for i in (250, 3, 99, 17)]
        assert [h.point_id for h in loaded.retrieve(wanted)] == wanted

    def test_ties_are_broken_by_point_id(self, index: VectorIndex, points: list[IndexPoint]) -> None:
        same = points[0].vector
        ids = [point_id(20_000 + i) for i in range(7)]
        index.upsert([IndexPoint(pid, same, {"owner": "alice"}) for pid in ids])
        index.upsert(points[1:30])
        hits = index.search(same, Filter(), 3)
        assert [h.point_id for h in hits] == sorted(ids)[:3]

    def test_count_all(self, loaded: VectorIndex) -> None:
        assert loaded.count() == N_POINTS
        assert loaded.count(None) == loaded.count(Filter()) == N_POINTS

    def test_search_on_empty_result_and_zero_limit(self, loaded: VectorIndex, points: list[IndexPoint]) -> None:
        assert loaded.search(points[0].vector, Filter(must=(FieldIn("owner", ("nobody",)),)), 10) == []
        assert loaded.search(points[0].vector, Filter(), 0) == []


# -- adapters ----------------------------------------------------------------------------------


class TestEdgeIndex(VectorIndexContract):
    """Embedded Qdrant Edge in ``tmp_path``."""

    @pytest.fixture
    def index(self, tmp_path: Path) -> Iterator[EdgeVectorIndex]:
        idx = EdgeVectorIndex(tmp_path, "contract", exact=True)
        idx.ensure(DIM)
        yield idx
        idx.close()

    def test_reopen_keeps_points_and_indexes(self, tmp_path: Path, points: list[IndexPoint]) -> None:
        first = EdgeVectorIndex(tmp_path, "reopen", exact=True)
        first.ensure(DIM)
        first.upsert(points[:50])
        first.close()
        second = EdgeVectorIndex(tmp_path, "reopen", exact=True)
        try:
            assert second.count() == 50  # readable before ensure()
            second.ensure(DIM)
            where = Filter(must=(FieldIn("owner", ("bob",)),))
            assert_same_ranking(
                second.search(points[0].vector, where, 5),
                reference_search(points[:50], points[0].vector, where, 5),
            )
        finally:
            second.close()

    def test_closed_index_raises_unavailable(self, tmp_path: Path) -> None:
        idx = EdgeVectorIndex(tmp_path, "closed")
        idx.ensure(DIM)
        idx.close()
        idx.close()  # idempotent
        with pytest.raises(IndexUnavailable):
            idx.count()

    def test_missing_shard_before_ensure_raises_unavailable(self, tmp_path: Path) -> None:
        with pytest.raises(IndexUnavailable):
            EdgeVectorIndex(tmp_path, "never").count()

    def test_other_dimension_is_refused(self, tmp_path: Path) -> None:
        idx = EdgeVectorIndex(tmp_path, "dims")
        idx.ensure(DIM)
        with pytest.raises(IndexUnavailable):
            idx.ensure(DIM * 2)
        idx.close()

    def test_optimize_keeps_exact_results(
        self, loaded: EdgeVectorIndex, points: list[IndexPoint], queries: np.ndarray
    ) -> None:
        loaded.optimize()
        where = Filter(must=(FieldIn("owner", ("erin",)), *valid_at(400)))
        assert_same_ranking(
            loaded.search(queries[3].tolist(), where, 10), reference_search(points, queries[3], where, 10)
        )

    def test_calls_from_several_threads(self, index: EdgeVectorIndex, points: list[IndexPoint]) -> None:
        errors: list[BaseException] = []

        def work(chunk: Sequence[IndexPoint]) -> None:
            try:
                for p in chunk:
                    index.upsert([p])
                    index.search(p.vector, Filter(must=(FieldIn("owner", (p.payload["owner"],)),)), 3)
            except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(points[i::4],)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert index.count() == N_POINTS


def _qdrant_url() -> str:
    """``MEMWARDEN_QDRANT_URL`` if a Qdrant server answers there, else skip with the reason."""
    url = os.environ.get("MEMWARDEN_QDRANT_URL", "")
    shown = url or "<unset>"
    reason = f"no Qdrant server reachable at MEMWARDEN_QDRANT_URL={shown}; set it to run the server adapter"
    if not url:
        pytest.skip(reason)
    from qdrant_client import QdrantClient

    try:
        client = QdrantClient(url=url, api_key=os.environ.get("MEMWARDEN_QDRANT_API_KEY"), timeout=3)
        client.get_collections()
        client.close()
    except Exception:  # noqa: BLE001 - any failure means "not reachable"
        pytest.skip(reason)
    return url


@pytest.mark.qdrant_server
class TestServerIndex(VectorIndexContract):
    """A Qdrant server at ``MEMWARDEN_QDRANT_URL``; a fresh collection per test, dropped after."""

    @pytest.fixture
    def index(self) -> Iterator[VectorIndex]:
        from qdrant_client import QdrantClient

        from memwarden.projections.server_index import ServerVectorIndex

        url = _qdrant_url()
        api_key = os.environ.get("MEMWARDEN_QDRANT_API_KEY")
        collection = f"memwarden_contract_{uuid.uuid4().hex[:12]}"
        idx = ServerVectorIndex(url, collection, api_key, exact=True)
        idx.ensure(DIM)
        yield idx
        idx.close()
        admin = QdrantClient(url=url, api_key=api_key)
        admin.delete_collection(collection)
        admin.close()

    def test_results_identical_to_edge(
        self, loaded: VectorIndex, tmp_path: Path, points: list[IndexPoint], queries: np.ndarray
    ) -> None:
        edge = EdgeVectorIndex(tmp_path, "twin", exact=True)
        edge.ensure(DIM)
        edge.upsert(points)
        try:
            filters = [
                Filter(),
                Filter(must=(FieldIn("owner", ("alice", "dave")), *valid_at(700))),
                Filter(must=(FieldIn("purposes", ("research",)),), must_not=(FieldIn("status", ("superseded",)),)),
            ]
            for where in filters:
                assert loaded.count(where) == edge.count(where)
                for q in queries:
                    server_hits = loaded.search(q.tolist(), where, 10)
                    edge_hits = edge.search(q.tolist(), where, 10)
                    assert_same_ranking(server_hits, [(h.point_id, h.score) for h in edge_hits])
        finally:
            edge.close()
