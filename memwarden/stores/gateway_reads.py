"""What a gateway (the REST API, issue 10) reads of the gate's state before it publishes anything:
the registry record of a caller, the gate's view of one memory (or of a command about it still held
for review), one grant. Public reads, read only, each one short transaction on a synchronous
connection in the namespace schema. The gateway only uses them to refuse, without publishing, what
the gate would refuse anyway (:mod:`memwarden.commands.gateway_checks`); the gate still decides
everything that is published."""

from __future__ import annotations

import psycopg

from memwarden.commands.gate import MemoryState, QuarantineState
from memwarden.commands.principals import PrincipalRecord
from memwarden.commands.readmodel.permission import Grant
from memwarden.stores.gate_state import MEMORY_COLUMNS, memory_from_row
from memwarden.stores.records import grant_from_json, principal_from_json


def principal_of(conn: psycopg.Connection, principal: str) -> PrincipalRecord | None:
    """The registry record of ``principal`` as the gate stored it, or ``None``."""
    row = conn.execute("SELECT record FROM gate_principals WHERE principal_id = %s", (principal,)).fetchone()
    conn.commit()
    return principal_from_json(row[0]) if row else None


def memory_of(conn: psycopg.Connection, memory_id: str) -> MemoryState | None:
    """The gate's view of ``memory_id`` (owner, subject, live or forgotten ...), or ``None``."""
    row = conn.execute(f"SELECT {MEMORY_COLUMNS} FROM gate_memories WHERE memory_id = %s::uuid",  # noqa: S608
                       (memory_id,)).fetchone()
    conn.commit()
    return memory_from_row(row) if row else None


def held_for_review(conn: psycopg.Connection, memory_id: str) -> QuarantineState | None:
    """The pending review of a command that would create ``memory_id``, or ``None``."""
    row = conn.execute("SELECT command_id::text, memory_id::text, principal, subject, status, key_id::text"
                       " FROM gate_quarantine WHERE memory_id = %s::uuid AND status = 'pending'"
                       " ORDER BY quarantined_at LIMIT 1", (memory_id,)).fetchone()
    conn.commit()
    return QuarantineState(row[0], row[1], row[2], row[3], row[4], row[5]) if row else None


def grant_of(conn: psycopg.Connection, grant_id: str) -> Grant | None:
    """The grant ``grant_id`` (revoked ones included), or ``None``."""
    row = conn.execute("SELECT record FROM grants WHERE grant_id = %s", (grant_id,)).fetchone()
    conn.commit()
    return grant_from_json(row[0]) if row else None


__all__ = ["grant_of", "held_for_review", "memory_of", "principal_of"]
