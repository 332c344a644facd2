"""The pure write gate (SSGM Eq. 6), walking-skeleton rules on signed commands: every rule, with its reason code."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from memwarden.commands import gate
from memwarden.commands.gate import (
    GateLimits,
    GateState,
    MemoryState,
    Outcome,
    Position,
    PriorDecision,
)
from memwarden.epoch import to_ms
from tests import factories as f


def decide(cmd, text, pos, state, now, limits=None, **kw):  # noqa: ANN001, ANN201
    """The gate on ``cmd`` signed by its principal, with the factory registry in the state."""
    limits = limits or GateLimits()
    signed, data = f.sign(cmd)
    state = replace(state, principals={**f.registry(), **state.principals})
    return gate.decide(signed, text, pos, state, now, limits, signed_bytes=data, **kw)

NOW = f.T0 + timedelta(days=1)
POS = Position("mw.commands", 0, 10)


def codes(decision) -> list[str]:
    return [r.code for r in decision.reasons]


def test_new_record_is_accepted_as_version_1_owned_by_its_principal() -> None:
    cmd = f.record()
    d = decide(cmd, "prefers tea", POS, GateState(), NOW)
    assert d.outcome is Outcome.ACCEPTED and d.admitted
    ref = cmd.envelope.source.reference
    assert d.memory == MemoryState(cmd.memory_id, "user:alice", "user:alice", 1, scope="account:default",
                                   key_ids=(cmd.content.key_id,), observed_ms=to_ms(cmd.envelope.observed_at),
                                   sources=(ref,) if ref else (), writers=("user:alice",),
                                   signer_keys=(f.sign(cmd)[0].envelope.signature.key_id,), admitted_ms=to_ms(NOW))
    assert d.version == 1


def test_redelivery_at_the_same_position_is_not_a_duplicate_but_a_new_position_is() -> None:
    cmd = f.record()
    prior = PriorDecision(Outcome.ACCEPTED, POS)
    assert decide(cmd, "x", POS, GateState(prior=prior), NOW).outcome is Outcome.ACCEPTED
    again = decide(cmd, "x", Position("mw.commands", 0, 11), GateState(prior=prior), NOW)
    assert again.outcome is Outcome.DUPLICATE and codes(again) == ["DUPLICATE_COMMAND_ID"]
    assert again.memory is None


@pytest.mark.parametrize("text, code", [
    (None, "CONTENT_UNREADABLE"),
    ("", "EMPTY_TEXT"),
    ("  \n\t ", "EMPTY_TEXT"),
    ("x" * 101, "TEXT_TOO_LONG"),
])
def test_unreadable_empty_and_oversize_text_is_rejected(text, code) -> None:
    d = decide(f.record(), text, POS, GateState(), NOW, GateLimits(max_text_chars=100))
    assert d.outcome is Outcome.REJECTED and codes(d) == [code] and d.memory is None


def test_text_at_the_limit_and_unicode_is_accepted() -> None:
    text = "🍵 緑茶\u200b" + "x" * 95
    assert len(text) == 100
    assert decide(f.record(), text, POS, GateState(), NOW, GateLimits(100)).admitted


def test_observed_time_in_the_future_is_rejected_but_small_skew_is_allowed() -> None:
    assert codes(decide(f.record(observed_at=NOW + timedelta(hours=1)), "x", POS, GateState(), NOW)) == [
        "OBSERVED_IN_FUTURE"]
    assert decide(f.record(observed_at=NOW + timedelta(minutes=1)), "x", POS, GateState(), NOW).admitted


def test_expiry_before_validity_is_rejected() -> None:
    d = decide(f.record(expires_at=f.T0 - timedelta(seconds=1)), "x", POS, GateState(), NOW)
    assert codes(d) == ["EXPIRES_BEFORE_VALID"]


def test_reusing_a_memory_id_is_rejected() -> None:
    cmd = f.record()
    state = GateState(memories={cmd.memory_id: MemoryState(cmd.memory_id, "user:alice", "user:alice", 1)})
    assert codes(decide(cmd, "x", POS, state, NOW)) == ["MEMORY_ID_EXISTS"]


def _known(mid: str, **over) -> GateState:
    m = MemoryState(mid, over.pop("subject", "user:alice"), over.pop("owner", "user:alice"), 1, **over)
    return GateState(memories={mid: m})


def test_supersede_creates_the_next_version() -> None:
    mid = "7b0c7c1e-9f32-4c57-9d1e-2f2f6c1d9a10"
    d = decide(f.supersede(mid), "prefers coffee", POS, _known(mid), NOW)
    assert d.admitted and d.version == 2 and d.memory is not None and d.memory.version == 2


@pytest.mark.parametrize("state_over, env_over, code", [
    (None, {}, "UNKNOWN_MEMORY"),
    ({"forgotten": True}, {}, "MEMORY_FORGOTTEN"),
    ({"subject": "user:bob"}, {}, "SUBJECT_MISMATCH"),
    ({}, {"principal": "agent:helper", "subject": "user:alice"}, "NOT_OWNER"),
])
def test_supersede_and_forget_need_a_live_memory_of_the_same_subject_and_owner(state_over, env_over, code) -> None:
    mid = "7b0c7c1e-9f32-4c57-9d1e-2f2f6c1d9a10"
    state = GateState() if state_over is None else _known(mid, **state_over)
    assert codes(decide(f.supersede(mid, **env_over), "x", POS, state, NOW)) == [code]
    if code != "MEMORY_FORGOTTEN":
        assert codes(decide(f.forget(mid, **env_over), None, POS, state, NOW)) == [code]


def test_subject_may_change_a_memory_written_about_them() -> None:
    mid = "7b0c7c1e-9f32-4c57-9d1e-2f2f6c1d9a10"
    state = _known(mid, owner="agent:helper")
    assert decide(f.supersede(mid), "x", POS, state, NOW).admitted


def test_forget_marks_the_memory_forgotten_and_is_idempotent() -> None:
    mid = "7b0c7c1e-9f32-4c57-9d1e-2f2f6c1d9a10"
    d = decide(f.forget(mid), None, POS, _known(mid), NOW)
    assert d.admitted and [x.memory.memory_id for x in d.forgets] == [mid] and d.forgets[0].memory.forgotten
    assert d.listed == (mid,) and d.memory is None
    again = decide(f.forget(mid), None, POS, _known(mid, forgotten=True), NOW)
    assert again.admitted and codes(again) == ["ALREADY_FORGOTTEN"] and again.memory is None
