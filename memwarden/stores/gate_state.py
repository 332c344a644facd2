"""Postgres persistence of the gate's governed state (issue 3 part 7).

Why Postgres and not a Faust table: the gate's decision rows, the exact bytes it publishes and the
state its rules read (principals and keys, policy, grants, protected facts, fact slots, claims,
content digests, quarantine) live in one database and change in **one transaction** per batch. A
crash or rebalance between "decided" and "stored" leaves no half-state: the batch is redelivered,
the stored decisions are re-sent byte for byte and nothing is decided on stale state, even when
another gate worker took over the partition (a Faust table's changelog is per partition and would
let a new owner decide before it has caught up with keys and policy written elsewhere).

Everything here is plain I/O mapping between rows and the pure types of :mod:`memwarden.commands`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg

from memwarden.commands.facts import FactKey, FactState
from memwarden.commands.forget_commands import ForgetSelector
from memwarden.commands.gate import (
    ClaimState,
    DeferredForget,
    DeferredSet,
    Effect,
    GrantUpsert,
    HoldSet,
    HoldState,
    MemoryCleared,
    MemoryFacts,
    MemoryState,
    PolicySet,
    PrincipalUpsert,
    ProtectionSet,
    QuarantineSet,
    QuarantineState,
    TokenSet,
)
from memwarden.commands.policy import WritePolicy, default_policy, parse_policy
from memwarden.commands.principals import PrincipalRecord
from memwarden.commands.readmodel.permission import Grant
from memwarden.epoch import to_ms
from memwarden.stores.records import grant_from_json, grant_to_json, principal_from_json, principal_to_json
from memwarden.stores.tokens import store_token


async def load_grants(cur: psycopg.AsyncCursor, grantees: Sequence[str] | None = None) -> tuple[Grant, ...]:
    """Every grant, or only those held by ``grantees`` (principal ids and ``role:<name>``); revoked
    ones included: the rules look at ``revoked_at_ms``."""
    if grantees is None:
        await cur.execute("SELECT record FROM grants ORDER BY grant_id")
    else:
        await cur.execute("SELECT record FROM grants WHERE grantee = ANY(%s) ORDER BY grant_id", (list(grantees),))
    return tuple(grant_from_json(r[0]) for r in await cur.fetchall())


async def load_grants_by_id(cur: psycopg.AsyncCursor, grant_ids: Sequence[str]) -> tuple[Grant, ...]:
    """The grants named by ``grant_ids`` (unknown ids are absent)."""
    if not grant_ids:
        return ()
    await cur.execute("SELECT record FROM grants WHERE grant_id = ANY(%s) ORDER BY grant_id", (list(grant_ids),))
    return tuple(grant_from_json(r[0]) for r in await cur.fetchall())


async def load_principals(cur: psycopg.AsyncCursor) -> dict[str, PrincipalRecord]:
    """The whole registry by principal id (the trust anchor is added by the caller)."""
    await cur.execute("SELECT record FROM gate_principals")
    return {p.principal_id: p for p in (principal_from_json(r[0]) for r in await cur.fetchall())}


async def load_policy(cur: psycopg.AsyncCursor) -> WritePolicy:
    """The latest adopted policy, or the packaged default."""
    await cur.execute("SELECT policy_id, version, document FROM gate_policies ORDER BY adopted_at DESC, version DESC"
                      " LIMIT 1")
    row = await cur.fetchone()
    return default_policy() if row is None else parse_policy(row[2], row[0], row[1])


#: SQL predicate, for the read side: the gate has decided to forget the memory whose id is the SQL
#: expression ``{memory_id}``. The gate sets ``forgotten`` in the transaction that stores the decision,
#: before ``MemoryForgotten`` reaches any projection (design card, forget step 2 "block reads at once").
GATE_FORGOTTEN = "EXISTS (SELECT 1 FROM gate_memories g WHERE g.memory_id = {memory_id} AND g.forgotten)"
MEMORY_COLUMNS = ("memory_id::text, subject, owner, version, forgotten, scope, fact_entity, fact_attribute,"
                   " key_ids::text[], store_kind, tags, observed_ms, expires_ms, sources, writers, signer_keys,"
                   " derived_from::text[], admitted_ms, sensitivity")


def memory_from_row(r: Sequence[Any]) -> MemoryState:
    """A ``gate_memories`` row selected with :data:`MEMORY_COLUMNS` as the gate's :class:`MemoryState`."""
    return MemoryState(r[0], r[1], r[2], r[3], r[4], r[5], (r[1], r[6], r[7]) if r[6] is not None else None,
                       tuple(r[8] or ()), r[9], tuple(r[10] or ()), int(r[11]), r[12], tuple(r[13] or ()),
                       tuple(r[14] or ()), tuple(r[15] or ()), tuple(r[16] or ()), int(r[17] or 0), r[18])


