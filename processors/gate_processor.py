"""Wiring of the write gate: decode → decrypt → load governed state → ``decide`` → store → publish.

At-least-once input with exactly-once effect: for each batch the decisions (with the exact bytes
published) are committed to Postgres *before* they are sent; a redelivered command (same ledger
position) re-sends the stored bytes, a new copy of a known command id (another position) gets a
``DUPLICATE`` decision. Downstream projections drop events they have already applied.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import psycopg
import pydantic

from memwarden.commands import events
from memwarden.commands.gate import (
    Decision,
    GateLimits,
    GateState,
    MemoryState,
    Outcome,
    Position,
    PriorDecision,
    decide,
)
from memwarden.commands.model import Command, ForgetMemory, from_avro
from memwarden.crypto import ContentUnreadable, decrypt_text
from memwarden.errors import DecodeError
from memwarden.processors.keyring import KeyRing
from memwarden.schemas.codec import COMMAND_TYPES, AvroCodec


@dataclass(frozen=True)
class Inbound:
    """One record read from the commands topic."""

    key: bytes | None
    value: bytes | None
    position: Position


@dataclass(frozen=True)
class Outbound:
    """One record to publish: logical topic name, key, value, headers."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()


def _pydantic_field(exc: pydantic.ValidationError) -> tuple[str, str]:
    first = exc.errors()[0]
    return ".".join(str(p) for p in first["loc"]) or "record", first["msg"]


def dead_letter(item: Inbound, code: str, reason: str, field: str | None) -> Outbound:
    """The dead-letter record: the original bytes untouched, the reason in headers."""
    headers = (
        ("reason_code", code.encode()),
        ("reason", reason.encode("utf-8", "replace")),
        ("field", (field or "").encode()),
        ("source_topic", item.position.topic.encode()),
        ("source_partition", str(item.position.partition).encode()),
        ("source_offset", str(item.position.offset).encode()),
    )
    return Outbound("deadletter", item.key, item.value if item.value is not None else b"", headers)


