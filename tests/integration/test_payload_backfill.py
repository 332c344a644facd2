"""An index written before ``fresh_until_ms`` existed: its points match no read until the backfill
gives each the field a replay would; then recalls see them again, nothing else changes, and a
second backfill writes nothing. On a real Edge shard (no broker or database needed)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from memwarden.commands.readmodel.payload import point_payload
from memwarden.commands.readmodel.read_filter import read_filter
from memwarden.projections.edge_index import EdgeVectorIndex
from memwarden.projections.payload_backfill import backfill_fresh_until, lacking_fresh_until
from memwarden.projections.vector_index import IndexPoint, SparseVector

NOW = datetime(2025, 6, 1, tzinfo=UTC)
KINDS = ("PROFILE", "EXPERIENCE", "EVENT", "PROCEDURE")


def _point(i: int) -> IndexPoint:
    kind = KINDS[i % 4]
    observed = NOW - timedelta(days=10 * i)
    env = {"principal": "user:a", "subject": "user:a", "scope": "s", "store_kind": kind, "sensitivity": "INTERNAL",
           "purposes": [], "effective_from": None, "observed_at": observed, "effective_to": None, "expires_at": None}
    record = {"memory_id": f"00000000-0000-0000-0000-{i:012d}", "command_id": f"10000000-0000-0000-0000-{i:012d}",
              "version": 1, "envelope": env, "decided_at": observed, "tags": []}
    vector = [0.0] * 8
    vector[i % 8] = 1.0
    return IndexPoint(f"20000000-0000-0000-0000-{i:012d}", vector, point_payload(record),
                      SparseVector((i,), (1.0,)))


def test_backfill_brings_old_points_back_into_reads(tmp_path: Path) -> None:
    index = EdgeVectorIndex(tmp_path, "old")
    index.ensure(8)
    new = [_point(i) for i in range(40)]
    old = [IndexPoint(p.point_id, p.vector, {k: v for k, v in p.payload.items() if k != "fresh_until_ms"}, p.sparse)
           for p in new]
    index.upsert(old)
    where = read_filter("user:a", NOW, NOW)
    assert lacking_fresh_until(index) == 40
    assert index.count(where) == 0  # fails closed: an old point matches no read

    assert backfill_fresh_until(index, batch=7) == 40
    assert lacking_fresh_until(index) == 0
    expected = sum(1 for p in new if p.payload["fresh_until_ms"] > int(NOW.timestamp() * 1000))
    assert 0 < expected < 40  # some are past their kind's horizon, some are not
    assert index.count(where) == expected
    after = {p.point_id: p for p in index.scan()}
    for p in new:  # exactly what the projector writes today, vectors and lexical vectors untouched
        assert after[p.point_id].payload == p.payload
        assert after[p.point_id].vector == p.vector and after[p.point_id].sparse == p.sparse
    assert backfill_fresh_until(index) == 0
    index.close()


def test_malformed_points_stay_out_of_reads(tmp_path: Path) -> None:
    index = EdgeVectorIndex(tmp_path, "bad")
    index.ensure(8)
    good = _point(0)
    bad = IndexPoint(_point(1).point_id, _point(1).vector, {"store_kind": "PROFILE"}, None)
    index.upsert([IndexPoint(good.point_id, good.vector,
                             {k: v for k, v in good.payload.items() if k != "fresh_until_ms"}, good.sparse), bad])
    assert backfill_fresh_until(index) == 1
    assert lacking_fresh_until(index) == 1  # the malformed one, left as it was
    assert index.count(read_filter("user:a", NOW, NOW)) == 1
    index.close()