async def load_memories(cur: psycopg.AsyncCursor, ids: Sequence[str]) -> dict[str, MemoryState]:
    """Gate state of the memories ``ids`` (unknown ids are absent)."""
    if not ids:
        return {}
    await cur.execute(f"SELECT {MEMORY_COLUMNS} FROM gate_memories WHERE memory_id = ANY(%s::uuid[])",  # noqa: S608
                      (list(ids),))
    return {r[0]: memory_from_row(r) for r in await cur.fetchall()}


async def load_selected(cur: psycopg.AsyncCursor, selectors: Sequence[ForgetSelector]) -> dict[str, MemoryState]:
    """Live memories any of ``selectors`` may match (a superset: the gate's pure ``selects`` decides),
    and every live memory deriving from them, transitively (lineage). Empty selectors select nothing."""
    ids: set[str] = set()
    for sel in selectors:
        if sel.empty:
            continue
        conds: list[str] = ["NOT forgotten"]
        args: list[Any] = []
        for column, values, cast in (("subject", sel.subjects, "text[]"), ("scope", sel.scopes, "text[]"),
                                     ("memory_id", sel.memory_ids, "uuid[]")):
            if values:
                conds.append(f"{column} = ANY(%s::{cast})")
                args.append(list(values))
        for column, values in (("sources", sel.source_references), ("signer_keys", sel.key_ids), ("tags", sel.tags)):
            if values:
                conds.append(f"{column} && %s::text[]")
                args.append(list(values))
        if sel.writers:  # a memory whose writers were never listed counts its owner (as ``selects`` does)
            conds.append("(writers && %s::text[] OR (cardinality(writers) = 0 AND owner = ANY(%s::text[])))")
            args += [list(sel.writers), list(sel.writers)]
        for condition, bound in (("expires_ms <= %s", sel.expired_before), ("observed_ms >= %s", sel.observed_from),
                                 ("observed_ms < %s", sel.observed_to), ("admitted_ms >= %s", sel.admitted_from),
                                 ("admitted_ms < %s", sel.admitted_to)):
            if bound is not None:
                conds.append(condition)
                args.append(to_ms(bound))
        await cur.execute("SELECT memory_id::text FROM gate_memories WHERE " + " AND ".join(conds), args)  # noqa: S608
        ids |= {r[0] for r in await cur.fetchall()}
    return await load_lineage(cur, sorted(ids))


async def load_lineage(cur: psycopg.AsyncCursor, roots: Sequence[str]) -> dict[str, MemoryState]:
    """The memories ``roots`` and every live memory deriving from them, transitively."""
    if not roots:
        return {}
    await cur.execute(
        "WITH RECURSIVE lineage(memory_id) AS (SELECT unnest(%s::uuid[]) UNION SELECT m.memory_id FROM gate_memories m"
        f" JOIN lineage l ON m.derived_from @> ARRAY[l.memory_id] WHERE NOT m.forgotten) SELECT {MEMORY_COLUMNS}"
        " FROM gate_memories WHERE memory_id IN (SELECT memory_id FROM lineage)", (list(roots),))
    return {r[0]: memory_from_row(r) for r in await cur.fetchall()}


