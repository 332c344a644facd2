"""Repeated statements in a recall's top k (issue 12 item 5): the pure demotion."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memwarden.commands.readmodel.repeats import REPEAT_OVERLAP, demote_repeats, overlap, word_set

SAID = "the external reader signature is the only live Orchid Committee blocker at this stage."


def test_repeats_by_other_speakers_move_behind_the_other_facts() -> None:
    texts = [f"Helen: {SAID}", f"Owen: {SAID}", f"Aria: again, {SAID}",
             "Aria's provisional Orchid Committee RA-support amount is 2,600 USD.",
             "The Orchid Committee review date moved to May 13, 2026."]
    assert overlap(word_set(texts[0]), word_set(texts[1])) >= REPEAT_OVERLAP
    assert overlap(word_set(texts[0]), word_set(texts[3])) < REPEAT_OVERLAP
    order = demote_repeats(texts)
    assert order == [0, 3, 4, 1, 2]
    assert [texts[i] for i in order][:3] == [texts[0], texts[3], texts[4]]  # a top 3 now holds three facts


def test_different_statements_about_one_thing_are_not_repeats() -> None:
    texts = ["The Maple budget is 262,000 USD.", "The Maple budget moved to 221,000 USD.",
             "Maple's target date is July 24, 2026."]
    assert demote_repeats(texts) == [0, 1, 2]


def test_words_are_casefolded_and_punctuation_ignored_in_every_script() -> None:
    assert word_set("Tea, TEA; tea!") == frozenset({"tea"})
    assert demote_repeats(["今天 玩 成语接龙", "今天 玩 成语接龙。", "週末は京都"]) == [0, 2, 1]
    assert overlap(frozenset(), frozenset()) == 0.0


@pytest.mark.parametrize("bad", [0, -1, float("nan"), "0.8", True])
def test_a_bad_threshold_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="threshold"):
        demote_repeats(["a"], bad)  # type: ignore[arg-type]


@given(st.lists(st.text(alphabet="abc d", max_size=12), max_size=12), st.floats(0.01, 1.0))
def test_the_order_is_a_permutation_that_keeps_rank_within_each_part(texts: list[str], threshold: float) -> None:
    order = demote_repeats(texts, threshold)
    assert sorted(order) == list(range(len(texts)))
    if order:
        assert order[0] == 0  # the best-ranked memory never moves
    # kept, then repeats: each part in rank order
    breaks = sum(1 for a, b in zip(order, order[1:], strict=False) if b < a)
    assert breaks <= 1
    assert demote_repeats(texts, 1.5) == list(range(len(texts)))  # above 1: nothing is a repeat
