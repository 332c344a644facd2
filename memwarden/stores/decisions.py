"""The gate's decision rows (``gate_decisions``): one per command id, with every record the decision
published, so a redelivered command re-sends the same bytes and a caller can look an outcome up.

Writers: the gate only. Readers: the gate (priors), and callers through the read API's public
decisions endpoint (:func:`find`) — never another component's SQL.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from memwarden.commands.gate import Outcome, Position, PriorDecision


@dataclass(frozen=True)
class DecisionRow:
    """One decision to store: command id, outcome, ledger position, the ``GateDecided`` and (if
    any) event bytes, when it was decided, and every record published (``{topic, key, value}``
    with base64 key and value)."""

    command_id: str
    outcome: Outcome
    position: Position
    decided: bytes | None
    event: bytes | None
    decided_at: datetime
    records: list[dict[str, Any]]


async def load_priors(cur: psycopg.AsyncCursor, command_ids: Sequence[str],
                      topic: str) -> dict[str, tuple[PriorDecision, list[dict[str, Any]]]]:
    """Decisions already taken for ``command_ids``: the prior (outcome, position on ``topic``) and
    the records it published."""
    await cur.execute("SELECT command_id::text, outcome, ledger_partition, ledger_offset, outputs"
                      " FROM gate_decisions WHERE command_id = ANY(%s::uuid[])", (list(command_ids),))
    return {cid: (PriorDecision(Outcome(outcome), Position(topic, part, off)), list(outputs or []))
            for cid, outcome, part, off, outputs in await cur.fetchall()}


async def store_decisions(cur: psycopg.AsyncCursor, rows: Sequence[DecisionRow]) -> None:
    """Insert decision rows (a command id already stored keeps its first decision)."""
    if not rows:
        return
    await cur.executemany(
        "INSERT INTO gate_decisions (command_id, outcome, ledger_partition, ledger_offset, decision, event,"
        " decided_at, outputs) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (command_id) DO NOTHING",
        [(r.command_id, r.outcome.value, r.position.partition, r.position.offset, r.decided, r.event, r.decided_at,
          json.dumps(r.records)) for r in rows])


async def claim_partitions(cur: psycopg.AsyncCursor, topic: str, partitions: Sequence[int]) -> None:
    """Hold, until the transaction ends, a lock on each ``(topic, partition)`` of the commands topic:
    two gate workers that both believe they own a partition (a rebalance in progress) store their
    batches one after the other, never interleaved (``pg_advisory_xact_lock``; sorted: no deadlock)."""
    for partition in sorted(set(partitions)):
        await cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s), %s)", (topic, partition))


async def decided_among(cur: psycopg.AsyncCursor, command_ids: Sequence[str]) -> set[str]:
    """The command ids among ``command_ids`` that already have a stored decision."""
    if not command_ids:
        return set()
    await cur.execute("SELECT command_id::text FROM gate_decisions WHERE command_id = ANY(%s::uuid[])",
                      (list(dict.fromkeys(command_ids)),))
    return {row[0] for row in await cur.fetchall()}


@dataclass(frozen=True)
class Found:
    """A stored decision as callers see it: the ``GateDecided`` bytes and, for a quarantined write, its
    review as it stands now (``{"status": "pending" | "approved" | "rejected", "reviewed_by",
    "reviewed_at"}``; ``None`` for a command never held). The decision itself never changes: a released
    write's decision stays ``QUARANTINED`` and its review says ``approved``."""

    decided: bytes
    review: dict[str, Any] | None


async def find(conn: psycopg.AsyncConnection, command_ids: Sequence[str]) -> dict[str, Found]:
    """Each decided command among ``command_ids`` (undecided ones are absent), with its review when the
    gate held it for one (:class:`Found`)."""
    async with conn.cursor() as cur:
        await cur.execute("SELECT d.command_id::text, d.decision, q.status, q.reviewed_by, q.reviewed_at"
                          " FROM gate_decisions d LEFT JOIN gate_quarantine q ON q.command_id = d.command_id"
                          " WHERE d.command_id = ANY(%s::uuid[])", (list(command_ids),))
        rows = await cur.fetchall()
    await conn.commit()
    return {cid: Found(bytes(decided), None if status is None else {
        "status": status, "reviewed_by": by, "reviewed_at": at.isoformat() if at is not None else None})
        for cid, decided, status, by, at in rows}


def outcome_counts(conn: psycopg.Connection) -> dict[str, int]:
    """How many commands the gate decided, by outcome (evaluation summaries)."""
    rows = conn.execute("SELECT outcome, count(*) FROM gate_decisions GROUP BY outcome").fetchall()
    conn.commit()
    return {outcome: n for outcome, n in rows}


def record(topic: str, key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """A storable published record: logical topic, base64 key and value (``None`` kept)."""
    return {"topic": topic, "key": base64.b64encode(key).decode() if key is not None else None,
            "value": base64.b64encode(value).decode() if value is not None else None}


def value_of(records: Sequence[dict[str, Any]], topic: str) -> bytes | None:
    """The first non-null value published to ``topic`` among ``records``."""
    for r in records:
        if r["topic"] == topic and r["value"] is not None:
            return base64.b64decode(r["value"])
    return None
