"""Fixtures and helpers of the governed-read tests (issue 4): a cheap deterministic embedder, a
direct writer of memory versions into a real Edge shard and a real Postgres namespace (the payload
and row shapes of the real projectors), and an event loop to drive the async ``Recaller`` from
synchronous hypothesis tests. Nothing is mocked: the index, the filter translation and the SQL are
the production ones; only the embedding model is replaced by a hashing embedder (speed)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg

from memwarden.commands.model import PrincipalKind, Sensitivity, StoreKind
from memwarden.commands.principals import PrincipalRecord
from memwarden.commands.readmodel.filters import Filter
from memwarden.commands.readmodel.payload import OPEN_END_MS, fresh_until_ms, with_access_keys
from memwarden.commands.readmodel.payload import point_payload as payload_of
from memwarden.commands.readmodel.permission import Grant
from memwarden.epoch import to_ms, to_ms_or
from memwarden.projections.index_projector import point_id
from memwarden.projections.sparse import Bm25Encoder
from memwarden.projections.vector_index import IndexPoint, VectorIndex
from memwarden.stores.profile_rows import row_of
from memwarden.stores.records import grant_to_json, principal_to_json
from tests.factories import sealed

DIM = 384
_WORD = re.compile(r"\w+")


class HashEmbedder:
    """The ``Embedder`` protocol (projections/embedder.py) with feature hashing instead of a model:
    lower-cased words and their character trigrams, each hashed (BLAKE2b) to one of ``dim`` signed
    buckets, summed and L2-normalised. Deterministic across processes, ~10 µs per text; texts sharing
    words are close, others near-orthogonal. Returns float32 ``(len(texts), dim)``."""

    dim = DIM
    model_id = "hash-embedder"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                padded = f"#{word}#"
                for feature in [word, *(padded[j:j + 3] for j in range(len(padded) - 2))]:
                    h = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "big")
                    out[i, h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
            norm = float(np.linalg.norm(out[i]))
            if norm == 0.0:
                out[i, 0] = 1.0
            else:
                out[i] /= norm
        return out


class Loop:
    """One event loop for a whole module, so that one ``psycopg.AsyncConnection`` (and the
    ``Recaller`` holding it) serves many synchronous hypothesis examples."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        self.loop.close()


@dataclass(frozen=True)
class Version:
    """One stored memory version as the read path sees it. Times are aware UTC datetimes.

    ``effective_to`` is the end the writer declared; a superseded version also has ``superseded_at``
    (the successor's validity start: when it stopped being true) and ``closed_at`` (when the ledger
    decided the successor: what ``known_at`` reads compare with); ``last_used`` is a ``MemoryUsed``
    time (while it was active)."""

    owner: str
    subject: str
    scope: str
    store_kind: StoreKind
    sensitivity: Sensitivity
    purposes: tuple[str, ...]
    text: str
    valid_from: datetime
    decided: datetime
    status: str = "active"
    effective_to: datetime | None = None
    superseded_at: datetime | None = None
    closed_at: datetime | None = None
    expires: datetime | None = None
    last_used: datetime | None = None
    untrusted: bool = False
    memory_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    command_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    key_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    @property
    def valid_to(self) -> datetime | None:
        """End of validity as the projections store it: the declared end, shortened by a supersession."""
        if self.superseded_at is None:
            return self.effective_to
        return self.superseded_at if self.effective_to is None else min(self.effective_to, self.superseded_at)

    @property
    def point_id(self) -> str:
        return point_id(self.memory_id, self.command_id)

    def recorded(self, offset: int) -> dict[str, Any]:
        """The ``MemoryRecorded`` record (the fields the projectors read) of this version."""
        return {
            "memory_id": self.memory_id, "command_id": self.command_id, "version": 1, "event_id": str(uuid.uuid4()),
            "envelope": {
                "principal": self.owner, "subject": self.subject, "scope": self.scope,
                "store_kind": self.store_kind.value, "sensitivity": self.sensitivity.value,
                "purposes": list(self.purposes), "observed_at": self.valid_from, "effective_from": self.valid_from,
                "effective_to": self.effective_to, "expires_at": self.expires, "supersedes": None,
                "epistemic_status": "QUOTED",
                "source": {"kind": "WEB_CONTENT" if self.untrusted else "USER_STATEMENT", "reference": None,
                           "uri": None, "derived_from": []},
            },
            "content": sealed(self.text, self.key_id), "fact": None, "decided_at": self.decided,
            "position": {"topic": "ledger", "partition": 0, "offset": offset},
            "tags": ["untrusted"] if self.untrusted else [], "outcome": "ACCEPTED", "approved_by": None,
        }

    def payload(self, offset: int = 0) -> dict[str, Any]:
        """The index payload after every projector update (``payload_of``, then the supersession,
        ``MemoryUsed`` and status changes the ``EmbeddingProjector`` applies with ``set_payload``), with
        the access keys its final access attributes, trust and status give."""
        p = payload_of(self.recorded(offset))
        if self.last_used is not None:
            p["fresh_ref_ms"] = to_ms(self.last_used)
            p["fresh_until_ms"] = fresh_until_ms(self.store_kind, p["fresh_ref_ms"])
        p["valid_to_ms"] = to_ms_or(self.valid_to, OPEN_END_MS)
        if self.closed_at is not None:
            p["closed_known_ms"] = to_ms(self.closed_at)
        p["status"] = self.status
        # the projector deletes a forgotten version's point and never indexes a quarantined one; a point
        # given such a status anyway carries no access key (the payload's rule for unreadable statuses)
        return with_access_keys(p)

    def row(self, offset: int = 0) -> dict[str, Any]:
        """The ``memory_versions`` row after every projector update (``row_of``, then close, use,
        forget; a quarantined version never reaches the projections: it is stored here anyway)."""
        text = None if self.status == "forgotten" else self.text
        r = row_of(self.recorded(offset), text)
        r.update(status=self.status, valid_to=self.valid_to, closed_at=self.closed_at, last_used_at=self.last_used)
        return r