class GateProcessor:
    """Decides batches of commands. ``conn`` is an async psycopg connection in the namespace schema."""

    def __init__(self, codec: AvroCodec, keyring: KeyRing, conn: psycopg.AsyncConnection,
                 limits: GateLimits) -> None:
        self._codec = codec
        self._keyring = keyring
        self._conn = conn
        self._limits = limits

    async def handle(self, batch: Sequence[Inbound], now: datetime | None = None) -> list[Outbound]:
        """Decide ``batch`` in order; returns the records to publish, in order. Never raises for bad
        input; raises only on infrastructure failure (the batch is then redelivered)."""
        now = now or datetime.now(UTC)
        out: list[Outbound] = []
        parsed: list[tuple[Inbound, Command]] = []
        for item in batch:
            try:
                name, record = self._codec.decode(item.value)
                if name not in COMMAND_TYPES:
                    raise DecodeError("NOT_A_COMMAND", f"{name} is not a command")
                parsed.append((item, from_avro(name, record)))
            except DecodeError as exc:
                out += self._refuse(item, exc.code, exc.reason, exc.field, now)
            except pydantic.ValidationError as exc:
                field, msg = _pydantic_field(exc)
                out += self._refuse(item, "INVALID_FIELD", f"{field}: {msg}", field, now)
        if not parsed:
            return out
        texts = await self._decrypt([c for _, c in parsed])
        priors, memories = await self._load(parsed)
        rows: list[tuple] = []
        changed: dict[str, MemoryState] = {}
        for item, command in parsed:
            cid = command.envelope.command_id
            prior = priors.get(cid)
            if prior is not None and prior[0].position == item.position:
                out += self._publish(command, prior[1], prior[2])  # redelivery: the stored bytes
                continue
            targets = {m: memories[m] for m in _memory_ids(command) if m in memories}
            decision = decide(command, texts.get(cid), item.position, GateState(prior and prior[0], targets), now,
                              self._limits)
            decided, event = self._records(command, decision, item.position, now)
            out += self._publish(command, decided, event)
            if decision.outcome is not Outcome.DUPLICATE:
                priors[cid] = (PriorDecision(decision.outcome, item.position), decided, event)
                rows.append((cid, decision.outcome.value, item.position.partition, item.position.offset,
                             decided, event, now))
            if decision.admitted and decision.memory is not None:
                memories[decision.memory.memory_id] = decision.memory
                changed[decision.memory.memory_id] = decision.memory
        await self._store(rows, changed)
        return out

    def _refuse(self, item: Inbound, code: str, reason: str, field: str | None, now: datetime) -> list[Outbound]:
        decided = self._codec.encode("GateDecided", events.rejected_input(code, reason, field, item.position, now))
        return [dead_letter(item, code, reason, field), Outbound("decisions", item.key, decided)]

    def _records(self, command: Command, decision: Decision, position: Position,
                 now: datetime) -> tuple[bytes, bytes | None]:
        memory_id = decision.memory.memory_id if decision.memory else getattr(command, "memory_id", None)
        decided = self._codec.encode("GateDecided", events.gate_decided(command, decision, position, now, memory_id))
        if not decision.admitted:
            return decided, None
        if isinstance(command, ForgetMemory):
            if decision.memory is None:  # already forgotten: nothing new to project
                return decided, None
            return decided, self._codec.encode("MemoryForgotten", events.memory_forgotten(command, position, now))
        return decided, self._codec.encode("MemoryRecorded", events.memory_recorded(command, decision, position, now))

    def _publish(self, command: Command, decided: bytes, event: bytes | None) -> list[Outbound]:
        key = command.envelope.subject.encode()
        out = [Outbound("decisions", key, decided)]
        if event is not None:
            out.append(Outbound("events", key, event))
        return out

    async def _decrypt(self, commands: list[Command]) -> dict[str, str | None]:
        wanted = [c for c in commands if not isinstance(c, ForgetMemory)]
        if not wanted:
            return {}
        keys = await asyncio.to_thread(self._keyring.lookup, [c.content.key_id for c in wanted])  # type: ignore[union-attr]
        texts: dict[str, str | None] = {}
        for c in wanted:
            content = c.content  # type: ignore[union-attr]
            key = keys.get(content.key_id)
            try:
                texts[c.envelope.command_id] = (
                    None if key is None else decrypt_text(content.nonce, content.ciphertext, key, content.key_id)
                )
            except ContentUnreadable:
                texts[c.envelope.command_id] = None
        return texts

    async def _load(self, parsed: list[tuple[Inbound, Command]]):
        cids = [c.envelope.command_id for _, c in parsed]
        mids = sorted({m for _, c in parsed for m in _memory_ids(c)})
        priors: dict[str, tuple[PriorDecision, bytes, bytes | None]] = {}
        memories: dict[str, MemoryState] = {}
        async with self._conn.cursor() as cur:
            await cur.execute(
                "SELECT command_id::text, outcome, ledger_partition, ledger_offset, decision, event"
                " FROM gate_decisions WHERE command_id = ANY(%s::uuid[])", (cids,))
            topic = parsed[0][0].position.topic
            for cid, outcome, part, off, decided, event in await cur.fetchall():
                priors[cid] = (PriorDecision(Outcome(outcome), Position(topic, part, off)), bytes(decided),
                               bytes(event) if event is not None else None)
            if mids:
                await cur.execute(
                    "SELECT memory_id::text, subject, owner, version, forgotten FROM gate_memories"
                    " WHERE memory_id = ANY(%s::uuid[])", (mids,))
                for mid, subject, owner, version, forgotten in await cur.fetchall():
                    memories[mid] = MemoryState(mid, subject, owner, version, forgotten)
        await self._conn.commit()
        return priors, memories

    async def _store(self, rows: list[tuple], changed: dict[str, MemoryState]) -> None:
        async with self._conn.transaction(), self._conn.cursor() as cur:
            if rows:
                await cur.executemany(
                    "INSERT INTO gate_decisions (command_id, outcome, ledger_partition, ledger_offset, decision,"
                    " event, decided_at) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (command_id) DO NOTHING",
                    rows)
            if changed:
                await cur.executemany(
                    "INSERT INTO gate_memories (memory_id, subject, owner, version, forgotten)"
                    " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (memory_id) DO UPDATE SET"
                    " version = EXCLUDED.version, forgotten = EXCLUDED.forgotten",
                    [(m.memory_id, m.subject, m.owner, m.version, m.forgotten) for m in changed.values()])


def _memory_ids(command: Command) -> list[str]:
    """The memory a command creates, supersedes or forgets."""
    return [command.memory_id]
