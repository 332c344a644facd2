"""The pure forgetting decisions (commands/gate/forgetting.py): selection, permission, lineage, legal
holds, dry runs and refusals; and their recorded form folds back to the same state (replay)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from memwarden.commands.forget_commands import ForgetMatching, ForgetSelector, ForgetSubject, LiftHold, PlaceHold
from memwarden.commands.gate import GateState, MemoryState, Outcome, Position, decide, evolve
from memwarden.commands.gate.forgetting import held_selected, lineage, may_forget, selects
from memwarden.commands.gate.state import QuarantineState
from memwarden.commands.readmodel.permission import Grant
from memwarden.commands.reasons import Reason
from memwarden.epoch import to_ms
from tests import factories as f
from tests.unit.test_recorded import Ledger, _replay

NOW = f.T0 + timedelta(days=1)


def _m(subject: str = "user:alice", **over: Any) -> MemoryState:
    return MemoryState(over.pop("memory_id", str(uuid.uuid4())), subject, over.pop("owner", subject), 1, **over)


def _sel(**kw: Any) -> ForgetSelector:
    return ForgetSelector(**kw)


@pytest.mark.parametrize(("selector", "hit"), [
    (_sel(subjects=("user:alice",)), True), (_sel(subjects=("user:bob",)), False),
    (_sel(scopes=("work",)), True), (_sel(scopes=("home",)), False),
    (_sel(tags=("travel", "x")), True), (_sel(tags=("food",)), False),
    (_sel(source_references=("feed-7",)), True), (_sel(source_references=("feed-8",)), False),
    (_sel(writers=("agent:helper",)), True), (_sel(writers=("user:bob",)), False),
    (_sel(key_ids=("agent:helper#1",)), True), (_sel(key_ids=("agent:helper#2",)), False),
    (_sel(observed_from=f.T0), True), (_sel(observed_from=f.T0 + timedelta(seconds=1)), False),
    (_sel(observed_to=f.T0 + timedelta(seconds=1)), True), (_sel(observed_to=f.T0), False),
    (_sel(expired_before=f.T0 + timedelta(hours=1)), True), (_sel(expired_before=f.T0), False),
    (_sel(admitted_from=NOW), True), (_sel(admitted_from=NOW + timedelta(milliseconds=1)), False),
    (_sel(admitted_to=NOW + timedelta(milliseconds=1)), True), (_sel(admitted_to=NOW), False),
    (_sel(subjects=("user:alice",), tags=("food",)), False),  # AND across criteria
    (_sel(), False),  # empty never matches
])
def test_a_selector_matches_when_every_criterion_given_matches(selector: ForgetSelector, hit: bool) -> None:
    m = _m(scope="work", tags=("travel",), sources=("feed-7",), writers=("agent:helper",),
           signer_keys=("agent:helper#1",), observed_ms=to_ms(f.T0), expires_ms=to_ms(f.T0 + timedelta(minutes=5)),
           admitted_ms=to_ms(NOW))
    assert selects(selector, m) is hit


def test_memory_ids_select_exactly_those_ids() -> None:
    m = _m()
    assert selects(_sel(memory_ids=(m.memory_id,)), m)
    assert not selects(_sel(memory_ids=(str(uuid.uuid4()),)), m)
    assert not selects(_sel(expired_before=NOW), _m())  # no expiry: never expired


def test_who_may_forget() -> None:
    reg = f.registry(f.principal("user:lee", roles=("security",)))
    m = _m("user:alice", owner="service:ingest", scope="work")
    state = GateState(principals=reg)
    assert may_forget(reg["user:alice"], m, state, NOW)  # the subject
    assert may_forget(reg["service:admin"], m, state, NOW)  # an admin
    assert not may_forget(reg["user:bob"], m, state, NOW)
    write_only = Grant("g1", "role:security", frozenset({"WRITE"}), ("work",))
    assert not may_forget(reg["user:lee"], m, replace(state, grants=(write_only,)), NOW)
    forget = Grant("g2", "role:security", frozenset({"FORGET"}), ("work",))
    assert may_forget(reg["user:lee"], m, replace(state, grants=(forget,)), NOW)
    elsewhere = Grant("g3", "role:security", frozenset({"FORGET"}), ("home",))
    assert not may_forget(reg["user:lee"], m, replace(state, grants=(elsewhere,)), NOW)
    expired = Grant("g4", "role:security", frozenset({"FORGET"}), ("work",), valid_to_ms=to_ms(NOW))
    assert not may_forget(reg["user:lee"], m, replace(state, grants=(expired,)), NOW)


def test_a_forget_grant_covers_memories_only_up_to_its_sensitivity_ceiling() -> None:
    from memwarden.commands.vocabulary import Sensitivity

    reg = f.registry(f.principal("user:lee", roles=("security",)))
    internal = Grant("g", "role:security", frozenset({"FORGET"}), ("work",))  # ceiling INTERNAL (default)
    state = GateState(principals=reg, grants=(internal,))
    for level, allowed in (("PUBLIC", True), ("INTERNAL", True), ("CONFIDENTIAL", False), ("RESTRICTED", False)):
        m = _m("user:alice", owner="service:ingest", scope="work", sensitivity=level)
        assert may_forget(reg["user:lee"], m, state, NOW) is allowed, level
    restricted = replace(internal, sensitivity_ceiling=Sensitivity.RESTRICTED)
    secret = _m("user:alice", owner="service:ingest", scope="work", sensitivity="RESTRICTED")
    assert may_forget(reg["user:lee"], secret, replace(state, grants=(restricted,)), NOW)
    assert may_forget(reg["user:alice"], secret, state, NOW)  # the subject needs no grant at any level


def test_the_gate_records_each_versions_sensitivity_in_its_memory_state() -> None:
    from memwarden.commands.gate.writes import next_version

    first = next_version(f.record(sensitivity="CONFIDENTIAL"), None)
    assert first.sensitivity == "CONFIDENTIAL"
    lowered = next_version(f.supersede(first.memory_id, sensitivity="PUBLIC"), first)
    assert lowered.sensitivity == "PUBLIC" and lowered.version == 2


def test_lineage_is_transitive_stable_and_skips_forgotten_and_cycles() -> None:
    a, b, c = _m(memory_id="a"), _m(memory_id="b", derived_from=("a",)), _m(memory_id="c", derived_from=("b",))
    gone = _m(memory_id="d", derived_from=("a",), forgotten=True)
    loop = _m(memory_id="e", derived_from=("c", "e"))
    assert lineage(["a"], [a, b, c, gone, loop]) == ("a", "b", "c", "e")
    assert lineage(["c"], [a, b, c, loop]) == ("c", "e")
    assert lineage([], [a, b]) == ()


def _forget_many(principal: str, subject: str | None = None, dry_run: bool = False, **selector: Any) -> Any:
    env = f.envelope(principal, subject or principal)
    return ForgetMatching(envelope=env, selector=ForgetSelector(**selector), dry_run=dry_run, reason="test")


def _ledger_with(*texts_by: tuple[str, str]) -> tuple[Ledger, list[Any]]:
    led = Ledger()
    made = []
    for who, text in texts_by:
        cmd = f.record(text, principal=who, subject=who)
        led.run(cmd, text, f"d-{text}")
        made.append(cmd)
    return led, made


def test_forget_subject_dry_run_refusals_and_replay() -> None:
    led, made = _ledger_with(("user:alice", "a1"), ("user:alice", "a2"), ("user:bob", "b1"))
    stranger = led.run(ForgetSubject(envelope=f.envelope("user:bob", "user:alice")))
    assert stranger.outcome is Outcome.REJECTED and stranger.reasons[0].code == "NOT_SUBJECT"
    dry = led.run(ForgetSubject(envelope=f.envelope("user:alice", "user:alice"), dry_run=True))
    assert dry.outcome is Outcome.ACCEPTED and dry.reasons[0].code == "DRY_RUN" and not dry.effects
    assert sorted(dry.listed) == sorted(m.memory_id for m in made[:2]) and not dry.forgets and not dry.shred
    done = led.run(ForgetSubject(envelope=f.envelope("user:alice", "user:alice")))
    assert sorted(done.listed) == sorted(m.memory_id for m in made[:2])
    assert sorted(done.shred) == sorted(m.content.key_id for m in made[:2])
    assert not led.state.memories[made[2].memory_id].forgotten
    nothing = led.run(ForgetSubject(envelope=f.envelope("user:alice", "user:alice")))
    assert nothing.reasons[0].code == "NOTHING_TO_FORGET" and not nothing.listed
    by_admin = led.run(ForgetSubject(envelope=f.envelope("service:admin", "user:bob")))
    assert by_admin.listed == (made[2].memory_id,)
    replayed = _replay(led)
    assert replayed.memories == led.state.memories


def test_forget_matching_refuses_an_empty_selector_and_leaves_what_is_not_the_issuers() -> None:
    led, made = _ledger_with(("user:alice", "a1"), ("user:bob", "b1"))
    empty = led.run(_forget_many("user:alice"))
    assert empty.outcome is Outcome.REJECTED and empty.reasons[0].code == "EMPTY_SELECTOR" and not empty.forgets
    mixed = led.run(_forget_many("user:alice", subjects=("user:alice", "user:bob")))
    assert mixed.listed == (made[0].memory_id,) and [r.code for r in mixed.reasons] == ["OK"]  # bob's: invisible
    ghost = str(uuid.uuid4())
    unknown = led.run(_forget_many("user:bob", memory_ids=(ghost,)))
    assert unknown.outcome is Outcome.REJECTED and [r.code for r in unknown.reasons] == ["UNKNOWN_MEMORY"]
    # ids alone, none the issuer's: refused as a ForgetMemory of each would be (newcomer trial, nineteenth session:
    # `memwarden forget --memory <alice's id> --as user:bob` printed ACCEPTED and exited 0)
    led2, own = _ledger_with(("user:alice", "a2"), ("user:bob", "b2"))
    theirs = led2.run(_forget_many("user:bob", memory_ids=(own[0].memory_id, ghost)))
    assert theirs.outcome is Outcome.REJECTED and [r.code for r in theirs.reasons] == ["NOT_OWNER", "UNKNOWN_MEMORY"]
    assert not theirs.effects and not theirs.shred
    dry = led2.run(_forget_many("user:bob", dry_run=True, memory_ids=(own[0].memory_id,)))
    assert dry.outcome is Outcome.REJECTED and not dry.listed  # a dry run is the same decision
    partly = led2.run(_forget_many("user:bob", memory_ids=(own[0].memory_id, own[1].memory_id)))
    assert partly.outcome is Outcome.ACCEPTED and partly.listed == (own[1].memory_id,)
    assert [r.code for r in partly.reasons] == ["NOT_PERMITTED", "OK"]  # some forgotten: the rest counted
    assert _replay(led2).memories == led2.state.memories
    assert _replay(led).memories == led.state.memories


def test_a_query_that_matched_nothing_is_said_so_not_an_unknown_nil_id() -> None:
    """``memwarden forget --query ...`` whose read as the issuer found nothing printed ``UNKNOWN_MEMORY: no memory
    00000000-…`` (the client's stand-in for "nothing matched"; newcomer trial, nineteenth session)."""
    from memwarden.commands.forget_commands import NO_MATCH_ID

    led, _ = _ledger_with(("user:alice", "a1"))
    nothing = led.run(_forget_many("service:admin", "user:alice", memory_ids=(NO_MATCH_ID,)))
    assert nothing.outcome is Outcome.ACCEPTED and not nothing.forgets
    assert [r.code for r in nothing.reasons] == ["NOTHING_TO_FORGET", "QUERY_MATCHED_NOTHING"]
    assert "service:admin" in nothing.reasons[1].message and NO_MATCH_ID not in str(nothing.reasons)


def test_a_forget_by_ids_names_a_forgotten_memory_as_forgotten_not_unknown() -> None:
    """``memwarden forget --memory ID`` of a memory forgotten before says so (``ALREADY_FORGOTTEN``), as a
    ``ForgetMemory`` does, instead of calling it unknown (newcomer trial, nineteenth session)."""
    led, made = _ledger_with(("user:alice", "a1"))
    led.run(f.forget(made[0].memory_id, principal="user:alice", subject="user:alice"))
    again = led.run(_forget_many("user:alice", memory_ids=(made[0].memory_id,)))
    assert again.outcome is Outcome.ACCEPTED and not again.forgets and not again.shred
    assert [r.code for r in again.reasons] == ["NOTHING_TO_FORGET", "ALREADY_FORGOTTEN"]


def test_a_forget_by_id_cascades_to_every_derivative_whoever_wrote_it() -> None:
    src = _m("user:alice", memory_id=str(uuid.uuid4()), key_ids=("k1",))
    summary = _m("user:alice", memory_id=str(uuid.uuid4()), owner="agent:helper", derived_from=(src.memory_id,),
                 key_ids=("k2",))
    digest = _m("user:alice", memory_id=str(uuid.uuid4()), owner="agent:helper", derived_from=(summary.memory_id,),
                key_ids=("k3",))
    unrelated = _m("user:alice", key_ids=("k4",))
    state = GateState(principals=f.registry(), memories={m.memory_id: m for m in (src, summary, digest, unrelated)})
    signed, data = f.sign(f.forget(src.memory_id, principal="user:alice", subject="user:alice"))
    d = decide(signed, None, Position("mw.commands", 0, 1), state, NOW, signed_bytes=data)
    assert d.listed == (src.memory_id, summary.memory_id, digest.memory_id) and d.shred == ("k1", "k2", "k3")
    after = evolve(state, d)
    assert all(after.memories[m].forgotten for m in d.listed) and not after.memories[unrelated.memory_id].forgotten


def test_a_legal_hold_defers_a_forget_until_lifted_and_replays_the_same() -> None:
    led, made = _ledger_with(("user:alice", "a1"), ("user:alice", "a2"), ("user:bob", "b1"))
    not_admin = led.run(PlaceHold(envelope=f.envelope("user:alice", "user:alice"), hold_id="h1",
                                  subjects=("user:alice",)))
    assert not_admin.outcome is Outcome.REJECTED and not_admin.reasons[0].code == "NOT_ADMIN"
    led.run(PlaceHold(envelope=f.envelope("service:admin", "service:admin"), hold_id="h1",
                      subjects=("user:alice",)))
    led.run(PlaceHold(envelope=f.envelope("service:admin", "service:admin"), hold_id="h2",
                      subjects=("user:alice",)))
    again = led.run(PlaceHold(envelope=f.envelope("service:admin", "service:admin"), hold_id="h2",
                              subjects=("user:alice",)))
    assert again.admitted and again.reasons[0].code == "HOLD_REPLACED"
    waiting = led.run(f.forget(made[0].memory_id, principal="user:alice", subject="user:alice"))
    assert waiting.outcome is Outcome.DEFERRED and waiting.reasons[0].code == "LEGAL_HOLD"
    assert not waiting.forgets and not waiting.shred and not led.state.memories[made[0].memory_id].forgotten
    assert waiting.deferred == (made[0].memory_id,)
    everyone = led.run(_forget_many("service:admin", subjects=("user:alice", "user:bob")))
    assert everyone.outcome is Outcome.DEFERRED and everyone.listed == (made[2].memory_id,)  # bob's goes now
    first = led.run(LiftHold(envelope=f.envelope("service:admin", "service:admin"), hold_id="h1"))
    assert first.outcome is Outcome.ACCEPTED and not first.forgets  # h2 still covers alice
    second = led.run(LiftHold(envelope=f.envelope("service:admin", "service:admin"), hold_id="h2"))
    assert sorted(second.listed) == sorted(m.memory_id for m in made[:2])
    deferred_ids = {s.command.envelope.command_id for s in led.steps if s.live.outcome is Outcome.DEFERRED}
    assert {x.command_id for x in second.forgets} <= deferred_ids
    assert not led.state.deferred and all(led.state.memories[m.memory_id].forgotten for m in made)
    twice = led.run(LiftHold(envelope=f.envelope("service:admin", "service:admin"), hold_id="h2"))
    assert twice.reasons[0].code == "ALREADY_LIFTED" and not twice.effects
    unknown = led.run(LiftHold(envelope=f.envelope("service:admin", "service:admin"), hold_id="nope"))
    assert unknown.outcome is Outcome.REJECTED and unknown.reasons[0].code == "UNKNOWN_HOLD"
    replayed = _replay(led)
    assert replayed.memories == led.state.memories and replayed.holds == led.state.holds
    assert replayed.deferred == led.state.deferred


def test_a_forget_after_a_forget_of_the_same_memory_changes_nothing() -> None:
    led, made = _ledger_with(("user:alice", "a1"))
    led.run(_forget_many("user:alice", memory_ids=(made[0].memory_id,)))
    before = led.state
    again = led.run(_forget_many("user:alice", memory_ids=(made[0].memory_id,)))
    assert again.reasons[0].code == "NOTHING_TO_FORGET" and evolve(before, again) == before


def test_a_forget_of_a_held_command_discards_it_and_shreds_its_key() -> None:
    from tests.unit.test_recorded import INJECTED

    led = Ledger()
    held = f.record(INJECTED, principal="agent:helper", subject="user:alice")
    assert led.run(held, INJECTED, "d-inj").outcome is Outcome.QUARANTINED
    stranger = led.run(f.forget(held.memory_id, principal="user:bob", subject="user:alice"))
    assert stranger.outcome is Outcome.REJECTED and stranger.reasons[0].code == "NOT_OWNER"
    gone = led.run(f.forget(held.memory_id, principal="user:alice", subject="user:alice"))
    assert gone.outcome is Outcome.ACCEPTED and gone.reasons[0].code == "QUARANTINE_DISCARDED"
    assert gone.shred == (held.content.key_id,)
    assert led.state.quarantine[held.envelope.command_id].status == "rejected"
    again = led.run(f.forget(held.memory_id, principal="user:alice", subject="user:alice"))
    assert again.outcome is Outcome.REJECTED and again.reasons[0].code == "UNKNOWN_MEMORY"
    assert _replay(led).quarantine == led.state.quarantine


_M1, _M2 = str(uuid.uuid4()), str(uuid.uuid4())
_HELD = QuarantineState("c1", _M1, "agent:helper", "user:alice")


@pytest.mark.parametrize(("selector", "hit"), [
    (_sel(subjects=("user:alice",)), True), (_sel(subjects=("user:bob",)), False),
    (_sel(writers=("agent:helper",)), True), (_sel(writers=("user:alice",)), False),
    (_sel(memory_ids=(_M1,)), True), (_sel(memory_ids=(_M2,)), False),
    (_sel(subjects=("user:alice",), writers=("agent:helper",)), True),
    (_sel(subjects=("user:alice",), writers=("agent:other",)), False),  # AND across criteria
    # what a held command carries is known only to its review: any other criterion leaves it alone
    (_sel(subjects=("user:alice",), tags=("x",)), False), (_sel(subjects=("user:alice",), scopes=("work",)), False),
    (_sel(writers=("agent:helper",), admitted_from=NOW), False), (_sel(expired_before=NOW), False),
    (_sel(), False),
])
def test_a_held_command_falls_under_a_selector_only_by_subject_writer_or_id(selector: ForgetSelector,
                                                                             hit: bool) -> None:
    assert held_selected(selector, _HELD) is hit
    assert not held_selected(selector, replace(_HELD, status="rejected"))  # only pending ones


def test_erasing_a_subject_discards_its_held_commands_so_no_approval_brings_them_back() -> None:
    """D1 of the nineteenth session's newcomer trial: ``ForgetSubject`` forgot bob's memories but left his
    quarantined write pending, and a reviewer's approval then admitted it after the erasure."""
    from memwarden.commands.model import ApproveQuarantined
    from tests.unit.test_recorded import INJECTED

    led, made = _ledger_with(("user:alice", "a1"))
    held = f.record(INJECTED, principal="agent:helper", subject="user:alice")
    assert led.run(held, INJECTED, "d-inj").outcome is Outcome.QUARANTINED
    other = f.record(INJECTED + " (bob)", principal="agent:helper", subject="user:bob")
    assert led.run(other, INJECTED + " (bob)", "d-inj-bob").outcome is Outcome.QUARANTINED
    dry = led.run(ForgetSubject(envelope=f.envelope("user:alice", "user:alice"), dry_run=True))
    assert "QUARANTINE_DISCARDED" in [r.code for r in dry.reasons] and not dry.effects and not dry.shred
    assert led.state.quarantine[held.envelope.command_id].status == "pending"
    done = led.run(ForgetSubject(envelope=f.envelope("user:alice", "user:alice")))
    assert done.outcome is Outcome.ACCEPTED and [r.code for r in done.reasons] == ["QUARANTINE_DISCARDED", "OK"]
    assert sorted(done.shred) == sorted((made[0].content.key_id, held.content.key_id))
    assert led.state.quarantine[held.envelope.command_id].status == "rejected"
    assert led.state.quarantine[other.envelope.command_id].status == "pending"  # another subject's: untouched
    late = led.run(ApproveQuarantined(envelope=f.envelope("user:rita", "user:alice"),
                                      quarantined_command_id=held.envelope.command_id))
    assert late.outcome is Outcome.REJECTED and late.reasons[0].code == "ALREADY_REVIEWED"
    assert _replay(led).quarantine == led.state.quarantine


def test_a_forget_of_many_discards_the_held_commands_it_names_that_the_issuer_may_discard() -> None:
    from tests.unit.test_recorded import INJECTED

    led = Ledger()
    held = f.record(INJECTED, principal="agent:helper", subject="user:alice")
    assert led.run(held, INJECTED, "d-inj").outcome is Outcome.QUARANTINED
    stranger = led.run(_forget_many("user:bob", memory_ids=(held.memory_id,)))
    assert stranger.outcome is Outcome.REJECTED and [r.code for r in stranger.reasons] == ["NOT_OWNER"]
    assert not stranger.shred
    tagged = led.run(_forget_many("user:alice", subjects=("user:alice",), tags=("x",)))
    assert [r.code for r in tagged.reasons] == ["NOTHING_TO_FORGET"]  # a held command has no known tags
    by_id = led.run(_forget_many("user:alice", memory_ids=(held.memory_id,)))
    assert by_id.outcome is Outcome.ACCEPTED and [r.code for r in by_id.reasons] == [
        "NOTHING_TO_FORGET", "QUARANTINE_DISCARDED"]
    assert by_id.shred == (held.content.key_id,)
    assert led.state.quarantine[held.envelope.command_id].status == "rejected"
    assert _replay(led).quarantine == led.state.quarantine


def test_a_forget_recorded_before_discards_existed_replays_as_it_was_decided() -> None:
    """Replay keeps what the ledger recorded: a ``ForgetSubject`` recorded without ``QUARANTINE_DISCARDED``
    (decided before forgets of many discarded held commands) leaves its subject's held command pending."""
    from memwarden.commands.gate.recorded import RecordedDecision, from_record
    from tests.unit.test_recorded import INJECTED

    led = Ledger()
    held = f.record(INJECTED, principal="agent:helper", subject="user:alice")
    led.run(held, INJECTED, "d-inj")
    erase = ForgetSubject(envelope=f.envelope("user:alice", "user:alice"))
    old = RecordedDecision(Outcome.ACCEPTED, (Reason("NOTHING_TO_FORGET", "no live memory matched"),), NOW,
                           "default/1", "gate/0.2.0")
    replayed = from_record(erase, old, led.state)
    assert evolve(led.state, replayed).quarantine[held.envelope.command_id].status == "pending"
    assert not replayed.shred


def test_what_the_issuer_may_not_forget_is_never_counted_unless_named_by_id() -> None:
    """A forget by criteria told its issuer how many of someone else's memories matched ("1 matching memories are
    not user:bob's to forget"): by tags, writers or sources, a count of what others hold (newcomer trials,
    twentieth session). The answer is now the same whether others' memories match or nothing does; a memory
    named by id is still counted (whoever holds an id knows it exists)."""
    led, made = _ledger_with(("user:alice", "a1"), ("user:bob", "b1"))
    probe = led.run(_forget_many("user:bob", writers=("user:alice",), dry_run=True))
    blank = led.run(_forget_many("user:bob", writers=("user:nobody",), dry_run=True))
    assert [(r.code, r.message) for r in probe.reasons] == [(r.code, r.message) for r in blank.reasons]
    assert [r.code for r in probe.reasons] == ["DRY_RUN"] and not probe.listed
    named = led.run(_forget_many("user:bob", writers=("user:alice", "user:bob"),
                                 memory_ids=(made[0].memory_id, made[1].memory_id), dry_run=True))
    assert named.listed == (made[1].memory_id,) and "NOT_PERMITTED" in [r.code for r in named.reasons]


def test_a_forgotten_memory_is_already_forgotten_only_to_whoever_may_forget_it() -> None:
    """bob's forget of alice's forgotten memory answered ACCEPTED ``ALREADY_FORGOTTEN`` (a refusal that looks like
    success, and the timeline of alice's memory then showed bob's forget; newcomer trial, twentieth session)."""
    led, made = _ledger_with(("user:alice", "a1"))
    mid = made[0].memory_id
    led.run(f.forget(mid, principal="user:alice", subject="user:alice"))
    for cmd, code in ((f.forget(mid, principal="user:bob", subject="user:alice"), "NOT_OWNER"),
                      (f.forget(mid, principal="user:bob", subject="user:bob"), "NOT_OWNER"),  # never whose it is
                      (_forget_many("user:bob", memory_ids=(mid,)), "NOT_OWNER")):
        refused = led.run(cmd)
        assert refused.outcome is Outcome.REJECTED and refused.reasons[0].code == code, cmd
    again = led.run(f.forget(mid, principal="user:alice", subject="user:alice"))
    assert again.outcome is Outcome.ACCEPTED and [r.code for r in again.reasons] == ["ALREADY_FORGOTTEN"]


def test_a_held_write_about_a_subject_under_a_legal_hold_is_kept_by_an_erasure() -> None:
    """A hold beats every forget: an erasure of a subject under a legal hold waited for its memories but still
    discarded and shredded the writes about it held for review (newcomer trial, twentieth session)."""
    from tests.unit.test_recorded import INJECTED

    led, made = _ledger_with(("user:alice", "a1"))
    held = f.record(INJECTED, principal="agent:helper", subject="user:alice")
    assert led.run(held, INJECTED, "d-inj").outcome is Outcome.QUARANTINED
    led.run(PlaceHold(envelope=f.envelope("service:admin", "service:admin"), hold_id="h1", subjects=("user:alice",)))
    done = led.run(ForgetSubject(envelope=f.envelope("user:alice", "user:alice")))
    assert done.outcome is Outcome.DEFERRED and "QUARANTINE_DISCARDED" not in [r.code for r in done.reasons]
    assert [r.code for r in done.reasons].count("LEGAL_HOLD") == 2 and held.content.key_id not in done.shred
    assert led.state.quarantine[held.envelope.command_id].status == "pending"
    by_id = led.run(f.forget(held.memory_id, principal="user:alice", subject="user:alice"))
    assert by_id.outcome is Outcome.REJECTED and by_id.reasons[0].code == "LEGAL_HOLD" and not by_id.shred
    assert _replay(led).quarantine == led.state.quarantine
