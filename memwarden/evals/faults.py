"""A fault injector for the projections, as a buggy projector or a restored backup would damage them
(issue 9 part 6): it writes directly into the Postgres rows and the index points of a namespace whose
index this process owns, never through the ledger. For tests and the drift evaluation only.

Kinds: ``lost_write`` (a version's row and point vanish), ``stale_payload`` (a point's payload says
another scope and trust), ``missed_delete`` (a forgotten version comes back readable, as from an old
backup), ``resurrected`` (a row and a point the ledger never implied), ``corrupted_interval`` (a
version's validity interval is wrong in the row and the point).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import psycopg

from memwarden.commands.readmodel.filters import FieldIn, Filter
from memwarden.commands.readmodel.payload import OPEN_END_MS, fresh_until_ms
from memwarden.epoch import to_ms
from memwarden.projections.index_projector import point_id
from memwarden.projections.vector_index import IndexPoint, VectorIndex
from memwarden.stores.profile_repair import rows_by_command

KINDS = ("lost_write", "stale_payload", "missed_delete", "resurrected", "corrupted_interval")


@dataclass(frozen=True)
class Fault:
    """One injected fault: its kind and the command id of the version it damaged (or created)."""

    kind: str
    command_id: str


async def inject(kind: str, conn: psycopg.AsyncConnection, index: VectorIndex, rng: random.Random) -> Fault | None:
    """Damage one version of the namespace behind ``conn`` and ``index`` with a fault of ``kind``;
    ``None`` when no version can take it (e.g. nothing forgotten yet for ``missed_delete``)."""
    rows = await rows_by_command(conn)
    active = sorted(c for c, r in rows.items() if r["status"] == "active")
    forgotten = sorted(c for c, r in rows.items() if r["status"] == "forgotten")
    pool = forgotten if kind == "missed_delete" else active
    if not pool:
        return None
    cid = rng.choice(pool)
    row = rows[cid]
    pid = point_id(str(row["memory_id"]), cid)
    async with conn.transaction(), conn.cursor() as cur:
        await _damage(kind, cur, index, row, pid)
    return Fault(kind, cid)


async def _damage(kind: str, cur: psycopg.AsyncCursor, index: VectorIndex, row: dict[str, Any], pid: str) -> None:
    cid = row["command_id"]
    if kind == "lost_write":
        await cur.execute("DELETE FROM memory_versions WHERE command_id = %s", (cid,))
        index.delete_points([pid])
    elif kind == "stale_payload":
        index.set_payload(Filter(must=(FieldIn("command_id", (str(cid),)),)), {"scope": "account:leaked",
                                                                               "trust": "trusted"})
    elif kind == "missed_delete":
        await cur.execute("UPDATE memory_versions SET status = 'active', content_sealed = '\\x00'::bytea"
                          " WHERE command_id = %s", (cid,))
        index.upsert([_point(pid, row)])
    elif kind == "resurrected":
        ghost = str(uuid.uuid4())
        await cur.execute(
            "INSERT INTO memory_versions (memory_id, version, command_id, event_id, principal, subject, scope,"
            " store_kind, source_kind, epistemic_status, sensitivity, content_nonce, content_sealed, content_key_id,"
            " observed_at,"
            " valid_from, status, ledger_topic, ledger_partition, ledger_offset, decided_at)"
            " SELECT gen_random_uuid(), 1, %s, gen_random_uuid(), principal, subject, scope, store_kind, source_kind,"
            " epistemic_status, sensitivity, content_nonce, content_sealed, content_key_id, observed_at, valid_from,"
            " 'active', ledger_topic, ledger_partition, ledger_offset, decided_at FROM memory_versions"
            " WHERE command_id = %s", (ghost, cid))
        index.upsert([_point(point_id(ghost, ghost), {**row, "command_id": ghost})])
    elif kind == "corrupted_interval":
        await cur.execute("UPDATE memory_versions SET valid_to = valid_from + interval '1 second'"
                          " WHERE command_id = %s", (cid,))
        end = to_ms(row["valid_from"] + timedelta(seconds=1))
        index.set_payload(Filter(must=(FieldIn("command_id", (str(cid),)),)), {"valid_to_ms": end})
    else:
        raise ValueError(f"kind: unknown fault {kind!r}; one of {', '.join(KINDS)}")


def _point(pid: str, row: dict[str, Any]) -> IndexPoint:
    """A point as a careless restore writes it: a unit vector, the row's access attributes."""
    vector = [0.0] * 384
    vector[uuid.UUID(pid).int % 384] = 1.0
    return IndexPoint(pid, vector, {"memory_id": str(row["memory_id"]), "command_id": str(row["command_id"]),
                                    "owner": row["principal"], "subject": row["subject"], "scope": row["scope"],
                                    "status": "active", "store_kind": row["store_kind"],
                                    "sensitivity": row["sensitivity"], "purposes": ["*"], "trust": "trusted",
                                    "valid_from_ms": 0, "valid_to_ms": OPEN_END_MS,
                                    "expires_ms": OPEN_END_MS, "decided_ms": 0, "closed_known_ms": OPEN_END_MS,
                                    "fresh_ref_ms": 0, "fresh_until_ms": fresh_until_ms(row["store_kind"], 0)})
