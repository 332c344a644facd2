"""Reading a namespace's profile rows whole, and repairing them from another namespace's (the state
the ledger implies, rebuilt aside): what the reconciler (SSGM Eq. 7) writes, and only it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row


async def rows_by_command(conn: psycopg.AsyncConnection) -> dict[str, dict[str, Any]]:
    """Every ``memory_versions`` row of the connection's namespace, by command id."""
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute("SELECT * FROM memory_versions")
        rows = await cur.fetchall()
    await conn.commit()
    return {str(r["command_id"]): r for r in rows}


async def uses_by_memory(conn: psycopg.AsyncConnection) -> dict[str, datetime]:
    """Every memory's last use."""
    async with conn.cursor() as cur:
        await cur.execute("SELECT memory_id::text, last_used_at FROM memory_uses")
        rows = await cur.fetchall()
    await conn.commit()
    return {m: t for m, t in rows}


async def repair_rows(conn: psycopg.AsyncConnection, source_schema: str, replace: Sequence[str],
                      remove: Sequence[str], uses: Sequence[str]) -> int:
    """In one transaction: rows ``replace`` (command ids) copied from ``source_schema`` over the
    live ones, rows ``remove`` deleted, the last uses of ``uses`` (memory ids) copied. Returns how
    many rows and uses were written or removed."""
    src_rows = sql.SQL("{}.memory_versions").format(sql.Identifier(source_schema))
    src_uses = sql.SQL("{}.memory_uses").format(sql.Identifier(source_schema))
    async with conn.transaction(), conn.cursor() as cur:
        await cur.execute("DELETE FROM memory_versions WHERE command_id = ANY(%s::uuid[])",
                          (list(replace) + list(remove),))
        if replace:
            await cur.execute(sql.SQL("INSERT INTO memory_versions SELECT * FROM {} WHERE command_id = ANY(%s::uuid[])")
                              .format(src_rows), (list(replace),))
        if uses:
            await cur.execute("DELETE FROM memory_uses WHERE memory_id = ANY(%s::uuid[])", (list(uses),))
            await cur.execute(sql.SQL("INSERT INTO memory_uses SELECT * FROM {} WHERE memory_id = ANY(%s::uuid[])")
                              .format(src_uses), (list(uses),))
    return len(replace) + len(remove) + len(uses)
