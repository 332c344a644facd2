"""``EmbeddingProjector``: the derived index (seed 004) as Qdrant points, one per memory version.

Point ids are deterministic (uuid5 of memory id and command id), so a redelivered event rewrites the
same point. The payload carries every field the read filter needs (owner, subject, scope, status,
validity interval in UTC ms, expiry, store kind, sensitivity, purposes) and no content: the text is
read from Postgres after candidates are found. Each point also carries the lexical sparse vector of
its text (:class:`Bm25Encoder`, hashed term ids and BM25 term weights: the text's terms can be
probed through it, like through the embedding, so it stays inside the derived index). Embeddings run
in a worker thread, in batches.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg

from memwarden.projections.embedder import Embedder
from memwarden.projections.profile_projector import EventIn, fresh, load_offsets, save_offsets
from memwarden.projections.sparse import Bm25Encoder
from memwarden.projections.vector_index import OPEN_END_MS, FieldIn, FieldRange, Filter, IndexPoint, VectorIndex

_POINT_NS = uuid.UUID("b3c2f7a4-51e9-4d0c-8a6b-2f4e9d7c1a35")


def point_id(memory_id: str, command_id: str) -> str:
    """Deterministic point id of one memory version."""
    return str(uuid.uuid5(_POINT_NS, f"{memory_id}:{command_id}"))


def to_ms(value: datetime | None, default: int = OPEN_END_MS) -> int:
    """UTC epoch milliseconds of an aware datetime, or ``default`` for ``None``."""
    return default if value is None else int(value.timestamp() * 1000)


def payload_of(record: dict[str, Any]) -> dict[str, Any]:
    """Index payload of a ``MemoryRecorded`` record."""
    env = record["envelope"]
    return {
        "memory_id": record["memory_id"],
        "command_id": record["command_id"],
        "version": record["version"],
        "owner": env["principal"],
        "subject": env["subject"],
        "scope": env["scope"],
        "status": "active",
        "store_kind": env["store_kind"],
        "sensitivity": env["sensitivity"],
        "purposes": list(env["purposes"]) or ["*"],  # "*" = no purpose tag: readable for any purpose
        "valid_from_ms": to_ms(env["effective_from"] or env["observed_at"]),
        "valid_to_ms": to_ms(env["effective_to"]),
        "expires_ms": to_ms(env["expires_at"]),
        "decided_ms": to_ms(record["decided_at"]),
        "closed_known_ms": OPEN_END_MS,  # when the ledger closed this version (known_at reads)
        "fresh_ref_ms": to_ms(env["effective_from"] or env["observed_at"]),  # last use, else validity start
        "trust": "untrusted" if "untrusted" in (record.get("tags") or ()) else "trusted",
    }


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
                target = r["envelope"]["supersedes"]
                closed = ([target] if target is not None else []) + list(r.get("closes") or ())
                if closed:
                    self._flush(pending)
                    valid_from = to_ms(r["envelope"]["effective_from"] or r["envelope"]["observed_at"])
                    live = Filter(must=(FieldIn("memory_id", tuple(closed)), FieldIn("status", ("active",))),
                                  must_not=(FieldIn("command_id", (r["command_id"],)),))
                    # valid_to only shrinks (as in the profile projection): an interval that ended earlier keeps its end
                    self._index.set_payload(Filter(must=(live, FieldRange("valid_to_ms", gt=valid_from))),
                                            {"valid_to_ms": valid_from})
                    self._index.set_payload(live, {"status": "superseded", "closed_known_ms": to_ms(r["decided_at"])})
                if e.text is None:
                    continue
                pid = point_id(r["memory_id"], r["command_id"])
                pending.append(IndexPoint(pid, list(map(float, vectors[i])), payload_of(r),
                                          self._lexical.document(e.text, key=pid)))
                i += 1
            elif e.name == "MemoryUsed":
                self._flush(pending)
                for use in r["uses"]:
                    used_ms = to_ms(use["used_at"])  # the reference only moves forward (GREATEST in the profile)
                    self._index.set_payload(Filter(must=(FieldIn("memory_id", (use["memory_id"],)),
                                                         FieldIn("status", ("active",)),
                                                         FieldRange("fresh_ref_ms", lt=used_ms))),
                                            {"fresh_ref_ms": used_ms})
            elif e.name == "MemoryForgotten":
                self._flush(pending)
                self._index.delete(Filter(must=(FieldIn("memory_id", (r["memory_id"],)),)))
        self._flush(pending)

    def _flush(self, pending: list[IndexPoint]) -> None:
        if pending:
            self._index.upsert(pending)
            pending.clear()
