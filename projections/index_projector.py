"""``EmbeddingProjector``: the derived index (seed 004) as Qdrant points, one per memory version.

Point ids are deterministic (uuid5 of memory id and command id), so a redelivered event rewrites the
same point. The payload (:mod:`memwarden.commands.readmodel.payload`) carries every field the read
filter needs and no content: the text is read from Postgres after candidates are found. Each point
also carries the lexical sparse vector of its text (:class:`Bm25Encoder`, hashed term ids and BM25
term weights: the text's terms can be probed through it, like through the embedding, so it stays
inside the derived index). Embeddings run in a worker thread, in batches, once per memory version:
every vector is kept sealed under the version's data key (:mod:`memwarden.stores.vector_cache`), so a
replay reuses it instead of embedding again, and a forget leaves it unreadable.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence

import psycopg

from memwarden.commands.readmodel.payload import memory_selector, point_payload, supersession_updates, use_update
from memwarden.epoch import to_ms
from memwarden.projections.embedder import Embedder
from memwarden.projections.events_in import EventIn
from memwarden.projections.sparse import Bm25Encoder
from memwarden.projections.vector_index import IndexPoint, VectorIndex
from memwarden.projections.warm_vectors import WarmVectors
from memwarden.stores import profile_rows, vector_cache
from memwarden.stores.offsets import fresh, load_offsets, save_offsets

#: Longest wait, in seconds, for vectors the pre-embedder is computing right now (one of its batches).
WARM_WAIT_S = 30.0
_POINT_NS = uuid.UUID("b3c2f7a4-51e9-4d0c-8a6b-2f4e9d7c1a35")


def point_id(memory_id: str, command_id: str) -> str:
    """Deterministic point id of one memory version."""
    return str(uuid.uuid5(_POINT_NS, f"{memory_id}:{command_id}"))


class EmbeddingProjector:
    """Applies events to a ``VectorIndex``; tracks its offsets in Postgres under ``projector``.

    ``cache_from`` is the connection whose ``memory_vectors`` are reused (default ``conn``: this
    namespace's own; a replay passes the source namespace's). Vectors embedded or reused are sealed
    into this namespace's cache in the transaction that advances the offsets. ``embedded`` counts the
    texts embedded, ``reused`` the vectors taken from a cache.

    A new point's freshness reference starts from its memory's last use, read from the profile's
    ``memory_uses`` (the profile projector applies a batch first). ``uses_floor`` (epoch ms by memory
    id) adds uses known from elsewhere: a replay that builds the index apart from the profile passes
    the latest use of each memory in the whole ledger it replays (uses commute, so the result equals
    the live one).

    ``warm`` holds vectors the pre-embedder computed while the gate decided (in memory, bound to their
    text by digest, :mod:`memwarden.projections.warm_vectors`): taken before the cache is asked, and
    sealed into the cache like embedded ones. ``warmed`` counts them.
    """

    def __init__(self, embedder: Embedder, index: VectorIndex, conn: psycopg.AsyncConnection, topic: str,
                 projector: str, lexical: Bm25Encoder | None = None,
                 cache_from: psycopg.AsyncConnection | None = None,
                 uses_floor: Mapping[str, int] | None = None, warm: WarmVectors | None = None) -> None:
        self._embedder = embedder
        self._warm = warm
        self._lexical = lexical or Bm25Encoder()
        self._index = index
        self._conn = conn
        self._cache_from = cache_from
        self._uses_floor = dict(uses_floor or {})
        self._topic = topic
        self._projector = projector
        self._model = getattr(embedder, "model_id", "unknown")
        self.embedded = 0
        self.reused = 0
        self.warmed = 0

    async def apply(self, events: Sequence[EventIn]) -> None:
        """Apply ``events`` not applied yet (idempotent point writes), then advance the offsets."""
        async with self._conn.cursor() as cur:
            stored = await load_offsets(cur, self._projector, self._topic, lock=False)
        await self._conn.commit()
        todo, nxt = fresh(events, stored)
        recorded = [e for e in todo if e.name == "MemoryRecorded" and e.text is not None]
        vectors, seals = await self._vectors(recorded)
        memory_ids = sorted({e.record["memory_id"] for e in recorded})
        uses = {m: to_ms(t) for m, t in (await profile_rows.last_uses(self._conn, memory_ids)).items()}
        for m in memory_ids:
            if m in self._uses_floor:
                uses[m] = max(uses.get(m, 0), self._uses_floor[m])
        await asyncio.to_thread(self._write, todo, vectors, uses)
        async with self._conn.transaction(), self._conn.cursor() as cur:
            await vector_cache.save(cur, seals)
            for e in todo:
                if e.name == "MemoryForgotten":
                    await vector_cache.forget(cur, e.record["memory_id"])
            await save_offsets(cur, self._projector, self._topic, nxt)

    async def _vectors(self, recorded: Sequence[EventIn]) -> tuple[dict[str, list[float]],
                                                                   list[vector_cache.SealedVector]]:
        """The vector of each recorded version (from the cache when it opens, else embedded) and the
        seals this namespace's cache lacks."""
        pids = [point_id(e.record["memory_id"], e.record["command_id"]) for e in recorded]
        source = self._cache_from or self._conn
        cached = await vector_cache.load(source, pids, self._model)
        vectors: dict[str, list[float]] = {}
        for e, pid in zip(recorded, pids, strict=True):
            hit = cached.get(pid)
            opened = vector_cache.unseal(hit, {hit.key_id: e.key}) if hit is not None and e.key else None
            if opened is not None:
                vectors[pid] = opened
        missing = [(e, pid) for e, pid in zip(recorded, pids, strict=True) if pid not in vectors]
        self.reused += len(recorded) - len(missing)
        if missing and self._warm is not None:
            warmed = await asyncio.to_thread(self._warm.take, [(pid, e.text or "") for e, pid in missing], WARM_WAIT_S)
            vectors.update(warmed)
            self.warmed += len(warmed)
        cold = [(e, pid) for e, pid in missing if pid not in vectors]
        if cold:
            if self._warm is not None:
                self._warm.embedded_elsewhere([pid for _, pid in cold])
            found = await asyncio.to_thread(self._embedder.embed, [e.text or "" for e, _ in cold])
            vectors.update({pid: [float(x) for x in v] for (_, pid), v in zip(cold, found, strict=True)})
        self.embedded += len(cold)
        seals = [vector_cache.seal(pid, e.record["content"]["key_id"], self._model, vectors[pid], e.key)
                 for e, pid in missing if e.key]
        if self._cache_from is not None:  # another namespace's cache: copy its seals as they are
            seals += [cached[pid] for pid in pids if pid in cached and pid in vectors]
        return vectors, seals

    @property
    def connection(self) -> psycopg.AsyncConnection:
        """The connection offsets and the vector cache are written through."""
        return self._conn

    def _write(self, todo: Sequence[EventIn], vectors: Mapping[str, Sequence[float]],
               uses: Mapping[str, int]) -> None:
        pending: list[IndexPoint] = []
        latest: dict[str, int] = {}  # uses of a run of MemoryUsed events, one update per memory
        for e in todo:
            r = e.record
            if e.name == "MemoryUsed":
                self._flush(pending)
                for use in r["uses"]:  # uses commute (the freshness reference only moves forward)
                    latest[use["memory_id"]] = max(latest.get(use["memory_id"], 0), to_ms(use["used_at"]))
                continue
            self._apply_uses(latest)
            if e.name == "MemoryRecorded":
                updates = supersession_updates(r)
                if updates:
                    self._flush(pending)
                    for where, payload in updates:
                        self._index.set_payload(where, payload)
                if e.text is None:
                    continue
                pid = point_id(r["memory_id"], r["command_id"])
                pending.append(IndexPoint(pid, vectors[pid], point_payload(r, uses.get(r["memory_id"])),
                                          self._lexical.document(e.text, key=pid)))
            elif e.name == "MemoryForgotten":
                self._flush(pending)
                self._index.delete(memory_selector(r["memory_id"]))
        self._flush(pending)
        self._apply_uses(latest)

    def _apply_uses(self, latest: dict[str, int]) -> None:
        """One payload update per store kind for each distinct use time (a read's uses share one)."""
        by_time: dict[int, list[str]] = {}
        for memory_id, used_ms in latest.items():
            by_time.setdefault(used_ms, []).append(memory_id)
        for used_ms, memory_ids in sorted(by_time.items()):
            for where, payload in use_update(memory_ids, used_ms):
                self._index.set_payload(where, payload)
        latest.clear()

    def _flush(self, pending: list[IndexPoint]) -> None:
        if pending:
            self._index.upsert(pending)
            pending.clear()
