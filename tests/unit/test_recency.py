"""Recency in ranking for current-value questions (issue 12 item 5): the pure re-scoring and the query test."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memwarden.commands.readmodel.query import check_query
from memwarden.commands.readmodel.recency import (
    CURRENT_WEIGHT,
    asks_for_current,
    by_recency,
    recency_factors,
    recency_weight,
)
from memwarden.commands.readmodel.thread_context import Lifted, without_lifts
from memwarden.errors import ValidationError


def cand(pid: str, score: float, valid_from_ms: int | None, **lift: object) -> Lifted:
    payload: dict[str, object] = {"memory_id": pid, "command_id": f"c-{pid}"}
    if valid_from_ms is not None:
        payload["valid_from_ms"] = valid_from_ms
    return Lifted(pid, score, payload, lift.pop("own", score), **lift)  # type: ignore[arg-type]


@pytest.mark.parametrize("query", [
    "As of now, what is Project Maple's current approved budget?",
    "what is the CURRENTLY approved discount",
    "Where does Melanie live now?",
    "the latest release date of the app",
    "What is the most recent status of the ticket?",
    "Is the up-to-date roster posted?",
    "what is the final household-safe state",
    "Does she still play the violin?",
    "Is he not working there anymore?",
])
def test_questions_about_the_present_state_ask_for_current(query: str) -> None:
    assert asks_for_current(query)
    assert recency_weight(query, None) == CURRENT_WEIGHT


@pytest.mark.parametrize("query", [
    "What did Caroline research?",
    "When did Melanie paint a sunrise?",
    "What is the budget of Project Maple?",
    "Which currency does the invoice use?",    # "currency" is not "current"
    "Tell me about the snowy knowledge base",  # "know" is not "now"
    "What was the original target date?",
])
def test_other_questions_rank_by_relevance_alone(query: str) -> None:
    assert not asks_for_current(query)
    assert recency_weight(query, None) == 0.0


def test_an_explicit_weight_wins_over_the_query() -> None:
    assert recency_weight("what is the current budget", 0) == 0.0
    assert recency_weight("what is the budget", 2.5) == 2.5
    assert CURRENT_WEIGHT == 2.0  # chosen on GateMem dev (README)


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), "1", True, 100.5])
def test_a_bad_weight_is_refused_naming_the_field(bad: object) -> None:
    with pytest.raises(ValueError):
        recency_weight("q", bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError) as err:
        check_query("alice", "q", 10, None, recency=bad)
    assert err.value.field == "recency"


def test_factors_are_dense_ranks_in_time_oldest_one_newest_one_plus_weight() -> None:
    assert recency_factors([30, 10, 20, 10], 1.0) == [2.0, 1.0, 1.5, 1.0]
    assert recency_factors([5, 5, 5], 3.0) == [1.0, 1.0, 1.0]
    assert recency_factors([], 1.0) == []
    assert recency_factors([1, 2], 0.0) == [1.0, 1.0]


def test_the_newer_statement_of_a_value_outranks_the_older_one_it_nearly_ties() -> None:
    old = cand("budget-262k", 1.00, 1_000)
    new = cand("budget-221k", 0.90, 9_000)
    other = cand("unrelated", 0.40, 5_000)
    assert [e.point_id for e in by_recency([old, new, other], 0.0)] == ["budget-262k", "budget-221k", "unrelated"]
    ranked = by_recency([old, new, other], 1.0)
    assert [e.point_id for e in ranked] == ["budget-221k", "budget-262k", "unrelated"]
    assert math.isclose(ranked[0].score, 0.90 * 2.0)
    assert math.isclose(ranked[1].score, 1.00)


def test_recency_never_adds_or_drops_a_candidate_and_keeps_the_lift_bookkeeping() -> None:
    ranked = [cand("q", 1.0, 100), cand("a", 0.6, 200, own=None, by="q", by_command="c-q", gain=0.6),
              cand("x", 0.2, None)]
    out = by_recency(ranked, 1.0)
    assert sorted(e.point_id for e in out) == ["a", "q", "x"]
    a = next(e for e in out if e.point_id == "a")
    assert (a.own, a.by, a.by_command, a.gain) == (None, "q", "c-q", 0.6)
    # a candidate without a time counts as the oldest: factor 1
    assert next(e for e in out if e.point_id == "x").score == 0.2
    # the predecessor's lift taken back first, then recency: the follower that was no candidate leaves
    assert [e.point_id for e in by_recency(without_lifts(ranked, {"q"}), 1.0)] == ["q", "x"]


@pytest.mark.parametrize("weight", [1.0, 2.0, 50.0])
def test_a_negative_score_is_divided_so_newer_never_loses_and_order_within_a_time_holds(weight: float) -> None:
    out = by_recency([cand("old", -0.5, 1), cand("new", -0.5, 2)], weight)
    assert [e.point_id for e in out] == ["new", "old"]
    assert math.isclose(out[0].score, -0.5 / (1 + weight))
    # same time: a more negative cosine stays below a less negative one, and below any positive one
    same = by_recency([cand("a", 0.5, 1), cand("b", -0.1, 2), cand("c", -0.9, 2)], weight)
    assert [e.point_id for e in same] == ["a", "b", "c"]


def test_the_top_of_a_context_takes_lifts_back_before_recency() -> None:
    from memwarden.projections.recall import InContext
    ranked = [cand("q", 1.0, 100), cand("a", 0.9, 300, own=0.3, by="q", by_command="c-q", gain=0.6),
              cand("x", 0.5, 200)]
    found = InContext(ranked, recency=2.0, episode=0.0)  # the episode lift apart (test_episodes.py)
    assert [(e.point_id, round(e.score, 6)) for e in found.top(3, frozenset({"q"}))] == \
        [(e.point_id, round(e.score, 6)) for e in by_recency(without_lifts(ranked, {"q"}), 2.0)]
    assert next(e for e in found.top(3, frozenset({"q"})) if e.point_id == "a").score == 0.3 * 3.0


@given(st.lists(st.tuples(st.floats(-1, 10, allow_nan=False), st.integers(0, 10**13)), min_size=1, max_size=30),
       st.floats(0, 50, allow_nan=False))
def test_recency_only_reorders_and_never_lowers_a_score(items: list[tuple[float, int]], weight: float) -> None:
    ranked = sorted((cand(f"p{i}", s, t) for i, (s, t) in enumerate(items)), key=lambda e: (-e.score, e.point_id))
    out = by_recency(ranked, weight)
    assert sorted(e.point_id for e in out) == sorted(e.point_id for e in ranked)
    before = {e.point_id: e.score for e in ranked}
    assert all(e.score >= before[e.point_id] - 1e-12 for e in out)
    assert all(a.score >= b.score for a, b in zip(out, out[1:], strict=False))
    # within one time the order by score is kept, negative scores included
    by_time: dict[int, list[float]] = {}
    for e in out:
        by_time.setdefault(int(e.payload["valid_from_ms"]), []).append(before[e.point_id])
    assert all(v == sorted(v, reverse=True) for v in by_time.values())
    # among equal relevance the newest comes first
    if weight > 1e-6 and len({s for s, _ in items}) == 1 and items[0][0] != 0:
        assert int(out[0].payload["valid_from_ms"]) == max(t for _, t in items)
