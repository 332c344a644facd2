"""What a reviewer reads of a write held for review (served by the worker as ``POST /held``; ``memwarden review
show``, ``client.held``).

Seed 004 "Writes need a gate": risky writes wait for a human. The human has to see what it judges: until the
twenty-fifth session a reviewer could approve or reject a held write without any way to read it (``review list``
gives ids and reason codes; ``audit at --as`` opens content only to those the ABAC rule lets read the memory, and a
reviewer is rarely one of them), so approvals were blind (newcomer trial). A principal holding the ``reviewer``
role may read a write **while it is held** (pending review) and it is not its own write (the gate refuses a
reviewer's own release, ``SELF_REVIEW``): the same principals who may approve or reject it. The read is signed like
a recall and audited (``ReadAudited``, purpose ``review``, the query the keyed hash of ``review:<command id>``,
the held command's ledger position). Once reviewed, the write is read like any memory (approved) or not at all
(rejected: its key is shredded).

:func:`held_refusal` decides (pure) on the row :func:`memwarden.stores.gate_state.held_review` reads;
:func:`lookup_held` decodes it and opens its content with its data key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from memwarden.commands.principals import REVIEWER_ROLE, PrincipalRecord
from memwarden.crypto import open_content
from memwarden.errors import DecodeError
from memwarden.projections.recall import DataKeys
from memwarden.schemas.codec import AvroCodec


def held_refusal(principal: str, record: PrincipalRecord | None, row: Mapping[str, Any] | None,
                 command_id: str) -> tuple[int, str, str] | None:
    """Why ``principal`` (``record``: its registry record, ``None`` when unknown; the reviewer role as the gate
    reads it, :meth:`PrincipalRecord.has_role`) may not read held command ``command_id`` (``row``: its
    ``gate_quarantine`` row, ``None`` when there is none), as ``(HTTP status, code, message)``, or ``None`` when
    it may: 403 ``NOT_A_REVIEWER`` (checked first: a non-reviewer learns nothing of what is held), 404
    ``NOT_QUARANTINED``, 409 ``ALREADY_REVIEWED``, 403 ``SELF_REVIEW`` (its own write)."""
    if record is None or not record.has_role(REVIEWER_ROLE):
        return 403, "NOT_A_REVIEWER", f"{principal} holds no reviewer role: only a reviewer reads a held write"
    if row is None:
        return 404, "NOT_QUARANTINED", f"no write is held for review under command {command_id}"
    if row["status"] != "pending":
        return 409, "ALREADY_REVIEWED", (f"command {command_id} was already {row['status']}: an approved write is read "
                                         "like any memory, a rejected one not at all")
    if row["principal"] == principal:
        return 403, "SELF_REVIEW", "a reviewer may not review, nor read as a reviewer, its own write"
    return None


def held_json(row: Mapping[str, Any], kind: str, rec: Mapping[str, Any], text: str | None,
              commands_topic: str) -> dict[str, Any]:
    """The answer: the held command's ids, kind, writer, subject, scope, source, reasons, when it was held, its
    ledger position and its ``text`` (``None`` with ``withheld`` ``"forgotten"`` when its key is gone)."""
    env = rec.get("envelope") or {}
    source = env.get("source") or {}
    return {
        "command_id": str(row["command_id"]), "memory_id": str(row["memory_id"]), "kind": kind,
        "writer": row["principal"], "subject": row["subject"], "scope": env.get("scope"),
        "source_kind": source.get("kind"), "source_ref": source.get("reference"),
        "reasons": list(row["reasons"]), "quarantined_at": row["quarantined_at"].isoformat(),
        "position": {"topic": commands_topic, "partition": row["ledger_partition"], "offset": row["ledger_offset"]},
        "text": text, "withheld": None if text is not None else "forgotten",
    }


async def lookup_held(row: Mapping[str, Any], keys: DataKeys, codec: AvroCodec,
                      commands_topic: str) -> dict[str, Any]:
    """:func:`held_json` of a row :func:`held_refusal` let through: the command decoded and its content opened
    with its data key. A command that does not decode is answered with its text withheld."""
    try:
        kind, rec = codec.decode(bytes(row["command"]))
    except DecodeError:
        return held_json(row, "unknown", {}, None, commands_topic)
    content = rec.get("content")
    text = None
    if content:
        key_id = content["key_id"]
        found = await asyncio.to_thread(keys.lookup, [key_id])
        text = open_content(content, found)
    return held_json(row, kind, rec, text, commands_topic)


__all__ = ["held_json", "held_refusal", "lookup_held"]
