"""Wiring of the write gate: decode → verify input → decrypt → load governed state → ``decide`` →
store → publish.

At-least-once input with exactly-once effect: for each batch the decisions, every record they
publish (decision, events, registry entries, key tombstones) and the governed state they change are
committed to Postgres in one transaction *before* they are sent; a redelivered command (same ledger
position) re-sends the stored records byte for byte, a new copy of a known command id (another
position) gets a ``DUPLICATE`` decision. Downstream projections drop events they already applied.
See :mod:`memwarden.processors.gate_state` for why the state is read from Postgres in the same
transaction rather than from a Faust table.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
import pydantic

from memwarden.commands import events
from memwarden.commands.access import ROLE_PREFIX
from memwarden.commands.attribution import SourceRecord, normalise
from memwarden.commands.contradiction import DEFAULT_CLAIMS
from memwarden.commands.gate import (
    ClaimState,
    Decision,
    GateLimits,
    GateState,
    GrantUpsert,
    MemoryCleared,
    MemoryFacts,
    MemoryState,
    Outcome,
    PolicySet,
    Position,
    PrincipalUpsert,
    PriorDecision,
    ProtectionSet,
    QuarantineSet,
    decide,
)
from memwarden.commands.injection import DEFAULT_DETECTOR
from memwarden.commands.model import (
    ApproveQuarantined,
    Command,
    EpistemicStatus,
    ForgetMemory,
    GrantAccess,
    RecordMemory,
    RegisterPrincipal,
    RejectQuarantined,
    RevokeAccess,
    Sensitivity,
    SupersedeMemory,
    from_avro,
)
from memwarden.commands.principals import PrincipalRecord
from memwarden.crypto import open_content
from memwarden.errors import DecodeError
from memwarden.processors import gate_state as db
from memwarden.processors.keyring import KeyRing
from memwarden.schemas.codec import COMMAND_TYPES, GOVERNANCE_COMMANDS, AvroCodec


@dataclass(frozen=True)
class Inbound:
    """One record read from the commands topic."""

    key: bytes | None
    value: bytes | None
    position: Position


@dataclass(frozen=True)
class Outbound:
    """One record to publish: logical topic name, key, value, headers."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()


def _pydantic_field(exc: pydantic.ValidationError) -> tuple[str, str]:
    first = exc.errors()[0]
    return ".".join(str(p) for p in first["loc"]) or "record", first["msg"]


def dead_letter(item: Inbound, code: str, reason: str, field: str | None) -> Outbound:
    """The dead-letter record: the original bytes untouched, the reason in headers."""
    headers = (
        ("reason_code", code.encode()),
        ("reason", reason.encode("utf-8", "replace")),
        ("field", (field or "").encode()),
        ("source_topic", item.position.topic.encode()),
        ("source_partition", str(item.position.partition).encode()),
        ("source_offset", str(item.position.offset).encode()),
    )
    return Outbound("deadletter", item.key, item.value if item.value is not None else b"", headers)


class _NoInstructions:
    """Skeleton-mode detector: finds nothing (benchmark baseline only)."""

    def detect(self, text: str) -> Any:
        from memwarden.commands.injection import Detection

        return Detection(())


class _CachedClaims:
    """Claims extracted once per batch text (the processor needs them to load state, the gate to decide)."""

    def __init__(self, found: dict[str, tuple[Any, ...]]) -> None:
        self._found = found

    def claims(self, text: str) -> tuple[Any, ...]:
        got = self._found.get(text)
        return got if got is not None else DEFAULT_CLAIMS.claims(text)


class _NoClaims:
    def claims(self, text: str) -> tuple[()]:
        return ()


@dataclass
class _Batch:
    """Mutable governed state of one batch: loaded once, updated by each decision's effects."""

    priors: dict[str, tuple[PriorDecision, list[dict[str, Any]]]]
    memories: dict[str, MemoryState]
    principals: dict[str, PrincipalRecord]
    policy: Any
    grants: dict[str, Any]
    facts: dict
    protected: set
    claims: dict[tuple[str, str], tuple[ClaimState, ...]]
    twins: dict[str, str]  # keyed content digest (the subject is inside the HMAC input) -> memory id
    quarantine: dict[str, tuple[Any, bytes]]
    sources: dict[str, SourceRecord]


