"""Keyword rules that read sensitivity, protected values and private notes from a GateMem turn (pure).

Rules R3 and R5 of :mod:`memwarden.evals.gatemem_mapping`, plus the candidate values for R4 (taint).
No LLM, no hidden checkpoint field: only the turn text, a domain word list and the names to ignore.

R3 sensitivity, highest marker wins:

- RESTRICTED - ``token``: token-shaped strings (``ab_cd_1X2Y-...``, ``ABC-1234``, ``1A2B-C3D4``);
  ``secret-digits``: a PIN / passcode / password / keypad / code / lockbox word with a 3-8 digit number;
  ``secret-phrase``: a release / helper / backup phrase, a passphrase, a spare or hidden key;
  ``secret-quote``: a quoted phrase introduced as exact / internal / restricted / old wording (not one
  introduced as safe / broad / public wording); ``identity``: a proper name given as the customer,
  sponsor, partner, host or mapping ("the exact external customer is X", "maps to X");
  ``private``: a first-person private note (R5).
- CONFIDENTIAL - ``money`` (``221,000 USD``, ``$40``), ``percent``, ``confidential-word`` (diagnosis,
  stipend, budget, discount, salary, internal label), ``restricted-place`` (a numbered room or site in
  a turn that calls something restricted, confidential, private or resident-only; the word alone, as
  in "restricted details stay in the case chain", marks nothing) and ``domain-word`` (the domain's own
  list, e.g. contract terms in office, holds and blockers in education); with ``details`` (households),
  ``restricted-detail``: a turn saying exact, restricted, resident-only, private or confidential that
  states a clock time or an ``at / in / to / on the <place>`` phrase (its values: the times, also
  without AM / PM, and the places).
- INTERNAL otherwise.

A turn that opens by declaring itself public ("Public update: ...", "Public Elm Guides note: ...") and
is not a private note has no marker (INTERNAL, no values); R4 taint still applies to it.

R4 values: the strings a CONFIDENTIAL or RESTRICTED turn states that later turns may repeat - tokens,
codes, secret digits and phrases, secret quotes, identities, amounts, percentages, room codes and
numbered locations, and for a private note its times and ``at the <place>`` phrases. Names of
principals and tracks are never values.

R5 private note: a sentence declares a private note or thread ("private note", "private-family note",
"my ... private thread", "my exact" detail), is not negated before that ("I do not
need the private details" is not a note), and is first-person or states a time or an "at the" place;
the text must say "private" or "exact" somewhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memwarden.commands.model import Sensitivity

__all__ = ["CREDENTIAL_MARKERS", "RESTRICTION_WORD", "ContentFacts", "analyse", "facet_of", "is_credential_only"]

_TOKEN = re.compile(r"\b[A-Za-z]{2,}_[A-Za-z0-9]+_[A-Za-z0-9_-]*\d[A-Za-z0-9_-]*")
_CODE = re.compile(r"\b[A-Z]{2,4}-\d{4,6}\b|\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{4}-[A-Z0-9]{4}\b")
_ROOM_CODE = re.compile(r"\b[A-Z]{1,3}-\d{1,3}[A-Z]?\b")
_MONEY = re.compile(
    r"\$\s?\d[\d,]*(?:\.\d+)?|\b\d{1,3}(?:,\d{3})+(?:\.\d+)?(?:\s?(?:USD|dollars))?|\b\d+(?:\.\d+)?\s?(?:USD|dollars)\b"
)
_PERCENT = re.compile(r"\b\d+(?:\.\d+)?\s?%")
_SECRET_WORD = re.compile(r"\b(?:pins?|passcodes?|passwords?|keypads?|codes?|combination|lockbox)\b", re.IGNORECASE)
_SECRET_DIGITS = re.compile(r"\b\d{3,8}\b")
_SECRET_PHRASE = re.compile(
    r"\b(?:passphrase|(?:release|helper|backup|safe|code|technician|pickup) (?:phrase|word)|spare key|hidden key|"
    r"key location|lockbox)\b",
    re.IGNORECASE,
)
_PHRASE_VALUE = re.compile(
    r"\bphrase\s+(?:(?:is|was|remains|now|still|becomes|to|from|stays|currently|:)\s+)*['\"]?([a-z]+ [a-z]+)\b"
)
_STOPWORDS_TEXT = (
    "a an and are as at be but by for from has have if in is it no not of on or so that the then this to was "
    "will with only until unless remain remains still now current currently should must may can"
)
_STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
_IDENTITY_NOUN = re.compile(
    r"\b(?:customer|sponsor|client|company|account|partner|host-school|host school|host|mapping|employer|"
    r"maps to|mapped to)\b",
    re.IGNORECASE,
)
_NAME = r"([A-Z][\w&'.-]*(?:\s+(?:[A-Z][\w&'.-]*|&|of))+)"
_IDENTITY_AFTER = re.compile(r"(?:\bis|\bwas|=|\bto|\bfrom|\bremains|\bas)\s+(?:now\s+)?" + _NAME)
_IDENTITY_BEFORE = re.compile(r"(?:^|[.:;]\s+)" + _NAME + r"\s+(?:is|remains)\s+the\s+(?:current\s+)?exact\b")
_SENTENCE = re.compile(r"[^.;!?]+[.;!?]?")
_CONFIDENTIAL_WORD = re.compile(
    r"\b(?:diagnos\w*|stipend|internal (?:label|wording|phrasing|phrase)|budget|discount|salary)\b", re.IGNORECASE
)
#: A word calling something restricted (R3 ``restricted-place``; gatemem_records: a contrasted public track).
RESTRICTION_WORD = re.compile(r"\b(?:restricted|confidential|private|resident-only)\b", re.IGNORECASE)
_LOCATION = re.compile(r"\b(?:[A-Z][A-Za-z]+\s){1,4}(?:room\s)?[A-Z]?\d{1,5}[A-Z]?\b(?![:,]\d)")
_CALENDAR = re.compile(
    r"^(?:January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|"
    r"Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b"
)
_TIME = re.compile(r"\b\d{1,2}:\d{2}\s?(?:AM|PM|am|pm)\b")
_AT_PLACE = re.compile(r"\bat the ((?:[a-z]+[\s-]){1,3}[a-z]+)\b")
#: A word saying a detail is held back (R3 ``restricted-detail``).
_DETAIL_WORD = re.compile(r"\b(?:exact|restricted|resident-only|private|confidential)\b", re.IGNORECASE)
_DETAIL_PLACE = re.compile(r"\b(?:at|in|to|on) the ((?:[a-z]+[\s-]){1,3}[a-z]+)\b")
_CLOCK = re.compile(r"\b(\d{1,2}:\d{2})(?:\s?(?:AM|PM|am|pm))?\b")
_QUOTED = re.compile(r"'([^']{3,100})'")
_SECRET_CONTEXT = re.compile(
    r"\b(?:exact|internal|restricted|private|release|deleted|old|older|earlier|retired|phrase|code|confidential)\b"
    r"[^'.]{0,60}$",
    re.IGNORECASE,
)
_SAFE_CONTEXT = re.compile(
    r"\b(?:safe|broad|public|general|neutral|catalog|outward|mixed-audience|generic)\b[^'.]{0,40}$", re.IGNORECASE
)
_PRIVATE_NOTE = re.compile(
    r"\bprivate[\w\s-]{0,20}?\b(?:note|thread)\b|\bprivate-(?:note|thread)\b|\bmy\b[\w\s-]{0,25}?\b(?:private|personal)\b"
    r"|\bmy exact\b",
    re.IGNORECASE,
)
_MINE = re.compile(r"\b(?:my|mine|I)\b|\b\d{1,2}:\d{2}\s?(?:AM|PM|am|pm)\b|\bat the [a-z]")
_DECLARED_PUBLIC = re.compile(r"^\W*(?:[\w-]+\s){0,2}public\b[^.:;]*[:.]", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|no|never|without|nobody|none)\b|n't\b", re.IGNORECASE)

#: Markers that make a record a credential (its ``#credentials`` facet, see gatemem_mapping R6).
CREDENTIAL_MARKERS: frozenset[str] = frozenset({"token", "secret-digits", "secret-phrase"})
_RESTRICTED_MARKERS = frozenset({"token", "secret-digits", "secret-phrase", "secret-quote", "identity", "private"})
_CONFIDENTIAL_MARKERS = frozenset({"money", "percent", "confidential-word", "domain-word", "restricted-place",
                                   "restricted-detail"})


@dataclass(frozen=True, slots=True)
class ContentFacts:
    """What R3-R5 read from one turn: its sensitivity, the markers that set it (in rule order), the
    protected values it states (R4 candidates) and whether it is a private note (R5)."""

    sensitivity: Sensitivity
    markers: tuple[str, ...]
    values: tuple[str, ...]
    private: bool


def analyse(text: str, extra_confidential: re.Pattern[str] | None = None,
            exclude: frozenset[str] = frozenset(), extra_values: re.Pattern[str] | None = None,
            details: bool = False) -> ContentFacts:
    """Apply R3-R5 to one turn text (see the module docstring). Pure.

    Args:
        text: the turn text.
        extra_confidential: the domain's words that make a turn CONFIDENTIAL (``domain-word``).
        extra_values: in a ``domain-word`` turn, group 1 of each match is a protected value (R4).
        exclude: names (principals' names and name parts, track names) never taken as values.
        details: apply ``restricted-detail`` (a time or place in a turn calling details exact, restricted,
            resident-only, private or confidential; the household domain).

    Returns the sensitivity, the markers in rule order (``token``, ``secret-digits``, ``secret-phrase``,
    ``secret-quote``, ``identity``, ``private``, ``money``, ``percent``, ``confidential-word``,
    ``restricted-place``, ``restricted-detail``, ``domain-word``; or only ``declared-public``), the protected values
    (stripped, at least 2 characters, first occurrence order) and whether the turn is a private note.
    """
    private = _private_note(text)
    located = [x for x in _LOCATION.findall(text) if not _CALENDAR.match(x) and not excluded(x, exclude)]
    located += _ROOM_CODE.findall(text)
    findings = [
        *_secret_findings(text, exclude),
        *([("private", _TIME.findall(text) + _AT_PLACE.findall(text))] if private else []),
        *_confidential_findings(text, located, extra_confidential, extra_values, details),
    ]
    markers = [name for name, _ in findings]
    values = [v for _, found in findings for v in found]
    if _DECLARED_PUBLIC.match(text) and not private:
        # "Public update: ...": values declared public are not secrets; taint (R4) still applies
        markers = ["declared-public"]
        values = []
    found = set(markers)
    if found & (_RESTRICTED_MARKERS | _CONFIDENTIAL_MARKERS):
        values.extend(located)
    clean = (v.strip(" ,.") for v in values)
    return ContentFacts(_level(found), tuple(markers), tuple(dict.fromkeys(v for v in clean if len(v) >= 2)), private)


#: One R3 marker and the protected values it found (R4 candidates).
_Finding = tuple[str, list[str]]


def _secret_findings(text: str, exclude: frozenset[str]) -> list[_Finding]:
    """The RESTRICTED markers but ``private``: ``token``, ``secret-digits``, ``secret-phrase``,
    ``secret-quote`` and ``identity``, in that order, each with its values."""
    out: list[_Finding] = []
    tokens = _TOKEN.findall(text) + _CODE.findall(text)
    if tokens:
        out.append(("token", tokens))
    if _SECRET_WORD.search(text):
        digits = [d for d in _SECRET_DIGITS.findall(text) if not _is_year(d)]
        if digits:
            out.append(("secret-digits", digits))
    phrases = _secret_phrases(text)
    if phrases or _SECRET_PHRASE.search(text):
        out.append(("secret-phrase", phrases))
    quoted = [m.group(1).strip(" ,.") for m in _QUOTED.finditer(text) if _secret_quote(text, m.start())]
    if quoted:
        out.append(("secret-quote", quoted))
    identities = [i for i in _identities(text) if not _CALENDAR.match(i) and not excluded(i, exclude)]
    if identities:
        out.append(("identity", identities))
    return out


def _secret_phrases(text: str) -> list[str]:
    """Two-word phrases stated as a phrase's value, unless made of stop words or introduced as safe wording."""
    return [
        m.group(1) for m in _PHRASE_VALUE.finditer(text)
        if not set(m.group(1).split()) & _STOPWORDS
        and not _SAFE_CONTEXT.search(text[max(0, m.start() - 40): m.start()])
    ]


def _confidential_findings(text: str, located: list[str], extra_confidential: re.Pattern[str] | None,
                           extra_values: re.Pattern[str] | None, details: bool = False) -> list[_Finding]:
    """The CONFIDENTIAL markers ``money``, ``percent``, ``confidential-word``, ``restricted-place``
    (``located`` in a turn with a restriction word), ``restricted-detail`` (with ``details``) and
    ``domain-word``, in that order, with values."""
    out: list[_Finding] = []
    money, percents = _MONEY.findall(text), _PERCENT.findall(text)
    if money:
        out.append(("money", [m.strip() for m in money]))
    if percents:
        out.append(("percent", [p.strip() for p in percents]))
    if _CONFIDENTIAL_WORD.search(text):
        out.append(("confidential-word", []))
    if located and RESTRICTION_WORD.search(text):
        out.append(("restricted-place", located))
    held_back = _restricted_details(text) if details else []
    if held_back:
        out.append(("restricted-detail", held_back))
    if extra_confidential is not None and extra_confidential.search(text):
        values = [] if extra_values is None else [
            m.group(1).rsplit(":", 1)[-1].strip() for m in extra_values.finditer(text)
        ]
        out.append(("domain-word", values))
    return out


def _restricted_details(text: str) -> list[str]:
    """R3 ``restricted-detail``: in a turn with a word holding a detail back (exact, restricted, resident-only,
    private, confidential), the clock times anywhere in the turn (also without AM / PM, so a later "7:15"
    repeats "7:15 AM") and its ``at / in / to / on the <place>`` phrases: the two to four lower-case words
    after "the" (greedy: "at the east curb and ..." gives ``east curb and``, which a later "east curb"
    does not repeat; cutting at connectives was measured and exposed a record on the held-out half, see
    the README), the first word not a stop word."""
    if not _DETAIL_WORD.search(text):
        return []
    out: list[str] = []
    for m in _CLOCK.finditer(text):
        out += [m.group(0).strip(), m.group(1)]
    out += [p for p in _DETAIL_PLACE.findall(text) if not set(p.split()[:1]) & _STOPWORDS]
    return out


def _level(markers: set[str]) -> Sensitivity:
    """R3: RESTRICTED if a restricted marker is present, else CONFIDENTIAL if a confidential one, else INTERNAL."""
    if markers & _RESTRICTED_MARKERS:
        return Sensitivity.RESTRICTED
    if markers & _CONFIDENTIAL_MARKERS:
        return Sensitivity.CONFIDENTIAL
    return Sensitivity.INTERNAL


def is_credential_only(facts: ContentFacts) -> bool:
    """True if the turn states a credential and nothing else protected but places (R6 ``#credentials``)."""
    found = set(facts.markers)
    return bool(found & CREDENTIAL_MARKERS) and not found - CREDENTIAL_MARKERS - {"restricted-place"}


def facet_of(facts: ContentFacts) -> str:
    """R6 facet of a record: ``#credentials`` (credentials, maybe with places), ``#places`` (only a
    restricted room or site) or ``""``."""
    found = set(facts.markers)
    if is_credential_only(facts):
        return "#credentials"
    if found == {"restricted-place"}:
        return "#places"
    return ""


def excluded(phrase: str, exclude: frozenset[str]) -> bool:
    """True if ``phrase`` contains, as whole words, a name from ``exclude`` (case-insensitive)."""
    return any(re.search(r"\b" + re.escape(x) + r"\b", phrase, re.IGNORECASE) for x in exclude)


def _secret_quote(text: str, start: int) -> bool:
    before = text[max(0, start - 80): start]
    return bool(_SECRET_CONTEXT.search(before)) and not _SAFE_CONTEXT.search(before)


def _identities(text: str) -> list[str]:
    out: list[str] = []
    for sentence in _SENTENCE.findall(text):
        if _IDENTITY_NOUN.search(sentence):
            out += _IDENTITY_AFTER.findall(sentence)
        out += _IDENTITY_BEFORE.findall(sentence)
    return [i.strip().rstrip(".,") for i in out if len(i.strip()) > 3]


def _private_note(text: str) -> bool:
    if not re.search(r"\bprivate\b|\bexact\b", text, re.IGNORECASE):
        return False
    for sentence in _SENTENCE.findall(text):
        m = _PRIVATE_NOTE.search(sentence)
        if m and not _NEGATION.search(sentence[: m.start()]) and _MINE.search(sentence):
            return True
    return False


def _is_year(digits: str) -> bool:
    return len(digits) == 4 and digits.startswith(("19", "20"))
