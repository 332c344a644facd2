"""Erasure receipts (issue 14, step 7; seed 004 "Forgetting is an end-to-end operation").

After the projectors have applied a ``MemoryForgotten``, :func:`receipt` asks every store that kept
something of the memory whether it still does, and returns the ``ErasureReceipted`` record only
when each confirms:

* ``keys``: every data key of the memory's versions is shredded (the key ring, synced with the keys
  topic, holds none of them), with the tombstones' positions;
* ``profile``: every version of the memory is ``forgotten`` and holds no sealed text;
* ``vector_cache``: no sealed vector of its versions is kept;
* ``index``: no point of the memory is left;
* ``derived``: the gate keeps no fact slot, claim or keyed content digest of it (field case F3: a
  relation derived only from the memory goes with it; a slot another live memory holds stays).

``verified`` is the read path's own condition: a recall returns a version only from a profile row
with sealed text whose key opens (``projections/recall.py``), through an index point; none of the
three exists any more. The receipt holds ids, versions, key ids and positions only: never content,
nor an unkeyed digest of it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

import psycopg

from memwarden.commands.readmodel.filters import FieldIn, Filter
from memwarden.projections.vector_index import VectorIndex
from memwarden.stores import vector_cache


class ShreddedKeys(Protocol):
    """What a receipt needs of the key ring (:class:`memwarden.stores.keyring.KeyRing`)."""

    def sync(self, timeout_s: float = 30.0) -> None: ...

    def get(self, key_id: str) -> bytes | None: ...

    def tombstone(self, key_id: str) -> tuple[int, int] | None: ...


async def _derived_rows(conn: psycopg.AsyncConnection, memory_id: str) -> int:
    """Rows derived from the memory's text that the gate keeps: fact slots, claims, content digests."""
    async with conn.cursor() as cur:
        await cur.execute("SELECT (SELECT count(*) FROM gate_facts WHERE memory_id = %(m)s)"
                          " + (SELECT count(*) FROM gate_claims WHERE memory_id = %(m)s)"
                          " + (SELECT count(*) FROM gate_twins WHERE memory_id = %(m)s)", {"m": memory_id})
        row = await cur.fetchone()
    await conn.commit()
    return int(row[0]) if row else 0


async def _versions(conn: psycopg.AsyncConnection, memory_id: str) -> list[tuple[int, str, str, bool]]:
    async with conn.cursor() as cur:
        await cur.execute("SELECT version, content_key_id::text, status, content_sealed IS NOT NULL"
                          " FROM memory_versions WHERE memory_id = %s ORDER BY version", (memory_id,))
        rows = await cur.fetchall()
    await conn.commit()
    return [(int(v), str(k), str(s), bool(sealed)) for v, k, s, sealed in rows]


async def receipt(conn: psycopg.AsyncConnection, index: VectorIndex, keys: ShreddedKeys, keys_topic: str,
                  namespace: str, forgotten: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``ErasureReceipted`` record of the ``MemoryForgotten`` record ``forgotten``, or ``None``
    while a store still holds something of the memory (the caller asks again later)."""
    memory_id = forgotten["memory_id"]
    versions = await _versions(conn, memory_id)
    key_ids = sorted({k for _, k, _, _ in versions})
    await asyncio.to_thread(keys.sync)
    live_keys = [k for k in key_ids if keys.get(k) is not None]
    tombstones = [t for t in (keys.tombstone(k) for k in key_ids) if t is not None]
    kept_rows = [v for v, _, status, sealed in versions if status != "forgotten" or sealed]
    cached = await vector_cache.count_of(conn, memory_id)
    points = await asyncio.to_thread(index.count, Filter(must=(FieldIn("memory_id", (memory_id,)),)))
    derived = await _derived_rows(conn, memory_id)
    if live_keys or kept_rows or cached or points or derived:
        return None
    return {
        "receipt_id": str(uuid.uuid4()), "namespace": namespace, "command_id": forgotten["command_id"],
        "memory_id": memory_id, "subject": forgotten["subject"], "forget_position": forgotten["position"],
        "versions": [v for v, _, _, _ in versions], "key_ids": key_ids,
        "key_tombstones": [f"{keys_topic}:{p}:{o}" for p, o in sorted(tombstones)],
        "stores": {"keys": f"{len(key_ids)} data keys shredded", "profile": f"{len(versions)} versions forgotten,"
                   " no sealed text", "vector_cache": "no sealed vector", "index": "no point",
                   "derived": "no fact slot, claim or content digest"},
        "verified": True, "forget_decided_at": forgotten["decided_at"], "completed_at": datetime.now(UTC),
    }


__all__ = ["ShreddedKeys", "receipt"]