class GateProcessor:
    """Decides batches of commands. ``conn`` is an async psycopg connection in the namespace schema.

    Args:
        codec: Avro codec. keyring: data keys. conn: Postgres. limits: content limits.
        anchor: the root admin registry record (trust anchor, :func:`memwarden.keystore.trust_anchor`).
        digest_key: secret for the keyed content digests of duplicate detection (derived from the KEK).
        mode: ``full`` or ``skeleton`` (benchmark baseline: no signatures, detector or claims).
    """

    def __init__(self, codec: AvroCodec, keyring: KeyRing, conn: psycopg.AsyncConnection, limits: GateLimits,
                 anchor: PrincipalRecord, digest_key: bytes, mode: str = "full") -> None:
        self._codec = codec
        self._keyring = keyring
        self._conn = conn
        self._limits = limits
        self._anchor = anchor
        self._digest_key = digest_key
        self._full = mode == "full"

    def _digest(self, subject: str, text: str | None) -> str | None:
        if text is None or not self._full:
            return None
        return hmac.new(self._digest_key, f"{subject}\x00{normalise(text)}".encode(), hashlib.sha256).hexdigest()

    async def handle(self, batch: Sequence[Inbound], now: datetime | None = None) -> list[Outbound]:
        """Decide ``batch`` in order; returns the records to publish, in order. Never raises for bad
        input; raises only on infrastructure failure (the batch is then redelivered)."""
        now = now or datetime.now(UTC)
        out: list[Outbound] = []
        parsed: list[tuple[Inbound, Command, bytes | None]] = []
        for item in batch:
            try:
                name, record = self._codec.decode(item.value)
                if name not in COMMAND_TYPES:
                    raise DecodeError("NOT_A_COMMAND", f"{name} is not a command")
                command = from_avro(name, record)
                signed = self._codec.unsigned_bytes(item.value) if command.envelope.signature else None
                parsed.append((item, command, signed))
            except DecodeError as exc:
                out += self._refuse(item, exc.code, exc.reason, exc.field, now)
            except pydantic.ValidationError as exc:
                field, msg = _pydantic_field(exc)
                out += self._refuse(item, "INVALID_FIELD", f"{field}: {msg}", field, now)
        if not parsed:
            return out
        texts = await self._decrypt([c for _, c, _ in parsed])
        digests = {c.envelope.command_id: self._digest(c.envelope.subject, texts.get(c.envelope.command_id))
                   for _, c, _ in parsed}
        claims = _CachedClaims({t: DEFAULT_CLAIMS.claims(t) for t in texts.values() if t} if self._full else {})
        claim_keys = sorted({(c.envelope.subject, claim.digest) for _, c, _ in parsed
                             for claim in claims.claims(texts.get(c.envelope.command_id) or "")})
        state = await self._load([(i, c) for i, c, _ in parsed], [d for d in digests.values() if d], claim_keys)
        review = await self._review_targets([c for _, c, _ in parsed], state)
        rows: list[tuple] = []
        effects: list[tuple[Any, dict[str, Any]]] = []
        changed: dict[str, tuple[MemoryState, str | None]] = {}
        for item, command, signed in parsed:
            cid = command.envelope.command_id
            prior = state.priors.get(cid)
            if prior is not None and prior[0].position == item.position:
                out += _outbound(prior[1])  # redelivery: the stored records
                continue
            text = texts.get(cid)
            if isinstance(command, ApproveQuarantined) and command.quarantined_command_id not in review:
                # quarantined earlier in this same batch: read its command now
                review.update(await self._review_targets([command], state))
            decision = decide(
                command, text, item.position, self._state(command, state, prior, review), now, self._limits,
                signed_bytes=signed, content_digest=digests.get(cid),
                verify_signatures=self._full, detector=DEFAULT_DETECTOR if self._full else _NoInstructions(),
                claims=claims if self._full else _NoClaims())
            records = self._records(command, decision, item, now)
            out += _outbound(records)
            if decision.outcome is Outcome.DUPLICATE:
                continue
            state.priors[cid] = (PriorDecision(decision.outcome, item.position), records)
            rows.append((cid, decision.outcome.value, item.position.partition, item.position.offset,
                         _value(records, "decisions"), _value(records, "events"), now, json.dumps(records)))
            self._apply(command, decision, item, state, effects)
            if decision.admitted and decision.memory is not None:
                m = decision.memory
                state.memories[m.memory_id] = m
                # the decision row that holds the current version's MemoryRecorded: for a released
                # memory that is the approval's row (the quarantined command's own row has no event)
                changed[m.memory_id] = (m, cid if not m.forgotten else None)
        await self._store(rows, changed, effects)
        return out

    # -- state ----------------------------------------------------------------------------------
    def _state(self, command: Command, st: _Batch, prior: Any, review: dict[str, Any]) -> GateState:
        target = getattr(command, "quarantined_command_id", None)
        return GateState(
            prior=prior and prior[0], memories=st.memories, principals=st.principals, policy=st.policy,
            grants=tuple(st.grants.values()), facts=st.facts, protected=frozenset(st.protected),
            claims=st.claims, twins=st.twins,  # keyed by (subject, claim) and by a subject-keyed digest
            quarantine={k: v[0] for k, v in st.quarantine.items()}, sources=st.sources,
            review_target=review.get(target) if target else None)

    def _apply(self, command: Command, decision: Decision, item: Inbound, st: _Batch,
               effects: list[tuple[Any, dict[str, Any]]]) -> None:
        ctx: dict[str, Any] = {"position": item.position, "command": item.value,
                               "reasons": [r.__dict__ for r in decision.reasons],
                               "reviewer": command.envelope.principal}
        for effect in decision.effects:
            effects.append((effect, ctx))
            if isinstance(effect, PrincipalUpsert):
                st.principals[effect.record.principal_id] = effect.record
            elif isinstance(effect, PolicySet):
                st.policy = effect.policy
            elif isinstance(effect, GrantUpsert):
                st.grants[effect.grant.grant_id] = effect.grant
            elif isinstance(effect, ProtectionSet):
                (st.protected.add if effect.protected else st.protected.discard)(effect.key)
            elif isinstance(effect, MemoryCleared):
                st.facts = {k: v for k, v in st.facts.items() if v.memory_id != effect.memory_id}
                st.claims = {k: tuple(c for c in v if c.memory_id != effect.memory_id) for k, v in st.claims.items()}
                st.twins = {k: v for k, v in st.twins.items() if v != effect.memory_id}
            elif isinstance(effect, MemoryFacts):
                if effect.fact is not None:
                    st.facts[effect.fact.key] = effect.fact
                for c in effect.claims:
                    st.claims[(c.subject, c.key_digest)] = (*st.claims.get((c.subject, c.key_digest), ()), c)
                if effect.digest is not None:
                    st.twins[effect.digest[1]] = effect.memory_id
            elif isinstance(effect, QuarantineSet):
                old = st.quarantine.get(effect.state.command_id)
                st.quarantine[effect.state.command_id] = (effect.state, old[1] if old else item.value or b"")

    async def _load(self, parsed: list[tuple[Inbound, Command]], digests: list[str],
                    claim_keys: list[tuple[str, str]]) -> _Batch:
        """Governed state of one batch, read in one short transaction: only the rows its commands can
        touch (their memories, cited sources, review targets, the content digests and claims of their
        texts, their subjects' fact slots), plus the registry, the policy and the grants."""
        cids = [c.envelope.command_id for _, c in parsed]
        targets = [c.quarantined_command_id for _, c in parsed
                   if isinstance(c, ApproveQuarantined | RejectQuarantined)]
        cited = sorted({m for _, c in parsed if isinstance(c, RecordMemory | SupersedeMemory)
                        for m in c.envelope.source.derived_from})
        subjects = sorted({c.envelope.subject for _, c in parsed})
        async with self._conn.cursor() as cur:
            await cur.execute(
                "SELECT command_id::text, outcome, ledger_partition, ledger_offset, outputs, decision, event"
                " FROM gate_decisions WHERE command_id = ANY(%s::uuid[])", (cids,))
            topic = parsed[0][0].position.topic
            priors: dict[str, tuple[PriorDecision, list[dict[str, Any]]]] = {}
            for cid, outcome, part, off, outputs, decided, event in await cur.fetchall():
                records = outputs if outputs is not None else _legacy_outputs(bytes(decided), event)
                priors[cid] = (PriorDecision(Outcome(outcome), Position(topic, part, off)), records)
            quarantine = await db.load_quarantine(cur, targets)
            review_mids = [q.memory_id for q, _ in quarantine.values()]
            facts, protected, claims, twins = await db.load_subject_state(cur, subjects, claim_keys, digests)
            # twins too: the gate admits a duplicate only when its twin is a live memory it knows
            mids = sorted({m for _, c in parsed for m in _memory_ids(c)} | set(cited) | set(review_mids)
                          | set(twins.values()))
            memories = await db.load_memories(cur, mids)
            principals = await db.load_principals(cur)
            principals[self._anchor.principal_id] = self._anchor
            policy = await db.load_policy(cur)
            # grants that can matter: held by a writer of the batch (or a released command's writer) or one
            # of their roles, and those a GrantAccess / RevokeAccess names
            writers = {c.envelope.principal for _, c in parsed} | {q.principal for q, _ in quarantine.values()}
            roles = {r for w in writers if w in principals for r in principals[w].roles}
            roles |= {r for _, c in parsed if isinstance(c, RegisterPrincipal) for r in c.roles}  # registered now
            holders = writers | {ROLE_PREFIX + r for r in roles}
            named = [c.grant_id for _, c in parsed if isinstance(c, GrantAccess | RevokeAccess)]
            grants = {g.grant_id: g for g in await db.load_grants(cur, sorted(holders))}
            grants.update({g.grant_id: g for g in await db.load_grants_by_id(cur, named)})
            source_events = await db.load_current_events(cur, cited)
        await self._conn.commit()
        sources = await self._sources(source_events)
        return _Batch(priors, memories, principals, policy, grants, facts, set(protected), claims, twins, quarantine,
                      sources)

    async def _sources(self, source_events: dict[str, bytes]) -> dict[str, SourceRecord]:
        decoded = {m: self._codec.decode(b)[1] for m, b in source_events.items()}
        keys = await asyncio.to_thread(self._keyring.lookup, [r["content"]["key_id"] for r in decoded.values()])
        out: dict[str, SourceRecord] = {}
        for m, r in decoded.items():
            env = r["envelope"]
            out[m] = SourceRecord(m, env["scope"], Sensitivity(env["sensitivity"]),
                                  EpistemicStatus(env["epistemic_status"]), open_content(r["content"], keys))
        return out

    async def _review_targets(self, commands: list[Command], st: _Batch) -> dict[str, Any]:
        """For each ``ApproveQuarantined``: (original command, plaintext, content digest)."""
        out: dict[str, Any] = {}
        for c in commands:
            if not isinstance(c, ApproveQuarantined) or c.quarantined_command_id not in st.quarantine:
                continue
            _, raw = st.quarantine[c.quarantined_command_id]
            try:
                name, record = self._codec.decode(raw)
                original = from_avro(name, record)
            except (DecodeError, pydantic.ValidationError):
                continue
            text = (await self._decrypt([original])).get(original.envelope.command_id)
            out[c.quarantined_command_id] = (original, text, self._digest(original.envelope.subject, text))
        return out

    # -- outputs ----------------------------------------------------------------------------------
    def _refuse(self, item: Inbound, code: str, reason: str, field: str | None, now: datetime) -> list[Outbound]:
        decided = self._codec.encode("GateDecided", events.rejected_input(code, reason, field, item.position, now))
        return [dead_letter(item, code, reason, field), Outbound("decisions", item.key, decided)]

    def _records(self, command: Command, decision: Decision, item: Inbound, now: datetime) -> list[dict[str, Any]]:
        """Every record the decision publishes, as storable dicts (topic, key, value base64)."""
        position = item.position
        subject_key = command.envelope.subject.encode()
        memory_id = decision.memory.memory_id if decision.memory else getattr(command, "memory_id", None)
        out = [_rec("decisions", subject_key, self._codec.encode(
            "GateDecided", events.gate_decided(command, decision, position, now, memory_id)))]
        if decision.admitted:
            if decision.released is not None:
                original, reviewer = decision.released
                out.append(_rec("events", subject_key, self._codec.encode(
                    "MemoryRecorded", events.memory_recorded(original, decision, position, now, reviewer))))
            elif isinstance(command, ForgetMemory):
                if decision.memory is not None:
                    out.append(_rec("events", subject_key, self._codec.encode(
                        "MemoryForgotten", events.memory_forgotten(command, position, now))))
            elif isinstance(command, RecordMemory | SupersedeMemory):
                out.append(_rec("events", subject_key, self._codec.encode(
                    "MemoryRecorded", events.memory_recorded(command, decision, position, now))))
            elif command.kind in GOVERNANCE_COMMANDS and item.value is not None:
                out.append(_rec("events", subject_key, self._codec.encode(
                    "GovernanceChanged", events.governance_changed(command, item.value, position, now))))
            for effect in decision.effects:
                if isinstance(effect, PrincipalUpsert):
                    p = effect.record
                    out.append(_rec("principals", p.principal_id.encode(), self._codec.encode(
                        "PrincipalState", _principal_state(p, position))))
        for key_id in decision.shred:
            out.append(_rec("keys", key_id.encode(), None))
        return out

    async def _decrypt(self, commands: list[Command]) -> dict[str, str | None]:
        wanted = [c for c in commands if isinstance(c, RecordMemory | SupersedeMemory)]
        if not wanted:
            return {}
        keys = await asyncio.to_thread(self._keyring.lookup, [c.content.key_id for c in wanted])
        return {c.envelope.command_id: open_content({"key_id": c.content.key_id, "nonce": c.content.nonce,
                                              "ciphertext": c.content.ciphertext}, keys) for c in wanted}

    async def _store(self, rows: list[tuple], changed: dict[str, tuple[MemoryState, str | None]],
                     effects: list[tuple[Any, dict[str, Any]]]) -> None:
        async with self._conn.transaction(), self._conn.cursor() as cur:
            if rows:
                await cur.executemany(
                    "INSERT INTO gate_decisions (command_id, outcome, ledger_partition, ledger_offset, decision,"
                    " event, decided_at, outputs) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT (command_id) DO NOTHING", rows)
            if changed:
                await cur.executemany(
                    "INSERT INTO gate_memories (memory_id, subject, owner, version, forgotten, scope, fact_entity,"
                    " fact_attribute, current_command_id, key_ids) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s,"
                    " %s::uuid[])"
                    " ON CONFLICT (memory_id) DO UPDATE SET version = EXCLUDED.version, forgotten = EXCLUDED.forgotten,"
                    " scope = EXCLUDED.scope, fact_entity = EXCLUDED.fact_entity,"
                    " fact_attribute = EXCLUDED.fact_attribute,"
                    " current_command_id = COALESCE(EXCLUDED.current_command_id, gate_memories.current_command_id),"
                    " key_ids = EXCLUDED.key_ids",
                    [(m.memory_id, m.subject, m.owner, m.version, m.forgotten, m.scope,
                      m.fact[1] if m.fact else None, m.fact[2] if m.fact else None, cmd, list(m.key_ids))
                     for m, cmd in changed.values()])
            await db.store_effects(cur, effects)


