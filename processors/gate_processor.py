"""Wiring of the write gate: decode → decrypt → load governed state → ``decide`` → ``evolve`` →
store → publish.

Decrypt opens a memory write's content, its typed fact's value and a derived record's quoted span
(both sealed under the same data key) with the key ring. The gate decides on the write *as
compared*: the fact's value replaced by its keyed digest (:func:`~memwarden.commands.facts.keyed_fact`),
which is all its fact slots keep, the quoted span opened; the records it publishes are built from the
write as the ledger carries it (value and span sealed).

At-least-once input with exactly-once effect: for each batch the decisions, every record they
publish (decision, events, registry entries, key tombstones) and the governed state they change are
committed to Postgres in one transaction *before* they are sent; a redelivered command (same ledger
position) re-sends the stored records byte for byte, a new copy of a known command id (another
position) gets a ``DUPLICATE`` decision. Downstream projections drop events they already applied.
See :mod:`memwarden.stores.gate_state` for why the state is read from Postgres in the same
transaction rather than from a Faust table.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import psycopg
import pydantic

from memwarden.commands.attribution import normalise
from memwarden.commands.contradiction import DEFAULT_CLAIMS, KeyedClaims
from memwarden.commands.gate import (
    Decision,
    Effect,
    GateLimits,
    GateState,
    MemoryState,
    Position,
    PriorDecision,
    QuarantineSet,
    decide,
    evolve,
)
from memwarden.commands.gate.effects import reject
from memwarden.commands.gate.recorded import from_record
from memwarden.commands.injection import DEFAULT_DETECTOR, Detection, InstructionDetector
from memwarden.commands.model import ApproveQuarantined, Command, from_avro
from memwarden.commands.principals import PrincipalRecord
from memwarden.epoch import truncate_ms
from memwarden.errors import DecodeError
from memwarden.processors.gate_inputs import BatchInputs, CachedClaims, NoClaims, open_sources, open_writes
from memwarden.processors.gate_io import Inbound, Outbound, Parsed, dead_letter, decision_records, parse
from memwarden.processors.gate_loading import Batch, load_batch
from memwarden.processors.gate_replay import RecordedOutcome
from memwarden.schemas.codec import AvroCodec
from memwarden.stores import gate_state as db
from memwarden.stores.decisions import DecisionRow, claim_partitions, decided_among, store_decisions, value_of
from memwarden.stores.keyring import KeyRing
from memwarden.stores.offsets import next_offsets, save_offsets

log = logging.getLogger("memwarden.gate")
#: Reason code of a command the pure decision raised on (:meth:`GateProcessor._undecidable`).
UNDECIDABLE = "UNDECIDABLE"
#: How many times a batch is decided again after another worker's decision raced it.
RACE_RETRIES = 3


class _NoInstructions:
    """Skeleton-mode detector: finds nothing (benchmark baseline only)."""

    def detect(self, text: str) -> Detection:
        return Detection(())


@dataclass
class _Writes:
    """What one batch stores: decision rows, changed memories (with the command holding their
    current event) and effects with their context."""

    rows: list[DecisionRow] = field(default_factory=list)
    changed: dict[str, tuple[MemoryState, str | None]] = field(default_factory=dict)
    effects: list[tuple[Effect, dict[str, Any]]] = field(default_factory=list)


def _as_on_ledger(decision: Decision, ledger: Mapping[str, Command]) -> Decision:
    """``decision`` with the write a reviewer released as the ledger carries it (its typed fact's value
    sealed), not as the gate compared it: its ``MemoryRecorded`` is built from it."""
    if decision.released is None:
        return decision
    original, reviewer = decision.released
    sealed = ledger.get(original.envelope.command_id)
    return replace(decision, released=(sealed, reviewer)) if sealed is not None else decision


def outbound(records: Sequence[dict[str, Any]]) -> list[Outbound]:
    """Stored records (:func:`memwarden.stores.decisions.record`) as records to publish."""
    return [Outbound(r["topic"], base64.b64decode(r["key"]) if r["key"] is not None else None,
                     base64.b64decode(r["value"]) if r["value"] is not None else None) for r in records]


class GateProcessor:
    """Decides batches of commands. ``conn`` is an async psycopg connection in the namespace schema.

    Args:
        codec: Avro codec. keyring: data keys. conn: Postgres. limits: content limits.
        anchor: the root admin registry record (trust anchor, :func:`memwarden.keystore.trust_anchor`).
        digest_key: secret for the keyed content digests of duplicate detection (derived from the KEK).
        mode: ``full`` or ``skeleton`` (benchmark baseline: no signatures, detector or claims).
        detector: the instruction detector (default: the rules). One with a ``prime(texts)`` method
            (:class:`~memwarden.projections.injection_classifier.CombinedDetector`) is primed with every
            text of a batch in one call, off the event loop, before the batch is decided.
    """

    def __init__(self, codec: AvroCodec, keyring: KeyRing, conn: psycopg.AsyncConnection, limits: GateLimits,
                 anchor: PrincipalRecord, digest_key: bytes, mode: str = "full",
                 detector: InstructionDetector | None = None) -> None:
        self._codec = codec
        self._keyring = keyring
        self._conn = conn
        self._limits = limits
        self._anchor = anchor
        self._digest_key = digest_key
        self._claims = KeyedClaims(DEFAULT_CLAIMS, digest_key)  # claim digests keyed per namespace
        self._full = mode == "full"
        self._detector: InstructionDetector = (detector or DEFAULT_DETECTOR) if self._full else _NoInstructions()
        #: Replay only: called with every recorded command as the gate folds it (``regate`` re-decides
        #: history through it); the signature bytes are then kept for it to verify.
        self.observer: Callable[[Parsed, GateState, str | None, str | None, RecordedOutcome], None] | None = None

    @property
    def connection(self) -> psycopg.AsyncConnection:
        """The database connection decisions are stored through (replaced after a lost connection)."""
        return self._conn

    @connection.setter
    def connection(self, conn: psycopg.AsyncConnection) -> None:
        self._conn = conn

    def _digest(self, subject: str, text: str | None) -> str | None:
        if text is None or not self._full:
            return None
        return hmac.new(self._digest_key, f"{subject}\x00{normalise(text)}".encode(), hashlib.sha256).hexdigest()

    async def handle(self, batch: Sequence[Inbound], now: datetime | None = None,
                     recorded: Mapping[Position, RecordedOutcome] | None = None,
                     offsets: tuple[str, str] | None = None, attempt: int = 0) -> list[Outbound]:
        """Decide ``batch`` in order; returns the records to publish, in order. Never raises for bad
        input; raises only on infrastructure failure (the batch is then redelivered).

        Replay: with ``recorded`` (the ledger's decision of every command of ``batch``, by position)
        nothing is decided again: each recorded decision is folded into the state
        (:func:`~memwarden.commands.gate.recorded.from_record`) and stored with its recorded bytes.
        ``offsets`` = (consumer, topic) stores the batch's next offsets in the same transaction (a
        replay resumes where it stopped).

        Two gate workers may both hold a partition for a moment (a rebalance): batches are stored
        under the partition's lock, and a batch that finds a decision stored meanwhile by the other
        worker for one of its commands is decided again from the stored state (the other worker's
        decision is then re-sent, never a second one): one decision per command."""
        now = truncate_ms(now or datetime.now(UTC))  # the clock as the ledger records it (decided_at)
        parsed, out = parse(self._codec, batch, now, signed=recorded is None or self.observer is not None)
        if not parsed:
            return out
        commands = [p.command for p in parsed]
        texts, compared = await self._decrypt(commands)
        digests = {c.envelope.command_id: self._digest(c.envelope.subject, texts.get(c.envelope.command_id))
                   for c in commands}
        claims = CachedClaims({t: self._claims.claims(t) for t in texts.values() if t} if self._full else {},
                              self._claims)
        claim_keys = sorted({(c.envelope.subject, claim.digest) for c in commands
                             for claim in claims.claims(texts.get(c.envelope.command_id) or "")})
        loaded = await load_batch(self._conn, self._anchor, commands, parsed[0].item.position.topic,
                                  [d for d in digests.values() if d], claim_keys)
        known = set(loaded.priors)  # decided before this batch (deciding adds the batch's own)
        if recorded is None:
            sources = await open_sources(self._codec, self._keyring, loaded.source_events)
            loaded.state = replace(loaded.state, sources=sources)
        ledger: dict[str, Command] = {}
        review = await self._review_targets(commands, loaded, ledger)
        prime = getattr(self._detector, "prime", None)
        if prime is not None and recorded is None:  # live decisions: score the batch's texts in one call
            await asyncio.to_thread(prime, [*(t for t in texts.values() if t),
                                            *(r[1] for r in review.values() if r[1])])
        writes = _Writes()
        for p in parsed:
            out += await self._decide_one(p, BatchInputs(texts, digests, claims, review, recorded, compared,
                                                         ledger), loaded, writes, now)
        try:
            await self._store(writes, (offsets[0], offsets[1], next_offsets(batch)) if offsets else None, batch,
                              known)
        except GateRaced as exc:
            if attempt >= RACE_RETRIES:
                raise
            log.warning("gate: %d commands were decided by another worker meanwhile (a rebalance): the batch is"
                        " decided again from the stored state", len(exc.command_ids))
            return await self.handle(batch, now, recorded, offsets, attempt + 1)
        return out

    async def _decide_one(self, p: Parsed, inputs: BatchInputs, loaded: Batch, writes: _Writes,
                          now: datetime) -> list[Outbound]:
        command, item = p.command, p.item
        review = inputs.review
        cid = command.envelope.command_id
        gated = inputs.compared.get(cid, command)  # the write as the gate compares it (fact value keyed)
        prior = loaded.priors.get(cid)
        if prior is not None and prior[0].position == item.position:
            return outbound(prior[1])  # redelivery: the stored records
        target = command.quarantined_command_id if isinstance(command, ApproveQuarantined) else None
        if target is not None and target not in review:  # quarantined earlier in this same batch
            review.update(await self._review_targets([command], loaded, inputs.ledger))
        prior_decision, review_target = (prior[0] if prior else None), (review.get(target) if target else None)
        view = loaded.state
        if view.prior is not prior_decision or view.review_target is not review_target:
            view = replace(view, prior=prior_decision, review_target=review_target)
        if inputs.recorded is not None:
            rec = inputs.recorded[item.position]
            now = rec.decision.decided_at
            decision = from_record(gated, rec.decision, view, inputs.texts.get(cid), inputs.digests.get(cid),
                                   inputs.claims)
            records = rec.records(self._codec, decision, item.position)
            if self.observer is not None and prior is None:
                self.observer(replace(p, command=gated), view, inputs.texts.get(cid), inputs.digests.get(cid), rec)
        else:
            try:
                decision = decide(gated, inputs.texts.get(cid), item.position, view, now, self._limits,
                                  signed_bytes=p.signed, content_digest=inputs.digests.get(cid),
                                  verify_signatures=self._full,
                                  detector=self._detector,
                                  claims=inputs.claims if self._full else NoClaims())
                records = decision_records(self._codec, command, _as_on_ledger(decision, inputs.ledger), item, now)
            except Exception as exc:  # noqa: BLE001 - the pure decision failed on this command: refuse it, go on
                decision, records, letter = self._undecidable(p, exc, now)
                if prior is None:
                    self._evolve(loaded, writes, p, decision, records, now)
                return [letter, *outbound(records)]
        if prior is None:  # a copy of a decided command id is answered, never stored over the first decision
            self._evolve(loaded, writes, p, decision, records, now)
        return outbound(records)

    def _undecidable(self, p: Parsed, exc: Exception, now: datetime) -> tuple[Decision, list[dict[str, Any]],
                                                                             Outbound]:
        """A command the pure decision raised on (a fault of ours on input no check foresaw): ``REJECTED``
        with ``UNDECIDABLE`` naming the error, its bytes on the dead-letter topic with the reason, and the
        gate goes on. A poison command must never stop a partition's gate: its decision is stored like any
        other (a redelivery re-sends it, a replay folds it as a refusal). The error's type goes to the decision
        and its frames to the log, never its message: it may quote the content, which no log or ledger record
        holds in clear."""
        cid = p.command.envelope.command_id
        frames = "".join(traceback.format_tb(exc.__traceback__))
        log.error("gate: command %s (%s) at %s could not be decided (%s); refused as UNDECIDABLE\n%s", cid,
                  p.command.kind, p.item.position, type(exc).__name__, frames)
        message = f"the gate could not decide this command ({type(exc).__name__}); refused"
        decision = reject(UNDECIDABLE, message)
        records = decision_records(self._codec, p.command, decision, p.item, now)
        return decision, records, dead_letter(p.item, UNDECIDABLE, message, None)

    def _evolve(self, loaded: Batch, writes: _Writes, p: Parsed, decision: Decision, records: list[dict[str, Any]],
                now: datetime) -> None:
        """Fold ``decision`` into the batch state and queue what it stores."""
        cid, item = p.command.envelope.command_id, p.item
        loaded.priors[cid] = (PriorDecision(decision.outcome, item.position), records)
        writes.rows.append(DecisionRow(cid, decision.outcome, item.position, value_of(records, "decisions"),
                                       value_of(records, "events"), now, records))
        loaded.state = evolve(loaded.state, decision)
        ctx: dict[str, Any] = {"position": item.position, "command": item.value,
                               "reasons": [r.__dict__ for r in decision.reasons],
                               "reviewer": p.command.envelope.principal, "decided_at": now}
        for effect in decision.effects:
            writes.effects.append((effect, ctx))
            if isinstance(effect, QuarantineSet) and effect.state.command_id not in loaded.held:
                loaded.held[effect.state.command_id] = item.value or b""
        if decision.admitted and decision.memory is not None:
            m = decision.memory
            # the decision row that holds the current version's MemoryRecorded: for a released memory
            # that is the approval's row (the quarantined command's own row has no event)
            # (a forget keeps it, also when the version it forgets was decided earlier in this batch)
            held = writes.changed.get(m.memory_id)
            writes.changed[m.memory_id] = (m, cid if not m.forgotten else (held[1] if held else None))
        for f in decision.forgets:  # a forget keeps the row of the version it forgets
            held = writes.changed.get(f.memory.memory_id)
            writes.changed[f.memory.memory_id] = (f.memory, held[1] if held else None)

    async def _review_targets(self, commands: list[Command], loaded: Batch,
                              ledger: dict[str, Command]) -> dict[str, Any]:
        """For each ``ApproveQuarantined``: (original command as compared, plaintext, content digest);
        the original as the ledger carries it goes to ``ledger`` (by its command id)."""
        out: dict[str, Any] = {}
        for c in commands:
            if not isinstance(c, ApproveQuarantined) or c.quarantined_command_id not in loaded.held:
                continue
            try:
                name, rec = self._codec.decode(loaded.held[c.quarantined_command_id])
                original = from_avro(name, rec)
            except (DecodeError, pydantic.ValidationError):
                continue
            texts, compared = await self._decrypt([original])
            cid = original.envelope.command_id
            ledger[cid] = original
            text = texts.get(cid)
            out[c.quarantined_command_id] = (compared.get(cid, original), text,
                                             self._digest(original.envelope.subject, text))
        return out

    async def _decrypt(self, commands: list[Command]) -> tuple[dict[str, str | None], dict[str, Command]]:
        """The plaintexts of the memory writes of ``commands`` and the writes as the gate compares them,
        by command id: :func:`~memwarden.processors.gate_inputs.open_writes` with this processor's key
        ring and digest key."""
        return await open_writes(self._keyring, self._digest_key, commands)

    async def _store(self, writes: _Writes, offsets: tuple[str, str, dict[int, int]] | None,
                     batch: Sequence[Inbound], known: set[str]) -> None:
        """Store one batch's decisions and state in one transaction, under the lock of its partitions;
        raise :class:`GateRaced` (nothing stored) when another worker stored a decision of one of its
        commands since the batch loaded its priors (``known``: the command ids decided before)."""
        async with self._conn.transaction(), self._conn.cursor() as cur:
            if batch:
                await claim_partitions(cur, batch[0].position.topic, [i.position.partition for i in batch])
            raced = await decided_among(cur, [r.command_id for r in writes.rows]) - known
            if raced:
                raise GateRaced(sorted(raced))
            await self._store_rows(cur, writes, offsets)

    async def _store_rows(self, cur: psycopg.AsyncCursor, writes: _Writes,
                          offsets: tuple[str, str, dict[int, int]] | None) -> None:
        async with self._conn.pipeline():
            await store_decisions(cur, writes.rows)
            await db.store_memories(cur, writes.changed.values())
            await db.store_effects(cur, writes.effects)
            if offsets is not None:
                await save_offsets(cur, *offsets)


class GateRaced(Exception):  # noqa: N818 - an outcome, not a failure of ours
    """Another gate worker stored a decision of ``command_ids`` after this batch loaded its priors."""

    def __init__(self, command_ids: Sequence[str]) -> None:
        super().__init__(f"decided meanwhile by another worker: {', '.join(command_ids[:5])}")
        self.command_ids = list(command_ids)


__all__ = ["GateProcessor", "GateRaced", "Inbound", "Outbound", "dead_letter", "outbound"]
