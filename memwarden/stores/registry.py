"""Reads of the principal registry and the grants for the read side: who a reader is (roles, keys)
and which grants can apply to its reads. The gate writes these rows (:mod:`memwarden.stores.gate_state`);
the read API only reads them, in short transactions, so a revocation holds from the next read on."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from memwarden.commands.principals import PrincipalRecord
from memwarden.commands.readmodel.permission import ROLE_PREFIX, Grant
from memwarden.stores.pg import end_read
from memwarden.stores.records import grant_from_json, principal_from_json

#: One statement: the reader's registry record and every grant held by it or one of its roles (the
#: only ones that can apply to its reads), as of one snapshot. The grants are joined through the
#: ``grants_grantee`` index from the list of holders (an ``OR`` with a sub-select instead made Postgres
#: scan every grant: 6.8 ms per recall with 19,843 grants, 0.2 ms this way).
_READER_BODY = """p AS (SELECT record FROM gate_principals WHERE principal_id = %(principal)s),
     holders AS (SELECT %(principal)s::text AS grantee
                 UNION SELECT %(role_prefix)s || jsonb_array_elements_text(COALESCE(record -> 'roles', '[]'::jsonb))
                       FROM p)
SELECT (SELECT record FROM p),
       (SELECT COALESCE(jsonb_agg(g.record ORDER BY g.grant_id), '[]'::jsonb)
          FROM holders h JOIN grants g ON g.grantee = h.grantee)"""
_READER = f"""
WITH {_READER_BODY}
"""

#: The same statement for a signed request, which also claims the request's digest in
#: ``served_requests`` (the replay window every read-API process shares): the third column is true
#: when this request is its first use (a digest whose window ended may be claimed again), and, when
#: ``prune`` is set, the ended windows are deleted. Still one statement and one round trip.
_READER_SIGNED = f"""
WITH claimed AS (INSERT INTO served_requests (digest, expires_at_ms) VALUES (%(digest)s, %(expires_ms)s)
                 ON CONFLICT (digest) DO UPDATE SET expires_at_ms = EXCLUDED.expires_at_ms
                 WHERE served_requests.expires_at_ms <= %(now_ms)s RETURNING 1),
     pruned AS (DELETE FROM served_requests
                WHERE %(prune)s AND expires_at_ms <= %(now_ms)s AND digest <> %(digest)s),
     {_READER_BODY},
       EXISTS (SELECT 1 FROM claimed)
"""


@dataclass(frozen=True)
class ServedRequest:
    """A signed read request to claim in the shared replay window: ``digest`` (32 bytes,
    :func:`memwarden.commands.read_auth.replay_claim`), the end of its window ``expires_ms`` and the
    clock ``now_ms`` (ms since the epoch); ``prune``: delete the windows that ended, too."""

    digest: bytes
    expires_ms: int
    now_ms: int
    prune: bool = False


@dataclass(frozen=True)
class ReaderContext:
    """Who reads, as the registry says now: the principal id, its registry record (``None`` when
    unknown; read authentication checks the request's signature against its keys), its roles and the
    grants held by it or one of its roles (revoked ones included: the read filter looks at
    ``revoked_at_ms``). ``first_use``: ``True`` when the signed request read with it claimed its
    digest first, ``False`` when a read-API process of the namespace served it before (a replay),
    ``None`` when nothing was claimed."""

    principal: str
    record: PrincipalRecord | None
    roles: frozenset[str]
    grants: tuple[Grant, ...]
    first_use: bool | None = None


async def reader_context(conn: psycopg.AsyncConnection, principal: str,
                         served: ServedRequest | None = None) -> ReaderContext:
    """The :class:`ReaderContext` of ``principal`` in one statement (one round trip on an autocommit
    connection, which the read API's is): a revocation or a new grant holds from the next read on.
    With ``served``, the same statement claims the request in the shared replay window
    (``ReaderContext.first_use``). The claim is made before the signature is checked, over a digest of
    the signed bytes *and* the signature, so a forged copy claims nothing the genuine request needs."""
    params: dict[str, object] = {"principal": principal, "role_prefix": ROLE_PREFIX}
    if served is not None:
        params |= {"digest": served.digest, "expires_ms": served.expires_ms, "now_ms": served.now_ms,
                   "prune": served.prune}
    async with conn.cursor() as cur:
        await cur.execute(_READER if served is None else _READER_SIGNED, params)
        row = await cur.fetchone()
    await end_read(conn)
    record_json, grants_json, *claimed = row if row else (None, [])
    roles = frozenset((record_json or {}).get("roles") or ())
    return ReaderContext(principal, principal_from_json(record_json) if record_json else None, roles,
                         tuple(grant_from_json(g) for g in grants_json),
                         bool(claimed[0]) if served is not None and claimed else None)


async def read_context(conn: psycopg.AsyncConnection, principal: str) -> tuple[frozenset[str], tuple[Grant, ...]]:
    """Roles of ``principal`` (from the registry) and the grants held by it or one of its roles (the
    only ones that can apply to its reads), read in one statement (:func:`reader_context`)."""
    found = await reader_context(conn, principal)
    return found.roles, found.grants
