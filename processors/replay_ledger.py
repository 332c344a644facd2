"""Joining the ledger for a replay: each command position with the decision the gate recorded for it
and the event that decision produced (``GateDecided`` on the decisions topic, ``MemoryRecorded``,
``MemoryForgotten`` or ``GovernanceChanged`` on the events topic, both naming the command position).

The decisions and events topics are partitioned by subject with the worker's partitioner, the
commands topic with the client's, so the join goes through positions, not partitions.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memwarden.commands.ledger import Position
from memwarden.errors import DecodeError
from memwarden.processors.gate_replay import RecordedOutcome, recorded_decision
from memwarden.schemas.codec import AvroCodec
from memwarden.settings import Settings
from memwarden.stores.ledger import LedgerRecord, end_offsets, read

#: Events that a decision produces (and that name the command position they come from).
DECISION_EVENTS = frozenset({"MemoryRecorded", "MemoryForgotten", "GovernanceChanged"})


@dataclass
class LedgerIndex:
    """Every recorded decision by command position, and the ends of the events topic read."""

    recorded: dict[Position, RecordedOutcome] = field(default_factory=dict)
    events_end: dict[int, int] = field(default_factory=dict)
    last_decided: datetime | None = None


def _position(record: Mapping[str, Any]) -> Position:
    p = record["position"]
    return Position(p["topic"], p["partition"], p["offset"])


def index_ledger(settings: Settings, codec: AvroCodec, cut: Mapping[int, int]) -> LedgerIndex:
    """The recorded decision of every command position before ``cut`` (exclusive ends per commands
    partition), with the event it produced. Decisions of positions past the cut are ignored."""
    commands = settings.topic("commands")
    produced: dict[Position, tuple[bytes | None, bytes, dict[str, Any]]] = {}
    events_end = end_offsets(settings, "events")
    for r in read(settings, "events", events_end):
        name, rec = _decode(codec, r)
        if name in DECISION_EVENTS and r.value is not None:
            produced[_position(rec)] = (r.key, r.value, rec)
    out = LedgerIndex(events_end=events_end)
    for r in read(settings, "decisions", end_offsets(settings, "decisions")):
        name, rec = _decode(codec, r)
        if name != "GateDecided" or r.value is None:
            continue
        pos = _position(rec)
        if pos.topic != commands or pos.offset >= cut.get(pos.partition, 0):
            continue
        event = produced.get(pos)
        out.recorded[pos] = RecordedOutcome(recorded_decision(rec, event[2] if event else None), r.key, r.value,
                                            (event[0], event[1]) if event else None)
        if out.last_decided is None or rec["decided_at"] > out.last_decided:
            out.last_decided = rec["decided_at"]
    return out


def _decode(codec: AvroCodec, r: LedgerRecord) -> tuple[str, dict[str, Any]]:
    if r.value is None:
        return "", {}
    try:
        return codec.decode(r.value)
    except DecodeError:
        return "", {}


def command_positions(settings: Settings, cut: Mapping[int, int]) -> Iterator[LedgerRecord]:
    """The commands before ``cut``, partition after partition, in offset order."""
    yield from read(settings, "commands", cut)