async def load_holds(cur: psycopg.AsyncCursor) -> tuple[dict[str, HoldState], dict[str, DeferredForget]]:
    """Every legal hold (lifted ones included) and every forget still waiting for one."""
    await cur.execute("SELECT hold_id, subjects, scopes, active FROM gate_holds")
    holds = {r[0]: HoldState(r[0], tuple(r[1]), tuple(r[2]), r[3]) for r in await cur.fetchall()}
    await cur.execute("SELECT command_id::text, principal, reason, memory_ids::text[] FROM gate_deferred")
    deferred = {r[0]: DeferredForget(r[0], r[1], r[2], tuple(r[3])) for r in await cur.fetchall()}
    return holds, deferred


async def load_subject_state(cur: psycopg.AsyncCursor, subjects: Sequence[str], claim_keys: Sequence[tuple[str, str]],
                             digests: Sequence[str]) -> tuple[
        dict[FactKey, FactState], frozenset[FactKey], dict[tuple[str, str], tuple[ClaimState, ...]], dict[str, str]]:
    """Fact slots and protected slots of ``subjects``; stored claims for the (subject, key digest)
    pairs of ``claim_keys``; live memory ids of the content ``digests`` (keyed digests that already
    include the subject). Only what the batch can touch is read, whatever the history's size."""
    subjects = list(subjects)
    await cur.execute("SELECT subject, entity, attribute, value_digest, memory_id::text FROM gate_facts"
                      " WHERE subject = ANY(%s)", (subjects,))
    facts = {(r[0], r[1], r[2]): FactState((r[0], r[1], r[2]), r[3], r[4]) for r in await cur.fetchall()}
    await cur.execute("SELECT subject, entity, attribute FROM gate_protected_facts WHERE subject = ANY(%s)",
                      (subjects,))
    protected = frozenset((r[0], r[1], r[2]) for r in await cur.fetchall())
    claims: dict[tuple[str, str], tuple[ClaimState, ...]] = {}
    if claim_keys:
        await cur.execute("SELECT c.subject, c.key_digest, c.value_digest, c.positive, c.memory_id::text"
                          " FROM gate_claims c JOIN unnest(%s::text[], %s::text[]) AS k(subject, key_digest)"
                          " ON c.subject = k.subject AND c.key_digest = k.key_digest",
                          ([k[0] for k in claim_keys], [k[1] for k in claim_keys]))
        for r in await cur.fetchall():
            claims[(r[0], r[1])] = (*claims.get((r[0], r[1]), ()), ClaimState(r[0], r[1], r[2], r[3], r[4]))
    twins: dict[str, str] = {}
    if digests:
        await cur.execute("SELECT digest, memory_id::text FROM gate_twins WHERE digest = ANY(%s)", (list(digests),))
        twins = {r[0]: r[1] for r in await cur.fetchall()}
    return facts, protected, claims, twins


async def _quarantine(cur: psycopg.AsyncCursor, where: str, params: tuple[Any, ...]) -> dict[
        str, tuple[QuarantineState, bytes]]:
    """Quarantine rows matching ``where`` (state and the quarantined command's bytes), by command id."""
    await cur.execute("SELECT command_id::text, memory_id::text, principal, subject, status, key_id::text, command"
                      " FROM gate_quarantine WHERE " + where, params)  # noqa: S608 - the callers' fixed conditions
    return {r[0]: (QuarantineState(r[0], r[1], r[2], r[3], r[4], r[5]), bytes(r[6])) for r in await cur.fetchall()}


async def load_quarantine(cur: psycopg.AsyncCursor, command_ids: Sequence[str]) -> dict[str, tuple[QuarantineState,
                                                                                                  bytes]]:
    """Quarantine rows (state and the quarantined command's bytes) by command id."""
    if not command_ids:
        return {}
    return await _quarantine(cur, "command_id = ANY(%s::uuid[])", (list(command_ids),))


async def load_quarantine_of_memories(cur: psycopg.AsyncCursor, memory_ids: Sequence[str]) -> dict[
        str, tuple[QuarantineState, bytes]]:
    """Pending quarantine rows (state and command bytes) of the memories ``memory_ids``, by command id."""
    if not memory_ids:
        return {}
    return await _quarantine(cur, "memory_id = ANY(%s::uuid[]) AND status = 'pending'", (list(memory_ids),))


