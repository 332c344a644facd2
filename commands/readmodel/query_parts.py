"""Questions that ask for several things at once (issue 12 item 5: GateMem's "as of now, what are X's
current date, current amount, safe wording, and current blocker?"): the parts of an enumeration, and
the round-robin merge of one ranking per part. Pure, no I/O.

One ranking for the whole question favours the memories that share the most words with it, so the
ten places go to records about the two or three items those words best describe, and the fourth item
asked for is not among them. Multi-query retrieval (one retrieval per sub-question, results merged;
the field's "query decomposition") gives each item its own ranking: the recall of each part ranks by
the part's words first and the whole question's words after them (:data:`CONTEXT_WEIGHT`), and the
merge takes the best of each part in turn, then the second of each, and so on, each memory once (a
ranking whose next memory another ranking took already gives its best one not taken after the others
of the round: every part gets a place in every round; GateMem dev, 2026-12-06: utility 0.6455 -> 0.653
with the questions of :mod:`.questions` 0.6567).

Only an enumeration is split: a question with two separating commas, a semicolon, or a comma before
its last item ("..., and ..."), whose pieces (cut there and at "and", "plus", "as well as") are at
least two with a content word each; a comma inside a date or a number separates nothing. "What did
Caroline and Melanie do?" and "What did Maria do on May 3, 2023?" stay one question.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

__all__ = ["CONTEXT_WEIGHT", "MAX_PARTS", "interleave", "query_parts"]

#: Weight of the whole question's terms (against 1.0 for the part's own) in a part's lexical query.
CONTEXT_WEIGHT = 0.3
#: At most this many parts are recalled (the rest of a longer list stays in the last part).
MAX_PARTS = 6

#: A comma that separates items: not one inside a date or a number ("May 3, 2023", "2,350").
_COMMA = r",(?!\s*\d)"
#: An enumeration: two separating commas or a semicolon, or a comma before its last item ("..., and ...").
_LIST = re.compile(rf"{_COMMA}.*{_COMMA}|;|{_COMMA}\s*(?:and|or|plus)\b", re.IGNORECASE)
_CUT = re.compile(rf"{_COMMA}|;|\band\b|\bplus\b|\bas\s+well\s+as\b", re.IGNORECASE)
#: Openers that only set the time of the whole question ("as of now, ..."), not an item of it.
_OPENER = re.compile(r"^\s*(?:as\s+of\s+(?:now|today)|right\s+now|now|currently|today)\s*[,:]\s*", re.IGNORECASE)
_WORD = re.compile(r"\w+", re.UNICODE)
#: Words that make no item on their own ("what is", "and the", "when does it").
_FILLER_TEXT = (
    "a an the of for to in on at by with from and or plus as well what which who whom whose when where why how"
    " is are was were be been do does did has have had it its their there this that these those me my our your"
    " his her them they we i you give tell show list please right now currently today current"
)
_FILLER = frozenset(_FILLER_TEXT.split())

T = TypeVar("T")


def _content(piece: str) -> bool:
    return any(w.lower() not in _FILLER for w in _WORD.findall(piece))


def query_parts(query: str) -> tuple[str, ...]:
    """The items an enumerating question asks for, in order (2 to :data:`MAX_PARTS` strings, each
    stripped of punctuation at its ends), or ``()`` when ``query`` is not an enumeration (see the
    module docstring) or has fewer than two pieces with a content word."""
    body = _OPENER.sub("", query, count=1)
    if not _LIST.search(body):
        return ()
    pieces = [p.strip(" \t\n?.!:\"'") for p in _CUT.split(body)]
    parts = [p for p in pieces if p and _content(p)]
    if len(parts) < 2:
        return ()
    if len(parts) > MAX_PARTS:
        parts = parts[:MAX_PARTS - 1] + [" ".join(parts[MAX_PARTS - 1:])]
    return tuple(parts)


def interleave(rankings: Sequence[Sequence[T]], key: Callable[[T], Hashable], limit: int) -> list[T]:
    """Round-robin merge of ``rankings`` (each best first), each item once (by ``key``), at most ``limit``
    items (``limit`` < 1: none). In each round every ranking whose next item is not taken yet gives it,
    in turn; then every ranking whose next item another ranking took already gives, in turn, its best
    item not taken yet. So a ranking whose best another took still gets a place in the round, after the
    rankings that bring something new (a part whose best the whole question took first does not crowd
    out the best of a later part when ``limit`` is small)."""
    out: list[T] = []
    seen: set[Hashable] = set()
    at = [0] * len(rankings)

    def take(r: int) -> None:
        ranking = rankings[r]
        while at[r] < len(ranking):
            item = ranking[at[r]]
            at[r] += 1
            if key(item) not in seen:
                seen.add(key(item))
                out.append(item)
                return

    while len(out) < limit and any(at[r] < len(ranking) for r, ranking in enumerate(rankings)):
        waiting = []
        for r, ranking in enumerate(rankings):
            if at[r] < len(ranking):
                if key(ranking[at[r]]) in seen:
                    waiting.append(r)
                elif len(out) < limit:
                    take(r)
        for r in waiting:
            if len(out) < limit:
                take(r)
    return out
