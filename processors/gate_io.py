"""What the gate processor reads and writes: ledger records in (:class:`Inbound`), records to publish
out (:class:`Outbound`), decoding with dead letters for what is not a valid command, and the records
one decision publishes. Plain mapping; every decision is in :mod:`memwarden.commands.gate`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pydantic

from memwarden.commands import events
from memwarden.commands.gate import Decision, PrincipalUpsert
from memwarden.commands.ledger import Outbound, Position
from memwarden.commands.model import Command, RecordMemory, SupersedeMemory, from_avro
from memwarden.errors import DecodeError
from memwarden.schemas.codec import COMMAND_TYPES, GOVERNANCE_COMMANDS, AvroCodec
from memwarden.stores.decisions import record


@dataclass(frozen=True)
class Inbound:
    """One record read from the commands topic."""

    key: bytes | None
    value: bytes | None
    position: Position


@dataclass(frozen=True)
class Parsed:
    """A decoded, schema-valid command with its ledger record and the bytes its signature covers."""

    item: Inbound
    command: Command
    signed: bytes | None


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


def refusal(codec: AvroCodec, item: Inbound, code: str, reason: str, field: str | None,
            now: datetime) -> list[Outbound]:
    """Input that is not a valid command: a dead letter with the reason and a ``REJECTED`` decision."""
    decided = codec.encode("GateDecided", events.rejected_input(code, reason, field, item.position, now))
    return [dead_letter(item, code, reason, field), Outbound("decisions", item.key, decided)]


def _pydantic_field(exc: pydantic.ValidationError) -> tuple[str, str]:
    first = exc.errors()[0]
    return ".".join(str(p) for p in first["loc"]) or "record", first["msg"]


def parse(codec: AvroCodec, batch: Sequence[Inbound], now: datetime,
          signed: bool = True) -> tuple[list[Parsed], list[Outbound]]:
    """Decode ``batch``: the valid commands (with the bytes their signature covers unless
    ``signed`` is false: a replay verifies nothing again), and the refusals (dead letter + decision)
    of the rest. Never raises for bad input."""
    parsed: list[Parsed] = []
    out: list[Outbound] = []
    for item in batch:
        try:
            name, rec = codec.decode(item.value)
            if name not in COMMAND_TYPES:
                raise DecodeError("NOT_A_COMMAND", f"{name} is not a command")
            command = from_avro(name, rec)
            covered = codec.unsigned_bytes(item.value) if signed and command.envelope.signature else None
            parsed.append(Parsed(item, command, covered))
        except DecodeError as exc:
            out += refusal(codec, item, exc.code, exc.reason, exc.field, now)
        except pydantic.ValidationError as exc:
            field, msg = _pydantic_field(exc)
            out += refusal(codec, item, "INVALID_FIELD", f"{field}: {msg}", field, now)
    return parsed, out


def decision_records(codec: AvroCodec, command: Command, decision: Decision, item: Inbound,
                     now: datetime) -> list[dict[str, Any]]:
    """Every record ``decision`` publishes, as storable dicts (:func:`memwarden.stores.decisions.record`):
    the ``GateDecided``; for an admitted command its event (``MemoryRecorded`` of the command or of
    the released original, ``GovernanceChanged``) and registry entries; a ``MemoryForgotten`` (keyed
    by the memory's subject) for every memory it forgets, also under a ``DEFERRED`` outcome; and a
    tombstone on the keys topic for every data key the decision shreds (the gate is the one owner of
    shredding)."""
    position = item.position
    subject_key = command.envelope.subject.encode()
    memory_id = decision.memory.memory_id if decision.memory else getattr(command, "memory_id", None)
    out = [record("decisions", subject_key, codec.encode(
        "GateDecided", events.gate_decided(command, decision, position, now, memory_id)))]
    if decision.admitted:
        event = _event(codec, command, decision, item, now)
        if event is not None:
            out.append(record("events", subject_key, event))
    out += [record("events", f.memory.subject.encode(), codec.encode(
        "MemoryForgotten", events.memory_forgotten(f, position, now))) for f in decision.forgets]
    if decision.admitted:
        out += [record("principals", e.record.principal_id.encode(),
                       codec.encode("PrincipalState", events.principal_state(e.record, position)))
                for e in decision.effects if isinstance(e, PrincipalUpsert)]
    out += [record("keys", key_id.encode(), None) for key_id in decision.shred]
    return out


def _event(codec: AvroCodec, command: Command, decision: Decision, item: Inbound, now: datetime) -> bytes | None:
    position = item.position
    if decision.released is not None:
        original, reviewer = decision.released
        return codec.encode("MemoryRecorded", events.memory_recorded(original, decision, position, now, reviewer))
    if isinstance(command, RecordMemory | SupersedeMemory):
        return codec.encode("MemoryRecorded", events.memory_recorded(command, decision, position, now))
    if command.kind in GOVERNANCE_COMMANDS and item.value is not None:
        return codec.encode("GovernanceChanged", events.governance_changed(command, item.value, position, now))
    return None