_INSERT = """
INSERT INTO memory_versions (memory_id, version, command_id, event_id, principal, subject, scope, store_kind,
  source_kind, source_ref, source_uri, derived_from, epistemic_status, sensitivity, purposes, content_nonce,
  content_sealed, content_key_id, fact_entity, fact_attribute, observed_at, valid_from, valid_to, expires_at,
  status, ledger_topic, ledger_partition, ledger_offset, decided_at, tags, unverified, approved_by, closed_at,
  last_used_at)
VALUES (%(memory_id)s, %(version)s, %(command_id)s, %(event_id)s, %(principal)s, %(subject)s, %(scope)s,
  %(store_kind)s, %(source_kind)s, %(source_ref)s, %(source_uri)s, %(derived_from)s::uuid[], %(epistemic_status)s,
  %(sensitivity)s, %(purposes)s, %(content_nonce)s, %(content_sealed)s, %(content_key_id)s, %(fact_entity)s,
  %(fact_attribute)s, %(observed_at)s, %(valid_from)s, %(valid_to)s, %(expires_at)s, %(status)s, %(ledger_topic)s,
  %(ledger_partition)s, %(ledger_offset)s, %(decided_at)s, %(tags)s, %(unverified)s, %(approved_by)s,
  %(closed_at)s, %(last_used_at)s)
"""


def store(conn: psycopg.Connection, indexes: Iterable[VectorIndex], versions: Sequence[Version],
          principals: Sequence[tuple[str, frozenset[str]]], grants: Sequence[Grant],
          embedder: HashEmbedder, lexical: Bm25Encoder) -> None:
    """Replace the namespace's read state by exactly ``versions``, ``principals`` (id, roles) and
    ``grants``: rows in ``memory_versions``, ``gate_principals`` and ``grants`` as the gate and the
    profile projector store them, and one point per version (dense, lexical, payload) in every index."""
    with conn.cursor() as cur:
        cur.execute("DELETE FROM memory_versions")
        cur.execute("DELETE FROM grants")
        cur.execute("DELETE FROM gate_principals")
        cur.executemany(_INSERT, [v.row(i) for i, v in enumerate(versions)])
        for pid, roles in principals:
            kind = PrincipalKind[pid.split(":", 1)[0].upper()]
            cur.execute("INSERT INTO gate_principals (principal_id, record) VALUES (%s, %s)",
                        (pid, json.dumps(principal_to_json(PrincipalRecord(pid, kind, roles)))))
        for g in grants:
            cur.execute("INSERT INTO grants (grant_id, grantee, record, valid_from_ms, valid_to_ms, revoked_at_ms)"
                        " VALUES (%s, %s, %s, %s, %s, %s)", (g.grant_id, g.grantee, json.dumps(grant_to_json(g)),
                                                             g.valid_from_ms, g.valid_to_ms, g.revoked_at_ms))
    conn.commit()
    vectors = embedder.embed([v.text for v in versions])
    points = [IndexPoint(v.point_id, vectors[i].tolist(), v.payload(i), lexical.document(v.text, key=v.point_id))
              for i, v in enumerate(versions)]
    for index in indexes:
        index.delete(Filter())
        index.upsert(points)


def utc_now() -> datetime:
    return datetime.now(UTC)


def qdrant_server_url() -> str | None:
    """``MEMWARDEN_QDRANT_URL`` when a Qdrant server answers there, else ``None``."""
    url = os.environ.get("MEMWARDEN_QDRANT_URL", "")
    if not url:
        return None
    from qdrant_client import QdrantClient

    try:
        client = QdrantClient(url=url, api_key=os.environ.get("MEMWARDEN_QDRANT_API_KEY"), timeout=3)
        client.get_collections()
        client.close()
    except Exception:  # noqa: BLE001 - any failure means "not reachable"
        return None
    return url
