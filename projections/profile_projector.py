"""``ProfileProjector``: profile state in Postgres, one row per memory version (seed 004 "Update by
supersession, not silent replacement": the prior version is closed with ``valid_to``, never erased).

Exactly-once effect on an at-least-once stream (STYLE habit 6): the rows and the projector's next
offset per partition commit in one transaction, and events below the stored offset are skipped.
A forget only applies: the gate's decision already carried the key tombstones (one owner of shredding).
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from memwarden.projections.events_in import EventIn
from memwarden.stores import profile_rows
from memwarden.stores.offsets import fresh, load_offsets, save_offsets

PROJECTOR = "profile"


class ProfileProjector:
    """Applies events to ``memory_versions`` over ``conn`` (namespace schema); ``topic`` is the events
    topic its offsets are stored for."""

    def __init__(self, conn: psycopg.AsyncConnection, topic: str) -> None:
        self._conn = conn
        self._topic = topic

    @property
    def connection(self) -> psycopg.AsyncConnection:
        """The connection rows are written through."""
        return self._conn

    async def apply(self, events: Sequence[EventIn]) -> None:
        """Apply ``events`` not applied yet, and advance the offsets, in one transaction."""
        async with self._conn.transaction(), self._conn.cursor() as cur:
            todo, nxt = fresh(events, await load_offsets(cur, PROJECTOR, self._topic, lock=True))
            async with self._conn.pipeline():  # one round trip for the batch's statements, not one each
                await self._apply(cur, todo)
            await save_offsets(cur, PROJECTOR, self._topic, nxt)

    async def _apply(self, cur: psycopg.AsyncCursor, todo: Sequence[EventIn]) -> None:
        # uses commute with each other and with versions (memory_uses): one statement pair per batch, first
        await profile_rows.mark_used(cur, [(u["memory_id"], u["used_at"]) for e in todo if e.name == "MemoryUsed"
                                           for u in e.record["uses"]])
        for e in todo:
            if e.name == "MemoryRecorded":
                await profile_rows.insert_version(cur, e.record, e.text)
            elif e.name == "MemoryForgotten":
                await profile_rows.mark_forgotten(cur, e.record["command_id"], e.record["memory_id"])
                await profile_rows.note_forget(cur, e.record)
            elif e.name == "ErasureReceipted":
                await profile_rows.note_receipt(cur, e.record)
