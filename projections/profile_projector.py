"""``ProfileProjector``: profile state in Postgres, one row per memory version (seed 004 "Update by
supersession, not silent replacement": the prior version is closed with ``valid_to``, never erased).

Exactly-once effect on an at-least-once stream (STYLE habit 6): the rows and the projector's next
offset per partition commit in one transaction, and events below the stored offset are skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from memwarden.commands.gate import Position

PROJECTOR = "profile"


@dataclass(frozen=True)
class EventIn:
    """A decoded event with its own position on the events topic and, for ``MemoryRecorded``, the
    decrypted text (``None`` when its key is shredded)."""

    name: str
    record: dict[str, Any]
    position: Position
    text: str | None = None


async def load_offsets(cur: psycopg.AsyncCursor, projector: str, topic: str, lock: bool) -> dict[int, int]:
    """Next offset per partition stored for ``projector`` on ``topic``."""
    q = "SELECT partition, next_offset FROM projection_offsets WHERE projector = %s AND topic = %s"
    await cur.execute(q + (" FOR UPDATE" if lock else ""), (projector, topic))
    return {p: o for p, o in await cur.fetchall()}


async def save_offsets(cur: psycopg.AsyncCursor, projector: str, topic: str, offsets: dict[int, int]) -> None:
    """Advance the stored next offsets (never backwards)."""
    await cur.executemany(
        "INSERT INTO projection_offsets (projector, topic, partition, next_offset) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (projector, topic, partition) DO UPDATE SET next_offset ="
        " GREATEST(projection_offsets.next_offset, EXCLUDED.next_offset)",
        [(projector, topic, p, o) for p, o in offsets.items()],
    )


def fresh(events: Sequence[EventIn], stored: dict[int, int]) -> tuple[list[EventIn], dict[int, int]]:
    """Events not yet applied (offset ≥ stored next offset) and the next offsets after the batch."""
    todo = [e for e in events if e.position.offset >= stored.get(e.position.partition, 0)]
    nxt: dict[int, int] = {}
    for e in events:
        nxt[e.position.partition] = max(nxt.get(e.position.partition, 0), e.position.offset + 1)
    return todo, nxt


_INSERT = """
INSERT INTO memory_versions (memory_id, version, command_id, event_id, principal, subject, scope, store_kind,
  source_kind, source_ref, source_uri, derived_from, epistemic_status, sensitivity, purposes, content,
  content_key_id, fact_entity, fact_attribute, fact_value, observed_at, valid_from, valid_to, expires_at,
  status, ledger_topic, ledger_partition, ledger_offset, decided_at, tags, unverified, approved_by)
VALUES (%(memory_id)s, %(version)s, %(command_id)s, %(event_id)s, %(principal)s, %(subject)s, %(scope)s,
  %(store_kind)s, %(source_kind)s, %(source_ref)s, %(source_uri)s, %(derived_from)s::uuid[], %(epistemic_status)s,
  %(sensitivity)s, %(purposes)s, %(content)s, %(content_key_id)s, %(fact_entity)s, %(fact_attribute)s,
  %(fact_value)s, %(observed_at)s, %(valid_from)s, %(valid_to)s, %(expires_at)s, %(status)s, %(ledger_topic)s,
  %(ledger_partition)s, %(ledger_offset)s, %(decided_at)s, %(tags)s, %(unverified)s, %(approved_by)s)
ON CONFLICT DO NOTHING
"""

_CLOSE = """
UPDATE memory_versions SET status = 'superseded', superseded_by = %(command_id)s, closed_at = %(decided_at)s,
  closed_by = %(closed_by)s,
  valid_to = CASE WHEN valid_to IS NULL OR valid_to > %(valid_from)s THEN %(valid_from)s ELSE valid_to END
WHERE memory_id = %(target)s AND status = 'active' AND command_id <> %(command_id)s
"""

_USED = """
UPDATE memory_versions SET last_used_at = GREATEST(COALESCE(last_used_at, %(used_at)s), %(used_at)s)
WHERE memory_id = %(memory_id)s AND status = 'active'
"""

_FORGET = """
UPDATE memory_versions SET status = 'forgotten', content = NULL, forgotten_by = %(command_id)s
WHERE memory_id = %(memory_id)s AND status <> 'forgotten'
RETURNING content_key_id::text
"""


def row_of(event: EventIn) -> dict[str, Any]:
    """The ``memory_versions`` row of a ``MemoryRecorded`` event."""
    r, env = event.record, event.record["envelope"]
    fact = r.get("fact") or {}
    pos = r["position"]
    return {
        "memory_id": r["memory_id"], "version": r["version"], "command_id": r["command_id"],
        "event_id": r["event_id"], "principal": env["principal"], "subject": env["subject"], "scope": env["scope"],
        "store_kind": env["store_kind"], "source_kind": env["source"]["kind"],
        "source_ref": env["source"]["reference"], "source_uri": env["source"]["uri"],
        "derived_from": list(env["source"]["derived_from"]), "epistemic_status": env["epistemic_status"],
        "sensitivity": env["sensitivity"], "purposes": list(env["purposes"]), "content": event.text,
        "content_key_id": r["content"]["key_id"], "fact_entity": fact.get("entity"),
        "fact_attribute": fact.get("attribute"), "fact_value": fact.get("value"),
        "observed_at": env["observed_at"], "valid_from": env["effective_from"] or env["observed_at"],
        "valid_to": env["effective_to"], "expires_at": env["expires_at"],
        "status": "active" if event.text is not None else "forgotten",
        "ledger_topic": pos["topic"], "ledger_partition": pos["partition"], "ledger_offset": pos["offset"],
        "decided_at": r["decided_at"], "tags": list(r.get("tags") or []),
        "unverified": r.get("outcome") == "ACCEPTED_UNVERIFIED", "approved_by": r.get("approved_by"),
    }


class ProfileProjector:
    """Applies events to ``memory_versions``. ``apply`` returns the data-key ids of forgotten
    memories, so the caller can tombstone them on the keys topic."""

    def __init__(self, conn: psycopg.AsyncConnection, topic: str) -> None:
        self._conn = conn
        self._topic = topic

    async def apply(self, events: Sequence[EventIn]) -> list[str]:
        shredded: list[str] = []
        async with self._conn.transaction(), self._conn.cursor() as cur:
            todo, nxt = fresh(events, await load_offsets(cur, PROJECTOR, self._topic, lock=True))
            for e in todo:
                if e.name == "MemoryRecorded":
                    row = row_of(e)
                    target = e.record["envelope"]["supersedes"]
                    closes = [(target, None)] if target is not None else []
                    closes += [(m, row["memory_id"]) for m in e.record.get("closes") or ()]
                    for closed, by in closes:  # explicit supersession, then contradicted memories (Eq. 6)
                        await cur.execute(_CLOSE, {"command_id": row["command_id"], "valid_from": row["valid_from"],
                                                   "target": closed, "decided_at": row["decided_at"],
                                                   "closed_by": by})
                    await cur.execute(_INSERT, row)
                elif e.name == "MemoryUsed":
                    await cur.executemany(_USED, [{"memory_id": u["memory_id"], "used_at": u["used_at"]}
                                                  for u in e.record["uses"]])
                elif e.name == "MemoryForgotten":
                    await cur.execute(_FORGET, {"command_id": e.record["command_id"],
                                                "memory_id": e.record["memory_id"]})
                    shredded += [k for (k,) in await cur.fetchall()]
            await save_offsets(cur, PROJECTOR, self._topic, nxt)
        return shredded
