"""Lexical sparse vectors for hybrid retrieval (issue 4, "Hybrid retrieval"; candidates for Eq. 5).

BM25 split in two halves so that the vector engine can do the corpus-dependent part:

* the **document** half is computed here, per text, with no corpus statistics: each term gets the
  saturated, length-normalised term frequency
  ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg_len))``, where ``len`` is the number of terms
  of the text and ``avg_len`` a constant (:data:`AVG_LEN`, the usual length of a stored memory);
* the **IDF** half, ``ln(1 + (N - n + 0.5) / (n + 0.5))``, is applied by Qdrant's ``IDF`` modifier on
  the sparse vector, from the live point counts of the index (so it follows writes and forgets);
* a **query** gives each distinct term the weight 1.0 (repeated query terms do not count twice).

The dot product of a query and a document vector under the IDF modifier is then the Okapi BM25 score.

Tokens (:func:`tokens`): NFKC normalisation, ``casefold``, then word runs (letters and digits, with
the combining marks that follow them; underscores split). How a run becomes terms depends on its script:

* **Han, kana and Hangul** (Chinese, Japanese, Korean; :data:`CJK`) do not mark word boundaries with
  spaces (and Korean glues particles to its words: ``도서관에서`` = library + "at"), so a run of them
  gives every character (**unigram**) and every pair of adjacent characters (**bigram**), as the
  dictionary-free CJK analysers of search engines do: ``紅葉を`` -> ``紅``, ``紅葉``, ``葉``, ``葉を``, ``を``.
  A query matches a text that contains its characters in the same order, whatever the segmentation;
  frequent characters and particles (``の``, ``은``) weigh little by IDF, a shared bigram much more.
* **Thai, Lao, Khmer, Myanmar** and the other Southeast Asian scripts written without spaces
  (:data:`SOUTHEAST_ASIAN`) are alphabetic, a single letter says little: a run of them gives the
  bigrams of its grapheme clusters (a letter with its combining vowel and tone marks), or its one
  cluster.
* **Every other script** (Latin, Cyrillic, Greek, Arabic, Hebrew, Devanagari, ...) separates words
  with spaces: a run is a word; English stopwords and one-character words are dropped, and a light
  English suffix stemmer (:func:`stem`) applied. For ASCII text this is exactly the tokenisation of
  the first version (``[^\\W_]+`` runs), so stored English vectors and the LoCoMo figures do not
  move. Combining marks now stay inside their word: that changes the scripts that write vowels or
  vowel points as marks (Devanagari and the other Indic scripts, whose words the first version cut
  at every vowel sign; vocalised Arabic and Hebrew), not Latin text, which NFKC composes.

No segmentation dictionary or model is needed (nothing is downloaded; the ranges are code points of
Unicode 14). Term ids are the first 4 bytes of BLAKE2b of the token (unsigned 32-bit, big-endian):
stable across processes and versions, no vocabulary file; two terms may share an id (about one pair
per 100k distinct terms), which only merges their counts.

Ties: without length normalisation (the default ``b = 0``) every text matching the same query terms
once scores exactly the same, and an engine cuts such ties at a prefetch boundary in its own storage
order (which differs between Edge and a server, and changes when segments merge). A document vector
built with ``key`` (the point id) is scaled by ``1 + TIEBREAK * u(key)``, ``u`` in [0, 1) from a hash
of the key: equal scores become distinct and ordered the same way by every engine, while scores that
differ by more than ``TIEBREAK`` (relative) keep their order.

Everything here is pure and deterministic.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

from memwarden.errors import ValidationError
from memwarden.projections.vector_index import SparseVector

__all__ = ["AVG_LEN", "B", "CJK", "K1", "SOUTHEAST_ASIAN", "STOPWORDS", "TIEBREAK", "Bm25Encoder", "stem",
           "term_id", "tokens"]

#: BM25 term-frequency saturation (dimensionless).
K1 = 1.2
#: BM25 length normalisation, 0 (none) .. 1 (full). None by default: memories are short statements,
#: and on LoCoMo (bench/locomo_hybrid_offline.py) recall@10 fell steadily as b rose from 0 to 1 (as
#: short-text retrieval studies report: a longer statement holds more facts, it is not verbose).
B = 0.0
#: Average text length in terms (after stopwords) assumed by the length normalisation when ``b > 0``
#: (the mean over the LoCoMo turns is 14).
AVG_LEN = 14.0

#: Largest relative scaling of a document vector by its tie-break key (see the module notes).
TIEBREAK = 1e-3

_STOPWORD_TEXT = """a about above after again against all am an and any are aren as at be because been before
    being below between both but by can couldn cannot could d did didn do does doesn doing don down during each few
    for from further had hadn has hasn have haven having he her here hers herself him himself his how i if in into is
    isn it its itself just ll m ma me mightn more most mustn my myself needn no nor not now o of off on once
    only or other our ours ourselves out over own re s same shan she should shouldn so some such t than that
    the their theirs them themselves then there these they this those through to too under until up ve very
    was wasn we were weren what when where which while who whom why will with won wouldn y you your yours
    yourself yourselves would shall may might must also"""
#: English stopwords (a common list: articles, pronouns, auxiliaries, prepositions, conjunctions).
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())

_WORD = re.compile(r"[^\W_]+")


def stem(token: str) -> str:
    """A light English suffix stemmer (plural and ``-ing``/``-ed``/``-ly`` forms), conservative on
    short words: ``"hobbies"`` -> ``"hobby"``, ``"paintings"`` -> ``"paint"``, ``"painted"`` ->
    ``"paint"``, ``"glass"`` -> ``"glass"``. Not a full Porter stemmer: it only needs to merge the
    common inflections of one word, the same way for documents and queries."""
    if len(token) <= 3 or not token.isalpha():
        return token
    if token.endswith("ies") and len(token) > 4:
        token = token[:-3] + "y"
    elif token.endswith(("sses", "ches", "shes", "xes")):
        token = token[:-2]
    elif token.endswith("s") and not token.endswith(("ss", "us", "is")):
        token = token[:-1]
    for suffix in ("ing", "ed", "ly"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            base = token[: -len(suffix)]
            if len(base) >= 4 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]  # "running" -> "run", "planned" -> "plan"
            return base
    return token


#: Code point ranges (inclusive) of the scripts whose runs give character unigrams and bigrams: Hangul
#: jamo, the ideographic iteration/closing marks and numerals, hiragana, katakana, bopomofo, Hangul
#: compatibility jamo, CJK ideographs (extension A, unified, compatibility, extensions B-H), Hangul
#: syllables and jamo extensions, half-width katakana and Hangul, the kana supplements.
CJK: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF), (0x3005, 0x3007), (0x3021, 0x3029), (0x3031, 0x3035), (0x3038, 0x303C),
    (0x3040, 0x30FF), (0x3100, 0x312F), (0x3130, 0x318F), (0x31A0, 0x31BF), (0x31F0, 0x31FF),
    (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xA960, 0xA97F), (0xAC00, 0xD7FF), (0xF900, 0xFAFF),
    (0xFF66, 0xFFDC), (0x1B000, 0x1B16F), (0x20000, 0x323AF),
)
#: Code point ranges of the Southeast Asian scripts written without spaces, whose runs give bigrams of
#: grapheme clusters: Thai, Lao, Myanmar, Khmer, Tai Le, New Tai Lue, Khmer symbols, Tai Tham,
#: Balinese, Javanese, Myanmar extensions B and A, Tai Viet.
SOUTHEAST_ASIAN: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x1950, 0x19FF), (0x1A20, 0x1AAF),
    (0x1B00, 0x1B7F), (0xA980, 0xA9FF), (0xAA60, 0xAADF),
)

_OTHER, _CJK, _SEA = 0, 1, 2
_RANGES = sorted([(lo, hi, _CJK) for lo, hi in CJK] + [(lo, hi, _SEA) for lo, hi in SOUTHEAST_ASIAN])
_STARTS = [lo for lo, _, _ in _RANGES]


def _script(ch: str) -> int:
    """``_CJK``, ``_SEA`` or ``_OTHER`` for one character."""
    i = bisect.bisect_right(_STARTS, ord(ch)) - 1
    return _RANGES[i][2] if i >= 0 and ord(ch) <= _RANGES[i][1] else _OTHER


def _word(w: str) -> list[str]:
    """A space-delimited script's word as its term (none for a stopword or a single character)."""
    return [stem(w)] if len(w) > 1 and w not in STOPWORDS else []


