"""Forensic audit by ledger position (issue 9 part 7; seed 004 "audit by offset"): for a record of
the ledger, who signed it with which key, what the gate decided and why, what it produced, which
projection rows and points cite it, every read that returned it, and what later superseded, forgot
or retracted it; the whole lineage of a memory; everything a principal wrote, read, granted and was
refused. Read only: the ledger topics (one pass) and the namespace's Postgres rows.

Content never comes back here unless the caller names a principal allowed to read it (``as_principal``)
and the data key still exists; a forgotten record shows ``shredded at keys:<partition>:<offset>``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memwarden.commands.ledger import Position
from memwarden.crypto import Kek, open_content
from memwarden.errors import DecodeError, ValidationError
from memwarden.schemas.codec import AvroCodec
from memwarden.settings import Settings
from memwarden.stores.keyring import KeySnapshot
from memwarden.stores.ledger import LedgerRecord, ends_of, read_many

TOPICS = ["commands", "decisions", "events", "audit", "keys"]


def parse_position(text: str, partitions: dict[str, list[int]], prefix: str | None = None) -> tuple[str, int, int]:
    """``TOPIC:PARTITION:OFFSET`` (a logical topic of the namespace, or its full name ``<prefix>.<topic>`` as
    receipts and ``memwarden forget`` print it) checked against the partitions that exist; raises
    ``ValidationError`` (field ``position``)."""
    parts = text.split(":")
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        raise ValidationError("position", f"{text!r} is not TOPIC:PARTITION:OFFSET")
    topic, partition, offset = parts[0], int(parts[1]), int(parts[2])
    if prefix is not None and topic.startswith(f"{prefix}.") and topic[len(prefix) + 1:] in partitions:
        topic = topic[len(prefix) + 1:]
    if topic not in partitions:
        raise ValidationError("position", f"{topic!r} is not a ledger topic ({', '.join(sorted(partitions))})")
    if partition not in partitions[topic]:
        raise ValidationError("position", f"{topic} has no partition {partition}")
    return topic, partition, offset


@dataclass
class Ledger:
    """The ledger read once: decoded records by topic, with their positions; the key snapshot and
    where each key was shredded."""

    records: dict[str, list[tuple[LedgerRecord, str, dict[str, Any]]]] = field(default_factory=dict)
    keys: KeySnapshot | None = None
    shredded_at: dict[str, Position] = field(default_factory=dict)
    ends: dict[str, dict[int, int]] = field(default_factory=dict)

    def of(self, topic: str) -> Iterator[tuple[LedgerRecord, str, dict[str, Any]]]:
        """The decoded records of a logical topic."""
        yield from self.records.get(topic, [])


def read_ledger(settings: Settings, codec: AvroCodec, kek: Kek) -> Ledger:
    """Every record of the namespace's ledger topics, decoded, in one pass."""
    ends = ends_of(settings, TOPICS)
    names = {settings.topic(t): t for t in TOPICS}
    out = Ledger(keys=KeySnapshot(kek, codec), ends=ends)
    for raw in read_many(settings, ends):
        topic = names[raw.position.topic]  # positions printed as the audit reads them: logical topic names
        r = LedgerRecord(Position(topic, raw.position.partition, raw.position.offset), raw.key, raw.value,
                         raw.timestamp_ms)
        if topic == "keys":
            assert out.keys is not None
            out.keys.add(r.key, r.value)
            if r.value is None and r.key:
                out.shredded_at[r.key.decode()] = r.position
            continue
        name = ""
        rec: dict[str, Any] = {}
        if r.value is not None:
            try:
                name, rec = codec.decode(r.value)
            except DecodeError:
                name = "undecodable"
        out.records.setdefault(topic, []).append((r, name, rec))
    return out


def _pos(p: Position | dict[str, Any]) -> str:
    if isinstance(p, Position):
        return f"{p.topic}:{p.partition}:{p.offset}"
    return f"{p['topic']}:{p['partition']}:{p['offset']}"


