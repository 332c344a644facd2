"""The relevance scale of recall (issue 12, field case Q1): the pure scoring functions, the floor's
checks, the result's report, and ``min_score`` in the request parsers."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

import pydantic
import pytest

from memwarden.api.bodies import RecallBody
from memwarden.commands.readmodel.query import Recalled, RecalledMemory, check_query
from memwarden.commands.readmodel.relevance import (
    RECOMMENDED_MIN_SCORE,
    check_min_score,
    clamp,
    cosine,
    coverage,
    relevance,
)
from memwarden.errors import ValidationError
from memwarden.projections.sparse import tokens
from memwarden.read_api.requests import recall_request

# -- cosine --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("a", "b", "expected"), [
    ([1.0, 0.0], [1.0, 0.0], 1.0),
    ([1.0, 0.0], [3.0, 0.0], 1.0),  # scale-free
    ([1.0, 0.0], [0.0, 1.0], 0.0),  # orthogonal
    ([1.0, 0.0], [-1.0, 0.0], 0.0),  # opposite: clamped to 0
    ([1.0, 1.0], [1.0, 0.0], 1 / math.sqrt(2)),
    ([0.0, 0.0], [1.0, 0.0], 0.0),  # zero vector
    ([1.0, 0.0], [0.0, 0.0], 0.0),
    ([0.0, 0.0], [0.0, 0.0], 0.0),
    ([], [], 0.0),  # empty
    ([1.0], [1.0, 0.0], 0.0),  # lengths differ
    ([math.nan, 1.0], [1.0, 1.0], 0.0),  # not finite
    ([math.inf, 1.0], [1.0, 1.0], 0.0),
])
def test_cosine(a: list[float], b: list[float], expected: float) -> None:
    assert cosine(a, b) == pytest.approx(expected)
    assert 0.0 <= cosine(a, b) <= 1.0


# -- coverage ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("query", "memory", "expected"), [
    ([], ["tea"], 0.0),  # no query term (stopwords only)
    ([], [], 0.0),
    (["tea"], [], 0.0),
    (["tea"], ["tea", "cake"], 1.0),
    (["tea", "cake"], ["tea"], 0.5),
    (["tea", "tea", "cake"], ["tea"], 0.5),  # distinct query terms
    (["tea"], ["tea", "tea"], 1.0),
    (["a", "b", "c"], ["x"], 0.0),
])
def test_coverage(query: list[str], memory: list[str], expected: float) -> None:
    assert coverage(query, memory) == pytest.approx(expected)


def test_coverage_of_a_query_of_stopwords_only_is_zero() -> None:
    assert tokens("what is the") == []
    assert coverage(tokens("what is the"), tokens("what is the weather")) == 0.0


@pytest.mark.parametrize(("query", "memory"), [
    ("成语接龙", "今天玩成语接龙游戏"),
    ("紅葉", "週末は京都で紅葉を見ました"),
    ("도서관", "오늘은 도서관에서 공부했어요"),
])
def test_a_cjk_query_is_fully_covered_by_the_memory_holding_it(query: str, memory: str) -> None:
    assert coverage(tokens(query), tokens(memory)) == 1.0
    assert relevance(0.0, coverage(tokens(query), tokens(memory))) == 1.0


def test_a_cjk_query_shares_little_with_an_unrelated_cjk_memory() -> None:
    assert coverage(tokens("紅葉"), tokens("今天玩成语接龙游戏")) == 0.0
    partial = coverage(tokens("京都大学"), tokens("週末は京都で紅葉を見ました"))  # 京, 都, 京都 of 7 terms
    assert 0.0 < partial < RECOMMENDED_MIN_SCORE + 0.1


def test_a_nonsense_token_covers_nothing() -> None:
    assert coverage(tokens("zxqv-unknown-token"), tokens("Dana waters the tomato plants")) == 0.0


# -- relevance, clamp, the floor's check -------------------------------------------------------------------


@pytest.mark.parametrize(("cos", "cov", "expected"), [
    (0.0, 0.0, 0.0),
    (0.42, 0.0, 0.42),
    (0.0, 0.5, 0.5),
    (0.3, 0.6, 0.6),
    (0.7, 0.2, 0.7),
    (-0.5, 0.0, 0.0),
    (1.5, 0.0, 1.0),
    (math.nan, 0.25, 0.25),
    (0.1234567891, 0.0, 0.123457),  # rounded to 6 decimals
])
def test_relevance_is_the_larger_signal_in_0_1(cos: float, cov: float, expected: float) -> None:
    assert relevance(cos, cov) == pytest.approx(expected)


@pytest.mark.parametrize(("value", "expected"), [(-1.0, 0.0), (0.0, 0.0), (0.5, 0.5), (2.0, 1.0), (math.nan, 0.0)])
def test_clamp(value: float, expected: float) -> None:
    assert clamp(value) == expected


@pytest.mark.parametrize("value", [0, 0.0, 0.35, 1, 1.0])
def test_good_floors(value: Any) -> None:
    assert check_min_score(value) == float(value)
    check_query("user:a", "tea", 10, None, min_score=value)


@pytest.mark.parametrize("value", [-0.01, 1.01, True, False, "0.3", None, math.nan, math.inf])
def test_bad_floors_name_min_score(value: Any) -> None:
    with pytest.raises(ValueError, match="number in"):
        check_min_score(value)
    with pytest.raises(ValidationError) as err:
        check_query("user:a", "tea", 10, None, min_score=value)
    assert err.value.field == "min_score"


# -- the result ------------------------------------------------------------------------------------------


def _memory(relevance: float = 0.5) -> RecalledMemory:
    return RecalledMemory(memory_id="m", version=1, text="t", score=1.4, principal="user:a", subject="user:a",
                          scope="personal", source_kind="USER_STATEMENT", source_ref=None, observed_at="x",
                          valid_from="x", valid_to=None, status="ACTIVE", ledger_topic="t", ledger_partition=0,
                          ledger_offset=0, relevance=relevance)


def test_an_empty_recall_below_the_floor_says_so() -> None:
    found = Recalled([], 0.35, 3)
    assert found.nothing_relevant
    assert found.to_json() == {"memories": [], "min_score": 0.35, "below_floor": 3, "reason": "BELOW_FLOOR"}
    back = Recalled.from_json(found.to_json())
    assert list(back) == [] and back.below_floor == 3 and back.min_score == 0.35 and back.nothing_relevant


def test_a_recall_with_no_hit_at_all_is_not_below_the_floor() -> None:
    assert not Recalled([], 0.35, 0).nothing_relevant
    assert "reason" not in Recalled([], 0.35, 0).to_json()


def test_a_recall_keeps_its_memories_and_relevance_through_json() -> None:
    found = Recalled([_memory(0.61)], 0.35, 1)
    assert not found.nothing_relevant
    back = Recalled.from_json(found.to_json())
    assert list(back) == [_memory(0.61)] and back.below_floor == 1


def test_an_old_response_reads_as_floor_zero() -> None:
    memory = _memory().to_json()
    del memory["relevance"]
    back = Recalled.from_json({"memories": [memory]})
    assert back.min_score == 0.0 and back.below_floor == 0 and back[0].relevance == 0.0


# -- the parsers -----------------------------------------------------------------------------------------


def test_recall_request_reads_min_score() -> None:
    body = {"principal": "user:a", "query": "tea"}
    assert recall_request(body).min_score == 0.0
    assert recall_request({**body, "min_score": None}).min_score == 0.0
    assert recall_request({**body, "min_score": 0.35}).min_score == 0.35
    assert recall_request({**body, "min_score": 1}).min_score == 1.0
    for bad in (-0.1, 1.5, "high", True):
        with pytest.raises(ValidationError) as err:
            recall_request({**body, "min_score": bad})
        assert err.value.field == "min_score"


def test_the_rest_body_takes_min_score_in_0_1() -> None:
    assert RecallBody.model_validate({"query": "tea"}).min_score == 0.0
    assert RecallBody.model_validate({"query": "tea", "min_score": 0.35}).min_score == 0.35
    for bad in (-0.1, 1.5):
        with pytest.raises(pydantic.ValidationError):
            RecallBody.model_validate({"query": "tea", "min_score": bad})


@pytest.mark.parametrize(("field", "value", "words"), [
    ("as_of", "2026-12-01T00:00:00Z", "got str (parse text first"),
    ("known_at", "2026-12-01T00:00:00Z", "got str (parse text first"),
    ("as_of", datetime(2026, 12, 1), "without a zone"),
    ("as_of", 1764547200, "got int"),
])
def test_a_read_time_that_is_not_an_aware_datetime_says_what_it_got(field: str, value: Any, words: str) -> None:
    """Newcomer trial (twenty-fourth session): ``as_of="2026-12-01T00:00:00Z"`` was refused as "must be a
    timezone-aware datetime", which the text has; the message now says it wants a datetime object."""
    times = {"as_of": None, "known_at": None, field: value}
    with pytest.raises(ValidationError) as caught:
        check_query("user:a", "tea", 10, times["as_of"], times["known_at"])
    assert caught.value.field == field and words in caught.value.reason
