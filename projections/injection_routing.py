"""Each instruction classifier decides in the language it was trained on (issue 12, field case 4).

The fine-tuned classifier (:mod:`memwarden.projections.injection_finetuned`, all-MiniLM-L6-v2) was trained on
English; the multilingual head (:mod:`memwarden.projections.injection_multilingual`, multilingual-e5-small)
scores the texts that are not English. Before this module both voted on every text, and on the twentieth to
twenty-third blind sets most of the detector's false alarms were the English model's verdicts on ordinary
non-English texts (a French bank notice, a Thai order record, a German nursery-run preference: P(injected)
0.92-0.99), which the multilingual head scored low.

:class:`CorroboratedScorer` wraps the English scorer: its probability is the English model's on English texts
(:func:`~memwarden.projections.injection_multilingual.is_english`); on a text that is not English it is the
English model's only when the multilingual head gives the text at least :data:`CORROBORATION`, and otherwise is
capped just below the English model's decision threshold, so it never quarantines alone but still marks the text
*suspect* (kept out of default reads from sources that are not a person's own statement) when it reaches the
suspicion threshold. Nothing else changes: the rules, the English model on English texts and the multilingual
head at its own threshold decide as before.

**Chosen on the development sets** (the eighteenth to twenty-third held-out sets, 1,500 texts; rules/16 OR
``minilm-ft/5`` OR ``e5-lr/2``): precision / recall 0.929 / 0.969 without the corroboration (53 false
positives, 22 misses), 0.938 / 0.968 at 0.4, **0.941 / 0.967 at 0.5** (44 / 24), 0.944 / 0.961 at 0.6; dropping
the English model on non-English texts altogether gave 0.950 / 0.889 (its hits there are mostly right when the
multilingual head leans the same way). Reported on the twenty-fourth set, written afterwards.

Pure apart from calling the two scorers; thread-safe as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memwarden.projections.injection_classifier import Scorer
from memwarden.projections.injection_multilingual import MultilingualScorer, is_english

__all__ = ["CORROBORATION", "CorroboratedScorer"]

#: The multilingual head's P(injected) from which the English model's verdict on a non-English text counts.
CORROBORATION = 0.5


@dataclass(frozen=True, slots=True)
class _Weights:
    """The English scorer's thresholds under a version that names the routing (``minilm-ft/5@en``)."""

    threshold: float
    suspicion: float
    version: str


class CorroboratedScorer:
    """P(injected) per text from ``english`` (a :class:`~memwarden.projections.injection_classifier.Scorer`),
    decisive on English texts and, on the others, only where ``multilingual`` gives at least ``corroboration``
    (else capped just below ``english``'s decision threshold; see the module docstring).

    ``weights``: ``english``'s thresholds, version ``<english version>@en``. Raises ``ValueError`` for a
    ``corroboration`` outside [0, 1]."""

    def __init__(self, english: Scorer, multilingual: MultilingualScorer,
                 corroboration: float = CORROBORATION) -> None:
        if not 0.0 <= corroboration <= 1.0:
            raise ValueError(f"corroboration: must be in [0, 1], got {corroboration!r}")
        self._english = english
        self._multilingual = multilingual
        self._corroboration = corroboration
        w = english.weights
        self.weights = _Weights(w.threshold, w.suspicion, f"{w.version}@en")

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        """One probability per text, shape ``(len(texts),)``."""
        p = np.asarray(self._english.scores(texts), dtype=np.float64).copy()
        foreign = [i for i, t in enumerate(texts) if t.strip() and not is_english(t)]
        if foreign:
            q = self._multilingual.scores([texts[i] for i in foreign])
            cap = float(np.nextafter(self.weights.threshold, 0.0))
            for i, qi in zip(foreign, q, strict=True):
                if qi < self._corroboration:
                    p[i] = min(p[i], cap)
        return p
