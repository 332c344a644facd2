"""Thread context in hybrid ranking (issue 12 item 6): the pure lift of a memory whose predecessor matched."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memwarden.commands.readmodel.thread_context import FOLLOW_LIFT, lift_followers, predecessors


def point(pid: str, memory: str, scope: str = "conversation:c", follows: str | None = None) -> dict[str, str]:
    payload = {"memory_id": memory, "scope": scope}
    if follows is not None:
        payload["follows"] = follows
    return payload


def test_a_reply_whose_question_matched_outranks_an_unrelated_weaker_hit() -> None:
    # q (the question turn) matched best; a (its reply) matched weakly; x is unrelated but above a
    fused = [("p-q", 1.0, point("p-q", "q")), ("p-x", 0.5, point("p-x", "x")),
             ("p-a", 0.2, point("p-a", "a", follows="q"))]
    ranked = lift_followers(fused)
    assert [pid for pid, _, _ in ranked] == ["p-q", "p-a", "p-x"]
    assert math.isclose(ranked[1][1], 0.2 + FOLLOW_LIFT * 1.0)


def test_a_follower_that_was_not_a_candidate_enters_with_the_lift_alone() -> None:
    fused = [("p-q", 0.9, point("p-q", "q"))]
    followers = [("p-a", 0.1, point("p-a", "a", follows="q"))]
    ranked = lift_followers(fused, followers)
    assert [(pid, round(score, 6)) for pid, score, _ in ranked] == [("p-q", 0.9), ("p-a", round(FOLLOW_LIFT * 0.9, 6))]


def test_the_lift_needs_the_same_scope_and_a_fused_predecessor() -> None:
    fused = [("p-q", 1.0, point("p-q", "q", scope="conversation:c")),
             ("p-b", 0.3, point("p-b", "b", scope="conversation:other", follows="q")),
             ("p-c", 0.3, point("p-c", "c", follows="never-fused"))]
    followers = [("p-d", 0.0, point("p-d", "d", scope="conversation:other", follows="q"))]
    ranked = {pid: score for pid, score, _ in lift_followers(fused, followers)}
    assert ranked == {"p-q": 1.0, "p-b": 0.3, "p-c": 0.3}  # no lift across scopes; d stays out


def test_a_memory_with_several_points_lifts_by_its_best_and_a_point_never_lifts_itself() -> None:
    fused = [("p-q1", 0.4, point("p-q1", "q")), ("p-q2", 0.8, point("p-q2", "q")),
             ("p-s", 0.5, point("p-s", "s", follows="s")), ("p-a", 0.0, point("p-a", "a", follows="q"))]
    ranked = {pid: score for pid, score, _ in lift_followers(fused)}
    assert math.isclose(ranked["p-a"], FOLLOW_LIFT * 0.8)
    assert ranked["p-s"] == 0.5


def test_duplicates_count_once_and_weight_zero_only_sorts() -> None:
    fused = [("p-b", 0.2, point("p-b", "b", follows="a")), ("p-a", 0.7, point("p-a", "a"))]
    followers = [("p-b", 9.0, point("p-b", "b", follows="a"))]
    assert [(p, s) for p, s, _ in lift_followers(fused, followers, weight=0.0)] == [("p-a", 0.7), ("p-b", 0.2)]
    assert len(lift_followers(fused, followers)) == 2


@pytest.mark.parametrize("weight", [-0.1, float("nan"), float("inf")])
def test_a_bad_weight_is_refused(weight: float) -> None:
    with pytest.raises(ValueError, match="weight"):
        lift_followers([], weight=weight)


def test_predecessors_are_the_fused_memory_ids_best_first_without_repeats() -> None:
    fused = [("1", 0.9, point("1", "m1")), ("2", 0.8, point("2", "m2")), ("3", 0.7, point("3", "m1"))]
    assert predecessors(fused) == ("m1", "m2")


scores = st.floats(min_value=0.0, max_value=2.0, allow_nan=False)


@given(st.lists(st.tuples(scores, st.integers(0, 5), st.one_of(st.none(), st.integers(0, 5))), max_size=12),
       st.lists(st.tuples(st.integers(0, 5), st.one_of(st.none(), st.integers(0, 5))), max_size=6))
def test_the_lift_never_lowers_a_score_nor_invents_a_point(fused_spec: list[tuple[float, int, int | None]],
                                                          follower_spec: list[tuple[int, int | None]]) -> None:
    fused = [(f"f{i}", s, point(f"f{i}", f"m{m}", follows=None if p is None else f"m{p}"))
             for i, (s, m, p) in enumerate(fused_spec)]
    followers = [(f"g{i}", 0.0, point(f"g{i}", f"n{i}", follows=None if p is None else f"m{p}"))
                 for i, (_, p) in enumerate(follower_spec)]
    ranked = lift_followers(fused, followers)
    before = {pid: s for pid, s, _ in fused}
    fused_memories = {p["memory_id"] for _, _, p in fused}
    for pid, score, payload in ranked:
        if pid in before:
            assert score >= before[pid]
        else:  # a follower enters only through a fused predecessor
            assert payload["follows"] in fused_memories
    assert [s for _, s, _ in ranked] == sorted((s for _, s, _ in ranked), reverse=True)


def test_a_lifted_memory_inherits_part_of_its_predecessors_relevance() -> None:
    from memwarden.commands.readmodel.thread_context import inherited_relevance

    assert inherited_relevance(0.1, 0.9) == round(FOLLOW_LIFT * 0.9, 6)  # a reply keeps its question's floor
    assert inherited_relevance(0.8, 0.9) == 0.8  # never lowers its own
    assert inherited_relevance(0.2, None) == 0.2
    assert inherited_relevance(0.0, 1.7) == FOLLOW_LIFT and inherited_relevance(0.0, -1.0) == 0.0  # clamped
    # a nonsense query stays empty under the recommended floor: 0.6 x the best nonsense relevance stays below it
    assert inherited_relevance(0.0, 0.5) < 0.35


def test_lifted_by_names_a_fused_predecessor_of_the_same_scope_only() -> None:
    from memwarden.commands.readmodel.thread_context import lifted_by

    fused = {"q": "conversation:c", "x": "conversation:other"}
    assert lifted_by(point("a", "a", follows="q"), fused) == "q"
    assert lifted_by(point("a", "a", follows="x"), fused) is None  # another scope
    assert lifted_by(point("a", "a", follows="z"), fused) is None  # not fused
    assert lifted_by(point("q", "q", follows="q"), fused) is None  # itself
    assert lifted_by(point("a", "a"), fused) is None


def test_lifts_say_who_lifted_whom_and_a_failed_predecessor_takes_its_lift_back() -> None:
    from memwarden.commands.readmodel.thread_context import lifts, without_lifts

    fused = [("p-q", 1.0, {**point("p-q", "q"), "command_id": "c-q"}), ("p-x", 0.5, point("p-x", "x")),
             ("p-b", 0.3, point("p-b", "b", follows="q"))]
    followers = [("p-a", 0.0, point("p-a", "a", follows="q"))]
    ranked = lifts(fused, followers)
    by_id = {e.point_id: e for e in ranked}
    assert by_id["p-a"].own is None and by_id["p-a"].by == "q" and by_id["p-a"].by_command == "c-q"
    assert math.isclose(by_id["p-b"].gain, FOLLOW_LIFT) and by_id["p-b"].own == 0.3
    assert by_id["p-x"].by is None and by_id["p-x"].gain == 0.0
    back = without_lifts(ranked, {"q"})  # q forgotten before the index knew: no lift from it
    assert [(e.point_id, e.score) for e in back] == [("p-q", 1.0), ("p-x", 0.5), ("p-b", 0.3)]