def _grams(units: list[str], script: int) -> list[str]:
    """The terms of a run of ``script`` units (characters with their combining marks), in order: for
    CJK each unit and each adjacent pair, for the Southeast Asian scripts each pair (one unit alone)."""
    if script == _SEA and len(units) > 1:
        return [a + b for a, b in zip(units, units[1:], strict=False)]
    out: list[str] = []
    for i, unit in enumerate(units):
        out.append(unit)
        if i + 1 < len(units):
            out.append(unit + units[i + 1])
    return out


def _segment(run: str) -> list[str]:
    """The terms of one word run that holds a combining mark or a CJK/Southeast Asian character: split
    into maximal pieces of one script class (a mark belongs to the character before it)."""
    out: list[str] = []
    units: list[str] = []  # characters with their marks, of the current piece
    current = _OTHER
    for ch in run:
        if not ch.isalnum():  # a combining mark: part of the unit before it
            units[-1] += ch
            continue
        script = _script(ch)
        if script != current and units:
            out += _word("".join(units)) if current == _OTHER else _grams(units, current)
            units = []
        current = script
        units.append(ch)
    if units:
        out += _word("".join(units)) if current == _OTHER else _grams(units, current)
    return out


def _runs(normal: str) -> list[str]:
    """Word runs of non-ASCII text: letters and digits (``str.isalnum``, the same set as ``[^\\W_]``)
    with the combining marks that follow them."""
    runs: list[str] = []
    start = -1
    for i, ch in enumerate(normal):
        if ch.isalnum() or (start >= 0 and unicodedata.category(ch)[0] == "M"):
            if start < 0:
                start = i
        elif start >= 0:
            runs.append(normal[start:i])
            start = -1
    if start >= 0:
        runs.append(normal[start:])
    return runs


