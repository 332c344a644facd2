"""Rule R10 of :mod:`memwarden.evals.gatemem_forgetting`, where it is spelled out: the values a deletion
segment names (quoted strings and mappings, codes, labels, amounts, percentages, times, places, PINs,
names given as an identity, phrases after a kind noun, objects of an imperative delete / remove), and
the matching of a value in a text, case and spacing folded and on word boundaries, that R10-R12 share
(pure, no I/O)."""

from __future__ import annotations

import re

from memwarden.evals.gatemem_content import excluded

__all__ = ["QUOTE", "contains", "fold", "pattern", "segment_values"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: A quoted string ('...', "...", curly quotes): a value to forget (R10), never cut into segments (R9).
QUOTE = re.compile(r"(?<!\w)'([^']{2,120})'(?!\w)|\"([^\"]{2,120})\"|\u201c([^\u201d]{2,120})\u201d")
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


def _quoted(segment: str, exclude: frozenset[str]) -> tuple[list[str], list[str]]:
    """(quoted values, the sides of quoted mappings that are not names of the episode)."""
    out: list[str] = []
    sides: list[str] = []
    for m in QUOTE.finditer(segment):
        value = next(g for g in m.groups() if g is not None).strip(" ,.")
        if _SAFE_BEFORE.search(segment[max(0, m.start() - 50): m.start()]):
            continue
        parts = [s.strip(" ,.") for s in _MAPPING.split(value)]
        if len(parts) > 1:
            out.append(value)
            sides.extend(s for s in parts if s and not excluded(s, exclude))
        elif fold(value) not in {fold(x) for x in exclude}:
            out.append(value)  # a quoted phrase may contain a track's name ('laurel pulse'), never be one
    unquoted = QUOTE.sub(" ", segment)
    sides.extend(n.strip().rstrip(".,") for n in _MAPPED_NAME.findall(unquoted) if not excluded(n, exclude))
    return out, sides


def _identities(segment: str, exclude: frozenset[str]) -> list[str]:
    if not _IDENTITY_NOUN.search(segment):
        return []
    unquoted = QUOTE.sub(" ", segment)
    return [n.strip().rstrip(".,") for n in _NAME.findall(unquoted)
            if len(n.strip()) > 3 and not excluded(n, exclude) and not _is_calendar(n)]


def _phrases(segment: str) -> list[str]:
    """Unquoted words after a kind noun, and the unquoted object of an imperative delete / remove."""
    unquoted = QUOTE.sub(" \" ", segment)
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


def segment_values(segment: str, exclude: frozenset[str]) -> list[str]:
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
    folded = [fold(v) for v in values]
    kept = [v for v, f in zip(values, folded, strict=True)
            if not any(f != g and contains(g, f) for g in folded) and not _named_current(segment, v)]
    return list(dict.fromkeys([*kept, *(s for s in sides if len(s) >= 2)]))


def _named_current(segment: str, value: str) -> bool:
    """A value introduced as current / active / new ("the current amount 3,620 USD") in a segment
    with no delete / remove verb before it: a reminder of what stays, not a deletion."""
    m = pattern(value).search(segment)
    if m is None:
        return False
    before = segment[: m.start()]
    return bool(_CURRENT_BEFORE.search(before)) and not _DELETE_VERB.search(before)


def fold(text: str) -> str:
    """``text`` case-folded, its runs of whitespace made single spaces."""
    return " ".join(text.casefold().split())


def contains(text: str, value: str) -> bool:
    """``value`` occurs in ``text`` (both folded) on word boundaries where the value starts or ends with one."""
    return pattern(value).search(text) is not None


def pattern(value: str) -> re.Pattern[str]:
    """A case-insensitive pattern of ``value``, any whitespace between its words, anchored on word
    boundaries where the value starts or ends with a letter or digit."""
    body = r"\s+".join(re.escape(w) for w in value.split())
    head = r"(?<!\w)" if value[:1].isalnum() else ""
    tail = r"(?!\w)" if value[-1:].isalnum() else ""
    return re.compile(head + body + tail, re.IGNORECASE)
