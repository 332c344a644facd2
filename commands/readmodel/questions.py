"""Stored questions in the recall of a current-value question (issue 12 item 5). Pure: no I/O.

A conversation store keeps the questions people asked as memories of their own ("What is the latest
late Coral Pool state now?", "Does my helper window change again?"). Asked again later, such a
question shares more words with a stored question than with the statement that answers it, so a
top k can be half questions that state no value at all (GateMem dev, 2026-12-06: six of the ten
memories recalled for "What is the current late Coral Pool state, including ...?" were questions).
For a question about a present state (the queries :mod:`.recency` weighs), the memories that end
with a question mark therefore move behind every other memory of the pool before the top ``k`` is
taken; nothing is dropped, and they still fill the top k when nothing else is left. Other queries
keep them in place: in a conversation a question can be the evidence itself ("Did you adopt the dog
from the shelter?": LoCoMo, 229 of its 1,829 evidence turns end with a question mark).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["demote_questions", "is_question"]

#: Question marks that end a question: Latin, full-width (CJK), Arabic, Greek question mark (U+037E).
_MARKS = ("?", "\uff1f", "\u061f", "\u037e")


def is_question(text: str) -> bool:
    """Whether ``text`` ends with a question mark (trailing spaces and closing quotes or brackets ignored)."""
    return text.rstrip().rstrip("\"')]»”’").rstrip().endswith(_MARKS)


def demote_questions(texts: Sequence[str]) -> list[int]:
    """The positions of ``texts`` (best first) in their new order: every text that is not a question
    (:func:`is_question`) in rank order, then the questions in rank order."""
    asks = [is_question(t) for t in texts]
    return [i for i, a in enumerate(asks) if not a] + [i for i, a in enumerate(asks) if a]