def _when(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else value


def describe_command(rec: dict[str, Any], name: str) -> dict[str, Any]:
    """The envelope facts of a command record, never its content."""
    env = rec.get("envelope") or {}
    sig = env.get("signature") or {}
    return {"kind": name, "command_id": env.get("command_id"), "principal": env.get("principal"),
            "subject": env.get("subject"), "scope": env.get("scope"), "store_kind": env.get("store_kind"),
            "source_kind": (env.get("source") or {}).get("kind"), "source_ref": (env.get("source") or {}).get(
                "reference"), "issued_at": _when(env.get("issued_at")), "signed_with": sig.get("key_id"),
            "memory_id": rec.get("memory_id") or env.get("supersedes"),
            "key_id": (rec.get("content") or {}).get("key_id")}


#: What :func:`content_of` says of content that exists but may not be shown; each caller says how
#: to see it, where it can (``memwarden audit at --as``).
WITHHELD = "(withheld)"
#: What it says when the data key is gone (its tombstone compacted away, or never published), with
#: or without a reader: nobody can read the content any more.
KEY_MISSING = "(the data key is missing: the content is gone)"


def content_of(rec: dict[str, Any], ledger: Ledger, allowed: bool) -> str:
    """The text of a memory command when ``allowed`` and its key exists; else why not (first that
    the content is gone, when it is)."""
    content = rec.get("content")
    if not content:
        return "(no content)"
    key_id = content["key_id"]
    if key_id in ledger.shredded_at:
        return f"shredded at {_pos(ledger.shredded_at[key_id])}"
    assert ledger.keys is not None
    key = ledger.keys.get(key_id)
    if key is None:
        return KEY_MISSING
    if not allowed:
        return WITHHELD
    text = open_content(content, {key_id: key})
    return text if text is not None else "(the content does not open with its data key)"


def decision_at(ledger: Ledger, position: str) -> dict[str, Any] | None:
    """The ``GateDecided`` of the command at ``position`` (``commands:P:O``), as recorded."""
    for r, name, rec in ledger.of("decisions"):
        if name == "GateDecided" and _pos(rec["position"]) == position:
            return {"at": _pos(r.position), "outcome": rec["outcome"], "reasons": rec["reasons"],
                    "gate_version": rec["gate_version"], "policy_version": rec["policy_version"],
                    "decided_at": _when(rec["decided_at"]), "memory_id": rec["memory_id"]}
    return None


def events_of(ledger: Ledger, position: str) -> list[dict[str, Any]]:
    """The events the decision of ``position`` produced, with their own positions."""
    return [{"at": _pos(r.position), "event": name, "version": rec.get("version")}
            for r, name, rec in ledger.of("events") if rec.get("position") and _pos(rec["position"]) == position]


def reads_of(ledger: Ledger, memory_id: str) -> list[dict[str, Any]]:
    """Every audited read that returned ``memory_id``: when, who, purpose, rank, and where it is on the ledger."""
    return [{"at": _pos(r.position), "read_at": _when(rec["read_at"]), "principal": rec["principal"],
             "purpose": rec["purpose"], "rank": rec["returned"].index(memory_id) + 1}
            for r, name, rec in ledger.of("audit") if name == "ReadAudited" and memory_id in rec["returned"]]


def commands_about(ledger: Ledger, memory_id: str) -> list[tuple[LedgerRecord, str, dict[str, Any]]]:
    """The commands about ``memory_id`` in the order they were appended (record time; ties by partition and
    offset): those that name it (create, supersede, forget by id), those whose recorded decision lists it (a
    forget of many, a legal hold's lift, a dry run: ``GateDecided.memory_ids``; a forget a hold keeps waiting:
    ``deferred_ids``), and the reviews of its held writes. (Sorted by position alone, a lift on partition 2
    came before the record it lifted on partition 3, and the waiting forget was missing.)"""
    listed = {(rec["position"]["partition"], rec["position"]["offset"]) for _, name, rec in ledger.of("decisions")
              if name == "GateDecided" and (rec.get("memory_id") == memory_id
                                             or memory_id in (rec.get("memory_ids") or ())
                                             or memory_id in (rec.get("deferred_ids") or ()))}
    commands = list(ledger.of("commands"))
    about: set[int] = set()
    named: set[str] = set()
    for i, (r, _, rec) in enumerate(commands):
        env = rec.get("envelope") or {}
        if rec.get("memory_id") == memory_id or env.get("supersedes") == memory_id or (
                r.position.partition, r.position.offset) in listed:
            about.add(i)
            named.add(env.get("command_id") or "")
    about |= {i for i, (_, _, rec) in enumerate(commands) if rec.get("quarantined_command_id") in named}
    return sorted((commands[i] for i in about),
                  key=lambda c: (c[0].timestamp_ms, c[0].position.partition, c[0].position.offset))
