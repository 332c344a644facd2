"""Rules R9-R12 of :mod:`memwarden.evals.gatemem_mapping`: active forgetting from deletion requests
written in natural language in GateMem turns (pure, no I/O, no hidden checkpoint field).

R9 Deletion statements. A turn is cut into sentences (``.``, ``!``, ``?`` before a space or the end,
   closing quotes allowed) and each sentence into segments (at ``;``, ``:``, ``, while``, ``, but``,
   ``because``, ``now that``, ``rather than``, ``instead of``, ``and (do) not``, ``not the``, ``and
   keep`` / ``retain`` / ``use`` / ``switch`` / ``replace`` / ``only`` / ``rely``, ``, only``, and at a
   comma or ``and`` opening a clause with a verb of its own; never inside quotes). A sentence speaks
   of deletion when it says delete / deletion / erase / purge / scrub / wipe / forget, ``do not
   retain``, ``treated as deleted`` / ``unavailable`` or ``unavailable going forward``, or remove /
   removal *from* a memory, record, summary, file, history or layer (or opens with a ``Deletion
   ...:`` / ``Cleanup ...:`` / ``Pruning ...:`` header); ``post-deletion``, ``before deletion``,
   ``after deletion``, ``deletion boundary`` and the like are times or topics, not requests. A
   sentence that defers the deletion (``prep``, ``prepare``, ``planning``, ``queued``, ``once``,
   ``until``, ``when ready``, ``will`` (not ``will not``), ``may later``, ``ask to``) is not acted on:
   such requests are repeated with their values when they are carried out. A question (a sentence
   ending in ``?``) is never a deletion. A segment of a deletion sentence is a *deletion segment* when
   it says deletion itself, or when it says neither deletion nor keep / retain / current / active /
   only / remains / now (the memory's own adjectives, "retained active memory", do not count) and
   follows a deletion segment (a list, "and phrase X should not come back"); a segment saying keep /
   current ... names what stays. In a turn with a (not deferred) deletion sentence, a sentence saying
   a value is no longer active / valid / current or must not be disclosed / repeated / recalled /
   retrieved / restored / restated / reused is read as a deletion segment too ("The old code 7788
   should no longer be disclosed."). *Retirement*: a sentence saying a value must not come back
   (revive, bring / brought back, come back, unavailable for reuse, treated as historical / retired /
   obsolete, not be recovered, not be used in current / active answers; not deferred, not a
   question) is a deletion sentence, and in its turn a sentence saying a value is retired /
   historical / obsolete is read too ("The earlier label bridge-28 is retired from active use. Do not
   revive it."): of such sentences only the segments saying retirement or never-again and no keep
   word (once "from active use", "into active answers" and the never-again words are set aside) are
   deletion segments, so "The 9V6R code remains current ... and neither retired code should come
   back" deletes nothing. A value merely called retired, with nothing asking that it not come back
   ("AST-7704 is now retired from active use"), is not deleted.
R10 Values to forget: in deletion segments only, and never a principal's or track's name (R4's
   exclusions; a quoted phrase is excluded only when it *is* such a name): quoted strings (``'...'``,
   ``"..."``, curly quotes; not after safe / broad / public / say / use / only wording); both sides
   but a name of a mapping ``X = Y`` / ``X corresponds to Y`` / ``X maps to Y``, the whole quoted
   mapping too; token-like codes (R3's token and code shapes, room codes, labels such as
   ``bridge-17`` or ``bridge-copper-14``); amounts and percentages; clock times; numbered places
   (``North Annex room 216``; not ``PIN 5942`` or ``Delete 4416``); bare numbers of 4-8 digits (PINs;
   not years); a proper name given as the customer / sponsor / partner / host / mapping / name; the
   unquoted words after a kind noun (phrase, wording, label, note, location, spot, point, string,
   fallback) up to ``from``, a comma, a verb, ``and the`` / ``and never`` ..., ``removed`` /
   ``deleted``, when they are at least two words, do not open with an article, a verb or (but after
   location / spot / point) a preposition, and hold no clause word (not, is, does ...) nor a noun that
   only describes a value (code, PIN, keypad, phrase, minute ...); the unquoted object of an
   imperative ``delete`` / ``remove`` (a leading "the exact / old / earlier ..." dropped) under the
   same conditions and not opening with a capital or a possessive (``Remove rowan ash from ...``);
   ``at the <place>`` after a time. A value introduced as current / active / new / remaining ("the
   current amount 3,620 USD") is dropped unless a delete / remove verb comes before it in the segment
   ("Delete the current code 2748"); a value contained in a longer value of the same segment is
   dropped (``200`` of ``2,200 USD``). A request naming no value (``Delete the older guest PIN``)
   forgets nothing: the rules do not guess which earlier value a description meant.
R11 Who forgets, and when (an erasure workflow). Each deletion turn with at least one value not
   deleted before in the episode yields one :class:`ForgetSpec`: its speaker (R1 id) is the
   *requester*; the episode's ingest service, the controller that wrote and owns every record, is the
   *executor*: it forgets, through the gate, by query, each new value within the requester's
   *standing* (``ForgetMatching`` with ``query=value`` and ``scopes=standing``, signed by the ingest
   service, reason ``erasure request by <requester> at <episode>:<turn>``; the client resolves the
   query by a recall as the ingest service to the ids of its memories whose text contains the
   value, and the gate keeps those in the standing scopes; the value never reaches the ledger), at
   the turn's position: after every earlier turn is recorded, before any later turn is recorded and
   before any checkpoint asked as of this turn or later. Standing (:func:`standing_scopes`): the
   scopes the requester may read (its R7 READ grants valid at the turn), its own ``person:`` and
   ``private:`` circles (the data subject), and every circle, thread and facet of a track one of its
   own relationships names or that it is the case subject of, whatever that relationship's access
   scope (erasure discloses nothing: a household member may have the household's temporary code
   removed although its ceiling hides the credentials facet from it); never another person's circle
   or private notes, nor a track it has no relationship to. Without standing nothing is forgotten
   (``without_standing``). The gate is unchanged: the ingest service forgets as the owner, and every
   READ grant of R7 still carries ``FORGET`` for a principal's own direct forgets. The requester is
   never told which memories went (the decision goes to the executor).
R12 Redaction on write. The deletion turn and every later turn of the episode are recorded with each
   deleted value (case and spacing folded, on word boundaries) replaced by ``[deleted]``: the request
   says the value is "unavailable going forward", so a later repetition is not stored either. Scope
   and sensitivity are still decided on the turn as spoken (R2-R6), so redaction never moves a
   record to a wider circle. *Redacted copies*: a forget removes whole memories, also the current
   facts a turn stated next to the deleted value; so, once the gate has decided the forgets of a
   turn, the harness records for each memory it forgot a copy of its record with every value deleted
   so far in the episode replaced (same writer, subject, scope, sensitivity, observed time and
   attributes, plus ``redacted_copy``), unless nothing but the redaction is left or a deleted value
   would survive (:func:`memwarden.evals.gatemem.redacted_copies`). A later forget removes a copy
   like any memory (and copies it again).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from memwarden.commands.model import Right
from memwarden.commands.readmodel.permission import Grant
from memwarden.evals.gatemem_circles import TRACK_KEYS, Circles
from memwarden.evals.gatemem_content import excluded
from memwarden.evals.gatemem_data import Episode
from memwarden.evals.gatemem_plan import ForgetSpec

__all__ = [
    "REDACTED",
    "DeletionFinding",
    "deletion_values",
    "forgets_of",
    "redact",
    "standing_scopes",
    "with_standing",
]

#: What a deleted value is replaced with in a recorded text (R12).
REDACTED = "[deleted]"

def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


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
_QUOTE = re.compile(r"(?<!\w)'([^']{2,120})'(?!\w)|\"([^\"]{2,120})\"|\u201c([^\u201d]{2,120})\u201d")
_SAFE_BEFORE = re.compile(
    r"\b(?:safe|broad|public|general|neutral|outward|generic|say|use|using|only)\b[^'\"\u201c]{0,40}$",
    re.IGNORECASE,
)
_MAPPING = re.compile(r"\s*(?:=|\bcorresponds to\b|\bmaps to\b|\bmapped to\b)\s*", re.IGNORECASE)
_MAPPED_NAME = re.compile(
    r"(?:=|\bcorresponds to|\bmaps to|\bmapped to)\s+([A-Z][\w&.-]*(?:\s+(?:[A-Z][\w&.-]*|&|of))*)"
)
_TOKEN = re.compile(r"\b[A-Za-z]{2,}_[A-Za-z0-9]+_[A-Za-z0-9_-]*\d[A-Za-z0-9_-]*")
_CODE = re.compile(
    r"\b[A-Z]{2,4}-\d{3,6}\b|\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{4}-[A-Z0-9]{2,4}\b|\b[A-Z]{1,3}-\d{1,3}[A-Z]?\b"
)
_LABEL = re.compile(r"\b[a-z]+(?:-[a-z]+)*-\d+\b")
_MONEY = re.compile(r"\$\s?\d[\d,]*(?:\.\d+)?|\b\d{1,3}(?:,\d{3})+(?:\.\d+)?(?:\s?USD)?|\b\d+(?:\.\d+)?\s?USD\b")
_PERCENT = re.compile(r"\b\d+(?:\.\d+)?\s?%")
_TIME = re.compile(r"\b\d{1,2}:\d{2}\s?(?:AM|PM|am|pm)\b")
_AT_PLACE = re.compile(r"\b\d{1,2}:\d{2}\s?(?:AM|PM|am|pm)\s+at the ((?:[a-z]+[\s-]){1,4}[a-z]+)\b")
_PLACE = re.compile(r"\b(?:[A-Z][A-Za-z]+\s){1,4}(?:room\s)?[A-Z]?\d{1,5}[A-Z]?\b(?![:,]\d)")
_DIGITS = re.compile(r"(?<![\d,.:$-])\b\d{4,8}\b(?![,.:]\d)")
_CREDENTIAL_WORD = re.compile(r"\b(?:PINs?|Codes?|Keypads?|Badges?|Passcodes?|Tokens?)\b")
_IDENTITY_NOUN = re.compile(
    r"\b(?:customer|sponsor|client|company|partner|host-school|host|mapping|employer|name)\b", re.IGNORECASE
)
_NAME = re.compile(r"(?<![\w'])([A-Z][\w&.-]*(?:\s+(?:[A-Z][\w&.-]*|&|of))+)")
_KIND = r"(?:phrase|wording|label|note|location|spot|point|string|fallback)"
_KIND_AT = re.compile(r"(?<![\w-])" + _KIND + r"\b")
_AFTER_KIND = re.compile(_KIND + r"(?:\s+" + _KIND + r")*\s+([a-z0-9][\w'-]*(?:\s+[\w'-]+){1,12})")
_IMPERATIVE = re.compile(
    r"(?:^|[.:;]\s*|\b(?:and|please|also)\s+)(?:delete|remove)\s+([a-z0-9][\w'-]*(?:\s+[\w'-]+){1,8})", re.IGNORECASE
)
_LEADING_THE = re.compile(
    r"^the\s+(?:(?:exact|old|older|earlier|former|prior|previous|retired|temporary|current|hidden|private|internal)\s+)*"
)
#: Nouns that describe a value without naming it ("the old school release phrase", "the typed fallback").
_DESCRIPTORS = _words(
    "phrase wording label note location spot point string minute time times layer mapping amount figure number "
    "numbers credential credentials badge value values details detail specifics identifier room assignment entrance "
    "one it exacts history code codes pin pins keypad token fallback method option path rule summary record memory "
    "name mapping partner customer sponsor host"
)
_PHRASE_STOP = re.compile(
    r"\s+(?:from|and (?:the|my|a|an|delete|remove|keep|retain|use|do|switch|replace|never|not|no)|as well|too|now|"
    r"entirely|"
    r"removed|deleted|marked|erased|never|"
    r"in (?:future|later)|should|is|are|was|has|have|must|will|stays?|remains?|can|it|that|which|because|for|all|both|"
    r"so|to|with)\b|[,;:]"
)
_CURRENT_BEFORE = re.compile(r"\b(?:current|active|new|now|remains?|stays?)\b(?:\s+\S+){0,3}\s*$", re.IGNORECASE)
_DELETE_VERB = re.compile(r"\b(?:delete|deleting|remove|removing|erase|erasing|purge|purging|scrub|forget)\b",
                          re.IGNORECASE)
_PLACE_KIND = re.compile(r"\b(?:location|spot|point)\b", re.IGNORECASE)
_FUNCTION = re.compile(r"\b(?:the|a|an|though|even|was|were|been|if|when|than|who|what)\b", re.IGNORECASE)
_OPENERS = _words(
    "a an the my our your his her their its this that these those it any all every each no some both either "
    "is are was were be been has have had should must will can may from as to of for with and or but not so "
    "side exact old older earlier going none before after where when whether while keeps keep kept became becomes "
    "said says needs uses stays remains remain survives holds labeled used means cannot could would still"
)
#: Words that make an unquoted phrase a clause rather than a value.
_CLAUSE_WORDS = _words("not does do did is are was were should must can will would could")
#: Verbs a numbered "place" may open with when it is not a place ("Delete 4416", "Logging 2846").
_VERBS = _words("delete deleted deleting remove removed removing logging logged erase purge")
_PREPOSITIONS = _words("under behind beside by near inside in on at above below next")
_YEAR = re.compile(r"^(?:19|20)\d\d$")


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
    cleaned = _NOT_A_REQUEST.sub(" ", _QUOTE.sub(" ", segment))
    return bool(_DELETE_WORD.search(cleaned) or _REMOVE_WORD.search(cleaned))


def _says_keep(segment: str) -> bool:
    return bool(_KEEP.search(_MEMORY_PHRASE.sub(" ", _QUOTE.sub(" ", segment))))


def _segments(sentence: str) -> list[tuple[str, str]]:
    """(separator before it, segment) pieces of one sentence; a comma starts a new segment only when
    what follows has a verb of its own (a list of noun phrases stays one segment). Nothing inside
    quotes cuts a segment."""
    masked = _QUOTE.sub(lambda m: "x" * len(m.group(0)), sentence)  # same offsets, no boundary inside quotes
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


def _quoted(segment: str, exclude: frozenset[str]) -> tuple[list[str], list[str]]:
    """(quoted values, the sides of quoted mappings that are not names of the episode)."""
    out: list[str] = []
    sides: list[str] = []
    for m in _QUOTE.finditer(segment):
        value = next(g for g in m.groups() if g is not None).strip(" ,.")
        if _SAFE_BEFORE.search(segment[max(0, m.start() - 50): m.start()]):
            continue
        parts = [s.strip(" ,.") for s in _MAPPING.split(value)]
        if len(parts) > 1:
            out.append(value)
            sides.extend(s for s in parts if s and not excluded(s, exclude))
        elif _fold(value) not in {_fold(x) for x in exclude}:
            out.append(value)  # a quoted phrase may contain a track's name ('laurel pulse'), never be one
    unquoted = _QUOTE.sub(" ", segment)
    sides.extend(n.strip().rstrip(".,") for n in _MAPPED_NAME.findall(unquoted) if not excluded(n, exclude))
    return out, sides


def _identities(segment: str, exclude: frozenset[str]) -> list[str]:
    if not _IDENTITY_NOUN.search(segment):
        return []
    unquoted = _QUOTE.sub(" ", segment)
    return [n.strip().rstrip(".,") for n in _NAME.findall(unquoted)
            if len(n.strip()) > 3 and not excluded(n, exclude) and not _is_calendar(n)]


def _phrases(segment: str) -> list[str]:
    """Unquoted words after a kind noun, and the unquoted object of an imperative delete / remove."""
    unquoted = _QUOTE.sub(" \" ", segment)
    found: list[str] = []
    for kind in _KIND_AT.finditer(unquoted):  # every kind noun, also one inside an earlier phrase
        m = _AFTER_KIND.match(unquoted, kind.start())
        if m is None:
            continue
        place = bool(_PLACE_KIND.search(m.group(0)[:m.start(1) - m.start(0)]))
        item = _cut(m.group(1))
        tokens = item.split()
        if (len(tokens) < 2 or "\"" in item or tokens[0].lower() in _OPENERS
                or any(t.lower() in _DESCRIPTORS | _CLAUSE_WORDS for t in tokens)):
            continue
        if not place and (tokens[0].lower() in _PREPOSITIONS or _FUNCTION.search(item)):
            continue  # "phrase survives even though the ..." is a sentence, not a value
        found.append(item)
    for m in _IMPERATIVE.finditer(unquoted):
        for item in re.split(r"\s+and\s+(?:remove\s+|delete\s+)?", _cut(m.group(1))):
            item = _LEADING_THE.sub("", item.strip(" .'\""))
            tokens = item.split()
            if (len(tokens) < 2 or any(ch.isdigit() for ch in item) or "\"" in item or tokens[0][0].isupper()
                    or tokens[0].lower() in _OPENERS | _PREPOSITIONS or tokens[0].lower().endswith("'s")
                    or any(t.lower() in _DESCRIPTORS | _CLAUSE_WORDS or t[0].isupper() for t in tokens)):
                continue  # "delete the old school release phrase" describes a value, it does not name one
            found.append(item)
    return found


def _cut(words: str) -> str:
    """The words before the first stop of :data:`_PHRASE_STOP`, without edge punctuation."""
    cut = _PHRASE_STOP.split(" " + words, maxsplit=1)[0].strip(" .'\"")
    return re.sub(r"\s+(?:and|or)$", "", cut)


def _is_calendar(value: str) -> bool:
    return bool(re.match(r"^(?:January|February|March|April|May|June|July|August|September|October|November|"
                         r"December|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b", value))


def _segment_values(segment: str, exclude: frozenset[str]) -> list[str]:
    """R10 over one deletion segment (in order of rule, then of occurrence), without contained values."""
    places = [p for p in _PLACE.findall(segment)
              if not _is_calendar(p) and not excluded(p, exclude) and not _CREDENTIAL_WORD.search(p)
              and p.split()[0].lower() not in _OPENERS | _VERBS]
    quoted, sides = _quoted(segment, exclude)
    candidates = [
        *quoted,
        *_TOKEN.findall(segment), *_CODE.findall(segment), *_LABEL.findall(segment),
        *(m.strip() for m in _MONEY.findall(segment)), *(p.strip() for p in _PERCENT.findall(segment)),
        *_TIME.findall(segment), *_AT_PLACE.findall(segment), *places,
        *(d for d in _DIGITS.findall(segment) if not _YEAR.match(d)),
        *_identities(segment, exclude), *_phrases(segment),
    ]
    values = list(dict.fromkeys(v.strip(" ,.") for v in candidates if len(v.strip(" ,.")) >= 2))
    folded = [_fold(v) for v in values]
    kept = [v for v, f in zip(values, folded, strict=True)
            if not any(f != g and _contains(g, f) for g in folded) and not _named_current(segment, v)]
    return list(dict.fromkeys([*kept, *(s for s in sides if len(s) >= 2)]))


def _named_current(segment: str, value: str) -> bool:
    """A value introduced as current / active / new ("the current amount 3,620 USD") in a segment
    with no delete / remove verb before it: a reminder of what stays, not a deletion."""
    m = _pattern(value).search(segment)
    if m is None:
        return False
    before = segment[: m.start()]
    return bool(_CURRENT_BEFORE.search(before)) and not _DELETE_VERB.search(before)


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
                values.extend(_segment_values(sentence, exclude))  # "The old code 3184 should no longer be disclosed."
            elif never_again and (_RETIRED.search(sentence) or _NEVER_AGAIN.search(sentence)):
                deletion = deletion or bool(_NEVER_AGAIN.search(sentence))  # "bridge-28 is retired. Do not revive it."
                for segment in _retired_segments(sentence):
                    values.extend(_segment_values(segment, exclude))
            continue
        if _DEFERRED.search(sentence):
            deferred = True
            continue
        deletion = True
        for segment in _deletion_segments(sentence):
            values.extend(_segment_values(segment, exclude))
    return DeletionFinding(deletion, deferred and not deletion, tuple(dict.fromkeys(values)))


def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


def _contains(text: str, value: str) -> bool:
    """``value`` occurs in ``text`` (both folded) on word boundaries where the value starts or ends with one."""
    return _pattern(value).search(text) is not None


def _pattern(value: str) -> re.Pattern[str]:
    body = r"\s+".join(re.escape(w) for w in value.split())
    head = r"(?<!\w)" if value[:1].isalnum() else ""
    tail = r"(?!\w)" if value[-1:].isalnum() else ""
    return re.compile(head + body + tail, re.IGNORECASE)


def redact(text: str, values: Iterable[str]) -> tuple[str, int]:
    """R12: ``text`` with every occurrence of each value (case and spacing folded, word boundaries)
    replaced by :data:`REDACTED`, longest values first; returns (text, replacements)."""
    count = 0
    for value in sorted({v for v in values if v.strip()}, key=len, reverse=True):
        text, n = _pattern(value).subn(REDACTED, text)
        count += n
    return text, count


def forgets_of(episode: Episode, exclude: frozenset[str], qualified: Mapping[str, str]
               ) -> tuple[list[ForgetSpec], dict[str, tuple[str, ...]], Counter[str]]:
    """R9-R12 over the turns in order: (the forgets, turn id -> deleted values that turn's text holds
    (to redact from its record), statistics ``deletion_turns``, ``deferred_turns``,
    ``turns_without_value``, ``forgets``, ``values``, ``values_repeated``). ``qualified`` maps an
    episode principal to its R1 id (the requester of a forget)."""
    forgets: list[ForgetSpec] = []
    redactions: dict[str, tuple[str, ...]] = {}
    deleted: dict[str, None] = {}
    stats: Counter[str] = Counter()
    for turn in episode.turns:
        finding = deletion_values(turn.text, exclude)
        stats["deletion_turns"] += int(finding.deletion)
        stats["deferred_turns"] += int(finding.deferred)
        if finding.deletion and not finding.values:
            stats["turns_without_value"] += 1
        known_folded = {_fold(v) for v in deleted}
        new = tuple(v for v in finding.values if _fold(v) not in known_folded)
        known = tuple(v for v in finding.values if _fold(v) in known_folded)
        stats["values_repeated"] += len(known)
        if new:
            requester = qualified.get(turn.speaker_id, turn.speaker_id)
            forgets.append(ForgetSpec(turn.turn_id, turn.index, requester, turn.speaker_id, new, known))
            stats["forgets"] += 1
            stats["values"] += len(new)
            deleted.update(dict.fromkeys(new))
        if deleted:
            present = tuple(v for v in deleted if _contains(turn.text, v))
            if present:
                redactions[turn.turn_id] = present
    return forgets, redactions, stats


def standing_scopes(speaker: str, requester: str, episode: Episode, circles: Circles, grants: Iterable[Grant],
                    scope_names: Iterable[str], at_ms: int) -> tuple[str, ...]:
    """R11 standing: the scopes (of ``scope_names``, ``<ns>/<circle>``) over which a deletion request by
    episode principal ``speaker`` (qualified id ``requester``) is carried out, at ``at_ms``:

    - every scope a READ grant of the requester valid at ``at_ms`` lists (what it may read);
    - its own circles ``person:<speaker>`` and ``private:<speaker>``, every facet (records about it,
      its private notes: the data subject's right to erasure);
    - every circle of a track one of its own relationships names (``project_id``, ``case_id``,
      ``household_id`` ...) or that it is the case subject of, with the track's threads and facets,
      whatever the relationship's access scope: erasure discloses nothing, so standing in a track is
      enough to ask that something be removed from it, even what its ceiling hides from it.

    Never another person's circle or private notes, nor a track it has no relationship to. Sorted."""
    tracks = {rel.attrs[k] for rel in episode.relationships if rel.principal_id == speaker
              for k in TRACK_KEYS if k in rel.attrs}
    tracks.update(circles.subject_tracks.get(speaker, ()))
    readable = {s for g in grants if g.grantee == requester and Right.READ in g.rights
                and (g.valid_from_ms or 0) <= at_ms and (g.valid_to_ms is None or at_ms < g.valid_to_ms)
                for s in g.scopes}
    own = {f"person:{speaker}", f"private:{speaker}"}
    out: list[str] = []
    for scope in scope_names:
        circle = scope.split("/", 1)[1] if "/" in scope else scope
        base = circle.split("#", 1)[0]
        track = base[len("track:"):].split("/", 1)[0] if base.startswith("track:") else None
        if scope in readable or base in own or (track is not None and track in tracks):
            out.append(scope)
    return tuple(sorted(out))


def with_standing(forgets: Iterable[ForgetSpec], episode: Episode, circles: Circles, grants: Iterable[Grant],
                  scope_names: Iterable[str], writer: str, times_ms: Mapping[str, int]) -> list[ForgetSpec]:
    """R11 erasure workflow: each forget carried out by ``writer`` (the ingest service, which owns every
    record) within the requester's :func:`standing_scopes` at its turn (``times_ms``: turn id -> ms)."""
    grants, names = list(grants), list(scope_names)
    return [replace(f, executor=writer, scopes=standing_scopes(f.speaker, f.requester, episode, circles, grants,
                                                                names, times_ms[f.turn_id]))
            for f in forgets]
