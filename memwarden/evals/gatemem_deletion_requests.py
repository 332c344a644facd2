"""Rule R9 of :mod:`memwarden.evals.gatemem_forgetting`, where it is spelled out: which sentences of a
GateMem turn ask for a deletion (not deferred, not a question; retirements asking that a value not come
back; in such a turn, values no longer active or not to be disclosed), cut into deletion segments, and
:func:`deletion_values`, R9-R10 over one turn text (pure, no I/O)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from memwarden.evals.gatemem_deletion_values import QUOTE, segment_values

__all__ = ["DeletionFinding", "deletion_values"]

_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'\u201d\u2019]))\s+(?=\S)")
_DELETE_WORD = re.compile(
    r"\b(?:delet(?:e|es|ed|ing|ion)|eras(?:e|es|ed|ing)|purg(?:e|es|ed|ing)|scrub(?:s|bed|bing)?|wip(?:e|es|ed|ing)|"
    r"forget(?:s|ting)?|do not retain|treated as (?:deleted|unavailable)|unavailable going forward)\b",
    re.IGNORECASE,
)
_REMOVE_WORD = re.compile(r"\bremov(?:e|es|ed|ing|al)\b", re.IGNORECASE)
_MEMORY_TARGET = re.compile(
    r"\bfrom\b(?:\s+[\w-]+){0,4}?\s+(?:memory|record|summary|file|history|layer)\b", re.IGNORECASE
)
_HEADER = re.compile(r"^\W*(?:[\w-]+\s+){0,5}?(?:deletion|cleanup|clean-up|pruning)\b[^:.]{0,60}:", re.IGNORECASE)
#: Deletion words that name a time, not a request ("post-deletion state", "before deletion").
_NOT_A_REQUEST = re.compile(
    r"\b(?:post|pre)-?(?:delet\w*|cleanup)|\b(?:before|after|since) (?:the )?(?:delet\w*|cleanup)|"
    r"\bdeletion[- ]boundary\b|\bdeleted-memory\b",
    re.IGNORECASE,
)
_DEFERRED = re.compile(
    r"\b(?:prep|prepare[sd]?|preparing|planning|queued|once|until|when ready|will(?! not\b)|may later|ask to)\b",
    re.IGNORECASE,
)
#: In a turn that asks for a deletion, a sentence saying a value is no longer active or must not come back.
_NO_LONGER = re.compile(
    r"\bno longer (?:active|valid|current)\b|\b(?:no longer|not|never)\b[^.;]{0,30}?\b(?:be )?(?:disclos|repeat|recall|"
    r"retriev|restor|restat|reus|resurfac)\w*",
    re.IGNORECASE,
)
#: A request that a value must not come back, as a deletion says it in other words ("do not revive it",
#: "should be treated as retired and not brought back", "unavailable for reuse").
_NEVER_AGAIN = re.compile(
    r"\b(?:revive[sd]?|reviving|(?:be |been )?brought back|bring(?:ing)? (?:it |them )?back|comes? back|"
    r"unavailable for reuse|treated as (?:historical|retired|obsolete)|(?:not|never) be recovered|"
    r"(?:not|never) be used in (?:current|active) answers)\b",
    re.IGNORECASE,
)
#: A sentence saying a value is retired; read as a deletion only in a turn that asks it not to come back.
_RETIRED = re.compile(r"\b(?:retired|historical|obsolete)\b", re.IGNORECASE)
#: Where a retired value is no longer used ("retired from active use"): not a keep word.
_RETIRED_CONTEXT = re.compile(
    r"\b(?:from|into|in|for) (?:active|current)(?:-state)? (?:use|answers?|summaries|memory)\b", re.IGNORECASE
)
_KEEP = re.compile(
    r"\b(?:keep|keeps|keeping|kept|retain|retains|retained|retaining|current(?:ly)?|active|only|remains?|now)\b",
    re.IGNORECASE,
)
#: Memory nouns and their adjectives, removed before looking for keep words ("retained active memory").
_MEMORY_PHRASE = re.compile(
    r"\b(?:(?:active|retained|answerable|shared|accessible|usable|retrievable|reusable|working|routine|helper|"
    r"household|recoverable|private|case)\s+)+(?=(?:[\w-]+\s+){0,2}(?:memory|record|summary|file|history|layer)\b)",
    re.IGNORECASE,
)
_BOUNDARY = re.compile(
    r";|:(?=\s)|,\s+(?:while|but)\b|\s+because\b|\s+now that\b|\s+rather than\b|\s+instead of\b|"
    r"\s+and (?:do )?not\b|,?\s+not the\b|"
    r",?\s+and (?=(?:keep|retain|use|switch|replace|only|rely)\b)|,\s+(?=only\b)",
    re.IGNORECASE,
)
#: A comma or "and" opening a clause with a verb of its own (not the next item of a list).
_CLAUSE = re.compile(
    r"(?:,\s+(?:and\s+)?|\s+and\s+)(?=\S+(?:\s+\S+){0,6}?\s+(?:is|are|remains?|stays?|has|have|was|must|should)\b)"
)


@dataclass(frozen=True, slots=True)
class DeletionFinding:
    """What R9-R10 read from one turn: whether it speaks of deleting something from memory (a
    deletion sentence that is not deferred), whether it only defers one, and the values to forget."""

    deletion: bool
    deferred: bool
    values: tuple[str, ...]


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def _is_deletion_sentence(sentence: str) -> bool:
    cleaned = _NOT_A_REQUEST.sub(" ", sentence)
    if _DELETE_WORD.search(cleaned):
        return True
    return bool(_REMOVE_WORD.search(cleaned) and (_MEMORY_TARGET.search(cleaned) or _HEADER.match(cleaned)))


def _says_deletion(segment: str) -> bool:
    cleaned = _NOT_A_REQUEST.sub(" ", QUOTE.sub(" ", segment))
    return bool(_DELETE_WORD.search(cleaned) or _REMOVE_WORD.search(cleaned))


def _says_keep(segment: str) -> bool:
    return bool(_KEEP.search(_MEMORY_PHRASE.sub(" ", QUOTE.sub(" ", segment))))


def _segments(sentence: str) -> list[tuple[str, str]]:
    """(separator before it, segment) pieces of one sentence; a comma starts a new segment only when
    what follows has a verb of its own (a list of noun phrases stays one segment). Nothing inside
    quotes cuts a segment."""
    masked = QUOTE.sub(lambda m: "x" * len(m.group(0)), sentence)  # same offsets, no boundary inside quotes
    cuts: list[tuple[int, int, str]] = [(m.start(), m.end(), m.group(0).strip().lower())
                                        for m in _BOUNDARY.finditer(masked)]
    out: list[tuple[str, str]] = []
    start, sep = 0, ""
    for begin, end, mark in [*cuts, (len(sentence), len(sentence), "")]:
        piece_start = start
        for m in _CLAUSE.finditer(masked, start, begin):
            out.append((sep, sentence[piece_start:m.start()]))
            piece_start, sep = m.end(), ","
        out.append((sep, sentence[piece_start:begin]))
        start, sep = end, mark
    return [(s, p) for s, p in out if p.strip()]


def _deletion_segments(sentence: str) -> list[str]:
    """R9: the deletion segments of one deletion sentence."""
    chosen: list[str] = []
    previous = False
    for _sep, segment in _segments(sentence):
        if _says_deletion(segment):
            previous = True
        elif _says_keep(segment):
            previous = False
        if previous:  # a segment saying neither continues the one before (a list, "and phrase X should ...")
            chosen.append(segment)
    return chosen


def _retired_segments(sentence: str) -> list[str]:
    """R9 in a turn asking that a value not come back: the segments of ``sentence`` saying a value is
    retired / historical / obsolete or must not come back, and saying no keep word once the retirement
    wording itself ("from active use", "not brought back into active answers") is set aside."""
    return [seg for _sep, seg in _segments(sentence)
            if (_RETIRED.search(seg) or _NEVER_AGAIN.search(seg))
            and not _says_keep(_NEVER_AGAIN.sub(" ", _RETIRED_CONTEXT.sub(" ", seg)))]


def deletion_values(text: str, exclude: frozenset[str] = frozenset()) -> DeletionFinding:
    """R9-R10 for one turn text. ``exclude``: names never taken as values (R4's principal and track
    names). Pure."""
    deletion = deferred = False
    values: list[str] = []
    sentences = _sentences(text)
    requested = any(_is_deletion_sentence(s) and not _DEFERRED.search(s) for s in sentences)
    never_again = any(_NEVER_AGAIN.search(s) and not _DEFERRED.search(s) and not s.rstrip().endswith("?")
                      for s in sentences)
    for sentence in sentences:
        if sentence.rstrip().endswith("?"):
            continue  # a question about a deleted value asks, it does not delete
        if not _is_deletion_sentence(sentence):
            if _DEFERRED.search(sentence):
                continue
            if requested and _NO_LONGER.search(sentence):
                values.extend(segment_values(sentence, exclude))  # "The old code 3184 should no longer be disclosed."
            elif never_again and (_RETIRED.search(sentence) or _NEVER_AGAIN.search(sentence)):
                deletion = deletion or bool(_NEVER_AGAIN.search(sentence))  # "bridge-28 is retired. Do not revive it."
                for segment in _retired_segments(sentence):
                    values.extend(segment_values(segment, exclude))
            continue
        if _DEFERRED.search(sentence):
            deferred = True
            continue
        deletion = True
        for segment in _deletion_segments(sentence):
            values.extend(segment_values(segment, exclude))
    return DeletionFinding(deletion, deferred and not deletion, tuple(dict.fromkeys(values)))
