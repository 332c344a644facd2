"""Embeddings computed once (``memory_vectors``), sealed under the memory version's data key.

Why: a replay (or a second set of projections) must not embed again what was embedded once, and
the vectors must stay under crypto-shredding: a vector can approximate its text, so it is kept
encrypted under the same data key as the text (:func:`memwarden.crypto.seal_vector`); once a forget
shreds the key, the sealed vector is noise. The cache is keyed by point id (one per memory version)
and records the model it was computed with; another model is a miss (re-embedding).
Writer: the embedding projector. Readers: embedding projectors of this namespace or of a replay of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import psycopg

from memwarden.crypto import ContentUnreadable, open_vector, seal_vector


@dataclass(frozen=True)
class SealedVector:
    """One cached vector: point id, the data key it is sealed under, model, nonce, sealed bytes."""

    point_id: str
    key_id: str
    model: str
    nonce: bytes
    sealed: bytes

    def aad(self) -> str:
        """Associated data binding the seal to its point and model."""
        return f"vector:{self.point_id}:{self.model}"


def seal(point_id: str, key_id: str, model: str, vector: Sequence[float], key: bytes) -> SealedVector:
    """``vector`` of ``point_id`` sealed under data key ``key`` (id ``key_id``)."""
    aad = f"vector:{point_id}:{model}"
    nonce, sealed = seal_vector(vector, key, aad)
    return SealedVector(point_id, key_id, model, nonce, sealed)


def unseal(v: SealedVector, keys: Mapping[str, bytes | None]) -> list[float] | None:
    """The vector, or ``None`` when its data key is gone (shredded) or does not open it."""
    key = keys.get(v.key_id)
    if key is None:
        return None
    try:
        return open_vector(v.nonce, v.sealed, key, v.aad())
    except ContentUnreadable:
        return None


async def load(conn: psycopg.AsyncConnection, point_ids: Sequence[str], model: str) -> dict[str, SealedVector]:
    """The cached vectors of ``point_ids`` computed with ``model`` (others are absent)."""
    if not point_ids:
        return {}
    async with conn.cursor() as cur:
        await cur.execute("SELECT point_id::text, key_id::text, model, nonce, sealed FROM memory_vectors"
                          " WHERE point_id = ANY(%s::uuid[]) AND model = %s", (list(point_ids), model))
        rows = await cur.fetchall()
    await conn.commit()
    return {r[0]: SealedVector(r[0], r[1], r[2], bytes(r[3]), bytes(r[4])) for r in rows}


async def save(cur: psycopg.AsyncCursor, vectors: Sequence[SealedVector]) -> None:
    """Store sealed vectors; a point already cached with the same model keeps its first seal, one
    cached with another model is replaced."""
    if vectors:
        await cur.executemany(
            "INSERT INTO memory_vectors (point_id, key_id, model, nonce, sealed) VALUES (%s, %s, %s, %s, %s)"
            " ON CONFLICT (point_id) DO UPDATE SET key_id = EXCLUDED.key_id, model = EXCLUDED.model,"
            " nonce = EXCLUDED.nonce, sealed = EXCLUDED.sealed WHERE memory_vectors.model <> EXCLUDED.model",
            [(v.point_id, v.key_id, v.model, v.nonce, v.sealed) for v in vectors])


async def forget(cur: psycopg.AsyncCursor, memory_id: str) -> None:
    """Drop the sealed vectors of every version of ``memory_id`` (found through its profile rows):
    noise once the keys are shredded, and gone all the same."""
    await cur.execute("DELETE FROM memory_vectors WHERE key_id IN"
                      " (SELECT content_key_id FROM memory_versions WHERE memory_id = %s)", (memory_id,))


async def count_of(conn: psycopg.AsyncConnection, memory_id: str) -> int:
    """Sealed vectors still kept for the versions of ``memory_id``."""
    async with conn.cursor() as cur:
        await cur.execute("SELECT count(*) FROM memory_vectors WHERE key_id IN"
                          " (SELECT content_key_id FROM memory_versions WHERE memory_id = %s)", (memory_id,))
        (n,) = await cur.fetchone() or (0,)
    await conn.commit()
    return int(n)
