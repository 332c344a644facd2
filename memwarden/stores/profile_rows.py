"""Profile state rows (``memory_versions``): one row per memory version, closed on supersession,
never silently overwritten (seed 004 "Update by supersession, not silent replacement").

Writers: the profile projector, through :func:`insert_version`, :func:`close_versions`,
:func:`mark_used` and :func:`mark_forgotten`. Readers: the read side verifies candidates with
:func:`verify_candidates` (the SQL form of the read filter comes from
:mod:`memwarden.commands.readmodel.sql`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import psycopg

from memwarden.commands.readmodel.payload import closed_by, valid_from_of
from memwarden.stores.gate_state import GATE_FORGOTTEN
from memwarden.stores.pg import end_read

_INSERT = """
INSERT INTO memory_versions (memory_id, version, command_id, event_id, principal, subject, scope, store_kind,
  source_kind, source_ref, source_uri, derived_from, epistemic_status, sensitivity, purposes, content_nonce,
  content_sealed, content_key_id, fact_entity, fact_attribute, observed_at, valid_from, valid_to, expires_at,
  status, ledger_topic, ledger_partition, ledger_offset, decided_at, tags, unverified, approved_by, last_used_at)
VALUES (%(memory_id)s, %(version)s, %(command_id)s, %(event_id)s, %(principal)s, %(subject)s, %(scope)s,
  %(store_kind)s, %(source_kind)s, %(source_ref)s, %(source_uri)s, %(derived_from)s::uuid[], %(epistemic_status)s,
  %(sensitivity)s, %(purposes)s, %(content_nonce)s, %(content_sealed)s, %(content_key_id)s, %(fact_entity)s,
  %(fact_attribute)s, %(observed_at)s, %(valid_from)s, %(valid_to)s, %(expires_at)s, %(status)s, %(ledger_topic)s,
  %(ledger_partition)s, %(ledger_offset)s, %(decided_at)s, %(tags)s, %(unverified)s, %(approved_by)s,
  (SELECT last_used_at FROM memory_uses WHERE memory_id = %(memory_id)s::uuid))
ON CONFLICT DO NOTHING
"""

# A version replayed after its memory was forgotten is projected ``forgotten`` straight away (its key is
# gone): it is closed all the same, and stays forgotten, so that live and replayed rows agree.
_CLOSE = """
UPDATE memory_versions SET status = CASE WHEN status = 'forgotten' THEN 'forgotten' ELSE 'superseded' END,
  superseded_by = %(command_id)s, closed_at = %(decided_at)s, closed_by = %(closed_by)s,
  valid_to = CASE WHEN valid_to IS NULL OR valid_to > %(valid_from)s THEN %(valid_from)s ELSE valid_to END
WHERE memory_id = %(target)s AND command_id <> %(command_id)s
  AND (status = 'active' OR (status = 'forgotten' AND superseded_by IS NULL AND closed_at IS NULL))
"""

_USE = """
INSERT INTO memory_uses (memory_id, last_used_at)
SELECT * FROM unnest(%(ids)s::uuid[], %(times)s::timestamptz[])
ON CONFLICT (memory_id) DO UPDATE SET last_used_at = GREATEST(memory_uses.last_used_at, EXCLUDED.last_used_at)
"""

_USED = """
UPDATE memory_versions m SET last_used_at = GREATEST(COALESCE(m.last_used_at, u.used_at), u.used_at)
FROM unnest(%(ids)s::uuid[], %(times)s::timestamptz[]) AS u(memory_id, used_at)
WHERE m.memory_id = u.memory_id
"""

_FORGET = """
UPDATE memory_versions SET status = 'forgotten', content_nonce = NULL, content_sealed = NULL,
  tags = '{}', source_ref = NULL, source_uri = NULL, fact_entity = NULL, fact_attribute = NULL,
  forgotten_by = COALESCE(forgotten_by, %(command_id)s)
WHERE memory_id = %(memory_id)s AND (status <> 'forgotten' OR forgotten_by IS NULL)
"""

_VERIFY = """
SELECT memory_id::text, version, command_id::text, content_key_id::text, principal, subject, scope, source_kind,
       source_ref, observed_at, valid_from, valid_to, status, ledger_topic, ledger_partition, ledger_offset,
       unverified, tags, content_nonce, content_sealed, closed_at