def _rec(topic: str, key: bytes | None, value: bytes | None) -> dict[str, Any]:
    return {"topic": topic, "key": base64.b64encode(key).decode() if key is not None else None,
            "value": base64.b64encode(value).decode() if value is not None else None}


def _value(records: list[dict[str, Any]], topic: str) -> bytes | None:
    for r in records:
        if r["topic"] == topic and r["value"] is not None:
            return base64.b64decode(r["value"])
    return None


def _outbound(records: list[dict[str, Any]]) -> list[Outbound]:
    return [Outbound(r["topic"], base64.b64decode(r["key"]) if r["key"] is not None else None,
                     base64.b64decode(r["value"]) if r["value"] is not None else None) for r in records]


def _legacy_outputs(decided: bytes, event: Any) -> list[dict[str, Any]]:
    """Records of a decision stored before ``outputs`` existed (decision and event only)."""
    out = [_rec("decisions", None, decided)]
    if event is not None:
        out.append(_rec("events", None, bytes(event)))
    return out


def _principal_state(p: PrincipalRecord, position: Position) -> dict[str, Any]:
    def ts(ms: int | None) -> datetime | None:
        return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC)

    return {
        "principal_id": p.principal_id, "kind": p.kind.value, "roles": sorted(p.roles),
        "attributes": dict(p.attributes),
        "keys": [{"key": {"key_id": k.key_id, "algorithm": "Ed25519", "public_key": k.public_key},
                  "valid_from": ts(k.valid_from_ms), "valid_to": ts(k.valid_to_ms), "revoked_at": ts(k.revoked_at_ms)}
                 for k in p.keys],
        "position": {"topic": position.topic, "partition": position.partition, "offset": position.offset},
    }


def _memory_ids(command: Command) -> list[str]:
    """The memory a command creates, supersedes or forgets (none for governance commands)."""
    mid = getattr(command, "memory_id", None)
    return [mid] if mid else []


__all__ = ["GateProcessor", "Inbound", "Outbound", "dead_letter"]
