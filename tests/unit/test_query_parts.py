"""Enumerating questions (commands/readmodel/query_parts.py): which questions split and how, and the
round-robin merge of the part rankings."""

from __future__ import annotations

import pytest

from memwarden.commands.readmodel.query_parts import MAX_PARTS, interleave, query_parts
from memwarden.errors import ValidationError
from memwarden.projections.sparse import Bm25Encoder, term_id


def test_an_enumeration_of_items_is_split_after_its_opener() -> None:
    q = "As of now, what are the Larch project's current review date, current grant amount, and current blocker?"
    assert query_parts(q) == ("what are the Larch project's current review date", "current grant amount",
                              "current blocker")
    assert query_parts("Which hotel, flight; and car did we book?") == ("Which hotel", "flight", "car did we book")


def test_a_list_of_clauses_is_split_too() -> None:
    q = "What is the active badge now, when does it expire, and what are the current site and current status?"
    assert query_parts(q) == ("What is the active badge now", "when does it expire", "what are the current site",
                              "current status")


@pytest.mark.parametrize("q", [
    "What did Caroline and Melanie do?",  # "and" without a list
    "When did Caroline go to the support group?",
    "As of now, what is the budget?",  # the opener's comma is not a list
    "What did Maria do on May 3, 2023?",  # a date's comma
    "Is the amount 2,350 or 2,200 USD?",  # a number's comma
    "According to Gina, what makes Jon a mentor?",  # one comma, no last item
    "Tell me, and quickly?",  # fewer than two pieces with a content word
    "",
])
def test_other_questions_stay_whole(q: str) -> None:
    assert query_parts(q) == ()


def test_a_long_list_keeps_its_tail_in_the_last_part() -> None:
    items = [f"item{i}" for i in range(MAX_PARTS + 3)]
    parts = query_parts("What are " + ", ".join(items) + "?")
    assert len(parts) == MAX_PARTS and parts[:MAX_PARTS - 1] == ("What are item0", *items[1:MAX_PARTS - 1])
    assert parts[-1] == " ".join(items[MAX_PARTS - 1:])


def test_the_rankings_are_merged_in_turn_each_item_once() -> None:
    rankings = [["a1", "a2", "a3"], ["b1", "a1", "b3"], ["c1"]]
    # b's second (a1) is taken already: b gives its next one, b3, in that round
    assert interleave(rankings, key=str, limit=10) == ["a1", "b1", "c1", "a2", "b3", "a3"]
    assert interleave(rankings, key=str, limit=4) == ["a1", "b1", "c1", "a2"]
    assert interleave(rankings, key=str, limit=0) == [] and interleave([], key=str, limit=5) == []


def test_every_ranking_gets_a_place_in_each_round_although_its_best_is_taken() -> None:
    whole = ["recap", "date note", "amount note"]
    credential = ["recap", "credential note"]  # its best is the whole question's best
    # a top 2 holds the credential (a merge by depth gave the whole question's second, "date note")
    assert interleave([whole, credential], key=str, limit=2) == ["recap", "credential note"]
    assert interleave([whole, credential], key=str, limit=9) == ["recap", "credential note", "date note",
                                                                "amount note"]


def test_a_ranking_whose_best_was_taken_gives_its_next_after_the_new_ones_of_the_round() -> None:
    # the Larch case (tests/integration/test_enumerating_recall.py): the whole question and the date and
    # amount parts all rank d1 first; in a top 3 the blocker part's best comes before their second bests
    rankings = [["d1", "d2", "d3"], ["d1", "d2"], ["d1", "d3"], ["b1", "d2"]]
    assert interleave(rankings, key=str, limit=3) == ["d1", "b1", "d2"]
    assert interleave(rankings, key=str, limit=10) == ["d1", "b1", "d2", "d3"]


def test_a_parts_lexical_query_weights_its_own_terms_over_the_questions() -> None:
    enc = Bm25Encoder()
    v = enc.part_query("current blocker", "what are the Larch review date and current blocker", 0.3)
    weights = dict(zip(v.indices, v.values, strict=True))
    assert weights[term_id("blocker")] == 1.0 and weights[term_id("larch")] == pytest.approx(0.3)
    assert set(weights) == set(enc.query("what are the Larch review date and current blocker").indices)
    assert enc.part_query("blocker", "Larch blocker", 0.0).indices == (term_id("blocker"),)
    with pytest.raises(ValidationError) as err:
        enc.part_query("blocker", "Larch blocker", 1.5)
    assert err.value.field == "context_weight"