def tokens(text: str) -> list[str]:
    """Index terms of ``text`` in order (see the module notes): NFKC + casefold, word runs; a CJK run
    gives its character unigrams and bigrams, a Southeast Asian run its cluster bigrams, any other run
    is a word (stopwords and one-character words dropped, :func:`stem` applied)."""
    normal = unicodedata.normalize("NFKC", text).casefold()
    if normal.isascii():  # the fast path, and the first version's tokens exactly
        return [t for w in _WORD.findall(normal) for t in _word(w)]
    out: list[str] = []
    for run in _runs(normal):
        if run.isalnum() and not any(_script(ch) for ch in run):
            out += _word(run)
        else:
            out += _segment(run)
    return out


def term_id(term: str) -> int:
    """Stable 32-bit id of a term: BLAKE2b (4-byte digest) of its UTF-8 bytes, big-endian."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest(), "big")


def _vector(weights: dict[int, float]) -> SparseVector:
    ordered = sorted(weights.items())
    return SparseVector(tuple(i for i, _ in ordered), tuple(w for _, w in ordered))


@dataclass(frozen=True)
class Bm25Encoder:
    """Texts -> :class:`SparseVector` for the ``lexical`` vector of the index (see the module notes).

    ``k1`` >= 0, ``b`` in [0, 1] and ``avg_len`` > 0 (terms) parametrise the document half of BM25;
    raises ``ValidationError`` otherwise. Hash collisions sum their weights."""

    k1: float = K1
    b: float = B
    avg_len: float = AVG_LEN

    def __post_init__(self) -> None:
        if self.k1 < 0:
            raise ValidationError("k1", f"must be >= 0, got {self.k1}")
        if not 0.0 <= self.b <= 1.0:
            raise ValidationError("b", f"must be in [0, 1], got {self.b}")
        if self.avg_len <= 0:
            raise ValidationError("avg_len", f"must be > 0, got {self.avg_len}")

    def document(self, text: str, key: str | None = None) -> SparseVector:
        """Saturated term frequencies of ``text``; empty when it has no index term. With ``key``
        (the point id) every weight is scaled by ``1 + TIEBREAK * u(key)`` to break score ties."""
        terms = tokens(text)
        if not terms:
            return SparseVector()
        norm = self.k1 * (1.0 - self.b + self.b * len(terms) / self.avg_len)
        scale = 1.0 if key is None else 1.0 + TIEBREAK * term_id(key) / 2**32
        weights: dict[int, float] = {}
        for term, tf in Counter(terms).items():
            tid = term_id(term)
            weights[tid] = weights.get(tid, 0.0) + scale * tf * (self.k1 + 1.0) / (tf + norm)
        return _vector(weights)

    def query(self, text: str) -> SparseVector:
        """Weight 1.0 per distinct term of ``text``; empty when it has no index term."""
        return _vector(dict.fromkeys((term_id(t) for t in tokens(text)), 1.0))

    def part_query(self, part: str, context: str, context_weight: float) -> SparseVector:
        """The query of one part of an enumerating question (:mod:`memwarden.commands.readmodel.query_parts`):
        weight 1.0 per distinct term of ``part``, ``context_weight`` (in [0, 1]) per other distinct
        term of the whole question ``context``. Raises ``ValidationError`` for a weight outside [0, 1]."""
        if not 0.0 <= context_weight <= 1.0:
            raise ValidationError("context_weight", f"must be in [0, 1], got {context_weight}")
        weights = dict.fromkeys((term_id(t) for t in tokens(context)), context_weight)
        weights.update(dict.fromkeys((term_id(t) for t in tokens(part)), 1.0))
        return _vector({t: w for t, w in weights.items() if w > 0})
