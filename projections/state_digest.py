"""One digest per projection over a canonical form of its rows and points: the check that a replay
rebuilt exactly the live state (issue 9; SSGM Principle 4). Live and replayed namespaces of the
same ledger have equal digests.

Canonical form: rows in primary-key order, columns by name, times as UTC ISO strings, bytes as hex,
arrays as lists; processing-time columns (when a row was written, not what the ledger says) are
left out; memory text never enters a digest: it is replaced by its HMAC under the namespace's
digest key (derived from the KEK), so a digest cannot confirm a guessed text. Points: id, payload,
the dense vector as stored (float32 bytes, hashed) and the lexical sparse vector.

Projections: ``profile`` (``memory_versions``), ``index`` (points), ``registry`` (principals and
keys), ``grants``, ``tokens`` (the gateways' bearer tokens: hashes only), ``gate`` (decisions and the
gate's governed state).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from memwarden.projections.vector_index import IndexPoint, VectorIndex

#: Columns written from the wall clock of the writer, not from the ledger.
PROCESSING_TIME = frozenset({"projected_at", "updated_at", "adopted_at", "quarantined_at", "reviewed_at"})
#: The tables of each Postgres projection, with the columns that order their rows.
TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "profile": (("memory_versions", "memory_id, version"),),
    "registry": (("gate_principals", "principal_id"),),
    "grants": (("grants", "grant_id"),),
    "tokens": (("gate_tokens", "token_id"),),
    "gate": (("gate_decisions", "command_id"), ("gate_memories", "memory_id"),
             ("gate_facts", "subject, entity, attribute"), ("gate_claims", "subject, key_digest, memory_id"),
             ("gate_twins", "subject, digest"), ("gate_protected_facts", "subject, entity, attribute"),
             ("gate_quarantine", "command_id"), ("gate_policies", "policy_id, version"), ("gate_holds", "hold_id"),
             ("gate_deferred", "command_id")),
}
PROJECTIONS = (*TABLES, "index")


def _canonical(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat(timespec="milliseconds")
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items())}
    if hasattr(value, "hex") and type(value).__name__ == "UUID":
        return str(value)
    return value


def row_form(row: Mapping[str, Any], digest_key: bytes) -> str:
    """The canonical JSON of one row: processing-time columns dropped, the sealed text as its HMAC."""
    out = {}
    for name, value in sorted(row.items()):
        if name in PROCESSING_TIME:
            continue
        if name == "content_sealed" and value is not None:
            value = "hmac:" + hmac.new(digest_key, bytes(value), hashlib.sha256).hexdigest()
        out[name] = _canonical(value)
    return json.dumps(out, sort_keys=True, separators=(",", ":"), default=str)


def point_form(point: IndexPoint) -> str:
    """The canonical JSON of one point: id, payload, hash of the float32 dense vector, sparse vector."""
    dense = hashlib.sha256(np.asarray(point.vector, dtype="<f4").tobytes()).hexdigest()
    sparse = None if point.sparse is None else sorted(zip(point.sparse.indices, point.sparse.values, strict=True))
    return json.dumps({"id": point.point_id, "payload": _canonical(dict(point.payload)), "dense": dense,
                       "sparse": sparse}, sort_keys=True, separators=(",", ":"), default=str)


def _fold(forms: Iterable[str]) -> tuple[str, int]:
    h = hashlib.sha256()
    n = 0
    for form in forms:
        h.update(form.encode())
        h.update(b"\n")
        n += 1
    return h.hexdigest(), n


def _rows(conn: psycopg.Connection, table: str, order: str) -> Iterable[dict[str, Any]]:
    with conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        query = sql.SQL("SELECT * FROM {} ORDER BY " + order).format(sql.Identifier(table))  # type: ignore[arg-type]
        cur.execute(query)
        yield from cur


def digests(conn: psycopg.Connection, index: VectorIndex, digest_key: bytes) -> dict[str, dict[str, Any]]:
    """``{projection: {"digest": hex, "rows": n}}`` for every projection of the namespace behind
    ``conn`` (its schema) and ``index``."""
    out: dict[str, dict[str, Any]] = {}
    for projection, tables in TABLES.items():
        forms = (f"{table}:{row_form(row, digest_key)}" for table, order in tables for row in _rows(conn, table, order))
        digest, n = _fold(forms)
        out[projection] = {"digest": digest, "rows": n}
    conn.commit()
    points = sorted((p.point_id, hashlib.sha256(point_form(p).encode()).hexdigest()) for p in index.scan())
    digest, n = _fold(f"{pid}:{h}" for pid, h in points)
    out["index"] = {"digest": digest, "rows": n}
    return out