FROM memory_versions
WHERE command_id = ANY(%(ids)s::uuid[]) AND {where}
  AND NOT """ + GATE_FORGOTTEN.format(memory_id="memory_versions.memory_id")


def row_of(record: Mapping[str, Any], text: str | None) -> dict[str, Any]:
    """The ``memory_versions`` row of a ``MemoryRecorded`` event record. The text is stored sealed,
    as the event carries it (nonce and ciphertext under the version's data key): never in clear.
    ``text`` is the opened text, or ``None`` when the key is shredded: the row is then stored
    ``forgotten``, without the sealed bytes and without what describes the content (tags, source
    reference and URI, fact entity and attribute), as :func:`mark_forgotten` leaves a live row."""
    env = record["envelope"]
    fact = (record.get("fact") or {}) if text is not None else {}
    gone = text is None
    pos = record["position"]
    return {
        "memory_id": record["memory_id"], "version": record["version"], "command_id": record["command_id"],
        "event_id": record["event_id"], "principal": env["principal"], "subject": env["subject"],
        "scope": env["scope"], "store_kind": env["store_kind"], "source_kind": env["source"]["kind"],
        "source_ref": None if gone else env["source"]["reference"],
        "source_uri": None if gone else env["source"]["uri"],
        "derived_from": list(env["source"]["derived_from"]), "epistemic_status": env["epistemic_status"],
        "sensitivity": env["sensitivity"], "purposes": list(env["purposes"]),
        "content_nonce": record["content"]["nonce"] if text is not None else None,
        "content_sealed": record["content"]["ciphertext"] if text is not None else None,
        "content_key_id": record["content"]["key_id"], "fact_entity": fact.get("entity"),
        "fact_attribute": fact.get("attribute"),
        "observed_at": env["observed_at"], "valid_from": valid_from_of(env),
        "valid_to": env["effective_to"], "expires_at": env["expires_at"],
        "status": "active" if text is not None else "forgotten",
        "ledger_topic": pos["topic"], "ledger_partition": pos["partition"], "ledger_offset": pos["offset"],
        "decided_at": record["decided_at"], "tags": [] if gone else list(record.get("tags") or []),
        "unverified": record.get("outcome") == "ACCEPTED_UNVERIFIED", "approved_by": record.get("approved_by"),
    }


async def insert_version(cur: psycopg.AsyncCursor, record: Mapping[str, Any], text: str | None) -> None:
    """Apply a ``MemoryRecorded``: close what it supersedes (explicitly, then contradicted memories,
    Eq. 6) at its validity start, then insert its row (idempotent by command id)."""
    row = row_of(record, text)
    target = record["envelope"]["supersedes"]
    for closed in closed_by(record):
        await cur.execute(_CLOSE, {"command_id": row["command_id"], "valid_from": row["valid_from"], "target": closed,
                                   "decided_at": row["decided_at"], "closed_by": None if closed == target
                                   else row["memory_id"]})
    await cur.execute(_INSERT, row)


async def mark_used(cur: psycopg.AsyncCursor, uses: Iterable[tuple[str, datetime]]) -> None:
    """Apply a ``MemoryUsed``: the memory's last use moves forward, never back, on the memory
    (``memory_uses``) and on every version already projected; a version projected later starts from
    it (:func:`insert_version`), so the order of uses and versions does not matter."""
    latest: dict[str, datetime] = {}
    for m, t in uses:  # one row per memory: its latest use (uses commute)
        latest[m] = max(latest[m], t) if m in latest else t
    if latest:
        params = {"ids": list(latest), "times": list(latest.values())}
        await cur.execute(_USE, params)
        await cur.execute(_USED, params)


async def last_uses(conn: psycopg.AsyncConnection, memory_ids: Sequence[str]) -> dict[str, datetime]:
    """The last use of each of ``memory_ids`` that has one."""
    if not memory_ids:
        return {}
    async with conn.cursor() as cur:
        await cur.execute("SELECT memory_id::text, last_used_at FROM memory_uses WHERE memory_id = ANY(%s::uuid[])",
                          (list(memory_ids),))
        rows = await cur.fetchall()
    await conn.commit()
    return {m: t for m, t in rows}


async def mark_forgotten(cur: psycopg.AsyncCursor, command_id: str, memory_id: str) -> None:
    """Apply a ``MemoryForgotten``: every version is ``forgotten`` and loses its content and what describes it
    (tags, source reference and URI, fact entity and attribute: a tag such as "oncology" tells what was said)."""
    await cur.execute(_FORGET, {"command_id": command_id, "memory_id": memory_id})


async def verify_candidates(conn: psycopg.AsyncConnection, command_ids: Sequence[str], where: str,
                            params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """Rows of the candidate versions ``command_ids`` that satisfy ``where`` (an SQL boolean with
    named parameters, :func:`memwarden.commands.readmodel.sql.read_filter_sql`), in one short
    transaction. Columns: memory_id, version, command_id, content key id, principal, subject, scope,
    source_kind, source_ref, observed_at, valid_from, valid_to, status, ledger topic, partition,
    offset, unverified, tags, content nonce, sealed content (the caller opens it with the key ring), and when
    a later command closed the version (``closed_at``, ``None`` while it is open).
    One statement: on an autocommit connection (the read API's), one round trip.

    A memory the gate has decided to forget is left out at once (design card, forget step 2 "block
    reads at once"): the gate marks it forgotten in the transaction that stores the decision, before
    the ``MemoryForgotten`` event reaches the projections, so a read never returns it between the
    decision a caller sees and the erasure of the derived stores."""
    async with conn.cursor() as cur:
        await cur.execute(_VERIFY.format(where=where), {"ids": list(command_ids), **params})  # type: ignore[arg-type]
        rows = await cur.fetchall()
    await end_read(conn)
    return rows


def version_count(conn: psycopg.Connection) -> int:
    """How many memory versions are projected (evaluation summaries)."""
    (n,) = conn.execute("SELECT count(*) FROM memory_versions").fetchone() or (0,)
    conn.commit()
    return int(n)


def memory_ids(conn: psycopg.Connection, status: str | None = None) -> set[str]:
    """Ids of memories with a projected version (of ``status`` when given): evaluation summaries."""
    if status is None:
        rows = conn.execute("SELECT memory_id::text FROM memory_versions").fetchall()
    else:
        rows = conn.execute("SELECT memory_id::text FROM memory_versions WHERE status = %s", (status,)).fetchall()
    conn.commit()
    return {r[0] for r in rows}


def source_refs(conn: psycopg.Connection, store_kind: str) -> set[str]:
    """Source references of the projected versions of ``store_kind`` (evaluation summaries)."""
    rows = conn.execute("SELECT source_ref FROM memory_versions WHERE store_kind = %s", (store_kind,)).fetchall()
    conn.commit()
    return {r[0] for r in rows}


def pruning_candidates(conn: psycopg.Connection) -> list[tuple[str, str, str, int, int | None]]:
    """Every live memory's current version as pruning reads it: memory id, subject, store kind,
    ``valid_from`` and last valid use (UTC epoch ms; ``None`` when never used)."""
    rows = conn.execute(
        "SELECT v.memory_id::text, v.subject, v.store_kind, (extract(epoch FROM v.valid_from) * 1000)::bigint,"
        " (extract(epoch FROM u.last_used_at) * 1000)::bigint FROM memory_versions v"
        " LEFT JOIN memory_uses u ON u.memory_id = v.memory_id WHERE v.status = 'active'"
        " ORDER BY v.memory_id").fetchall()
    conn.commit()
    return [(r[0], r[1], r[2], int(r[3]), None if r[4] is None else int(r[4])) for r in rows]


async def note_forget(cur: psycopg.AsyncCursor, record: Mapping[str, Any]) -> None:
    """A ``MemoryForgotten`` owes an erasure receipt (``erasure_pending``), in the projector's transaction,
    unless its receipt is already on the ledger (``erasure_receipted``): a decision re-sent after a
    killed worker appends the same ``MemoryForgotten`` again, possibly after its receipt."""
    pos = record["position"]
    await cur.execute("INSERT INTO erasure_pending SELECT %s, %s, %s, %s, %s, %s, %s WHERE NOT EXISTS"
                      " (SELECT 1 FROM erasure_receipted WHERE command_id = %s AND memory_id = %s)"
                      " ON CONFLICT DO NOTHING",
                      (record["command_id"], record["memory_id"], record["subject"], pos["topic"], pos["partition"],
                       pos["offset"], record["decided_at"], record["command_id"], record["memory_id"]))


async def note_receipt(cur: psycopg.AsyncCursor, record: Mapping[str, Any]) -> None:
    """An ``ErasureReceipted`` settles what its forget owed, for good (a repeated ``MemoryForgotten``
    of the same command and memory owes nothing more)."""
    await cur.execute("DELETE FROM erasure_pending WHERE command_id = %s AND memory_id = %s",
                      (record["command_id"], record["memory_id"]))
    await cur.execute("INSERT INTO erasure_receipted VALUES (%s, %s) ON CONFLICT DO NOTHING",
                      (record["command_id"], record["memory_id"]))


async def pending_forgets(conn: psycopg.AsyncConnection) -> list[dict[str, Any]]:
    """Every forget still owing its receipt, oldest first, in the shape of a ``MemoryForgotten``
    record (command_id, memory_id, subject, position, decided_at). A row whose receipt is on the ledger
    already owes nothing (two projector workers may re-create it: a re-sent ``MemoryForgotten`` and its
    receipt can sit on different partitions, and the insert can read before the receipt commits): it is
    left out, and deleted in the same transaction so no settled row stays behind."""
    async with conn.cursor() as cur:
        await cur.execute("DELETE FROM erasure_pending p USING erasure_receipted r"
                          " WHERE r.command_id = p.command_id AND r.memory_id = p.memory_id")
        await cur.execute("SELECT command_id::text, memory_id::text, subject, ledger_topic, ledger_partition,"
                          " ledger_offset, decided_at FROM erasure_pending p WHERE NOT EXISTS (SELECT 1 FROM"
                          " erasure_receipted r WHERE r.command_id = p.command_id AND r.memory_id = p.memory_id)"
                          " ORDER BY decided_at, command_id, memory_id")
        rows = await cur.fetchall()
    await conn.commit()
    return [{"command_id": r[0], "memory_id": r[1], "subject": r[2],
             "position": {"topic": r[3], "partition": r[4], "offset": r[5]}, "decided_at": r[6]} for r in rows]