async def load_quarantine_selected(cur: psycopg.AsyncCursor, selectors: Sequence[ForgetSelector]) -> dict[
        str, tuple[QuarantineState, bytes]]:
    """Pending quarantine rows (state and command bytes) a forget's ``selectors`` may discard, by command id:
    those of a subject, a writer or a memory id the selector names (a superset: the gate's pure
    ``held_selected`` decides)."""
    subjects = sorted({x for s in selectors for x in s.subjects})
    writers = sorted({x for s in selectors for x in s.writers})
    mids = sorted({x for s in selectors for x in s.memory_ids})
    if not (subjects or writers or mids):
        return {}
    return await _quarantine(cur, "status = 'pending' AND (subject = ANY(%s::text[]) OR principal = ANY(%s::text[])"
                             " OR memory_id = ANY(%s::uuid[]))", (subjects, writers, mids))


async def load_current_events(cur: psycopg.AsyncCursor, memory_ids: Sequence[str]) -> dict[str, bytes]:
    """The ``MemoryRecorded`` bytes of each memory's current version (sources of derived records)."""
    if not memory_ids:
        return {}
    await cur.execute("SELECT m.memory_id::text, d.event FROM gate_memories m JOIN gate_decisions d"
                      " ON d.command_id = m.current_command_id WHERE m.memory_id = ANY(%s::uuid[])"
                      " AND NOT m.forgotten AND d.event IS NOT NULL", (list(memory_ids),))
    return {r[0]: bytes(r[1]) for r in await cur.fetchall()}


