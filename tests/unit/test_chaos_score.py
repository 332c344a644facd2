"""The chaos evaluation's scoring (issue 13 part 4), pure: what counts as lost, duplicated, undecided,
unrecallable, falsely ready and recovered."""

from __future__ import annotations

from memwarden.evals.chaos_load import Ack, Outcome
from memwarden.evals.chaos_score import Decided, Window, health_false_ok_s, live_memories, passed, score_fault

W = Window("postgres", start=100.0, killed=110.0, restarted=116.0, back=117.0, end=130.0)


def ack(cid: str, at: float, kind: str = "record", memory: str = "m1", offset: int = 0) -> Ack:
    return Ack(kind, cid, memory, f"mark-{cid}", 0, offset, at)


def decided(outcome: str = "ACCEPTED", at: float = 1.0, *ids: str) -> list[Decided]:
    return [Decided(i, outcome, at) for i in (ids or ("d",))]


def test_live_memories_follow_accepted_writes_in_acknowledgement_order() -> None:
    acks = [ack("c1", 1, memory="m1"), ack("c2", 2, memory="m2"), ack("c3", 3, "supersede", "m1"),
            ack("c4", 4, "forget", "m2"), ack("c5", 5, "supersede", "m1")]
    decisions = {"c1": decided(), "c2": decided(), "c3": decided(), "c4": decided(), "c5": decided("REJECTED")}
    live = live_memories(acks, decisions)
    assert set(live) == {"m1"} and live["m1"].command_id == "c3"  # the rejected supersession changes nothing


def test_a_write_without_a_decision_leaves_nothing_live() -> None:
    assert live_memories([ack("c1", 1)], {}) == {}


def test_a_ready_answer_counts_only_when_its_whole_call_ran_while_the_component_was_down() -> None:
    probes = [Outcome(109.0, True, "", 109.5),    # answered during the outage but sent before the kill
              Outcome(111.0, True, "", 111.2),    # false: sent and answered while down -> until the next answer
              Outcome(112.0, False, "503", 112.5),
              Outcome(116.5, True, "", 117.4)]    # straddles the restart: may have seen it back
    assert health_false_ok_s(probes, 110.0, 117.0) == 112.5 - 111.2
    assert health_false_ok_s([Outcome(111.0, True, "", 111.1)], 110.0, 117.0) == 117.0 - 111.1
    assert health_false_ok_s([Outcome(111.0, False, "x", 111.1)], 110.0, 117.0) == 0.0


def test_score_counts_lost_duplicated_undecided_and_unrecallable_in_the_fault_slice() -> None:
    acks = [ack("ok", 105, offset=1), ack("lost", 111, offset=2), ack("dup", 112, offset=3),
            ack("undecided", 113, offset=4), ack("missing", 118, offset=5), ack("elsewhere", 140, offset=6)]
    on_ledger = {(0, 1), (0, 3), (0, 4), (0, 5), (0, 6)}
    decisions = {"ok": decided(at=105.5), "dup": decided("ACCEPTED", 118.0, "d1", "d2"),
                 "missing": [Decided("m", "ACCEPTED", 118.5), Decided("m", "ACCEPTED", 118.5)]}  # a re-send: one
    f = score_fault(W, acks, on_ledger, decisions, {"missing"}, [], {}, [])
    assert (f["acknowledged"], f["lost"], f["duplicated"], f["undecided_after_recovery"], f["unrecallable"]) == (
        5, 1, 1, 1, 1)
    assert f["recovery_s"] == 2.0  # restart at 116, first decision after it at 118
    assert f["read_error_rate"] is None and f["down_s"] == 7.0 and f["restart_s"] == 1.0


def test_projector_recovery_is_the_first_successful_read_after_the_restart() -> None:
    w = Window("projector", 100.0, 110.0, 116.0, 120.0, 130.0)
    reads = [Outcome(111.0, False, "down", 111.1), Outcome(115.0, True, "", 115.1),
             Outcome(119.0, False, "down", 119.1), Outcome(121.0, True, "", 121.2)]
    f = score_fault(w, [], set(), {"x": decided(at=117.0)}, set(), reads, {}, [])
    assert f["recovery_s"] == 5.0  # not the gate's decision at 117: the projector serves reads
    assert f["reads_while_down"] == 3 and f["read_error_rate"] == round(2 / 3, 3)


def test_only_the_dependent_probes_count_for_a_worker_fault() -> None:
    w = Window("gate", 100.0, 110.0, 116.0, 117.0, 130.0)
    probes = {"projector": [Outcome(111.0, True, "", 111.5)], "gate": [Outcome(111.0, False, "Connect", 111.1)]}
    assert score_fault(w, [], set(), {}, set(), [], probes, [])["health_false_ok_s"] == 0.0
    pg = Window("postgres", 100.0, 110.0, 116.0, 117.0, 130.0)
    assert score_fault(pg, [], set(), {}, set(), [], probes, [])["health_false_ok_s"] == 5.5


def test_a_ready_answer_after_the_last_probe_that_found_the_component_down_is_no_false_ok() -> None:
    probes = {"gate": [Outcome(111.0, True, "", 111.2), Outcome(115.5, True, "", 115.8)], "projector": []}
    w = Window("broker", 100.0, 110.0, 113.0, 116.0, 130.0, down_until=115.0)
    assert score_fault(w, [], set(), {}, set(), [], probes, [])["health_false_ok_s"] == 3.8
    assert Window("broker", 100.0, 110.0, 113.0, 116.0, 130.0).surely_down_until == 116.0


def test_passed_needs_every_zero_goal_and_a_recovery() -> None:
    good = {"lost": 0, "duplicated": 0, "undecided_after_recovery": 0, "unrecallable": 0, "health_false_ok_s": 0.0,
            "recovery_s": 3.0}
    assert passed({"broker": good})
    for goal in ("lost", "duplicated", "undecided_after_recovery", "unrecallable", "health_false_ok_s"):
        assert not passed({"broker": good, "gate": {**good, goal: 1}})
    assert not passed({"broker": {**good, "recovery_s": None}})
