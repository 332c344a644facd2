"""Train the instruction classifier of :mod:`memwarden.projections.injection_classifier` (issue 12, field
case 4) and write its weights file.

    .venv/bin/python bench/train_injection_classifier.py [--out FILE] [--json]

Training data (the held-out set ``injection_heldout4.jsonl`` and the *report* half of the false-alarm
set are never read here):

- ``memwarden/evals/data/injection_labelled.jsonl`` (the rules' development set, 737 items),
  ``injection_train.jsonl`` (596 items written for the first classifier), ``injection_train2.jsonl``
  (557 items written for the second by another writer: policy and capability notices, relayed
  requests, instructions buried in longer texts, triggers, obfuscation, and 90 injected + 90 benign
  items in six other languages), ``injection_heldout.jsonl`` (246 items, the first classifier's
  held-out set), ``injection_heldout2.jsonl`` (250, the second's) and ``injection_heldout3.jsonl`` (250,
  the third set, heavy in imported records and tool output), each development data since the next set
  was frozen (version 3 reads the last two; version 2 did not); a seeded share of them is
  copied with one obfuscation (letter spacing, dotted letters, leetspeak, zero-width characters,
  full-width forms, upper case), the copy in its source item's CV group;
- the *calibration* half of the LoCoMo + GateMem turns (:mod:`memwarden.evals.false_alarms`), as
  benign conversation, one CV group per conversation or episode.

Model selection: 5-fold stratified group cross-validation (seed 12) of logistic regression (injected
items weighted 3, every other text 1) on embedding + hashed character n-grams, with or without hashed
words, for ``C`` in 1, 2, 4, 8, 16. Each configuration's threshold is read off its out-of-fold
probabilities, for the detector as it ships (the rules OR the classifier): the one giving the best
``min(precision, recall)`` on the written items (injected against the tricky written benign texts,
about one to one like the held-out sets; issue 12 asks for both >= 0.9), among the thresholds that
keep the out-of-fold false-alarm rate on the calibration turns at or below ``--target-far`` (default
0.0002, i.e. 2 of ~10,700 turns: the budget is 0.001 and the rules already spend most of it). The
configuration with the best out-of-fold ``min(precision, recall)`` wins and is refitted on everything.
(Version 1 chose by out-of-fold recall at the lowest admissible threshold, which left 15 % of the
written benign texts flagged out of fold.)

The *suspicion threshold* (``Detection.suspect``, version 3 on; the gate keeps a suspect tool result,
imported record or model inference out of default reads) is read off the chosen configuration's
out-of-fold probabilities too, by a rule fixed before the first version-3 run: among the 0.05 steps
below the decision threshold whose out-of-fold share of calibration turns at or above them is at most
``--suspicion-budget`` (0.005: real conversation tagged that often would cost readers little but is the
most we accept), the highest that catches >= 99 % of the written injected items (rules OR probability),
else the lowest such step. Prints one JSON object with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memwarden.evals.injection_set import LabelledItem, load_labelled  # noqa: E402
from memwarden.projections.injection_classifier import (  # noqa: E402
    CLASSIFIER_VERSION,
    WORD_DIM,
    clean_text,
    ngram_features,
    weights_path,
    word_features,
)

SEED = 12
DATA = Path(__file__).resolve().parents[1] / "memwarden" / "evals" / "data"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
#: Weight of an injected item in the fit (every other text weighs 1).
INJECTED_WEIGHT = 3.0
#: The training files under ``memwarden/evals/data`` (never ``injection_heldout4.jsonl``).
TRAINING_FILES = ("injection_labelled", "injection_train", "injection_train2", "injection_heldout",
                  "injection_heldout2", "injection_heldout3")
#: The suspicion threshold's grid step and the share of written injected items it aims to catch.
SUSPICION_STEP = 0.05
SUSPICION_CATCH = 0.99
#: The regularisation strengths tried.
CS = (1.0, 2.0, 4.0, 8.0, 16.0)
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


def best_threshold(scores: np.ndarray, injected: np.ndarray, rules: np.ndarray,
                   floor: float) -> tuple[float, float, float]:
    """``(threshold, precision, recall)`` of the detector ``rules | (scores >= threshold)`` against the
    boolean labels ``injected``, for the threshold >= ``floor`` (candidates: the scores rounded to 0.001)
    with the best ``min(precision, recall)``; the lowest such threshold on ties."""
    best = (floor, 0.0, 0.0)
    for t in np.unique(np.round(scores, 3)):
        if t < floor:
            continue
        flagged = rules | (scores >= t)
        tp = int(np.sum(flagged & injected))
        precision = tp / max(int(np.sum(flagged)), 1)
        recall = tp / max(int(np.sum(injected)), 1)
        if min(precision, recall) > min(best[1], best[2]):
            best = (float(t), precision, recall)
    return best


def suspicion_for(scores: np.ndarray, injected: np.ndarray, rules: np.ndarray, turns: np.ndarray,
                  threshold: float, budget: float) -> float:
    """The suspicion threshold of the module docstring: ``scores`` out of fold for the written items
    (``injected`` their labels, ``rules`` the rules' verdicts) and ``turns`` for the calibration turns."""
    steps = [round(SUSPICION_STEP * i, 2) for i in range(1, int(1 / SUSPICION_STEP))]
    allowed = [t for t in steps if t < threshold and float(np.mean(turns >= t)) <= budget]
    if not allowed:
        return threshold
    catching = [t for t in allowed if float(np.mean((rules | (scores >= t))[injected])) >= SUSPICION_CATCH]
    return max(catching) if catching else min(allowed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=weights_path())
    parser.add_argument("--target-far", type=float, default=0.0002,
                        help="out-of-fold false-alarm rate on the calibration turns")
    parser.add_argument("--locomo", type=Path, default=SHARED / "locomo" / "locomo7.json")
    parser.add_argument("--gatemem", type=Path, default=SHARED / "gatemem")
    parser.add_argument("--augment", type=float, default=0.3, help="share of items copied obfuscated")
    parser.add_argument("--suspicion-budget", type=float, default=0.005,
                        help="out-of-fold share of calibration turns the suspicion threshold may tag")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedGroupKFold

    from memwarden.commands.injection import DEFAULT_DETECTOR as RULES
    from memwarden.evals.false_alarms import benign_turns
    from memwarden.projections.embedder import SentenceTransformerEmbedder
    from memwarden.settings import Settings

    t0 = time.perf_counter()
    items = [item for name in TRAINING_FILES for item in load_labelled(DATA / f"{name}.jsonl")]
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
    by_rules = np.asarray([not turn and RULES.detect(t).carries_instructions for t, turn in zip(texts, is_turn,
                                                                                                strict=True)])
    emb = embedder.embed(cleaned).astype(np.float32)
    grams = np.hstack([emb, ngram_features(cleaned)])
    blocks = {"embedding+ngrams": grams, "embedding+ngrams+words": np.hstack([grams, word_features(cleaned)])}
    folds = list(StratifiedGroupKFold(n_splits=5, shuffle=True, random_state=SEED).split(emb, y, g))
    tried = []
    best: dict | None = None
    best_oof = np.zeros(len(y))
    for name, x in blocks.items():
        for c in CS:
            oof = np.zeros(len(y))
            for train, test in folds:
                model = LogisticRegression(C=c, max_iter=3000).fit(x[train], y[train], sample_weight=weight[train])
                oof[test] = model.predict_proba(x[test])[:, 1]
            floor = threshold_for(oof[is_turn], args.target_far)
            thr, precision, recall = best_threshold(oof[~is_turn], y[~is_turn] == 1, by_rules[~is_turn], floor)
            thr = math.ceil(thr * 1e4) / 1e4  # the shipped value, rounded up: never below the false-alarm floor
            row = {"features": name, "C": c, "threshold": thr,
                   "oof_combined_precision": round(precision, 4), "oof_combined_recall": round(recall, 4),
                   "oof_combined_min": round(min(precision, recall), 4),
                   "oof_recall": round(float(np.mean(oof[y == 1] >= thr)), 4),
                   "oof_far_calibration_turns": round(float(np.mean(oof[is_turn] >= thr)), 5),
                   "oof_far_written_benign": round(float(np.mean(oof[(y == 0) & ~is_turn] >= thr)), 4)}
            tried.append(row)
            if best is None or row["oof_combined_min"] > best["oof_combined_min"]:
                best, best_oof = row, oof
    assert best is not None
    written = ~is_turn
    best["suspicion"] = suspicion_for(best_oof[written], y[written] == 1, by_rules[written], best_oof[is_turn],
                                      best["threshold"], args.suspicion_budget)
    flagged = by_rules[written] | (best_oof[written] >= best["suspicion"])
    best["oof_suspicion_catch"] = round(float(np.mean(flagged[y[written] == 1])), 4)
    best["oof_suspicion_written_benign"] = round(float(np.mean(flagged[y[written] == 0])), 4)
    best["oof_suspicion_calibration_turns"] = round(float(np.mean(best_oof[is_turn] >= best["suspicion"])), 5)
    x = blocks[best["features"]]
    model = LogisticRegression(C=best["C"], max_iter=3000).fit(x, y, sample_weight=weight)
    coef = model.coef_[0].astype(np.float32)
    if best["features"] == "embedding+ngrams":
        coef = np.concatenate([coef, np.zeros(WORD_DIM, dtype=np.float32)])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, coef=coef, bias=np.float64(model.intercept_[0]),
                        threshold=np.float64(best["threshold"]), suspicion=np.float64(best["suspicion"]),
                        version=np.str_(CLASSIFIER_VERSION))
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
