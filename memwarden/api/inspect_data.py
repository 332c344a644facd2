"""What the inspector page (:mod:`.inspect`, issue 10 part 3) shows, computed by the forensic audit
(:mod:`memwarden.ops.forensics_report`, the same reports as ``memwarden audit memory|principal``) and
the projected versions of a memory (:mod:`memwarden.stores.history_rows`): ids, ledger positions,
validity intervals, outcomes and reason codes, never content. Version rows are reduced to
:data:`VERSION_FIELDS` (the sealed text is dropped here); a command's content is only ever described
by where its data key was shredded.

Each lookup reads the namespace's ledger once (like ``GET /v1/audit/memories/{id}``)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from memwarden.ops.forensics import Ledger, read_ledger
from memwarden.ops.forensics_report import audit_memory, audit_principal
from memwarden.stores.history_rows import versions_of
from memwarden.stores.pg import connect_async

from .gateway import Gateway

#: The columns of a projected version the page shows (no content, no nonce, no sealed text).
VERSION_FIELDS = ("version", "status", "valid_from", "valid_to", "ledger", "command_id", "principal",
                  "decided_at", "superseded_by", "forgotten_by", "closed_at")


def _iso(value: Any) -> str | None:
    return value.astimezone(UTC).isoformat() if isinstance(value, datetime) else value


def versions(gw: Gateway, memory_id: str) -> list[dict[str, Any]]:
    """The projected versions of ``memory_id`` (oldest first), reduced to :data:`VERSION_FIELDS`; the
    ledger position in the audit's form (``events:P:O``, without the namespace prefix)."""
    async def rows() -> list[dict[str, Any]]:
        conn = await connect_async(gw.settings)
        try:
            return await versions_of(conn, memory_id)
        finally:
            await conn.close()

    prefix = gw.settings.topic("")
    out = []
    for r in asyncio.run(rows()):
        topic = str(r["ledger_topic"] or "").removeprefix(prefix)
        kept = {k: _iso(r.get(k)) for k in VERSION_FIELDS if k != "ledger"}
        out.append({**kept, "ledger": f"{topic}:{r['ledger_partition']}:{r['ledger_offset']}"})
    return out


def _grants(gw: Gateway, ledger: Ledger, wanted: Any) -> list[dict[str, Any]]:
    """Every ``GrantAccess`` on the ledger for which ``wanted(record)`` holds, with its decision and
    the accepted ``RevokeAccess`` that ended it, if any."""
    decided = {(d["position"]["partition"], d["position"]["offset"]): d for _, n, d in ledger.of("decisions")
               if n == "GateDecided" and d["position"]["topic"] == gw.settings.topic("commands")}
    revoked: dict[str, str] = {}
    grants = []
    for r, name, rec in ledger.of("commands"):
        at = f"commands:{r.position.partition}:{r.position.offset}"
        decision = decided.get((r.position.partition, r.position.offset))
        if name == "RevokeAccess" and decision and decision["outcome"] == "ACCEPTED":
            revoked[rec["grant_id"]] = at
        elif name == "GrantAccess" and wanted(rec):
            env = rec.get("envelope") or {}
            grants.append({"at": at, "grant_id": rec["grant_id"], "grantee": rec["grantee"],
                           "rights": [str(x) for x in rec.get("rights") or []], "scopes": list(rec.get("scopes") or []),
                           "subjects": list(rec.get("subjects") or []), "purposes": list(rec.get("purposes") or []),
                           "valid_from": _iso(rec.get("valid_from")), "valid_to": _iso(rec.get("valid_to")),
                           "granted_by": env.get("principal"), "issued_at": _iso(env.get("issued_at")),
                           "outcome": decision["outcome"] if decision else None,
                           "reasons": [x["code"] for x in decision["reasons"]] if decision else [],
                           "decided_at": _iso(decision["decided_at"]) if decision else None})
    return [{**g, "revoked_at": revoked.get(g["grant_id"])} for g in grants]


def memory_report(gw: Gateway, memory_id: str) -> dict[str, Any]:
    """The timeline of ``memory_id``: ``audit`` (commands with decisions and events, reads, erasure
    receipts, as ``memwarden audit memory`` computes them), ``versions`` and the ``grants`` whose
    scopes and subjects cover the memory."""
    ledger = read_ledger(gw.settings, gw.codec, gw.kek)
    report = audit_memory(gw.settings, ledger, memory_id)
    first = report["timeline"][0]["command"] if report["timeline"] else {}
    scope, subject = first.get("scope"), first.get("subject")

    def covers(rec: dict[str, Any]) -> bool:
        scopes, subjects = rec.get("scopes") or [], rec.get("subjects") or []
        return bool(first) and ("*" in scopes or scope in scopes) and (not subjects or subject in subjects)

    return {"audit": report, "versions": versions(gw, memory_id), "grants": _grants(gw, ledger, covers)}


def principal_report(gw: Gateway, principal: str) -> dict[str, Any]:
    """The trail of ``principal``: ``audit`` (what it wrote, read, granted and was refused, as
    ``memwarden audit principal`` computes it), its registry ``record`` (kind and roles) and the
    ``grants`` held by it or one of its roles."""
    ledger = read_ledger(gw.settings, gw.codec, gw.kek)
    record = gw.record_of(principal)
    holders = {principal} | {f"role:{r}" for r in record.roles}
    return {"audit": audit_principal(ledger, principal), "record": {"kind": str(record.kind.value),
                                                                      "roles": sorted(record.roles)},
            "grants": _grants(gw, ledger, lambda rec: rec.get("grantee") in holders)}


__all__ = ["VERSION_FIELDS", "memory_report", "principal_report", "versions"]
