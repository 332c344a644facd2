"""State evolution: ``evolve(state, decision) -> state``, the pure fold beside ``decide``.

Event sourcing's other half: the governed state after a command is a function of the state before
it and the gate's decision (its effects and the memory it changes), so a batch of commands, a
replay of the ledger and a unit test all evolve the state the same way. The processor persists the
same effects (:mod:`memwarden.stores.gate_state`).
"""

from __future__ import annotations

from dataclasses import replace

from memwarden.commands.gate.effects import (
    Decision,
    DeferredSet,
    Effect,
    GrantUpsert,
    HoldSet,
    MemoryCleared,
    MemoryFacts,
    PolicySet,
    PrincipalUpsert,
    ProtectionSet,
    QuarantineSet,
    TokenSet,
)
from memwarden.commands.gate.state import GateState


def _cleared(state: GateState, memory_id: str) -> GateState:
    return replace(
        state,
        facts={k: v for k, v in state.facts.items() if v.memory_id != memory_id},
        claims={k: kept for k, v in state.claims.items() if (kept := tuple(c for c in v if c.memory_id != memory_id))},
        twins={k: v for k, v in state.twins.items() if v != memory_id},
    )


def _with_facts(state: GateState, effect: MemoryFacts) -> GateState:
    facts = dict(state.facts)
    if effect.fact is not None:
        facts[effect.fact.key] = effect.fact
    claims = dict(state.claims)
    for c in effect.claims:
        claims[(c.subject, c.key_digest)] = (*claims.get((c.subject, c.key_digest), ()), c)
    twins = dict(state.twins)
    if effect.digest is not None:
        twins[effect.digest[1]] = effect.memory_id
    return replace(state, facts=facts, claims=claims, twins=twins)


def apply_effect(state: GateState, effect: Effect) -> GateState:
    """The state after one effect (registry, policy, grants, protection, fact slots, claims,
    content digests, quarantine, holds, tokens). Raises ``TypeError`` for an object that is not an effect."""
    if isinstance(effect, PrincipalUpsert):
        return replace(state, principals={**state.principals, effect.record.principal_id: effect.record})
    if isinstance(effect, PolicySet):
        return replace(state, policy=effect.policy)
    if isinstance(effect, GrantUpsert):
        g = effect.grant
        known = any(old.grant_id == g.grant_id for old in state.grants)
        grants = (tuple(g if old.grant_id == g.grant_id else old for old in state.grants) if known
                  else (*state.grants, g))
        return replace(state, grants=grants)
    if isinstance(effect, ProtectionSet):
        protected = state.protected | {effect.key} if effect.protected else state.protected - {effect.key}
        return replace(state, protected=frozenset(protected))
    if isinstance(effect, MemoryCleared):
        return _cleared(state, effect.memory_id)
    if isinstance(effect, MemoryFacts):
        return _with_facts(state, effect)
    if isinstance(effect, QuarantineSet):
        return replace(state, quarantine={**state.quarantine, effect.state.command_id: effect.state})
    if isinstance(effect, HoldSet):
        return replace(state, holds={**state.holds, effect.state.hold_id: effect.state})
    if isinstance(effect, DeferredSet):
        f = effect.forget
        deferred = {k: v for k, v in state.deferred.items() if k != f.command_id}
        if f.memory_ids:
            deferred[f.command_id] = f
        return replace(state, deferred=deferred)
    if isinstance(effect, TokenSet):
        return replace(state, tokens={**state.tokens, effect.state.token_id: effect.state})
    raise TypeError(f"not a gate effect: {type(effect).__name__}")


def evolve(state: GateState, decision: Decision) -> GateState:
    """The governed state after ``decision``: every effect in order, then the memory it admitted
    (new version, supersession or forget) and the memories it forgot beside it (``forgets``, also
    under a ``DEFERRED`` outcome). A refusal or duplicate has no effects and leaves the
    state as it was. ``prior`` and ``review_target`` belong to one command and are left untouched."""
    for effect in decision.effects:
        state = apply_effect(state, effect)
    if decision.admitted and decision.memory is not None:
        state = replace(state, memories={**state.memories, decision.memory.memory_id: decision.memory})
    if decision.forgets:
        state = replace(state, memories={**state.memories, **{f.memory.memory_id: f.memory for f in decision.forgets}})
    return state
