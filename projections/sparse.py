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

Tokens: NFKC normalisation, ``casefold``, Unicode word runs (``\\w+``, underscores split), English
stopwords and one-character tokens dropped, a light suffix stemmer (:func:`stem`). Term ids are the
first 4 bytes of BLAKE2b of the token (unsigned 32-bit, big-endian): stable across processes and
versions, no vocabulary file; two terms may share an id (about one pair per 100k distinct terms),
which only merges their counts.

Ties: without length normalisation (the default ``b = 0``) every text matching the same query terms
once scores exactly the same, and an engine cuts such ties at a prefetch boundary in its own storage
order (which differs between Edge and a server, and changes when segments merge). A document vector
built with ``key`` (the point id) is scaled by ``1 + TIEBREAK * u(key)``, ``u`` in [0, 1) from a hash
of the key: equal scores become distinct and ordered the same way by every engine, while scores that
differ by more than ``TIEBREAK`` (relative) keep their order.

Everything here is pure and deterministic.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

from memwarden.errors import ValidationError
from memwarden.projections.vector_index import SparseVector

__all__ = ["AVG_LEN", "B", "K1", "STOPWORDS", "TIEBREAK", "Bm25Encoder", "stem", "term_id", "tokens"]

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


def tokens(text: str) -> list[str]:
    """Index terms of ``text`` in order: NFKC + casefold, Unicode word runs, stopwords and
    one-character tokens dropped, :func:`stem` applied."""
    normal = unicodedata.normalize("NFKC", text).casefold()
    return [stem(w) for w in _WORD.findall(normal) if len(w) > 1 and w not in STOPWORDS]


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