async def _store_protection(cur: psycopg.AsyncCursor, effect: ProtectionSet) -> None:
    subject, entity, attribute = effect.key
    if effect.protected:
        await cur.execute("INSERT INTO gate_protected_facts VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                          (subject, entity, attribute))
    else:
        await cur.execute("DELETE FROM gate_protected_facts WHERE subject = %s AND entity = %s"
                          " AND attribute = %s", (subject, entity, attribute))


async def _store_hold(cur: psycopg.AsyncCursor, effect: HoldSet | DeferredSet | TokenSet) -> None:
    """A legal hold, a forget waiting for one, or a gateway token (:mod:`memwarden.stores.tokens`)."""
    if isinstance(effect, TokenSet):
        await store_token(cur, effect.state)
        return
    if isinstance(effect, HoldSet):
        h = effect.state
        await cur.execute("INSERT INTO gate_holds VALUES (%s, %s, %s, %s) ON CONFLICT (hold_id) DO UPDATE SET"
                          " subjects = EXCLUDED.subjects, scopes = EXCLUDED.scopes, active = EXCLUDED.active",
                          (h.hold_id, list(h.subjects), list(h.scopes), h.active))
        return
    f = effect.forget
    if f.memory_ids:
        await cur.execute("INSERT INTO gate_deferred VALUES (%s, %s, %s, %s::uuid[]) ON CONFLICT (command_id)"
                          " DO UPDATE SET memory_ids = EXCLUDED.memory_ids",
                          (f.command_id, f.principal, f.reason, list(f.memory_ids)))
    else:
        await cur.execute("DELETE FROM gate_deferred WHERE command_id = %s", (f.command_id,))


async def store_effects(cur: psycopg.AsyncCursor, effects: Iterable[tuple[Effect, dict[str, Any]]]) -> None:
    """Persist decision effects in order. Each comes with context: ``position`` for quarantine rows
    and ``command`` (bytes) and ``reasons`` for quarantine, ``reviewer`` for review outcomes, and
    ``decided_at`` (the gate's clock, the recorded one in a replay: a rebuilt row keeps its time; the
    database's clock when absent) for both."""
    for effect, ctx in effects:
        if isinstance(effect, PrincipalUpsert):
            p = effect.record
            await cur.execute("INSERT INTO gate_principals (principal_id, record) VALUES (%s, %s) ON CONFLICT"
                              " (principal_id) DO UPDATE SET record = EXCLUDED.record, updated_at = now()",
                              (p.principal_id, json.dumps(principal_to_json(p))))
        elif isinstance(effect, PolicySet):
            await cur.execute("INSERT INTO gate_policies (policy_id, version, document, adopted_at)"
                              " VALUES (%s, %s, %s, clock_timestamp()) ON CONFLICT DO NOTHING",
                              (effect.policy.policy_id, effect.policy.version, effect.document))
        elif isinstance(effect, GrantUpsert):
            g = effect.grant
            await cur.execute("INSERT INTO grants (grant_id, grantee, record, valid_from_ms, valid_to_ms,"
                              " revoked_at_ms) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (grant_id) DO UPDATE SET"
                              " record = EXCLUDED.record, revoked_at_ms = EXCLUDED.revoked_at_ms",
                              (g.grant_id, g.grantee, json.dumps(grant_to_json(g)), g.valid_from_ms, g.valid_to_ms,
                               g.revoked_at_ms))
        elif isinstance(effect, ProtectionSet):
            await _store_protection(cur, effect)
        elif isinstance(effect, MemoryCleared):
            for table in ("gate_facts", "gate_claims", "gate_twins"):
                await cur.execute(f"DELETE FROM {table} WHERE memory_id = %s", (effect.memory_id,))  # noqa: S608
        elif isinstance(effect, MemoryFacts):
            if effect.fact is not None:
                s, e, a = effect.fact.key
                await cur.execute("INSERT INTO gate_facts (subject, entity, attribute, value_digest, memory_id)"
                                  " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (subject, entity, attribute) DO UPDATE"
                                  " SET value_digest = EXCLUDED.value_digest, memory_id = EXCLUDED.memory_id",
                                  (s, e, a, effect.fact.value, effect.fact.memory_id))  # a keyed digest
            for c in effect.claims:
                await cur.execute("INSERT INTO gate_claims VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                                  (c.subject, c.key_digest, c.value_digest, c.positive, c.memory_id))
            if effect.digest is not None:
                await cur.execute("INSERT INTO gate_twins VALUES (%s, %s, %s) ON CONFLICT (subject, digest) DO UPDATE"
                                  " SET memory_id = EXCLUDED.memory_id", (*effect.digest, effect.memory_id))
        elif isinstance(effect, HoldSet | DeferredSet | TokenSet):
            await _store_hold(cur, effect)
        elif isinstance(effect, QuarantineSet):
            q = effect.state
            if q.status == "pending":
                pos = ctx["position"]
                await cur.execute(
                    "INSERT INTO gate_quarantine (command_id, memory_id, principal, subject, status, key_id, command,"
                    " reasons, ledger_partition, ledger_offset, quarantined_at) VALUES (%s, %s, %s, %s, 'pending',"
                    " %s, %s, %s, %s, %s, coalesce(%s::timestamptz, now())) ON CONFLICT (command_id) DO NOTHING",
                    (q.command_id, q.memory_id, q.principal, q.subject, q.key_id, ctx["command"],
                     json.dumps(ctx["reasons"]), pos.partition, pos.offset, ctx.get("decided_at")))
            else:
                await cur.execute("UPDATE gate_quarantine SET status = %s, reviewed_by = %s,"
                                  " reviewed_at = coalesce(%s::timestamptz, now()) WHERE command_id = %s",
                                  (q.status, ctx.get("reviewer"), ctx.get("decided_at"), q.command_id))


async def store_memories(cur: psycopg.AsyncCursor, changed: Iterable[tuple[MemoryState, str | None]]) -> None:
    """Upsert the gate's view of changed memories; each comes with the command id whose decision row
    holds its current ``MemoryRecorded`` (``None`` keeps the stored one: a forget)."""
    rows = [(m.memory_id, m.subject, m.owner, m.version, m.forgotten, m.scope, m.fact[1] if m.fact else None,
             m.fact[2] if m.fact else None, cmd, list(m.key_ids), m.store_kind, list(m.tags), m.observed_ms,
             m.expires_ms, list(m.sources), list(m.writers), list(m.signer_keys), list(m.derived_from), m.admitted_ms,
             m.sensitivity)
            for m, cmd in changed]
    if not rows:
        return
    await cur.executemany(
        "INSERT INTO gate_memories (memory_id, subject, owner, version, forgotten, scope, fact_entity,"
        " fact_attribute, current_command_id, key_ids, store_kind, tags, observed_ms, expires_ms, sources, writers,"
        " signer_keys, derived_from, admitted_ms, sensitivity) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s::uuid[],"
        " %s, %s, %s, %s, %s, %s, %s, %s::uuid[], %s, %s) ON CONFLICT (memory_id) DO UPDATE SET"
        " version = EXCLUDED.version, forgotten = EXCLUDED.forgotten, scope = EXCLUDED.scope,"
        " fact_entity = EXCLUDED.fact_entity, fact_attribute = EXCLUDED.fact_attribute,"
        " current_command_id = COALESCE(EXCLUDED.current_command_id, gate_memories.current_command_id),"
        " key_ids = EXCLUDED.key_ids, store_kind = EXCLUDED.store_kind, tags = EXCLUDED.tags,"
        " observed_ms = EXCLUDED.observed_ms, expires_ms = EXCLUDED.expires_ms, sources = EXCLUDED.sources,"
        " writers = EXCLUDED.writers, signer_keys = EXCLUDED.signer_keys, derived_from = EXCLUDED.derived_from,"
        " admitted_ms = EXCLUDED.admitted_ms, sensitivity = EXCLUDED.sensitivity", rows)


async def expired_memories(cur: psycopg.AsyncCursor, now_ms: int) -> int:
    """How many live memories have reached ``expires_at`` by ``now_ms`` (UTC epoch ms) and are neither
    waiting in a deferred forget nor covered by a legal hold in force (a retention forget would only
    wait for them again)."""
    await cur.execute("SELECT count(*) FROM gate_memories m WHERE NOT forgotten AND expires_ms <= %s AND NOT EXISTS"
                      " (SELECT 1 FROM gate_deferred d WHERE m.memory_id = ANY(d.memory_ids)) AND NOT EXISTS"
                      " (SELECT 1 FROM gate_holds h WHERE h.active AND (m.subject = ANY(h.subjects)"
                      " OR m.scope = ANY(h.scopes)))", (now_ms,))
    row = await cur.fetchone()
    return int(row[0]) if row else 0


def pending_reviews(conn: psycopg.Connection) -> list[tuple[str, str, str, list[dict[str, Any]], Any]]:
    """Quarantined commands awaiting review, oldest first: command id, writer, subject, reasons, when."""
    rows = conn.execute("SELECT command_id::text, principal, subject, reasons, quarantined_at FROM gate_quarantine"
                        " WHERE status = 'pending' ORDER BY quarantined_at").fetchall()
    conn.commit()
    return [tuple(r) for r in rows]  # type: ignore[misc]


async def held_review(conn: psycopg.AsyncConnection, command_id: str) -> dict[str, Any] | None:
    """The quarantine row of ``command_id`` as a reviewer's read needs it (ids, writer, subject, status, the
    command as published, reasons, ledger position, when it was held; one short transaction), or ``None``."""
    async with conn.transaction(), conn.cursor() as cur:
        await cur.execute("SELECT command_id, memory_id, principal, subject, status, key_id, command, reasons,"
                          " ledger_partition, ledger_offset, quarantined_at FROM gate_quarantine"
                          " WHERE command_id = %s", (command_id,))
        found = await cur.fetchone()
        names = [d.name for d in cur.description or ()]
    return dict(zip(names, found, strict=True)) if found is not None else None


def review_subject(conn: psycopg.Connection, command_id: str) -> str | None:
    """The subject of quarantined command ``command_id`` (a review is keyed by it), or ``None``."""
    row = conn.execute("SELECT subject FROM gate_quarantine WHERE command_id = %s", (command_id,)).fetchone()
    conn.commit()
    return row[0] if row else None
