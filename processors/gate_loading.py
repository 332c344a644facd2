"""Loading the governed state one batch of commands can touch, in one short transaction.

Only the rows a batch can touch are read, whatever the history's size: its memories (for a forget,
what its selector may match and every derivative, transitively), the legal holds, cited sources,
review targets, the content digests and claims of its texts, its subjects' fact slots, and the
grants held by its writers (or their roles) or named by its grant commands, the tokens its token
commands name (by id, or by hash); plus the registry and the policy. The SQL is in
:mod:`memwarden.stores`; the choice of rows is here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

from memwarden.commands.gate import GateState, PriorDecision
from memwarden.commands.model import (
    ApproveQuarantined,
    Command,
    ForgetMatching,
    ForgetMemory,
    ForgetSelector,
    ForgetSubject,
    GrantAccess,
    IssueToken,
    LiftHold,
    RecordMemory,
    RegisterPrincipal,
    RejectQuarantined,
    RevokeAccess,
    RevokeToken,
    SupersedeMemory,
)
from memwarden.commands.principals import PrincipalRecord
from memwarden.commands.readmodel.permission import ROLE_PREFIX
from memwarden.stores import gate_state as db
from memwarden.stores.decisions import load_priors
from memwarden.stores.tokens import load_tokens


@dataclass
class Batch:
    """Governed state of one batch: the pure :class:`GateState` (evolved by each decision) and what
    only the processor needs: prior decisions with the records they published, the bytes of
    quarantined commands (by command id), and the ``MemoryRecorded`` bytes of cited sources."""

    state: GateState
    priors: dict[str, tuple[PriorDecision, list[dict[str, Any]]]] = field(default_factory=dict)
    held: dict[str, bytes] = field(default_factory=dict)
    source_events: dict[str, bytes] = field(default_factory=dict)


def memory_ids(command: Command) -> list[str]:
    """The memory a command creates, supersedes or forgets (none for governance commands)."""
    mid = getattr(command, "memory_id", None)
    return [mid] if mid else []


def _selector(command: ForgetMatching | ForgetSubject) -> ForgetSelector:
    if isinstance(command, ForgetMatching):
        return command.selector
    return ForgetSelector(subjects=(command.envelope.subject,))


def _grant_holders(commands: Sequence[Command], writers: set[str], principals: dict[str, PrincipalRecord]) -> list[str]:
    roles = {r for w in writers if w in principals for r in principals[w].roles}
    roles |= {r for c in commands if isinstance(c, RegisterPrincipal) for r in c.roles}  # registered now
    return sorted(writers | {ROLE_PREFIX + r for r in roles})


async def load_batch(conn: psycopg.AsyncConnection, anchor: PrincipalRecord, commands: Sequence[Command], topic: str,
                     digests: Sequence[str], claim_keys: Sequence[tuple[str, str]]) -> Batch:
    """The state ``commands`` (read from ``topic``) can touch, the trust ``anchor`` in the registry."""
    targets = [c.quarantined_command_id for c in commands if isinstance(c, ApproveQuarantined | RejectQuarantined)]
    cited = sorted({m for c in commands if isinstance(c, RecordMemory | SupersedeMemory)
                    for m in c.envelope.source.derived_from})
    subjects = sorted({c.envelope.subject for c in commands})
    async with conn.cursor() as cur:
        priors = await load_priors(cur, [c.envelope.command_id for c in commands], topic)
        quarantine = await db.load_quarantine(cur, targets)
        quarantine.update(await db.load_quarantine_of_memories(  # a forget may discard a held command
            cur, [c.memory_id for c in commands if isinstance(c, ForgetMemory)]))
        selectors = [_selector(c) for c in commands if isinstance(c, ForgetMatching | ForgetSubject)]
        quarantine.update(await db.load_quarantine_selected(cur, selectors))  # ... and so may a forget of many
        facts, protected, claims, twins = await db.load_subject_state(cur, subjects, claim_keys, digests)
        # twins, fact slots and claims too: a write is compared only with the memories its writer may read,
        # which the gate decides from each memory's owner, subject, scope and sensitivity
        mids = sorted({m for c in commands for m in memory_ids(c)} | set(cited)
                      | {q.memory_id for q, _ in quarantine.values()} | set(twins.values())
                      | {f.memory_id for f in facts.values()} | {c.memory_id for cs in claims.values() for c in cs})
        memories = await db.load_memories(cur, mids)
        holds, deferred = await db.load_holds(cur)
        lifted = {m for c in commands if isinstance(c, LiftHold) for d in deferred.values() for m in d.memory_ids}
        forgotten_ids = [c.memory_id for c in commands if isinstance(c, ForgetMemory)]
        memories.update(await db.load_lineage(cur, sorted(set(forgotten_ids) | lifted)))
        memories.update(await db.load_selected(cur, selectors))
        # the ids a forget of many names, forgotten ones too (ALREADY_FORGOTTEN, not UNKNOWN_MEMORY)
        memories.update({k: v for k, v in (await db.load_memories(
            cur, sorted({m for s in selectors for m in s.memory_ids}))).items() if k not in memories})
        principals = await db.load_principals(cur)
        principals[anchor.principal_id] = anchor
        policy = await db.load_policy(cur)
        writers = {c.envelope.principal for c in commands} | {q.principal for q, _ in quarantine.values()}
        grants = {g.grant_id: g for g in await db.load_grants(cur, _grant_holders(commands, writers, principals))}
        named = [c.grant_id for c in commands if isinstance(c, GrantAccess | RevokeAccess)]
        grants.update({g.grant_id: g for g in await db.load_grants_by_id(cur, named)})
        source_events = await db.load_current_events(cur, cited)
        tokens = await load_tokens(cur, [c.token_id for c in commands if isinstance(c, IssueToken | RevokeToken)],
                                   [c.token_sha256 for c in commands if isinstance(c, IssueToken)])
    await conn.commit()
    state = GateState(memories=memories, principals=principals, policy=policy, grants=tuple(grants.values()),
                      facts=facts, protected=protected, claims=claims, twins=twins,
                      quarantine={k: q for k, (q, _) in quarantine.items()}, holds=holds, deferred=deferred,
                      tokens=tokens)
    return Batch(state, priors, {k: raw for k, (_, raw) in quarantine.items()}, source_events)
