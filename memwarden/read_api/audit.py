"""What a read leaves behind: a ``ReadAudited`` record on the audit topic (ids and ledger positions,
never content; the query as a keyed digest) and ``MemoryUsed`` events that reset the freshness clock
of what it returned (SSGM Eq. 3). Pure builders; the service publishes them."""

from __future__ import annotations

import hashlib
import hmac
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from memwarden.commands.ledger import Outbound
from memwarden.commands.readmodel.query import READ_POLICY_VERSION, RecalledMemory
from memwarden.commands.readmodel.usage import Usage
from memwarden.epoch import from_ms

#: The purpose a reviewer's read of a held write is audited with (:func:`held_audited`).
REVIEW_PURPOSE = "review"


def read_audited(digest_key: bytes, principal: str, purpose: str, query: str, found: Sequence[RecalledMemory],
                 as_of: datetime | None, known_at: datetime | None, now: datetime) -> dict[str, Any]:
    """The ``ReadAudited`` record of one recall: who read, for what purpose, the HMAC of the query
    under ``digest_key``, the ids and ledger positions returned, the read policy version and times."""
    return {
        "read_id": str(uuid.uuid4()), "principal": principal, "purpose": purpose,
        "query_hash": hmac.new(digest_key, query.encode(), hashlib.sha256).hexdigest(),
        "returned": [m.memory_id for m in found],
        "positions": [{"topic": m.ledger_topic, "partition": m.ledger_partition, "offset": m.ledger_offset}
                      for m in found],
        "policy_version": READ_POLICY_VERSION, "as_of": as_of, "known_at": known_at, "read_at": now,
    }


def history_audited(digest_key: bytes, principal: str, purpose: str, memory_id: str,
                    versions: Sequence[Mapping[str, Any]], now: datetime) -> dict[str, Any]:
    """The ``ReadAudited`` record of one history lookup (``POST /history``): the query is the keyed
    hash of ``history:<memory id>``; ``returned`` names the memory when a text was shown, with the
    ledger positions of the versions shown (``versions`` as :func:`memwarden.read_api.history.version_json`
    gives them)."""
    shown = [v for v in versions if v.get("text") is not None]
    record = read_audited(digest_key, principal, purpose, f"history:{memory_id}", [], None, None, now)
    return {**record, "returned": [memory_id] if shown else [], "positions": [dict(v["position"]) for v in shown]}


def held_audited(digest_key: bytes, principal: str, held: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """The ``ReadAudited`` record of a reviewer's read of a held write (``POST /held``; ``held`` as
    :func:`memwarden.read_api.held.held_json` gives it): purpose ``review``, the query the keyed hash of
    ``review:<command id>``, ``returned`` the memory id and the held command's ledger position when its text was
    shown."""
    shown = held.get("text") is not None
    record = read_audited(digest_key, principal, REVIEW_PURPOSE, f"review:{held['command_id']}", [], None, None, now)
    return {**record, "returned": [held["memory_id"]] if shown else [],
            "positions": [dict(held["position"])] if shown else []}


def used_event(batch: Sequence[Usage]) -> dict[str, Any]:
    """The ``MemoryUsed`` record of one batch of uses."""
    return {"event_id": str(uuid.uuid4()),
            "uses": [{"memory_id": u.memory_id, "used_at": from_ms(u.used_at_ms)} for u in batch]}


def used_records(encode: Any, batches: Iterable[Sequence[Usage] | None]) -> list[Outbound]:
    """``MemoryUsed`` records to publish on the events topic (key ``usage``), one per non-empty batch;
    ``encode(name, record) -> bytes`` is the codec's encoder."""
    return [Outbound("events", b"usage", encode("MemoryUsed", used_event(b))) for b in batches if b]
