"""What the projectors consume: decoded events with their position on the events topic and, for
``MemoryRecorded``, the text decrypted with the key ring (``None`` once the key is shredded)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from memwarden.commands.ledger import Position
from memwarden.crypto import open_content
from memwarden.errors import DecodeError
from memwarden.schemas.codec import AvroCodec
from memwarden.stores.keyring import KeyRing

log = logging.getLogger("memwarden.projections")


@dataclass(frozen=True)
class EventIn:
    """A decoded event with its own position on the events topic and, for ``MemoryRecorded``, the
    decrypted text and its data key (both ``None`` when the key is shredded)."""

    name: str
    record: dict[str, Any]
    position: Position
    text: str | None = None
    key: bytes | None = None


@dataclass(frozen=True)
class RawEvent:
    """An events-topic record as read: value bytes and position."""

    value: bytes | None
    position: Position


async def decode_events(codec: AvroCodec, keyring: KeyRing, batch: Sequence[RawEvent]) -> list[EventIn]:
    """Decode ``batch`` and decrypt the texts of ``MemoryRecorded`` events (one key-ring lookup for the
    batch). The gate wrote these events; an undecodable one is logged with its position and skipped."""
    out: list[EventIn] = []
    for raw in batch:
        try:
            name, record = codec.decode(raw.value)
        except DecodeError as exc:
            log.error("undecodable event at %s: %s", raw.position, exc)
            continue
        out.append(EventIn(name, record, raw.position))
    return await open_events(keyring, out)


async def open_events(keyring: KeyRing, out: list[EventIn]) -> list[EventIn]:
    """Decoded events with the texts (and data keys) of their ``MemoryRecorded`` opened, one key-ring
    lookup for the batch."""
    key_ids = [e.record["content"]["key_id"] for e in out if e.name == "MemoryRecorded"]
    if not key_ids:
        return out
    keys = await asyncio.to_thread(keyring.lookup, key_ids)
    return [_opened(e, keys) if e.name == "MemoryRecorded" else e for e in out]


def _opened(event: EventIn, keys: dict[str, bytes | None]) -> EventIn:
    text = open_content(event.record["content"], keys)
    return replace(event, text=text, key=keys.get(event.record["content"]["key_id"]) if text is not None else None)
