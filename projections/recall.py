"""The read path (SSGM Eq. 5): ``recall(principal, query, k, as_of, known_at, purpose)``.

Isolation before candidate generation: what the principal may read for the requested purpose (ABAC
over owner, subject and grants, :mod:`memwarden.commands.access`), what was valid at ``as_of``, what
the ledger knew at ``known_at``, expiry, and freshness (Eq. 3 horizon per store kind) become one
filter *inside* the vector search; nothing is filtered after ranking. Candidates are then verified
against Postgres with the same permission as SQL (status, validity, known time, expiry) before
return, and each result carries its score, provenance and ledger position.

Grants and roles are read from Postgres on every recall, so a ``RevokeAccess`` holds from the next
read on.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal, get_args

import psycopg

from memwarden.commands.access import ROLE_PREFIX, ReadContext, read_permission_filter, read_permission_sql
from memwarden.commands.freshness import fresh_since_ms
from memwarden.commands.model import StoreKind
from memwarden.commands.principals import PrincipalRecord
from memwarden.errors import ValidationError
from memwarden.processors.gate_state import load_grants, principal_from_json
from memwarden.projections.embedder import Embedder
from memwarden.projections.index_projector import to_ms
from memwarden.projections.sparse import Bm25Encoder
from memwarden.projections.vector_index import PREFETCH_FACTOR, FieldIn, FieldRange, Filter, VectorIndex

DEFAULT_PURPOSE = "general"
#: Version of the read policy (ABAC rules of :mod:`memwarden.commands.access` + Eq. 5 filter).
READ_POLICY_VERSION = "abac/1"

MAX_K = 100
MAX_QUERY_CHARS = 2_000

#: Retrieval path of a recall: ``hybrid`` (dense + lexical prefetch fused in the engine, the default),
#: ``dense`` (cosine only) or ``lexical`` (BM25 sparse only). Every path carries the same read filter.
RecallMode = Literal["hybrid", "dense", "lexical"]
RECALL_MODES: tuple[RecallMode, ...] = get_args(RecallMode)


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
    unverified: bool = False
    tags: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """Plain dict for the HTTP response."""
        return asdict(self)


def read_filter(principal: str, at: datetime, now: datetime, *, purpose: str = DEFAULT_PURPOSE,
                roles: frozenset[str] = frozenset(), grants: tuple = (), known_at: datetime | None = None,
                freshness: bool = True, include_untrusted: bool = False) -> Filter:
    """The Eq. 5 admissibility filter, applied inside the vector search.

    ``ACL`` (owner, subject or an applicable grant, for ``purpose``), valid at ``at`` (UTC), known to
    the ledger at ``known_at`` (a version decided later is invisible; a version closed later is still
    current as known then), not expired at ``now``, fresh at ``at`` (Eq. 3: last use or validity start
    within the store kind's horizon; skipped for ``known_at`` reads and when ``freshness`` is off),
    never forgotten or quarantined (they are not in the index at all), and not tagged ``untrusted``
    (content from web, email, documents or tool text, kept as quoted data) unless
    ``include_untrusted`` (seed 004: untrusted content must not steer the agent by default)."""
    t = to_ms(at)
    k = to_ms(known_at or now)
    ctx = ReadContext(principal, roles, purpose, to_ms(now), tuple(grants))
    must: list = [
        read_permission_filter(ctx),
        FieldIn("status", ("active", "superseded")),
        FieldRange("valid_from_ms", lte=t),
        FieldRange("decided_ms", lte=k),
        Filter(should=(FieldRange("valid_to_ms", gt=t),  # closed later than known_at: as the ledger knew it then
                       Filter(must=(FieldIn("status", ("superseded",)), FieldRange("closed_known_ms", gt=k))))),
        FieldRange("expires_ms", gt=to_ms(now)),
    ]
    if not include_untrusted:
        must.append(FieldIn("trust", ("trusted",)))
    if freshness and known_at is None:
        must.append(Filter(should=tuple(
            Filter(must=(FieldIn("store_kind", (kind.value,)), FieldRange("fresh_ref_ms", gte=fresh_since_ms(kind, t))))
            for kind in StoreKind)))
    return Filter(must=tuple(must))


_VERIFY = """
SELECT memory_id::text, version, command_id::text, content, principal, subject, scope, source_kind, source_ref,
       observed_at, valid_from, valid_to, status, ledger_topic, ledger_partition, ledger_offset, unverified, tags
FROM memory_versions
WHERE command_id = ANY(%(ids)s::uuid[]) AND {acl}
  AND status IN ('active', 'superseded') AND content IS NOT NULL
  AND valid_from <= %(at)s AND decided_at <= %(known)s
  AND (valid_to IS NULL OR valid_to > %(at)s OR closed_at > %(known)s)
  AND (expires_at IS NULL OR expires_at > %(now)s)
  AND (%(untrusted)s OR NOT ('untrusted' = ANY(tags)))
"""


async def read_context(conn: psycopg.AsyncConnection, principal: str) -> tuple[frozenset[str], tuple]:
    """Roles of ``principal`` (from the registry) and the grants held by it or one of its roles (the
    only ones that can apply to its reads), read in one short transaction."""
    async with conn.cursor() as cur:
        await cur.execute("SELECT record -> 'roles' FROM gate_principals WHERE principal_id = %s", (principal,))
        row = await cur.fetchone()
        roles = frozenset(row[0]) if row else frozenset()
        grants = await load_grants(cur, [principal, *(ROLE_PREFIX + r for r in sorted(roles))])
    await conn.commit()
    return roles, grants


def check_query(principal: str, query: str, k: int, as_of: datetime | None, known_at: datetime | None = None,
                purpose: str = DEFAULT_PURPOSE, mode: str = "hybrid") -> None:
    """Validate recall arguments; raises ``ValidationError`` naming the field."""
    if mode not in RECALL_MODES:
        raise ValidationError("mode", f"must be one of {', '.join(RECALL_MODES)}, got {mode!r}")
    if not isinstance(purpose, str) or not purpose.strip() or purpose == "*":
        raise ValidationError("purpose", "must name one purpose")
    if known_at is not None and (not isinstance(known_at, datetime) or known_at.tzinfo is None):
        raise ValidationError("known_at", "must be a timezone-aware datetime")
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


async def principal_record(conn: psycopg.AsyncConnection, principal: str) -> PrincipalRecord | None:
    """The registry record of ``principal`` as the gate stored it, or ``None``."""
    async with conn.cursor() as cur:
        await cur.execute("SELECT record FROM gate_principals WHERE principal_id = %s", (principal,))
        row = await cur.fetchone()
    await conn.commit()
    return principal_from_json(row[0]) if row else None


class Recaller:
    """Runs recall over an ``Embedder``, a ``VectorIndex`` and the profile state in Postgres."""

    def __init__(self, embedder: Embedder, index: VectorIndex, conn: psycopg.AsyncConnection,
                 lexical: Bm25Encoder | None = None) -> None:
        self._embedder = embedder
        self._lexical = lexical or Bm25Encoder()
        self._index = index
        self._conn = conn
        self._lock = asyncio.Lock()

    async def registered(self, principal: str) -> PrincipalRecord | None:
        """The registry record of ``principal`` (read authentication), or ``None``."""
        async with self._lock:
            return await principal_record(self._conn, principal)

    async def recall(self, principal: str, query: str, k: int = 10, as_of: datetime | None = None,
                     known_at: datetime | None = None, purpose: str = DEFAULT_PURPOSE,
                     freshness: bool = True, include_untrusted: bool = False,
                     mode: RecallMode = "hybrid") -> list[RecalledMemory]:
        """Top-``k`` memories ``principal`` may read for ``purpose`` and ``query``, valid at ``as_of``
        (default now) as the ledger knew them at ``known_at`` (default now), best first. Content
        tagged ``untrusted`` comes back only with ``include_untrusted`` (and keeps its tag).

        ``mode`` picks the retrieval path (:data:`RecallMode`): ``hybrid`` (``VectorIndex.query``,
        score = fused), ``dense`` (``VectorIndex.search``, score = cosine) or ``lexical``
        (``VectorIndex.search_lexical``, score = BM25; only memories sharing a term with the query).
        The read filter is the same on every path.

        Raises ``ValidationError`` for bad arguments.
        """
        check_query(principal, query, k, as_of, known_at, purpose, mode)
        now = datetime.now(UTC)
        at = (as_of or now).astimezone(UTC)
        known = (known_at or now).astimezone(UTC)
        async with self._lock:
            roles, grants = await read_context(self._conn, principal)
        if as_of is not None:  # a read of the past uses grants valid then *and* now (a revocation always holds)
            grants = tuple(g for g in grants if g.valid_at(to_ms(at)))
        where = read_filter(principal, at, now, purpose=purpose, roles=roles, grants=grants, known_at=known_at,
                            freshness=freshness, include_untrusted=include_untrusted)
        if mode == "lexical":
            hits = await asyncio.to_thread(self._index.search_lexical, self._lexical.query(query), where, k)
        else:
            vector = (await asyncio.to_thread(self._embedder.embed, [query]))[0]
            if mode == "dense":
                hits = await asyncio.to_thread(self._index.search, vector.tolist(), where, k)
            else:
                hits = await asyncio.to_thread(self._index.query, vector.tolist(), self._lexical.query(query), where,
                                               k, PREFETCH_FACTOR * k)
        if not hits:
            return []
        scores = {h.payload["command_id"]: h.score for h in hits}
        acl, acl_params = read_permission_sql(ReadContext(principal, roles, purpose, to_ms(now), grants))
        async with self._lock, self._conn.cursor() as cur:
            await cur.execute(_VERIFY.format(acl=acl),  # type: ignore[arg-type]
                              {"ids": list(scores), "at": at, "now": now, "known": known,
                               "untrusted": include_untrusted, **acl_params})
            rows = await cur.fetchall()
        await self._conn.commit()
        out = [
            RecalledMemory(
                memory_id=r[0], version=r[1], text=r[3], score=float(scores[r[2]]), principal=r[4], subject=r[5],
                scope=r[6], source_kind=r[7], source_ref=r[8], observed_at=r[9].isoformat(),
                valid_from=r[10].isoformat(), valid_to=r[11].isoformat() if r[11] else None, status=r[12],
                ledger_topic=r[13], ledger_partition=r[14], ledger_offset=r[15], unverified=r[16], tags=tuple(r[17]),
            )
            for r in rows
        ]
        return sorted(out, key=lambda m: (-m.score, m.memory_id))
