"""The history of one memory as its reader may see it (issue 10, ``GET /v1/memories/{id}`` of the REST
API; served by the worker as ``POST /history``): every projected version with its validity interval
``[valid_from, valid_to)``, status, who wrote it, its ledger position and the decisions' times, and
the text of each version the reader may read now, for ``purpose``, under the same ABAC rule as a recall
(:func:`memwarden.commands.readmodel.permission.may_read`: owner, subject, or an applicable READ grant,
purposes, sensitivity ceiling).

A version the reader may not read is left out entirely; a memory none of whose versions it may read
answers as unknown (nothing tells it apart from one that does not exist). Text is withheld, with the
reason in ``withheld``, when the version is forgotten or its data key is gone (``forgotten``), or it is
tagged ``untrusted`` and the request did not ask for untrusted content (``untrusted``). The lookup is
audited like a recall (``ReadAudited``, ids and positions only, the query as the keyed hash of
``history:<memory id>``). :func:`lookup_history` reads; the rest is pure (rows, roles and grants,
keys and the clock in; JSON out).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import psycopg

from memwarden.commands.readmodel.payload import UNTRUSTED_TAG, RecordAttrs
from memwarden.commands.readmodel.permission import Grant, ReadContext, may_read
from memwarden.epoch import to_ms
from memwarden.errors import ValidationError
from memwarden.projections.recall import DataKeys, open_text
from memwarden.read_api.requests import HistoryRequest
from memwarden.stores.history_rows import versions_of
from memwarden.stores.registry import ReaderContext


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def readable(rows: Sequence[Mapping[str, Any]], principal: str, roles: frozenset[str], grants: Sequence[Grant],
             purpose: str, now: datetime) -> list[Mapping[str, Any]]:
    """The rows ``principal`` may read now for ``purpose`` (the read filter's permission rule)."""
    ctx = ReadContext(principal, roles, purpose, to_ms(now), tuple(grants))
    return [r for r in rows if may_read(ctx, RecordAttrs(r["principal"], r["subject"], r["scope"], r["store_kind"],
                                                           r["sensitivity"], tuple(r["purposes"] or ())))]


def version_json(row: Mapping[str, Any], keys: Mapping[str, bytes | None], include_untrusted: bool) -> dict[str, Any]:
    """One version as the API shows it: ids, provenance, interval, status, ledger position; ``text``
    when it opens and may be shown, else ``None`` with ``withheld`` saying why."""
    tags = list(row["tags"] or ())
    text, withheld = None, None
    if UNTRUSTED_TAG in tags and not include_untrusted:
        withheld = "untrusted"
    else:
        text = open_text(row["content_key_id"], row["content_nonce"], row["content_sealed"], keys)
        withheld = None if text is not None else "forgotten"
    return {
        "version": row["version"], "command_id": row["command_id"], "status": row["status"],
        "principal": row["principal"], "subject": row["subject"], "scope": row["scope"],
        "store_kind": row["store_kind"], "source_kind": row["source_kind"], "source_ref": row["source_ref"],
        "sensitivity": row["sensitivity"], "purposes": list(row["purposes"] or ()),
        "epistemic_status": row["epistemic_status"], "observed_at": _iso(row["observed_at"]),
        "valid_from": _iso(row["valid_from"]), "valid_to": _iso(row["valid_to"]),
        "expires_at": _iso(row["expires_at"]), "decided_at": _iso(row["decided_at"]),
        "closed_at": _iso(row["closed_at"]), "superseded_by": row["superseded_by"],
        "forgotten_by": row["forgotten_by"], "approved_by": row["approved_by"], "unverified": row["unverified"],
        "tags": tags, "position": {"topic": row["ledger_topic"], "partition": row["ledger_partition"],
                                   "offset": row["ledger_offset"]},
        "text": text, "withheld": withheld,
    }


def history_json(memory_id: str, versions: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The answer: the memory id, its current version (the latest ``active`` one readable, else
    ``None``: forgotten, or superseded by a version the reader may not see) and every readable
    version, oldest first."""
    current = next((v for v in reversed(versions) if v["status"] == "active"), None)
    return {"memory_id": memory_id, "current": current, "versions": list(versions)}


async def lookup_history(conn: psycopg.AsyncConnection, keys: DataKeys, request: HistoryRequest,
                         reader: ReaderContext, now: datetime) -> dict[str, Any] | None:
    """The history ``request`` asks for (:func:`history_json`), or ``None`` when the reader may read
    no version of the memory (or it has none). Reads the rows (one short transaction on ``conn``) and
    the data keys of the readable versions; ``reader``: the requester's roles and grants as
    authentication read them a moment ago. Raises ``ValidationError`` for a context of another
    principal."""
    if reader.principal != request.principal:
        raise ValidationError("reader", f"the reader context of {reader.principal!r} given for {request.principal!r}")
    rows: Sequence[Mapping[str, Any]] = await versions_of(conn, request.memory_id)
    rows = readable(rows, request.principal, reader.roles, reader.grants, request.purpose, now)
    if not rows:
        return None
    wanted = sorted({r["content_key_id"] for r in rows if r["content_sealed"] is not None})
    found = await asyncio.to_thread(keys.lookup, wanted) if wanted else {}
    shown = {str(r["command_id"]) for r in rows}
    versions = [version_json(r, found, request.include_untrusted) for r in rows]
    for v in versions:  # a successor the reader may not see is not named (its command id is no one else's to know)
        if v["superseded_by"] is not None and str(v["superseded_by"]) not in shown:
            v["superseded_by"] = None
    return history_json(request.memory_id, versions)


__all__ = ["history_json", "lookup_history", "readable", "version_json"]
