"""The read path (SSGM Eq. 5): ``recall(principal, query, k, as_of)``.

Isolation before candidate generation: what the principal may read (owner-only in this version) and
what is valid at ``as_of`` become a filter *inside* the vector search; nothing is filtered after
ranking. Candidates are then verified against Postgres (status, validity, owner) before return, and
each result carries its score, provenance and ledger position.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg

from memwarden.errors import ValidationError
from memwarden.projections.embedder import Embedder
from memwarden.projections.index_projector import to_ms
from memwarden.projections.sparse import Bm25Encoder
from memwarden.projections.vector_index import PREFETCH_FACTOR, FieldIn, FieldRange, Filter, VectorIndex

MAX_K = 100
MAX_QUERY_CHARS = 2_000


@dataclass(frozen=True)
class RecalledMemory:
    """One recalled memory version: content, fused relevance score (dense + lexical, comparable within
    one recall only), provenance and ledger position."""

    memory_id: str
    version: int
    text: str
    score: float
    principal: str
    subject: str
    scope: str
    source_kind: str
    source_ref: str | None
    observed_at: str
    valid_from: str
    valid_to: str | None
    status: str
    ledger_topic: str
    ledger_partition: int
    ledger_offset: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def read_filter(principal: str, at: datetime, now: datetime) -> Filter:
    """The Eq. 5 admissibility filter: owner-only ACL, valid at ``at``, not expired at ``now``,
    never forgotten or quarantined (superseded versions stay readable for past ``as_of`` only,
    because their ``valid_to`` closes the interval)."""
    t = to_ms(at)
    return Filter(must=(
        FieldIn("owner", (principal,)),
        FieldIn("status", ("active", "superseded")),
        FieldRange("valid_from_ms", lte=t),
        FieldRange("valid_to_ms", gt=t),
        FieldRange("expires_ms", gt=to_ms(now)),
    ))


_VERIFY = """
SELECT memory_id::text, version, command_id::text, content, principal, subject, scope, source_kind, source_ref,
       observed_at, valid_from, valid_to, status, ledger_topic, ledger_partition, ledger_offset
FROM memory_versions
WHERE command_id = ANY(%(ids)s::uuid[]) AND principal = %(principal)s
  AND status IN ('active', 'superseded') AND content IS NOT NULL
  AND valid_from <= %(at)s AND (valid_to IS NULL OR valid_to > %(at)s)
  AND (expires_at IS NULL OR expires_at > %(now)s)
"""


def check_query(principal: str, query: str, k: int, as_of: datetime | None) -> None:
    """Validate recall arguments; raises ``ValidationError`` naming the field."""
    if not isinstance(principal, str) or not principal.strip():
        raise ValidationError("principal", "must be a non-empty string")
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("query", "must be a non-empty string")
    if len(query) > MAX_QUERY_CHARS:
        raise ValidationError("query", f"longer than {MAX_QUERY_CHARS} characters")
    if not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise ValidationError("k", f"must be an integer in [1, {MAX_K}]")
    if as_of is not None and (not isinstance(as_of, datetime) or as_of.tzinfo is None):
        raise ValidationError("as_of", "must be a timezone-aware datetime")


class Recaller:
    """Runs recall over an ``Embedder``, a ``VectorIndex`` and the profile state in Postgres."""

    def __init__(self, embedder: Embedder, index: VectorIndex, conn: psycopg.AsyncConnection,
                 lexical: Bm25Encoder | None = None) -> None:
        self._embedder = embedder
        self._lexical = lexical or Bm25Encoder()
        self._index = index
        self._conn = conn
        self._lock = asyncio.Lock()

    async def recall(self, principal: str, query: str, k: int = 10,
                     as_of: datetime | None = None) -> list[RecalledMemory]:
        """Top-``k`` memories of ``principal`` for ``query`` valid at ``as_of`` (default now), best first.

        Raises ``ValidationError`` for bad arguments.
        """
        check_query(principal, query, k, as_of)
        now = datetime.now(UTC)
        at = (as_of or now).astimezone(UTC)
        vector = (await asyncio.to_thread(self._embedder.embed, [query]))[0]
        hits = await asyncio.to_thread(self._index.query, vector.tolist(), self._lexical.query(query),
                                       read_filter(principal, at, now), k, PREFETCH_FACTOR * k)
        if not hits:
            return []
        scores = {h.payload["command_id"]: h.score for h in hits}
        async with self._lock, self._conn.cursor() as cur:
            await cur.execute(_VERIFY, {"ids": list(scores), "principal": principal, "at": at, "now": now})
            rows = await cur.fetchall()
        await self._conn.commit()
        out = [
            RecalledMemory(
                memory_id=r[0], version=r[1], text=r[3], score=float(scores[r[2]]), principal=r[4], subject=r[5],
                scope=r[6], source_kind=r[7], source_ref=r[8], observed_at=r[9].isoformat(),
                valid_from=r[10].isoformat(), valid_to=r[11].isoformat() if r[11] else None, status=r[12],
                ledger_topic=r[13], ledger_partition=r[14], ledger_offset=r[15],
            )
            for r in rows
        ]
        return sorted(out, key=lambda m: (-m.score, m.memory_id))
