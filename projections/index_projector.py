"""``EmbeddingProjector``: the derived index (seed 004) as Qdrant points, one per memory version.

Point ids are deterministic (uuid5 of memory id and command id), so a redelivered event rewrites the
same point. The payload (:mod:`memwarden.commands.readmodel.payload`) carries every field the read
filter needs and no content: the text is read from Postgres after candidates are found. Each point
also carries the lexical sparse vector of its text (:class:`Bm25Encoder`, hashed term ids and BM25
term weights: the text's terms can be probed through it, like through the embedding, so it stays
inside the derived index). Embeddings run in a worker thread, in batches.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence

import psycopg

from memwarden.commands.readmodel.payload import memory_selector, point_payload, supersession_updates, use_update
from memwarden.epoch import to_ms
from memwarden.projections.embedder import Embedder
from memwarden.projections.events_in import EventIn
from memwarden.projections.sparse import Bm25Encoder
from memwarden.projections.vector_index import IndexPoint, VectorIndex
from memwarden.stores.offsets import fresh, load_offsets, save_offsets

_POINT_NS = uuid.UUID("b3c2f7a4-51e9-4d0c-8a6b-2f4e9d7c1a35")


def point_id(memory_id: str, command_id: str) -> str:
    """Deterministic point id of one memory version."""
    return str(uuid.uuid5(_POINT_NS, f"{memory_id}:{command_id}"))


class EmbeddingProjector:
    """Applies events to a ``VectorIndex``; tracks its offsets in Postgres under ``projector``."""

    def __init__(self, embedder: Embedder, index: VectorIndex, conn: psycopg.AsyncConnection, topic: str,
                 projector: str, lexical: Bm25Encoder | None = None) -> None:
        self._embedder = embedder
        self._lexical = lexical or Bm25Encoder()
        self._index = index
        self._conn = conn
        self._topic = topic
        self._projector = projector

    async def apply(self, events: Sequence[EventIn]) -> None:
        """Apply ``events`` not applied yet (idempotent point writes), then advance the offsets."""
        async with self._conn.cursor() as cur:
            stored = await load_offsets(cur, self._projector, self._topic, lock=False)
        await self._conn.commit()
        todo, nxt = fresh(events, stored)
        texts = [e.text for e in todo if e.name == "MemoryRecorded" and e.text is not None]
        vectors = await asyncio.to_thread(self._embedder.embed, texts) if texts else []
        await asyncio.to_thread(self._write, todo, vectors)
        async with self._conn.transaction(), self._conn.cursor() as cur:
            await save_offsets(cur, self._projector, self._topic, nxt)

    def _write(self, todo: Sequence[EventIn], vectors: Sequence[Sequence[float]]) -> None:
        i = 0
        pending: list[IndexPoint] = []
        for e in todo:
            r = e.record
            if e.name == "MemoryRecorded":
                updates = supersession_updates(r)
                if updates:
                    self._flush(pending)
                    for where, payload in updates:
                        self._index.set_payload(where, payload)
                if e.text is None:
                    continue
                pid = point_id(r["memory_id"], r["command_id"])
                pending.append(IndexPoint(pid, list(map(float, vectors[i])), point_payload(r),
                                          self._lexical.document(e.text, key=pid)))
                i += 1
            elif e.name == "MemoryUsed":
                self._flush(pending)
                for use in r["uses"]:
                    self._index.set_payload(*use_update(use["memory_id"], to_ms(use["used_at"])))
            elif e.name == "MemoryForgotten":
                self._flush(pending)
                self._index.delete(memory_selector(r["memory_id"]))
        self._flush(pending)

    def _flush(self, pending: list[IndexPoint]) -> None:
        if pending:
            self._index.upsert(pending)
            pending.clear()
