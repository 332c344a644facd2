"""Repeated statements in a recall's top k (issue 12 item 5). Pure: no I/O.

A shared memory hears the same fact many times ("Helen: the reader's signature is the only blocker at
this stage", "Owen: the reader's signature is the only blocker at this stage", ...). Each repeat is a memory of its
own, with its own provenance, and each is as relevant as the first: a top k of ten can be half
repeats, and the other facts a question asks for fall out of it. After ranking, a memory whose words
nearly repeat those of a better-ranked memory (:func:`overlap` >= :data:`REPEAT_OVERLAP`) is moved
behind every memory that repeats nothing; the repeats still fill the top k when nothing else is
left. A hybrid recall verifies and opens :data:`REPEAT_POOL` times ``k`` candidates for this (dense
and lexical recalls rank by their own score alone). Nothing is
added: it reorders memories the read filter let through, verified and opened.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["REPEAT_OVERLAP", "REPEAT_POOL", "demote_repeats", "overlap", "word_set"]

#: Word-set overlap (Jaccard) from which a memory counts as a repeat of a better-ranked one (chosen on
#: GateMem's dev split: 0.45 / 0.6 / 0.8 gave utility 0.593 / 0.590 / 0.590, 0.45 with one more forget
#: leak; the most conservative of the plateau).
REPEAT_OVERLAP = 0.8
#: A recall verifies and opens ``REPEAT_POOL * k`` candidates, so that demoted repeats can be replaced.
REPEAT_POOL = 2

_WORD = re.compile(r"\w+")


def word_set(text: str) -> frozenset[str]:
    """The casefolded words of ``text`` (``\\w+`` runs, every script)."""
    return frozenset(_WORD.findall(text.casefold()))


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard overlap of two word sets in [0, 1] (0 when both are empty)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def demote_repeats(texts: Sequence[str], threshold: float = REPEAT_OVERLAP) -> list[int]:
    """The positions of ``texts`` (best first) in their new order: every text that repeats no
    better-ranked text kept (overlap of word sets below ``threshold``), in rank order, then the
    repeats, in rank order. ``threshold`` > 1 keeps the order. Raises ``ValueError`` for a
    ``threshold`` that is not a number > 0."""
    if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or not threshold > 0:
        raise ValueError(f"threshold: must be a number > 0, got {threshold!r}")
    kept: list[int] = []
    repeats: list[int] = []
    kept_sets: list[frozenset[str]] = []
    for i, text in enumerate(texts):
        words = word_set(text)
        if any(overlap(words, other) >= threshold for other in kept_sets):
            repeats.append(i)
        else:
            kept.append(i)
            kept_sets.append(words)
    return kept + repeats

