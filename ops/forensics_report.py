"""The three forensic reports over :mod:`memwarden.ops.forensics`: ``audit at`` a position, the
lineage of a memory, the trail of a principal. Each returns plain dicts (JSON with ``--json``)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from memwarden.commands.readmodel.payload import RecordAttrs
from memwarden.commands.readmodel.permission import ReadContext, may_read
from memwarden.epoch import now_ms
from memwarden.errors import ValidationError
from memwarden.ops.forensics import (
    Ledger,
    commands_about,
    content_of,
    decision_at,
    describe_command,
    events_of,
    parse_position,
    reads_of,
)
from memwarden.settings import Settings
from memwarden.stores.pg import connect


def _allowed(settings: Settings, reader: str | None, rec: dict[str, Any]) -> bool:
    env = rec.get("envelope") or {}
    if reader is None or not env:
        return False
    from memwarden.stores.pg import connect_async
    from memwarden.stores.registry import read_context

    async def grants() -> Any:
        conn = await connect_async(settings)
        try:
            return await read_context(conn, reader)
        finally:
            await conn.close()

    roles, found = asyncio.run(grants())
    attrs = RecordAttrs(env["principal"], env["subject"], env["scope"], env["store_kind"], env["sensitivity"],
                        tuple(env["purposes"]))
    return may_read(ReadContext(reader, roles, "audit", now_ms(), found), attrs)


def _rows_citing(settings: Settings, topic: str, partition: int, offset: int) -> list[dict[str, Any]]:
    with connect(settings) as conn:
        rows = conn.execute("SELECT memory_id::text, version, status, valid_from, valid_to FROM memory_versions"
                            " WHERE ledger_topic = %s AND ledger_partition = %s AND ledger_offset = %s",
                            (topic, partition, offset)).fetchall()
    return [{"memory_id": r[0], "version": r[1], "status": r[2], "valid_from": r[3].isoformat(),
             "valid_to": r[4].isoformat() if r[4] else None} for r in rows]


def audit_at(settings: Settings, ledger: Ledger, position: str, reader: str | None = None) -> dict[str, Any]:
    """Everything the ledger and the projections say about the record at ``position``
    (``TOPIC:PARTITION:OFFSET``, the topic logical or in full). Raises ``ValidationError`` for a malformed or
    unknown position."""
    parts = {t: sorted(e) for t, e in ledger.ends.items()}
    topic, partition, offset = parse_position(position, parts, settings.ledger_prefix or settings.topic_prefix)
    position = f"{topic}:{partition}:{offset}"  # as this report names positions, whichever form was given
    if offset >= ledger.ends[topic].get(partition, 0):
        raise ValidationError("position", f"{position} is past the log end ({ledger.ends[topic][partition]})")
    found = next(((r, n, rec) for r, n, rec in ledger.of(topic)
                  if r.position.partition == partition and r.position.offset == offset), None)
    if found is None:
        return {"position": position, "record": None, "note": "no record at this offset (compacted away)"}
    r, name, rec = found
    out: dict[str, Any] = {"position": position, "kind": name, "timestamp_ms": r.timestamp_ms}
    if topic == "commands":
        memory_id = rec.get("memory_id") or (rec.get("envelope") or {}).get("supersedes")
        out["command"] = describe_command(rec, name)
        out["content"] = content_of(rec, ledger, _allowed(settings, reader, rec))
        out["decision"] = decision_at(ledger, position_of(settings, topic, partition, offset))
        out["events"] = events_of(ledger, position_of(settings, topic, partition, offset))
        out["rows"] = _rows_citing(settings, settings.topic(topic), partition, offset)
        out["reads"] = reads_of(ledger, memory_id) if memory_id else []
        out["later"] = [{"at": f"commands:{c.position.partition}:{c.position.offset}", "kind": n,
                         "command_id": (x.get("envelope") or {}).get("command_id")}
                        for c, n, x in commands_about(ledger, memory_id or "") if c.position.offset > offset
                        or c.position.partition != partition]
    else:
        out["record"] = {k: v for k, v in rec.items() if k not in ("content", "command")}
    return _jsonable(out)


def position_of(settings: Settings, topic: str, partition: int, offset: int) -> str:
    """The full position string the records name (topic with the namespace prefix)."""
    return f"{settings.topic(topic)}:{partition}:{offset}"


def audit_memory(settings: Settings, ledger: Ledger, memory_id: str) -> dict[str, Any]:
    """The lineage of ``memory_id`` as a timeline: every command about it with its decision and
    events, every read that returned it, and the erasure receipts of its forgets. Never content."""
    timeline = []
    for r, name, rec in commands_about(ledger, memory_id):
        pos = position_of(settings, "commands", r.position.partition, r.position.offset)
        timeline.append({"at": f"commands:{r.position.partition}:{r.position.offset}",
                         "command": describe_command(rec, name), "decision": decision_at(ledger, pos),
                         "events": events_of(ledger, pos), "content": content_of(rec, ledger, False)})
    receipts = [{"at": f"events:{r.position.partition}:{r.position.offset}", "command_id": rec["command_id"],
                 "versions": rec["versions"], "key_tombstones": rec["key_tombstones"], "stores": rec["stores"],
                 "verified": rec["verified"], "completed_at": rec["completed_at"]}
                for r, name, rec in ledger.of("events") if name == "ErasureReceipted" and rec["memory_id"] == memory_id]
    return _jsonable({"memory_id": memory_id, "timeline": timeline, "reads": reads_of(ledger, memory_id),
                      "erasure_receipts": receipts})


def audit_principal(ledger: Ledger, principal: str, since: datetime | None = None,
                    until: datetime | None = None) -> dict[str, Any]:
    """Everything ``principal`` wrote (commands it signed, with outcomes), read, granted and was
    refused, between ``since`` and ``until`` (decision or read times)."""
    def inside(t: datetime | None) -> bool:
        return t is None or ((since is None or t >= since) and (until is None or t <= until))

    decided = {(rec["position"]["partition"], rec["position"]["offset"]): rec
               for _, n, rec in ledger.of("decisions") if n == "GateDecided" and rec["principal"] == principal}
    wrote: list[dict[str, Any]] = []
    granted: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    for r, name, rec in ledger.of("commands"):
        env = rec.get("envelope") or {}
        d = decided.get((r.position.partition, r.position.offset))
        if env.get("principal") != principal or (d and not inside(d["decided_at"])):
            continue
        entry = {"at": f"commands:{r.position.partition}:{r.position.offset}", **describe_command(rec, name),
                 "outcome": d["outcome"] if d else None, "reasons": [x["code"] for x in d["reasons"]] if d else []}
        (granted if name in ("GrantAccess", "RevokeAccess") else wrote).append(entry)
        if d and d["outcome"] == "REJECTED":
            refused.append(entry)
    reads = [{"at": f"audit:{r.position.partition}:{r.position.offset}", "read_at": rec["read_at"],
              "purpose": rec["purpose"], "returned": rec["returned"]}
             for r, n, rec in ledger.of("audit") if n == "ReadAudited" and rec["principal"] == principal
             and inside(rec["read_at"])]
    return _jsonable({"principal": principal, "wrote": wrote, "read": reads, "granted": granted, "refused": refused})


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return value
