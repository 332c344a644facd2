"""Stored questions in the recall of a current-value question (issue 12 item 5): the pure demotion."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memwarden.commands.readmodel.questions import demote_questions, is_question


def test_stored_questions_move_behind_the_statements() -> None:
    # GateMem dev, household episode 013, checkpoint 05 (2026-12-06): six of the ten were questions
    texts = ["What are the current approved areas and lane markers in that late Coral Pool state?",
             "Yes, that is the current late Coral Pool state.",
             "What is the latest late Coral Pool state now?",
             "Late Coral Pool window is now Saturday 8:35 AM to 9:10 AM, and the route remains desk buzz only.",
             "Your current Coral Pool filter-test slot is 10:55 AM to 11:10 AM at the pump cabinet panel."]
    assert demote_questions(texts) == [1, 3, 4, 0, 2]


def test_what_counts_as_a_question() -> None:
    assert is_question("Does the route stay the side gate keypad?")
    assert is_question('He asked: "is it still 4827?" ')
    assert is_question("还是周六吗？") and is_question("هل ما زال السبت؟")
    assert not is_question("The route stays the side gate keypad.")
    assert not is_question("Is it? Yes, it stays 4827.")  # the answer follows the question
    assert not is_question("") and demote_questions([]) == []


@given(st.lists(st.sampled_from(["a?", "b.", "c", "d ?", "e?)"]), max_size=10))
def test_the_order_is_a_permutation_that_keeps_rank_within_each_part(texts: list[str]) -> None:
    order = demote_questions(texts)
    assert sorted(order) == list(range(len(texts)))
    asks = [is_question(texts[i]) for i in order]
    assert asks == sorted(asks)  # statements first, then questions
    statements = [i for i in order if not is_question(texts[i])]
    questions = [i for i in order if is_question(texts[i])]
    assert statements == sorted(statements) and questions == sorted(questions)
