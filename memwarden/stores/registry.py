"""Reads of the principal registry and the grants for the read side: who a reader is (roles, keys)
and which grants can apply to its reads. The gate writes these rows (:mod:`memwarden.stores.gate_state`);
the read API only reads them, in short transactions, so a revocation holds from the next read on."""

from __future__ import annotations

import psycopg

from memwarden.commands.principals import PrincipalRecord
from memwarden.commands.readmodel.permission import ROLE_PREFIX, Grant
from memwarden.stores.gate_state import load_grants
from memwarden.stores.records import principal_from_json


async def read_context(conn: psycopg.AsyncConnection, principal: str) -> tuple[frozenset[str], tuple[Grant, ...]]:
    """Roles of ``principal`` (from the registry) and the grants held by it or one of its roles (the
    only ones that can apply to its reads), read in one short transaction."""
    async with conn.cursor() as cur:
        await cur.execute("SELECT record -> 'roles' FROM gate_principals WHERE principal_id = %s", (principal,))
        row = await cur.fetchone()
        roles = frozenset(row[0]) if row else frozenset()
        grants = await load_grants(cur, [principal, *(ROLE_PREFIX + r for r in sorted(roles))])
    await conn.commit()
    return roles, grants


async def principal_record(conn: psycopg.AsyncConnection, principal: str) -> PrincipalRecord | None:
    """The registry record of ``principal`` as the gate stored it, or ``None``."""
    async with conn.cursor() as cur:
        await cur.execute("SELECT record FROM gate_principals WHERE principal_id = %s", (principal,))
        row = await cur.fetchone()
    await conn.commit()
    return principal_from_json(row[0]) if row else None
