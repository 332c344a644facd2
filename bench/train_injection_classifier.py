"""Train the instruction classifier of :mod:`memwarden.projections.injection_classifier` (issue 12, field
case 4) and write its weights file.

    .venv/bin/python bench/train_injection_classifier.py [--out FILE] [--json]

Training data (the held-out set ``injection_heldout.jsonl`` and the *report* half of the false-alarm
set are never read here):

- ``memwarden/evals/data/injection_labelled.jsonl`` (the rules' development set, 737 items) and
  ``injection_train.jsonl`` (596 items written for this classifier after the held-out set was frozen);
  a seeded share of them is copied with one obfuscation (letter spacing, dotted letters, leetspeak,
  zero-width characters, full-width forms, upper case), the copy in its source item's CV group;
- the *calibration* half of the LoCoMo + GateMem turns (:mod:`memwarden.evals.false_alarms`), as
  benign conversation, one CV group per conversation or episode.

Model selection: 5-fold stratified group cross-validation (seed 12) of logistic regression (injected
items weighted 3, every other text 1) on the embedding alone or on embedding + hashed character
n-grams, for a few values of ``C``. Each configuration's threshold is read off its out-of-fold
probabilities: the smallest that keeps the out-of-fold false-alarm rate on the calibration turns at
or below ``--target-far`` (default 0.0002, i.e. 2 of ~10,700 turns: the budget is 0.001 and the rules
already spend most of it). The configuration with the highest out-of-fold recall of the injected
items at its threshold wins and is refitted on everything. Prints one JSON object with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memwarden.evals.injection_set import LabelledItem, load_labelled  # noqa: E402
from memwarden.projections.injection_classifier import (  # noqa: E402
    CLASSIFIER_VERSION,
    NGRAM_DIM,
    clean_text,
    ngram_features,
    weights_path,
)

SEED = 12
DATA = Path(__file__).resolve().parents[1] / "memwarden" / "evals" / "data"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
#: Weight of an injected item in the fit (every other text weighs 1).
INJECTED_WEIGHT = 3.0
_LEET = str.maketrans("aeiost", "4310$7")
_FULL = {c: chr(ord(c) + 0xFEE0) for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"}


def obfuscate(text: str, how: str, rng: random.Random) -> str:
    """One obfuscated copy of ``text``."""
    if how == "spaced":
        return " ".join(" ".join(w) for w in text.split())
    if how == "dotted":
        return " ".join(".".join(w) for w in text.split())
    if how == "leet":
        return text.translate(_LEET)
    if how == "zero-width":
        return "".join(c + ("\u200b" if c.isalpha() and rng.random() < 0.3 else "") for c in text)
    if how == "full-width":
        return "".join(_FULL.get(c, c) for c in text)
    return text.upper()


def augmented(items: list[LabelledItem], share: float, rng: random.Random) -> tuple[list[str], list[int], list[int]]:
    """Texts, labels and groups: every item, plus an obfuscated copy of ``share`` of them."""
    texts, labels, groups = [], [], []
    hows = ("spaced", "dotted", "leet", "zero-width", "full-width", "upper")
    for g, item in enumerate(items):
        texts.append(item.text)
        labels.append(int(item.injected))
        groups.append(g)
        if rng.random() < share:
            texts.append(obfuscate(item.text, rng.choice(hows), rng))
            labels.append(int(item.injected))
            groups.append(g)
    return texts, labels, groups


def threshold_for(benign: np.ndarray, target_far: float) -> float:
    """The smallest threshold whose false-alarm rate on the ``benign`` scores is <= ``target_far``."""
    ranked = np.sort(benign)[::-1]
    allowed = int(np.floor(target_far * len(ranked)))
    return float(ranked[allowed]) + 1e-6 if allowed < len(ranked) else 0.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=weights_path())
    parser.add_argument("--target-far", type=float, default=0.0002,
                        help="out-of-fold false-alarm rate on the calibration turns")
    parser.add_argument("--locomo", type=Path, default=SHARED / "locomo" / "locomo7.json")
    parser.add_argument("--gatemem", type=Path, default=SHARED / "gatemem")
    parser.add_argument("--augment", type=float, default=0.3, help="share of items copied obfuscated")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedGroupKFold

    from memwarden.evals.false_alarms import benign_turns
    from memwarden.projections.embedder import SentenceTransformerEmbedder
    from memwarden.settings import Settings

    t0 = time.perf_counter()
    items = load_labelled(DATA / "injection_labelled.jsonl") + load_labelled(DATA / "injection_train.jsonl")
    texts, labels, groups = augmented(items, args.augment, random.Random(SEED))
    turns = [t for t in benign_turns(args.locomo, args.gatemem) if t.half == "calibration"]
    units = {u: len(items) + i for i, u in enumerate(sorted({(t.corpus, t.unit) for t in turns}))}
    texts += [t.text for t in turns]
    labels += [0] * len(turns)
    groups += [units[(t.corpus, t.unit)] for t in turns]
    is_turn = np.asarray([False] * (len(texts) - len(turns)) + [True] * len(turns))
    y, g = np.asarray(labels), np.asarray(groups)
    weight = np.where(y == 1, INJECTED_WEIGHT, 1.0)
    embedder = SentenceTransformerEmbedder(cache_dir=Settings().data_dir / "onnx")
    cleaned = [clean_text(t) for t in texts]
    emb = embedder.embed(cleaned).astype(np.float32)
    blocks = {"embedding": emb, "embedding+ngrams": np.hstack([emb, ngram_features(cleaned)])}
    folds = list(StratifiedGroupKFold(n_splits=5, shuffle=True, random_state=SEED).split(emb, y, g))
    tried = []
    best: dict | None = None
    for name, x in blocks.items():
        for c in (1.0, 4.0):
            oof = np.zeros(len(y))
            for train, test in folds:
                model = LogisticRegression(C=c, max_iter=3000).fit(x[train], y[train], sample_weight=weight[train])
                oof[test] = model.predict_proba(x[test])[:, 1]
            thr = threshold_for(oof[is_turn], args.target_far)
            row = {"features": name, "C": c, "threshold": round(thr, 4),
                   "oof_recall": round(float(np.mean(oof[y == 1] >= thr)), 4),
                   "oof_far_calibration_turns": round(float(np.mean(oof[is_turn] >= thr)), 5),
                   "oof_far_written_benign": round(float(np.mean(oof[(y == 0) & ~is_turn] >= thr)), 4)}
            tried.append(row)
            if best is None or row["oof_recall"] > best["oof_recall"]:
                best = row
    assert best is not None
    x = blocks[best["features"]]
    model = LogisticRegression(C=best["C"], max_iter=3000).fit(x, y, sample_weight=weight)
    coef = model.coef_[0].astype(np.float32)
    if best["features"] == "embedding":
        coef = np.concatenate([coef, np.zeros(NGRAM_DIM, dtype=np.float32)])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, coef=coef, bias=np.float64(model.intercept_[0]),
                        threshold=np.float64(best["threshold"]), version=np.str_(CLASSIFIER_VERSION))
    result = {"version": CLASSIFIER_VERSION, "seed": SEED, "items": len(items), "calibration_turns": len(turns),
              "texts": len(texts),
              "injected": int(y.sum()), "benign": int((y == 0).sum()), "chosen": best, "tried": tried,
              "weights": str(args.out), "seconds": round(time.perf_counter() - t0, 1)}
    if args.json:
        print(json.dumps(result))
    else:
        for row in tried:
            print(row)
        print("chosen:", best, "->", args.out)


if __name__ == "__main__":
    main()
