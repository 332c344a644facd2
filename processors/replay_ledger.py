"""Reading the ledger once for a replay: the data keys (as a snapshot), the commands before the cut,
each command position's recorded decision and the event that decision produced, and every event.

The decisions and events topics are partitioned by subject like the commands, but the join goes
through the positions each record names, not through partitions. One consumer reads the four topics
in one pass (a fixed cost of one connection set-up, not one per topic). The ledger read is held in
memory: about 2 KB per memory version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memwarden.commands.ledger import Position
from memwarden.crypto import Kek
from memwarden.errors import DecodeError
from memwarden.processors.gate_replay import RecordedOutcome, recorded_decision
from memwarden.schemas.codec import AvroCodec
from memwarden.settings import Settings
from memwarden.stores.keyring import KeySnapshot
from memwarden.stores.ledger import LedgerRecord, ends_of, read_many

#: Events that a decision produces (and that name the command position they come from).
DECISION_EVENTS = frozenset({"MemoryRecorded", "MemoryForgotten", "GovernanceChanged"})


@dataclass
class LedgerIndex:
    """The ledger as a replay needs it: recorded decisions by command position, the commands before
    the cut and every event (each in offset order within its partition), the keys, the events
    topic's ends and the latest decision time seen."""

    keys: KeySnapshot
    recorded: dict[Position, RecordedOutcome] = field(default_factory=dict)
    commands: list[LedgerRecord] = field(default_factory=list)
    events: list[tuple[LedgerRecord, str, dict[str, Any]]] = field(default_factory=list)
    events_end: dict[int, int] = field(default_factory=dict)
    last_decided: datetime | None = None


@dataclass(frozen=True)
class EventsPart:
    """What the vector index of a replay needs from a :class:`LedgerIndex`, in a form another process
    can receive (picklable; the data keys still wrapped under the KEK, never unwrapped in transit)."""

    events: list[tuple[LedgerRecord, str, dict[str, Any]]]
    wrapped_keys: dict[str, bytes]
    events_end: dict[int, int]
    last_decided: datetime | None

    @classmethod
    def of(cls, index: LedgerIndex) -> EventsPart:
        """The events part of ``index``."""
        return cls(index.events, index.keys.wrapped(), index.events_end, index.last_decided)

    def ledger(self, kek: Kek, codec: AvroCodec) -> LedgerIndex:
        """A :class:`LedgerIndex` holding only the events and keys (no commands, no decisions)."""
        return LedgerIndex(KeySnapshot.of_wrapped(kek, codec, self.wrapped_keys), events=self.events,
                           events_end=self.events_end, last_decided=self.last_decided)


def _position(record: Mapping[str, Any]) -> Position:
    p = record["position"]
    return Position(p["topic"], p["partition"], p["offset"])


def _decode(codec: AvroCodec, r: LedgerRecord) -> tuple[str, dict[str, Any]]:
    if r.value is None:
        return "", {}
    try:
        return codec.decode(r.value)
    except DecodeError:
        return "", {}


def ledger_ends(settings: Settings, cut: Mapping[int, int]) -> dict[str, dict[int, int]]:
    """The exclusive ends a replay reads to, per topic and partition: the keys, decisions and events
    topics' current ends and the commands ``cut``. Two readers given the same ends read the same
    ledger."""
    ends = ends_of(settings, ["keys", "decisions", "events"])
    ends["commands"] = dict(cut)
    return ends


def read_ledger(settings: Settings, codec: AvroCodec, kek: Kek, cut: Mapping[int, int],
                ends: Mapping[str, Mapping[int, int]] | None = None, *, commands: bool = True) -> LedgerIndex:
    """Everything a replay of ``settings``' ledger up to ``cut`` (exclusive ends per commands
    partition) reads, in one pass, to ``ends`` (:func:`ledger_ends`, taken now when ``None``).
    Decisions of positions past the cut are ignored. ``commands=False`` leaves the commands out
    (the vector index needs the events, keys and decision times only)."""
    to_read = {k: dict(v) for k, v in (ends or ledger_ends(settings, cut)).items()}
    if not commands:
        to_read.pop("commands", None)
    topics = {settings.topic(name): name for name in to_read}
    out = LedgerIndex(KeySnapshot(kek, codec), events_end=to_read["events"])
    decided: list[tuple[LedgerRecord, dict[str, Any]]] = []
    produced: dict[Position, list[tuple[bytes | None, bytes, dict[str, Any]]]] = {}
    for r in read_many(settings, to_read):
        kind = topics[r.position.topic]
        if kind == "keys":
            out.keys.add(r.key, r.value)
        elif kind == "commands":
            out.commands.append(r)
        elif kind == "decisions":
            name, rec = _decode(codec, r)
            if name == "GateDecided":
                decided.append((r, rec))
        else:
            name, rec = _decode(codec, r)
            out.events.append((r, name, rec))
            if name in DECISION_EVENTS and r.value is not None:
                produced.setdefault(_position(rec), []).append((r.key, r.value, rec))
    commands_topic = settings.topic("commands")
    for r, rec in decided:
        pos = _position(rec)
        if pos.topic != commands_topic or pos.offset >= cut.get(pos.partition, 0) or r.value is None:
            continue
        order = {m: i for i, m in enumerate(rec.get("memory_ids") or ())}  # the order the live gate sent them
        made = sorted(produced.get(pos, []), key=lambda e: -1 if e[2].get("reason") is None
                      else order.get(e[2]["memory_id"], len(order)))
        written = next((e[2] for e in made if "closes" in e[2]), None)
        out.recorded[pos] = RecordedOutcome(recorded_decision(rec, written), r.key, r.value,
                                            tuple((e[0], e[1]) for e in made))
        if out.last_decided is None or rec["decided_at"] > out.last_decided:
            out.last_decided = rec["decided_at"]
    out.commands.sort(key=lambda r: (r.position.partition, r.position.offset))
    return out


def read_events(settings: Settings, codec: AvroCodec, kek: Kek, events_cut: Mapping[int, int]) -> LedgerIndex:
    """The keys and the events before ``events_cut`` (exclusive ends per events partition): what the
    projections of a namespace are a function of (a reconciliation rebuilds exactly what the live
    projectors have applied)."""
    ends = {"keys": ends_of(settings, ["keys"])["keys"], "events": dict(events_cut)}
    out = LedgerIndex(KeySnapshot(kek, codec), events_end=dict(events_cut))
    keys_topic = settings.topic("keys")
    for r in read_many(settings, ends):
        if r.position.topic == keys_topic:
            out.keys.add(r.key, r.value)
        else:
            name, rec = _decode(codec, r)
            out.events.append((r, name, rec))
    return out
