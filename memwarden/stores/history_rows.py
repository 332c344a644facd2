"""Every projected version of one memory (``memory_versions``), oldest first: what the read API's
history lookup (``POST /history``) filters by permission and opens. Read only, one short transaction."""

from __future__ import annotations

from typing import Any

import psycopg

from memwarden.stores.gate_state import GATE_FORGOTTEN

_COLUMNS = ("memory_id", "version", "command_id", "principal", "subject", "scope", "store_kind", "source_kind",
            "source_ref", "sensitivity", "purposes", "epistemic_status", "observed_at", "valid_from", "valid_to",
            "expires_at", "status", "superseded_by", "forgotten_by", "closed_at", "ledger_topic", "ledger_partition",
            "ledger_offset", "decided_at", "tags", "unverified", "approved_by", "content_key_id", "content_nonce",
            "content_sealed")
_CAST = {"memory_id": "memory_id::text", "command_id": "command_id::text", "superseded_by": "superseded_by::text",
         "forgotten_by": "forgotten_by::text", "content_key_id": "content_key_id::text"}


async def versions_of(conn: psycopg.AsyncConnection, memory_id: str) -> list[dict[str, Any]]:
    """The rows of ``memory_id``'s versions by version number, as dicts of :data:`_COLUMNS` (times as
    aware datetimes, the text still sealed: ``content_nonce``/``content_sealed``, ``None`` once
    forgotten). Empty when the memory has no projected version.

    A memory the gate has decided to forget reads as forgotten at once (design card, forget step 2
    "block reads at once"): every version ``status = 'forgotten'`` without its sealed text, even
    before the ``MemoryForgotten`` event reaches this projection."""
    columns = ", ".join(_CAST.get(c, c) for c in _COLUMNS)
    async with conn.cursor() as cur:
        forgotten = GATE_FORGOTTEN.format(memory_id="memory_versions.memory_id")
        await cur.execute(f"SELECT {columns}, {forgotten} FROM memory_versions"  # noqa: S608
                          " WHERE memory_id = %s::uuid ORDER BY version", (memory_id,))
        rows = await cur.fetchall()
    await conn.commit()
    out = [dict(zip(_COLUMNS, r[:-1], strict=True)) for r in rows]
    if rows and rows[0][-1]:
        for row in out:
            row.update(status="forgotten", content_nonce=None, content_sealed=None)
    return out
