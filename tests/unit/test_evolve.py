"""``evolve(state, decision)``: the pure fold of gate decisions into governed state (DESIGN.md
"Layers": ``decide`` and ``evolve`` side by side in the domain). Every effect kind, refusals leaving
state untouched, and batches decided command after command behaving as the ledger order says."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from memwarden.commands import gate
from memwarden.commands.facts import FactState
from memwarden.commands.gate import (
    ClaimState,
    Decision,
    GateState,
    GrantUpsert,
    MemoryCleared,
    MemoryFacts,
    MemoryState,
    Outcome,
    PolicySet,
    Position,
    PrincipalUpsert,
    ProtectionSet,
    QuarantineSet,
    QuarantineState,
    apply_effect,
    evolve,
)
from memwarden.commands.policy import parse_policy
from memwarden.commands.readmodel.permission import Grant
from memwarden.commands.reasons import Reason
from memwarden.epoch import to_ms
from tests import factories as f

NOW = f.T0 + timedelta(days=1)


def _decide(state: GateState, command: object, text: str | None, offset: int, digest: str | None = None) -> Decision:
    signed, data = f.sign(command)
    return gate.decide(signed, text, Position("mw.commands", 0, offset), state, NOW, signed_bytes=data,
                       content_digest=digest)


def _base() -> GateState:
    return GateState(principals=f.registry())


def test_refusal_and_duplicate_leave_the_state_unchanged() -> None:
    state = _base()
    refused = Decision(Outcome.REJECTED, (Reason("X", "no"),), effects=())
    assert evolve(state, refused) is state
    dup = Decision(Outcome.DUPLICATE, (Reason("DUPLICATE_COMMAND_ID", "again"),))
    assert evolve(state, dup) is state


def test_admitted_memory_enters_memories_and_forget_marks_it() -> None:
    record = f.record(memory_id="00000000-0000-4000-8000-000000000001")
    d = _decide(_base(), record, "prefers tea", 1)
    state = evolve(_base(), d)
    assert state.memories[record.memory_id] == MemoryState(record.memory_id, "user:alice", "user:alice", 1,
                                                           scope="account:default",
                                                           key_ids=(record.content.key_id,),
                                                           observed_ms=to_ms(record.envelope.observed_at),
                                                           sources=record.envelope.source.reference and
                                                           (record.envelope.source.reference,) or (),
                                                           writers=("user:alice",),
                                                           signer_keys=(f.sign(record)[0].envelope.signature.key_id,),
                                                           admitted_ms=to_ms(NOW))
    forget = f.forget(record.memory_id)
    gone = _decide(state, forget, None, 2)
    assert gone.shred == (record.content.key_id,)
    after = evolve(state, gone)
    assert after.memories[record.memory_id].forgotten
    assert evolve(after, _decide(after, f.forget(record.memory_id), None, 3)) == after  # forgetting twice: no change


def test_each_effect_changes_only_its_part() -> None:
    state = _base()
    bob = f.principal("user:bob", roles=("clerk",))
    s1 = apply_effect(state, PrincipalUpsert(bob))
    assert s1.principals["user:bob"].roles == {"clerk"} and s1.policy == state.policy
    policy = parse_policy('{"policy_id": "p", "version": 2, "scopes": [{"name": "team:a", "open": true}],'
                          ' "write_rules": [{"id": "r", "roles": ["admin"], "store_kinds": ["PROFILE"],'
                          ' "subjects": "any"}]}')
    assert apply_effect(state, PolicySet(policy, "{}")).policy == policy
    grant = Grant("g1", "user:bob", frozenset({"READ"}), ("team:a",))
    s2 = apply_effect(state, GrantUpsert(grant))
    revoked = replace(grant, revoked_at_ms=5)
    s3 = apply_effect(s2, GrantUpsert(revoked))
    assert s2.grants == (grant,) and s3.grants == (revoked,)  # replaced in place, not appended
    key = ("user:alice", "user", "city")
    assert key in apply_effect(state, ProtectionSet(key, True)).protected
    assert key not in apply_effect(apply_effect(state, ProtectionSet(key, True)), ProtectionSet(key, False)).protected
    q = QuarantineState("c1", "m1", "agent:helper", "user:alice")
    assert apply_effect(state, QuarantineSet(q)).quarantine == {"c1": q}


def test_memory_facts_then_cleared_round_trips() -> None:
    state = _base()
    claim = ClaimState("user:alice", "k", "v", True, "m1")
    fact = FactState(("user:alice", "user", "city"), "Lyon", "m1")
    s1 = apply_effect(state, MemoryFacts("m1", fact, (claim,), ("user:alice", "digest-1")))
    assert s1.facts[fact.key] == fact and s1.claims[("user:alice", "k")] == (claim,) and s1.twins == {"digest-1": "m1"}
    s2 = apply_effect(s1, MemoryCleared("m1"))
    assert (dict(s2.facts), dict(s2.claims), dict(s2.twins)) == ({}, {}, {})


def test_not_an_effect_raises() -> None:
    with pytest.raises(TypeError):
        apply_effect(_base(), object())  # type: ignore[arg-type]


def test_a_batch_decided_in_order_sees_its_own_earlier_effects() -> None:
    """The same text recorded twice in one batch: the second is a duplicate of the first because the
    first's content digest is in the evolved state (W1), and a supersession of a memory recorded
    earlier in the batch finds it."""
    state = _base()
    first = f.record("likes jazz")
    d1 = _decide(state, first, "likes jazz", 1, digest="d-jazz")
    state = evolve(state, d1)
    d2 = _decide(state, f.record("likes jazz"), "likes jazz", 2, digest="d-jazz")
    assert d2.outcome is Outcome.DUPLICATE
    state = evolve(state, d2)
    d3 = _decide(state, f.supersede(first.memory_id, "likes blues"), "likes blues", 3, digest="d-blues")
    assert d3.admitted and d3.version == 2
    state = evolve(state, d3)
    assert state.memories[first.memory_id].version == 2 and state.twins == {"d-blues": first.memory_id}
