"""An index written before ``fresh_until_ms`` (or the access keys) existed: its points match no read
until the backfill gives each the field a replay would; then recalls see them again, nothing else
changes, a second backfill writes nothing, and a projector writing meanwhile loses nothing (the
backfill only merges its keys, compare-and-set). On a real Edge shard (no broker or database needed)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memwarden.commands.readmodel.filters import FieldIn, Filter
from memwarden.commands.readmodel.payload import memory_selector, point_payload, use_update
from memwarden.commands.readmodel.read_filter import read_filter
from memwarden.epoch import to_ms
from memwarden.projections.edge_index import EdgeVectorIndex
from memwarden.projections.payload_backfill import (
    backfill_access_keys,
    backfill_fresh_until,
    lacking_access_keys,
    lacking_fresh_until,
)
from memwarden.projections.vector_index import IndexPoint, SparseVector

NOW = datetime(2025, 6, 1, tzinfo=UTC)
KINDS = ("PROFILE", "EXPERIENCE", "EVENT", "PROCEDURE")


def _point(i: int, observed: datetime | None = None) -> IndexPoint:
    kind = KINDS[i % 4]
    observed = observed or NOW - timedelta(days=10 * i)
    env = {"principal": "user:a", "subject": "user:a", "scope": "s", "store_kind": kind, "sensitivity": "INTERNAL",
           "purposes": [], "effective_from": None, "observed_at": observed, "effective_to": None, "expires_at": None}
    record = {"memory_id": f"00000000-0000-0000-0000-{i:012d}", "command_id": f"10000000-0000-0000-0000-{i:012d}",
              "version": 1, "envelope": env, "decided_at": observed, "tags": []}
    vector = [0.0] * 8
    vector[i % 8] = 1.0
    return IndexPoint(f"20000000-0000-0000-0000-{i:012d}", vector, point_payload(record),
                      SparseVector((i,), (1.0,)))


def _old(p: IndexPoint) -> IndexPoint:
    """The point as a projector before ``fresh_until_ms`` wrote it."""
    return IndexPoint(p.point_id, p.vector, {k: v for k, v in p.payload.items() if k != "fresh_until_ms"}, p.sparse)


def test_backfill_brings_old_points_back_into_reads(tmp_path: Path) -> None:
    index = EdgeVectorIndex(tmp_path, "old")
    index.ensure(8)
    new = [_point(i) for i in range(40)]
    index.upsert([_old(p) for p in new])
    where = read_filter("user:a", NOW, NOW)
    assert lacking_fresh_until(index) == 40
    assert index.count(where) == 0  # fails closed: an old point matches no read

    assert backfill_fresh_until(index, batch=7) == 40
    assert lacking_fresh_until(index) == 0
    expected = sum(1 for p in new if p.payload["fresh_until_ms"] > to_ms(NOW))
    assert 0 < expected < 40  # some are past their kind's horizon, some are not
    assert index.count(where) == expected
    after = {p.point_id: p for p in index.scan()}
    for p in new:  # exactly what the projector writes today, vectors and lexical vectors untouched
        assert after[p.point_id].payload == p.payload
        assert after[p.point_id].vector == p.vector and after[p.point_id].sparse == p.sparse
    assert backfill_fresh_until(index) == 0
    index.close()


def test_points_from_before_1970_count_as_backfilled(tmp_path: Path) -> None:
    index = EdgeVectorIndex(tmp_path, "old")
    index.ensure(8)
    ancient = _point(0, datetime(1960, 1, 1, tzinfo=UTC))
    assert ancient.payload["fresh_until_ms"] < 0
    index.upsert([_old(ancient)])
    assert backfill_fresh_until(index) == 1
    assert lacking_fresh_until(index) == 0 and backfill_fresh_until(index) == 0
    (point,) = index.scan()
    assert point.payload == ancient.payload
    index.close()


def test_malformed_points_stay_out_of_reads(tmp_path: Path) -> None:
    index = EdgeVectorIndex(tmp_path, "bad")
    index.ensure(8)
    good = _point(0)
    bad = IndexPoint(_point(1).point_id, _point(1).vector, {"store_kind": "PROFILE"}, None)
    index.upsert([_old(good), bad])
    assert backfill_fresh_until(index) == 1
    assert lacking_fresh_until(index) == 1  # the malformed one, left as it was
    assert index.count(read_filter("user:a", NOW, NOW)) == 1
    index.close()


class _BusyIndex(EdgeVectorIndex):
    """An Edge shard on which a projector forgets one memory and applies a use of another between the
    backfill's scan and its writes (right after the scan has read every point)."""

    def __init__(self, path: Path, name: str, meanwhile: list[tuple[Filter, dict[str, Any] | None]]) -> None:
        super().__init__(path, name)
        self._meanwhile = meanwhile

    def scan(self, where: Filter | None = None, batch: int = 1000) -> Iterator[IndexPoint]:
        yield from super().scan(where, batch)
        for selector, payload in self._meanwhile:
            if payload is None:
                self.delete(selector)
            else:
                self.set_payload(selector, payload)


