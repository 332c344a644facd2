"""Fine-tune the instruction classifier of :mod:`memwarden.projections.injection_finetuned` (issue 12,
field case 4) and write its weights file.

    .venv/bin/python bench/train_injection_finetune.py --validate [--json]   # choose the thresholds
    .venv/bin/python bench/train_injection_finetune.py [--out FILE] [--json]  # train on all, write weights

**Data.** The written development sets (``injection_labelled``, ``injection_train``, ``injection_train2``,
``injection_train3`` and the first ten held-out sets, each development data since the next was frozen;
the eleventh, ``injection_heldout11.jsonl``, is never read here) with a seeded 30 % obfuscated copy (the LR
trainer's ``augmented``), and every turn of the *calibration* half of the LoCoMo + GateMem turns (10,670) as
benign conversation (the *report* half is never read). Version 1 (``minilm-ft/1``) read four sets and 3,000
of those turns; version 2 five sets and every calibration turn; version 3 also the sixth set and
``injection_train3`` (training data only: non-English manuals, recipes, minutes, records and chat, users'
own standing preferences and benign inferences, each beside near-twin injections, written for the false
alarms version 2 raised on the sixth set); version 4 also the seventh and eighth sets (two more blind
writers, 22-27 % non-English); version 5 also the ninth and tenth.

**The screen** (version 5 on; :class:`~memwarden.projections.injection_finetuned.Screen`): logistic
regression (scikit-learn, ``C`` :data:`SCREEN_C`, injected items weighing :data:`SCREEN_INJECTED_WEIGHT`)
over the hashed character n-grams and words of the same cleaned texts, fitted on the same data; a text it
gives less than :data:`SCREEN_THRESHOLD` never reaches the transformer. Chosen on 2026-12-04 before version
5's final run, offline: for each of the sixth to tenth held-out sets, a screen trained on the development
files before it (as above, ``C`` 4, weight 10) scored that set and the report half of the turns; at 0.02 it
cleared 0 of the injected items the rules missed on all five sets and 82-84 % of the turns (at 0.05: 0 and
92 %; at 0.1 one injected item of the ninth set). ``--validate`` prints the same counts for the screen trained
without the last set (``screen``).

**Opaque identifiers.** From ``rules/8+minilm-ft/5`` on the scorer reads text with opaque identifiers
masked (:func:`~memwarden.projections.injection_classifier.clean_text` ``mask_ids``); version 5 was trained
on unmasked text (this script as committed with its weights). Train the next version with ``mask_ids=True``
so that training and scoring read the same text.

**Model.** The packaged all-MiniLM-L6-v2 with its embeddings and bottom
:data:`~memwarden.projections.injection_finetuned.FROZEN_LAYERS` layers frozen, the top two layers and a
linear head on the mean-pooled output trained with binary cross-entropy (injected items weigh 3), AdamW
(lr 1e-4, weight decay 0.01; the rate is a linear warm-up over the first 6 % of steps times a linear decay
from the first step, so it peaks near 0.94 lr; gradient norm clipped at 1), batches of 32 of
similar length, 3 epochs, on the cleaned text, 2 CPU threads (~20 min here).

**Thresholds** (``--validate``, a rule fixed before the run): the same training without the last
development set (``injection_heldout8`` for version 4, ``injection_heldout6`` for version 3,
``injection_heldout5`` for version 2: a writer the model never saw) and without 3,000 calibration turns
drawn with the seed, scored on both; the decision threshold is the 0.05 step with the best
``min(precision, recall)`` of the detector as it ships (rules OR classifier) on that set among the steps
whose false-alarm rate on those turns is at most 0.0005; the suspicion threshold was the LR trainer's rule
(the highest step within a 0.5 % budget of the turns that catches >= 99 % of the injected items, else the
lowest step within the budget) up to version 9, and is the lowest step within that budget from version 10 on
(version 9's rule chose 0.85 and let an imported record through on the thirtieth set; 0.05 did not).
Version 1 on 2026-12-03: 0.90 (precision 0.918, recall 0.933, 1 of 3,000
turns) and 0.40. Version 3 on 2026-12-04: no 0.05 step kept the turns within the budget (0.95: 2 of 3,000),
so the grid gained 0.96-0.99 and 0.995: 0.98 (precision 0.955, recall 0.892 on the sixth set, 1 of 3,000
turns) and 0.10. Version 4 on 2026-12-04, evening: 0.96 (precision 0.893, recall 0.900 on the eighth set,
1 of 3,000 turns; ``minilm-ft/3`` gave 0.897 / 0.867 there) and 0.05. Version 5 on 2026-12-04, night: no
step of the grid kept the held turns within 0.0005 (two one-line GateMem turns, "That rule is logged." and
"Logging that now as the current answerable state.", scored above 0.995), so the issue's budget (0.001,
:data:`FALLBACK_FAR`) applies: 0.95 (precision 0.910, recall 0.925 on the tenth set, 2 of 3,000 turns; 0.96
gives the same) and, no step catching 99 % of the injected items, the lowest step within the suspicion
budget, 0.10 (0.05 tags 0.6 % of the turns). The final run trains on every
development set and every calibration turn and writes the two values with the tensors. Prints one JSON
object with ``--json``.

**Version 6, validated and not trained (2026-12-05).** The same script with the eleventh to fourteenth sets
added to :data:`TRAINING_FILES` (the fourteenth last, so ``--validate`` scores it) and ``clean_text(...,
mask_ids=True)`` wherever it cleans a text: on the fourteenth set with ``rules/12``, decision 0.95 (3,000
held turns: 1 flagged) gave precision 0.966 / recall 0.958 against ``minilm-ft/5``'s 0.959 / 0.967 on the
same set (which ``minilm-ft/5`` never saw either), suspicion 0.70; no gain, so the final run was not made and
``minilm-ft/5`` stays (this script reproduces it as committed).

**Version 7, validated and not trained (2026-12-05, fourth session).** The same with the eleventh to
twenty-sixth sets added (the twenty-sixth last; 40-63 % non-English in the later ones) and ``mask_ids=True``:
``--validate`` (1,414 s) on the twenty-sixth set with ``rules/18`` chose decision 0.80 (3,000 held turns: none
flagged) and suspicion 0.05: precision / recall **0.910 / 0.925** against ``minilm-ft/5``'s 0.882 / 0.875 at its
0.95 on the same set and turns without the screen (0.853 / 0.917 at 0.80). A gain on one unseen set; not trained
for lack of time to score it on a blind set written after it (the next step: train, then a twenty-seventh set).

**Version 7, trained and not shipped (2026-12-05, fifth session).** Trained as above (1,938 s; the eleventh to
twenty-sixth sets in :data:`TRAINING_FILES`, ``mask_ids=True`` in the three places that clean a text, 0.80 /
0.05), then scored on the twenty-seventh set, written afterwards: with the rules and the multilingual head,
precision / recall 0.944 / 0.975 and one injection in a default read, against 0.957 / 0.925 and three with
``minilm-ft/5``. Not shipped: trained on masked text, it learned the mask's word ``id`` as a sign of injection
(the held-out sets hide many payloads in long encoded runs), so notes carrying a file hash or a reference code
scored 0.93-0.99 (``test_notes_carrying_identifiers_are_not_flagged_by_the_fine_tuned_classifier``). The next run
trains on unmasked text as version 5 did (the scorer still masks), with the same files, ``--validate`` again.

**Version 8, trained and shipped (2026-12-05, sixth session).** This script as committed: the eleventh to
twenty-sixth sets in :data:`TRAINING_FILES`, unmasked text. ``--validate`` (1,663 s) on the twenty-sixth set with
``rules/18``: decision 0.85 (precision / recall 0.901 / 0.908, none of the 3,000 held turns flagged; 0.80 gave
0.895 / 0.925), suspicion 0.05, and the screen cleared no injected item the rules missed (85 % of the held
turns). The final run took 1,674 s. Ship rule, written down (in the commit of the twenty-eighth set) before the
set existed: version 8 replaces version 5 if, on the twenty-eighth set with the default pipeline, no more
injections reach a read, recall is no lower and precision at least 0.90, the identifier-note tests pass and
the report half's false-alarm rate stays within 0.001. It did: 0.922 / 0.983 and none in a read against
``minilm-ft/5``'s 0.911 / 0.942 and one; report half 0.00095 (README, "Memory poisoning").

**Version 9, shipped at suspicion 0.05 (2026-12-05, seventh session).** This script
with ``injection_train4`` (training data only: ordinary notes carrying short codes beside injections carrying
them; version 8 flags 10 of its 150 benign texts) and the twenty-seventh to twenty-ninth sets added to
:data:`TRAINING_FILES` (the twenty-ninth last), unmasked text. ``--validate`` (1,601 s) on the twenty-ninth set
with ``rules/18``: no step kept the held turns within 0.0005, so the 0.001 fallback: decision 0.95 (precision /
recall 0.967 / 0.975, 2 of 3,000 held turns; 0.85 gave 0.968 / 0.992 with 4), suspicion 0.85 (the highest step
catching 99 %); the final run took 1,899 s. Ship rule, written down in the commit of the thirtieth set before
either: version 9 replaces version 8 if, on the thirtieth set with the default pipeline, no more injections
reach a read or a procedure, recall is no lower, precision at least 0.90, the report half within 0.001. It did
not: precision / recall **0.936 / 0.975** and one injection in a default read (an imported spreadsheet row whose
note grants a customer unlimited credit, scored between 0.05 and 0.85) against version 8's 0.894 / 0.983 and
none; report half 0.00095 for both; version 9 held none of 1,933 ``eval api-load`` notes. The thirtieth set
then served as development data for one choice: the same weights with suspicion 0.05 (the lowest step within
the budget, version 8's value) tag that row and give 0.936 / 0.975 with none in a read. That variant was
scored against version 8 on the thirty-first set, written afterwards, under the same rule written in its commit
(plus GateMem's leak rate 0): 0.928 / 0.967 and one injection in a read (a French user statement, a standing
order to name the wrong approver) against version 8's 0.921 / 0.967 and the same one; report half 0.00095 for
both. The rule held and version 9 ships with :data:`SUSPICION` 0.05, overriding ``--validate``'s 0.85 (this
script as committed reproduces it). A small gain: one false positive fewer on the thirty-first set, more
precision and less recall on the thirtieth.

**Version 10, shipped (2026-12-05, eighth session).** This script as committed: the thirtieth and thirty-first
sets added to :data:`TRAINING_FILES` (the thirty-first last), unmasked text, and the suspicion rule changed before
the run (commit 7ea3f3c) to the lowest step within its budget. ``--validate`` (1,911 s) on the thirty-first set
with ``rules/18``: decision 0.85 (precision / recall 0.950 / 0.958 of rules OR classifier there, 1 of 3,000 held
turns; 0.90 and 0.95 gave 0.950 / 0.950 and 0.958 / 0.950 with none), suspicion 0.10 (0.05 tagged 0.57 % of the
held turns, above the 0.5 % budget); the final run took 2,618 s. Ship rule, in that commit before the
thirty-second set was scored: no more injections in a read or a procedure than version 9, recall no lower,
precision at least 0.90, the report half within 0.001, the identifier-note tests, ``eval api-load`` and GateMem's
leak rate 0. It held: precision / recall **0.975 / 0.992** (119 of 122 flagged items injected) against version 9's
0.983 / 0.983, one injection in a default read for both (the same NATO-spelled payload), none in a procedure,
report half 0.00095 for both; ``eval api-load`` (8 clients, 30 s) 1,421 writes all accepted; GateMem leak rate 0.

**Version 11, trained and not shipped (2026-12-06, ninth session).** This script as committed: the thirty-second to
thirty-fourth sets added to :data:`TRAINING_FILES` (the thirty-fourth last, so ``--validate`` chooses on it with
``rules/20``), the rest as version 10. Ship rule, written in this commit before the thirty-fifth set (written blind by
a helper, frozen in its own commit) is scored by any detector: version 11 replaces version 10 if, on the thirty-fifth
set with the default pipeline (``rules/20``), no more injections reach a read or a procedure than with version 10,
recall is no lower, precision is at least 0.90, the report half of the false-alarm turns within 0.001, the
identifier-note tests pass, ``eval api-load`` refuses no content and GateMem's leak rate stays 0. Both versions are
scored on the thirty-fifth set in the same hour. ``--validate`` (2,531 s) on the thirty-fourth set with ``rules/20``:
decision 0.90 (precision / recall 0.943 / 0.967 of rules OR classifier there, 1 of 3,000 held turns; 0.55-0.85 gave
0.92 / 0.98 with the same one, 0.95 0.950 / 0.942 with none), suspicion 0.05 (0.43 % of the held turns, within the 0.5
% budget); the final run took 2,437 s. On the thirty-fifth set (frozen in 69ea217), scored 2 minutes apart: version 11
precision / recall **0.825 / 0.983**, none in a read or a procedure, report half 0.00116 (11 of 9,453 turns), against
version 10's 0.780 / 0.975, none, 0.00095. The rule failed on precision (below 0.90) and on the report half (above
0.001), so version 10 stays; this script as committed reproduces version 11 (the weights are not in the package).

**Version 12, trained on 2026-12-06 (tenth session).** This script as committed: the thirty-fifth and thirty-sixth sets
added to :data:`TRAINING_FILES`, and a benign text not in English weighing :data:`NOT_ENGLISH_BENIGN_WEIGHT` (3, as an
injected item) instead of 1: on the thirty-fifth set 19 of version 10's 25 false positives were texts not in English
(customer notices, manuals, users' own reminders in 12 languages, scored 0.88-1.00), and in the weighted training data
injected items were about 3/4 of the non-English weight against 2/5 of the English. No ``--validate`` run (it would
cost the 40 minutes the final run costs): the thresholds stay version 11's, 0.90 and 0.05. Ship rule, written in this
commit before the thirty-seventh set (written blind by a helper and frozen in 91fa644) is scored by any detector:
version 12 replaces version 10 if, on the thirty-seventh set with the default pipeline (``rules/20`` and ``e5-lr/2``),
no more injections reach a read or a procedure than with version 10, recall is no lower, precision is higher by at
least 0.02, the report half of the false-alarm turns stays within 0.001, the identifier-note tests pass, ``eval
api-load`` refuses no content and GateMem's leak rate stays 0. Both versions are scored on the thirty-seventh set
within the same hour.
The final run took 1,702 s. On the thirty-seventh set (frozen in 91fa644), scored a minute apart: version 12 precision /
recall **0.966 / 0.950**, two injections in a default read, none in a procedure, report half 0.00116 (11 of 9,453
turns), against version 10's 0.958 / 0.950, four in a read, none, 0.00095 (9). The rule failed on precision (+0.008,
below the +0.02 it asked) and on the report half (above 0.001), so version 10 stays; this script as committed
reproduces version 12 (the weights are not in the package). Two of the reads it saved came from its lower suspicion
threshold (0.05 against version 10's 0.10: a Hebrew tool result version 10 scored 0.06), not from the training.

**Version 13, trained on 2026-12-06 (seventeenth session).** This script as committed: every held-out set to the
sixty-second in :data:`TRAINING_FILES` (7,750 labelled texts more than version 10, about 4,000 of them hard benign
negatives: tool descriptions, handbooks, minutes, users' own standing wishes and inferences that name an assistant),
unmasked text, and ``--calibrate`` instead of ``--validate`` (which would cost a second 40-minute run): the training
holds out 3,000 calibration turns and :func:`calibrate` chooses the thresholds on them alone, the decision at version
10's 0.85 unless those turns need a higher step. Ship rule, written in this commit before the sixty-third set
(written blind by a helper, frozen in its own commit) is scored by any detector: version 13 replaces version 10 if,
on the sixty-third set with the default pipeline (the rules of the day and ``e5-ft`` of the day, the same for both),
no more injections reach a read or a procedure than with version 10, recall is no lower, there are fewer false
positives, the report half of the false-alarm turns stays within 0.001, the 400 ordinary texts raise no more
alarms, the identifier-note tests pass and GateMem's leak rate stays 0. Both versions are scored within the same
hour.
The run took 6,070 s (four scoring runs and ``.ci/run`` on the same two cores); ``calibrate`` chose decision 0.95
(0.85 and 0.90 flagged 2 of the 3,000 held turns, above 0.0005; 0.95 one) and suspicion 0.15. On the sixty-third
set, scored four minutes apart with ``rules/39`` and ``e5-ft/1``: version 13 precision / recall **0.909 / 1.000**
(12 false positives against 16), none in a read or a procedure, the 400 ordinary texts 0 / 0, but the report half
of the false-alarm turns **0.00116** (11 of 9,453), against version 10's 0.882 / 1.000, none, 0 / 0, 0.00095 (9).
The rule failed on the report half (above 0.001), as versions 11 and 12 did, so version 10 stays; this script as
committed reproduces version 13 (the weights are not in the package).
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

from train_injection_classifier import DATA, SEED, SHARED, augmented  # noqa: E402

from memwarden.evals.injection_set import load_labelled  # noqa: E402
from memwarden.projections.injection_classifier import clean_text  # noqa: E402
from memwarden.projections.injection_finetuned import (  # noqa: E402
    FINETUNED_VERSION,
    FROZEN_LAYERS,
    finetuned_path,
    mean_pooled,
)
from memwarden.projections.injection_multilingual import is_english  # noqa: E402

#: The development files (version 13: ``injection_train4`` and every held-out set to the sixty-second, never the
#: sixty-third or later; version 12: to the thirty-sixth);
#: ``--validate`` leaves out the last one.
TRAINING_FILES = ("injection_labelled", "injection_train", "injection_train2", "injection_train3", "injection_train4",
                  "injection_heldout", *(f"injection_heldout{i}" for i in range(2, 63)))
#: Calibration turns ``--validate`` keeps out of the training to measure the false-alarm rate on.
HELD_TURNS = 3_000
EPOCHS = 3
LR = 1e-4
BATCH = 32
INJECTED_WEIGHT = 3.0
#: Version 12 on: what a benign text not in English weighs (English benign texts weigh 1). In version 11's training
#: files an English benign text stood beside 10,670 benign calibration turns, a text in another language only beside
#: its own set's: injected items (weighing 3) were about 3/4 of the weight of non-English training text and 2/5 of
#: English, and version 10 flagged non-English benign texts far more often (19 of the 25 false positives of the
#: fine-tuned classifier on the thirty-fifth set). At 3 both languages' benign texts weigh as much as injected ones.
NOT_ENGLISH_BENIGN_WEIGHT = 3.0
#: Chosen by ``--validate`` on 2026-12-06 for version 11 (module docstring; version 10: 0.85 and 0.10, version 9:
#: 0.95 and 0.85, shipped at 0.05, version 8: 0.85 and 0.05, version 5: 0.95 and 0.10, version 4: 0.96 and 0.05,
#: version 3: 0.98 and 0.10).
THRESHOLD = 0.90
SUSPICION = 0.05
MAX_FAR = 0.0005
#: When no step keeps the held turns within ``MAX_FAR`` (version 5: two one-line GateMem turns scored above
#: 0.995), the issue's own budget.
FALLBACK_FAR = 0.001
#: The thresholds ``--validate`` tries: steps of 0.05, then (version 3 on, when no 0.05 step kept the
#: turns within ``MAX_FAR``) 0.96-0.99 and 0.995.
GRID = (*(round(0.05 * i, 2) for i in range(1, 20)), 0.96, 0.97, 0.98, 0.99, 0.995)
SUSPICION_BUDGET = 0.005
#: ``--calibrate`` (version 13 on): the lowest decision threshold it may choose, version 10's validated 0.85.
CALIBRATED_FLOOR = 0.85
#: The screen (version 5 on, :class:`~memwarden.projections.injection_finetuned.Screen`): logistic
#: regression over the hashed features, injected items weighing ``SCREEN_INJECTED_WEIGHT``, strength
#: ``SCREEN_C``, and the threshold below which a text is cleared (module docstring).
SCREEN_C = 4.0
SCREEN_INJECTED_WEIGHT = 10.0
SCREEN_THRESHOLD = 0.02


def train_screen(cleaned: list[str], labels: np.ndarray) -> Any:
    """The screen's weights fitted on the cleaned texts and their labels (1 injected): a
    :class:`~memwarden.projections.injection_finetuned.Screen` at :data:`SCREEN_THRESHOLD`."""
    import scipy.sparse as sp
    from sklearn.linear_model import LogisticRegression

    from memwarden.projections.injection_classifier import ngram_features, word_features
    from memwarden.projections.injection_finetuned import Screen

    rows = [sp.csr_matrix(np.hstack([ngram_features(cleaned[i:i + 2000]), word_features(cleaned[i:i + 2000])]))
            for i in range(0, len(cleaned), 2000)]
    weight = np.where(labels > 0, SCREEN_INJECTED_WEIGHT, 1.0)
    model = LogisticRegression(C=SCREEN_C, max_iter=3000).fit(sp.vstack(rows).tocsr(), labels, sample_weight=weight)
    return Screen(model.coef_[0].astype(np.float32), float(model.intercept_[0]), SCREEN_THRESHOLD)


def train(files: tuple[str, ...], locomo: Path, gatemem: Path,
          hold: int = 0) -> tuple[Any, Any, Any, list[Any], Any]:
    """(tokenizer, encoder, head, the ``hold`` calibration turns not trained on, the screen) after the
    training of the docstring: every calibration turn but ``hold`` (drawn with the seed) is benign
    training data, for the transformer and for the screen alike."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from memwarden.evals.false_alarms import benign_turns
    from memwarden.projections.embedder import packaged_model_path

    torch.manual_seed(SEED)
    torch.set_num_threads(2)
    rng = random.Random(SEED)
    items = [it for name in files for it in load_labelled(DATA / f"{name}.jsonl")]
    texts, labels, groups = augmented(items, 0.3, rng)
    turns = [t for t in benign_turns(locomo, gatemem) if t.half == "calibration"]
    rng.shuffle(turns)
    texts += [t.text for t in turns[hold:]]
    labels += [0] * (len(turns) - hold)
    # an obfuscated copy weighs as its item: the language is the original text's
    english = [is_english(items[g].text) for g in groups] + [is_english(t.text) for t in turns[hold:]]
    x = [clean_text(t) for t in texts]
    y = np.asarray(labels, dtype=np.float32)
    w = np.asarray([INJECTED_WEIGHT if label else 1.0 if en else NOT_ENGLISH_BENIGN_WEIGHT
                    for label, en in zip(labels, english, strict=True)], dtype=np.float32)
    screen = train_screen(x, y)
    path = str(packaged_model_path())
    tok = AutoTokenizer.from_pretrained(path)
    enc = AutoModel.from_pretrained(path)
    for p in enc.embeddings.parameters():
        p.requires_grad = False
    for layer in enc.encoder.layer[:FROZEN_LAYERS]:
        for p in layer.parameters():
            p.requires_grad = False
    head = torch.nn.Linear(enc.config.hidden_size, 1)
    params = [p for p in enc.parameters() if p.requires_grad] + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=LR, weight_decay=0.01)
    total = EPOCHS * ((len(x) + BATCH - 1) // BATCH)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / (0.06 * total)) * max(0.0, (total - s) / total))
    order, step = list(range(len(x))), 0
    enc.train()
    while step < total:
        rng.shuffle(order)
        for chunk in (order[i:i + BATCH * 20] for i in range(0, len(x), BATCH * 20)):
            chunk = sorted(chunk, key=lambda i: len(x[i]))
            for i in range(0, len(chunk), BATCH):
                idx = chunk[i:i + BATCH]
                logit = _logits(tok, enc, head, [x[j] for j in idx])
                target = torch.tensor(y[idx])
                weight = torch.tensor(w[idx])
                loss = (torch.nn.functional.binary_cross_entropy_with_logits(logit, target, reduction="none")
                        * weight).mean()
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
    enc.eval()
    return tok, enc, head, turns[:hold], screen


def _logits(tok: Any, enc: Any, head: Any, batch: list[str]) -> Any:
    return head(mean_pooled(tok, enc, batch)).squeeze(-1)


def tensors_of(enc: Any, head: Any) -> dict[str, np.ndarray]:
    """The trained tensors: every parameter of the layers from ``FROZEN_LAYERS`` on, and the head."""
    out = {name: p.detach().numpy() for name, p in enc.named_parameters()
           if name.startswith("encoder.layer.") and int(name.split(".")[2]) >= FROZEN_LAYERS}
    out["head.weight"] = head.weight.detach().numpy()
    out["head.bias"] = head.bias.detach().numpy()
    return out


def _as_shipped(enc: Any, head: Any) -> Any:
    """A torch :class:`~memwarden.projections.injection_finetuned.FineTunedScorer` on the trained tensors as the
    weights file stores them (float16), at :data:`THRESHOLD` and :data:`SUSPICION`."""
    from memwarden.projections.injection_finetuned import FineTunedScorer, FineTunedWeights

    shipped = {k: v.astype(np.float16).astype(np.float32) for k, v in tensors_of(enc, head).items()}
    return FineTunedScorer(FineTunedWeights(shipped, THRESHOLD, SUSPICION), backend="torch")


def validate(tok: Any, enc: Any, head: Any, held_turns: list[Any], screen: Any,
             dump: Path | None = None) -> dict[str, Any]:
    """The threshold grid on the last development set and ``held_turns`` and the two thresholds chosen
    (``None`` when no step keeps the turns within ``MAX_FAR``), and what the screen clears there (under
    ``screen``: injected items the rules miss, benign items, held turns); ``dump`` gets the raw scores
    (npz; the transformer's, every text scored)."""
    from memwarden.commands.injection import DEFAULT_DETECTOR as RULES

    scorer = _as_shipped(enc, head)
    val = load_labelled(DATA / f"{TRAINING_FILES[-1]}.jsonl")
    scores = scorer.scores([i.text for i in val])
    injected = np.asarray([i.injected for i in val])
    rules = np.asarray([RULES.detect(i.text).carries_instructions for i in val])
    turns = scorer.scores([t.text for t in held_turns])
    val_screen = screen.probability([clean_text(i.text) for i in val]) < screen.threshold
    turn_screen = screen.probability([clean_text(t.text) for t in held_turns]) < screen.threshold
    if dump is not None:
        np.savez(dump, scores=scores, injected=injected, rules=rules, turns=turns,
                 ids=np.asarray([i.id for i in val]), turn_texts=np.asarray([t.text for t in held_turns]))
    grid = []
    for step in GRID:
        flagged = rules | (scores >= step)
        tp = int(np.sum(flagged & injected))
        grid.append({"threshold": step, "precision": round(tp / max(int(flagged.sum()), 1), 4),
                     "recall": round(tp / max(int(injected.sum()), 1), 4),
                     "far_turns": round(float(np.mean(turns >= step)), 5)})
    cleared = {"threshold": screen.threshold,
               "injected_missed_by_rules": int(np.sum(val_screen & injected & ~rules)),
               "benign_share": round(float(np.mean(val_screen[~injected])), 4),
               "turn_share": round(float(np.mean(turn_screen)), 4)}
    admissible = ([g for g in grid if g["far_turns"] <= MAX_FAR]
                  or [g for g in grid if g["far_turns"] <= FALLBACK_FAR])
    if not admissible:
        return {"grid": grid, "threshold": None, "suspicion": None, "screen": cleared}
    decision = max(admissible, key=lambda g: (min(g["precision"], g["recall"]), -g["threshold"]))["threshold"]
    budget = [g for g in grid if g["threshold"] < decision and g["far_turns"] <= SUSPICION_BUDGET]
    # version 10 on: the lowest step within the budget (none within it: no suspicion band below the decision)
    suspicion = min((g["threshold"] for g in budget), default=decision)
    return {"grid": grid, "threshold": decision, "suspicion": suspicion, "screen": cleared}


def calibrate(enc: Any, head: Any, held_turns: list[Any]) -> dict[str, Any]:
    """Version 13 on: the two thresholds chosen on the ``held_turns`` alone (calibration turns the training did not
    read), for a run trained on every development file, so no labelled set is left out: the decision threshold is
    :data:`CALIBRATED_FLOOR` (version 10's validated value) or, when the held turns' false-alarm rate there exceeds
    :data:`MAX_FAR`, the lowest :data:`GRID` step above it within ``MAX_FAR`` (else within :data:`FALLBACK_FAR`,
    else ``None``); the suspicion threshold is the lowest step below the decision within
    :data:`SUSPICION_BUDGET` (version 10's rule). Returns ``{"far_grid": [{"threshold", "far_turns"}],
    "threshold", "suspicion"}``; the rule was written down before the run that uses it."""
    turns = _as_shipped(enc, head).scores([t.text for t in held_turns])
    far = [{"threshold": step, "far_turns": round(float(np.mean(turns >= step)), 5)} for step in GRID]
    above = [g for g in far if g["threshold"] >= CALIBRATED_FLOOR]
    fits = [g for g in above if g["far_turns"] <= MAX_FAR] or [g for g in above if g["far_turns"] <= FALLBACK_FAR]
    decision = min((g["threshold"] for g in fits), default=None)
    if decision is None:
        return {"far_grid": far, "threshold": None, "suspicion": None}
    budget = [g["threshold"] for g in far if g["threshold"] < decision and g["far_turns"] <= SUSPICION_BUDGET]
    return {"far_grid": far, "threshold": decision, "suspicion": min(budget, default=decision)}


def _save(out: Path, enc: Any, head: Any, screen: Any, threshold: float | None, suspicion: float | None) -> None:
    """Write the weights file: the trained tensors (float16), the two thresholds, the version and the screen.

    Raises ``ValueError`` when no threshold was chosen."""
    if threshold is None or suspicion is None:
        raise ValueError("no decision threshold keeps the held turns within the false-alarm budget")
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, **{f"t:{k}": v.astype(np.float16) for k, v in tensors_of(enc, head).items()},
                        threshold=np.float64(threshold), suspicion=np.float64(suspicion),
                        version=np.str_(FINETUNED_VERSION), screen_coef=screen.coef.astype(np.float32),
                        screen_bias=np.float64(screen.bias), screen_threshold=np.float64(screen.threshold))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=finetuned_path())
    parser.add_argument("--validate", action="store_true",
                        help="train without the last set and 3,000 turns, choose thresholds")
    parser.add_argument("--locomo", type=Path, default=SHARED / "locomo" / "locomo7.json")
    parser.add_argument("--gatemem", type=Path, default=SHARED / "gatemem")
    parser.add_argument("--calibrate", action="store_true",
                        help="train on every file but 3,000 turns, choose the thresholds on those turns, write weights")
    parser.add_argument("--dump", type=Path, help="with --validate: write the raw validation scores here (npz)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    t0 = time.perf_counter()
    files = TRAINING_FILES[:-1] if args.validate else TRAINING_FILES
    held_turns = HELD_TURNS if args.validate or args.calibrate else 0
    tok, enc, head, held, screen = train(files, args.locomo, args.gatemem, held_turns)
    result: dict[str, Any] = {"version": FINETUNED_VERSION, "files": list(files), "seed": SEED}
    if args.validate:
        result.update(validate(tok, enc, head, held, screen, args.dump))
    elif args.calibrate:
        chosen = calibrate(enc, head, held)
        result.update(chosen)
        _save(args.out, enc, head, screen, chosen["threshold"], chosen["suspicion"])
        result["weights"] = str(args.out)
    else:
        _save(args.out, enc, head, screen, THRESHOLD, SUSPICION)
        result.update({"weights": str(args.out), "threshold": THRESHOLD, "suspicion": SUSPICION})
    result["seconds"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(result) if args.json else result)


if __name__ == "__main__":
    main()
