"""Re-gating history: today's gate over the recorded commands (issue 9 part 4; seed 004 "Persistent
state separates compromise from consequence": a better detector repairs the past).

The ledger is replayed into a scratch namespace exactly as :mod:`memwarden.processors.replay` does
(recorded decisions folded, nothing changed); alongside, every memory write the gate admitted is
decided again by :func:`~memwarden.commands.gate.decide.decide` on the state as it stood then, but
with today's write policy (or ``--policy FILE``), today's principal registry and keys, and today's
detector, at the clock of its original decision. Each admitted write the gate would now refuse or
quarantine is a finding, with the new reasons. Memories already forgotten, and texts whose key is
gone, are not re-decided. Without ``dry_run`` the root admin publishes a signed ``ForgetMemory`` for
each memory of a finding (reason ``regate: <codes>``): an audited retraction on the ledger.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, replace
from typing import Any

from memwarden.bootstrap import Container, drop_projections
from memwarden.commands.contradiction import DEFAULT_CLAIMS, KeyedClaims
from memwarden.commands.gate import GateState, decide
from memwarden.commands.gate.state import ADMITTED
from memwarden.commands.model import RecordMemory, SupersedeMemory
from memwarden.commands.policy import WritePolicy
from memwarden.commands.principals import PrincipalRecord
from memwarden.processors.gate_io import Inbound, Parsed
from memwarden.processors.gate_processor import GateProcessor
from memwarden.processors.gate_replay import RecordedOutcome
from memwarden.processors.replay_cut import resolve_cut
from memwarden.processors.replay_ledger import read_ledger
from memwarden.processors.replay_stages import BATCH, batches, decision_order
from memwarden.settings import Settings
from memwarden.stores import gate_state as db
from memwarden.stores import namespaces
from memwarden.stores.pg import connect_async, migrate


@dataclass(frozen=True)
class Finding:
    """An admitted memory write today's gate would not admit: where, which memory, about whom, what
    was decided then and what would be now, with the reason codes."""

    position: str
    memory_id: str
    subject: str
    then: str
    now: str
    reasons: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """Plain dict for ``--json``."""
        return {"position": self.position, "memory_id": self.memory_id, "subject": self.subject, "then": self.then,
                "now": self.now, "reasons": list(self.reasons)}


async def _today(live: Settings, anchor: PrincipalRecord) -> tuple[dict[str, PrincipalRecord], WritePolicy]:
    conn = await connect_async(live)
    try:
        async with conn.cursor() as cur:
            principals = await db.load_principals(cur)
            policy = await db.load_policy(cur)
        await conn.commit()
    finally:
        await conn.close()
    principals[anchor.principal_id] = anchor
    return principals, policy


async def find(live: Settings, policy: WritePolicy | None = None) -> list[Finding]:
    """The admitted writes of ``live``'s ledger that today's gate (``policy`` if given) would refuse
    or quarantine. Reads the ledger; writes only to a scratch namespace it drops."""
    scratch = live.projections_of_ledger(f"{live.topic_prefix}.regate-{uuid.uuid4().hex[:8]}")
    migrate(scratch)
    namespaces.claim(scratch, live)
    container = Container(scratch)
    findings: list[Finding] = []
    try:
        principals, current = await _today(live, container.trust_anchor)
        today = policy or current
        cut, _ = resolve_cut(live, None, None)
        ledger = await asyncio.to_thread(read_ledger, scratch, container.codec, container.kek, cut)
        processor = GateProcessor(container.codec, ledger.keys, await container.pg(),  # type: ignore[arg-type]
                                  container.limits, container.trust_anchor, container.digest_key)
        claims = KeyedClaims(DEFAULT_CLAIMS, container.digest_key)  # as the gate keys them
        detector = container.instruction_detector()  # today's detector, as the live gate runs it

        def observe(p: Parsed, view: GateState, text: str | None, digest: str | None, rec: RecordedOutcome) -> None:
            command = p.command
            if rec.decision.outcome not in ADMITTED or text is None:
                return
            if not isinstance(command, RecordMemory | SupersedeMemory):
                return
            again = decide(command, text, p.item.position, replace(view, principals=principals, policy=today),
                           rec.decision.decided_at, container.limits, signed_bytes=p.signed, content_digest=digest,
                           detector=detector, claims=claims)
            if not again.admitted:
                pos = p.item.position
                findings.append(Finding(f"commands:{pos.partition}:{pos.offset}", command.memory_id,
                                        command.envelope.subject, rec.decision.outcome.value, again.outcome.value,
                                        tuple(r.code for r in again.reasons)))

        processor.observer = observe
        for chunk in batches(decision_order(ledger), BATCH):  # as the gate decided them, across partitions
            items = [Inbound(r.key, r.value, r.position) for r in chunk if r.position in ledger.recorded]
            if items:
                await processor.handle(items, recorded=ledger.recorded)
        state = {m.memory_id: m for m in (await _memories(live, [f.memory_id for f in findings])).values()}
    finally:
        container.close()
        drop_projections(scratch)
    live_ids = {mid for mid, m in state.items() if not m.forgotten}
    return [f for f in findings if f.memory_id in live_ids]


async def _memories(live: Settings, ids: list[str]) -> dict[str, Any]:
    conn = await connect_async(live)
    try:
        async with conn.cursor() as cur:
            found = await db.load_memories(cur, ids)
        await conn.commit()
    finally:
        await conn.close()
    return found