def test_a_projector_writing_meanwhile_loses_nothing(tmp_path: Path) -> None:
    points = [_point(i) for i in range(12)]
    forgotten, used = points[5], points[9]
    used_ms = to_ms(NOW)
    meanwhile: list[tuple[Filter, dict[str, Any] | None]] = [(memory_selector(forgotten.payload["memory_id"]), None)]
    meanwhile += list(use_update(used.payload["memory_id"], used_ms))
    index = _BusyIndex(tmp_path, "busy", meanwhile)
    index.ensure(8)
    index.upsert([_old(p) for p in points])
    backfill_fresh_until(index)
    after = {p.point_id: p.payload for p in index.scan()}
    assert forgotten.point_id not in after  # a forget is not undone
    assert after[used.point_id]["fresh_ref_ms"] == used_ms  # a use is not rolled back
    assert after[used.point_id]["fresh_until_ms"] > used_ms
    assert all(p.payload == after[p.point_id] for p in points if p not in (forgotten, used))
    assert lacking_fresh_until(index) == 0
    index.close()


def _without_keys(p: IndexPoint) -> IndexPoint:
    """The point as a projector before the access keys wrote it."""
    return IndexPoint(p.point_id, p.vector, {k: v for k, v in p.payload.items() if k not in ("acl", "acl_version")},
                      p.sparse)


def test_points_without_access_keys_match_no_read_until_backfilled(tmp_path: Path) -> None:
    index = EdgeVectorIndex(tmp_path, "keys")
    index.ensure(8)
    new = [_point(i) for i in range(30)]
    superseded = new[3].payload["command_id"]
    index.upsert([_without_keys(p) for p in new])
    index.set_payload(Filter(must=(FieldIn("command_id", (superseded,)),)), {"status": "superseded"})
    where = read_filter("user:a", NOW, NOW, freshness=False)
    assert lacking_access_keys(index) == 30 and index.count(where) == 0  # fails closed

    assert backfill_access_keys(index, batch=4) == 30
    assert lacking_access_keys(index) == 0 and backfill_access_keys(index) == 0
    assert index.count(where) == 30
    assert index.count(read_filter("user:b", NOW, NOW, freshness=False)) == 0  # a stranger still reads nothing
    after = {p.point_id: p for p in index.scan()}
    for p in new:  # exactly the keys the projector writes today, everything else untouched
        want = {**p.payload, "status": "superseded"} if p.payload["command_id"] == superseded else p.payload
        assert after[p.point_id].payload == want
        assert after[p.point_id].vector == p.vector and after[p.point_id].sparse == p.sparse
    index.close()


def test_a_point_of_another_key_scheme_is_rewritten_and_a_malformed_one_left_out(tmp_path: Path) -> None:
    index = EdgeVectorIndex(tmp_path, "scheme")
    index.ensure(8)
    good, other = _point(0), _point(1)
    stale = IndexPoint(other.point_id, other.vector, {**other.payload, "acl": ["0" * 32], "acl_version": 0},
                       other.sparse)
    bad = IndexPoint(_point(2).point_id, _point(2).vector, {"store_kind": "PROFILE", "command_id": "c"}, None)
    index.upsert([_without_keys(good), stale, bad])
    assert backfill_access_keys(index) == 2
    assert lacking_access_keys(index) == 1  # the malformed one, left as it was and out of every read
    assert index.count(read_filter("user:a", NOW, NOW, freshness=False)) == 2
    assert {p.point_id: p.payload for p in index.scan()}[other.point_id] == other.payload
    index.close()
