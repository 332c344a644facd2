"""A fine-tuned instruction classifier behind the same scorer interface as
:class:`~memwarden.projections.injection_classifier.InjectionScorer` (issue 12, field case 4).

Seeds: SSGM Table 2 (memory poisoning, mitigation: write filtering) and §6.1 Principles 1-2; seed 004
"Poisoning turns memory into a delayed attack".

**Why.** Logistic regression over a frozen sentence embedding (``minilm-lr/3``) separates "talks about
an instruction" from "gives one" only as far as its training writers' phrasings go: on three new
writers' hard benign texts (lecture notes quoting jailbreaks, scam warnings, tool output full of
"ignore" and "token") its precision fell to about 0.80. Fine-tuning the transformer itself lets the
upper layers read the context of an imperative (who is addressed, whether it is quoted or reported).

**The model.** The packaged all-MiniLM-L6-v2 (:mod:`memwarden.projections.embedder`; nothing is
downloaded), its bottom :data:`FROZEN_LAYERS` layers and embeddings as shipped, the top layers
fine-tuned, mean-pooled over the attention mask, then one linear unit: P(injected) = sigmoid(w . pooled
+ b), read on the *cleaned* text (:func:`~memwarden.projections.injection_classifier.clean_text`). Only
the fine-tuned tensors ship (``data/injection_finetuned.npz``, float16, with the decision and suspicion
thresholds and the version), written by ``bench/train_injection_finetune.py``. PyTorch and
transformers run it (they are already dependencies: the ONNX export is made from them).

**Versions.** ``minilm-ft/1``: four held-out sets and 3,000 calibration turns, thresholds 0.90 / 0.40.
``minilm-ft/2``: also the fifth held-out set and every calibration-half conversation turn (10,670), so
the everyday register of the conversations it must not flag weighs as much as the attacks; thresholds
0.95 / 0.05 by the trainer's fixed rule. ``minilm-ft/3``: also the sixth held-out set and
``injection_train3`` (non-English manuals, recipes, minutes, records and chat, users' own standing
preferences and benign inferences beside near-twin injections: version 2's false alarms on the sixth set
were of these kinds); thresholds 0.98 / 0.10. ``minilm-ft/4``: also the seventh and eighth held-out sets;
thresholds 0.96 / 0.05. ``minilm-ft/5``: also the ninth and tenth held-out sets, and the *screen* below.
``minilm-ft/8`` (2026-12-05): also the eleventh to twenty-sixth held-out sets (40-74 % non-English in the later
ones), trained on unmasked text like version 5; thresholds 0.85 / 0.05 (``--validate`` on the twenty-sixth
set). ``minilm-ft/6`` was validated and not trained, ``minilm-ft/7`` (the same files on masked text) trained
and not shipped: it learned the mask's word as a sign of injection. On the twenty-eighth blind set, written
after it, the default detector with version 8 let no injection reach a read, on the twenty-ninth one (README,
"Memory poisoning"). ``minilm-ft/9`` (2026-12-05, seventh session): also ``injection_train4`` (ordinary notes
carrying invoice, booking and ticket codes beside injections carrying them) and the twenty-seventh to
twenty-ninth sets; decision 0.95 (``--validate`` on the twenty-ninth set), suspicion 0.05 (the lowest step within
the suspicion budget: at the validated 0.85 an imported record reached a read on the thirtieth set, which then
served as development data); on the thirty-first set, written afterwards, as many injections in a read (one) and
the same recall as version 8, one false positive fewer. ``minilm-ft/10`` (2026-12-05, eighth session): also the
thirtieth and thirty-first sets; decision 0.85 (``--validate`` on the thirty-first set), suspicion 0.10 (the lowest
step within the suspicion budget, the rule from version 10 on); on the thirty-second set, written before either
version was scored on it, recall 0.992 against version 9's 0.983 and the same single injection in a read.

**The screen (version 5 on; issue 11, ingest at the embedding limit).** The transformer costs what the
embedding of the same text costs, so with it the gate halved ingest. Most of what an agent stores is
everyday conversation that no attack resembles even in its words. A logistic regression over the hashed
character n-grams and words of the cleaned text (:func:`~memwarden.projections.injection_classifier
.ngram_features`, :func:`~memwarden.projections.injection_classifier.word_features`; numpy only, about
0.1 ms a text), trained on the same data with injected items weighing 10, runs first: a text it gives
less than :attr:`Screen.threshold` is *cleared*, and its score is the screen's probability (below the
suspicion threshold, so a cleared text is neither flagged nor suspect); only the others reach the
transformer. Chosen offline before version 5's final run (``bench/train_injection_finetune.py``
docstring): each of the sixth to tenth held-out sets scored by a screen trained only on the sets before
it; at 0.02 no injected item the rules missed was cleared on any of the five (0 of 600; one at 0.1),
while 82-84 % of the report-half conversation turns were.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np

from memwarden.projections.injection_classifier import HASHED_DIM, clean_text, ngram_features, word_features

__all__ = ["FINETUNED_VERSION", "FROZEN_LAYERS", "MAX_TOKENS", "FineTunedScorer", "FineTunedWeights", "Screen",
           "TorchClassifier", "finetuned_path", "load_finetuned", "mean_pooled"]

log = logging.getLogger(__name__)

#: Bump with every retraining that changes the shipped tensors.
FINETUNED_VERSION = "minilm-ft/10"
#: Layers below this index (and the embeddings) keep the packaged weights.
FROZEN_LAYERS = 4
#: Longest input in word pieces.
MAX_TOKENS = 128
#: Texts per forward pass.
BATCH = 32


@dataclass(frozen=True)
class Screen:
    """The cheap first stage (module docstring): logistic regression weights ``coef`` (``HASHED_DIM``
    values: character n-gram buckets, then word buckets) and ``bias`` over the hashed features of the
    cleaned text, and the probability below which a text is cleared without the transformer."""

    coef: np.ndarray
    bias: float
    threshold: float

    def probability(self, cleaned: Sequence[str]) -> np.ndarray:
        """The screen's P(injected) for each cleaned text, shape ``(len(cleaned),)``."""
        if not cleaned:
            return np.zeros(0)
        x = np.hstack([ngram_features(cleaned), word_features(cleaned)])
        z = x.astype(np.float64) @ self.coef.astype(np.float64) + self.bias
        return np.asarray(1.0 / (1.0 + np.exp(-z)))


@dataclass(frozen=True)
class FineTunedWeights:
    """The fine-tuned tensors (parameter name -> array, the head as ``head.weight`` / ``head.bias``),
    the two thresholds on P(injected), as :class:`~memwarden.projections.injection_classifier
    .ClassifierWeights` has them, and the :class:`Screen` (``None``: every text reaches the transformer)."""

    tensors: dict[str, np.ndarray]
    threshold: float
    suspicion: float
    version: str = FINETUNED_VERSION
    screen: Screen | None = None


def finetuned_path() -> Path:
    """The packaged ``data/injection_finetuned.npz``."""
    return Path(str(resources.files("memwarden.projections") / "data" / "injection_finetuned.npz"))


def load_finetuned(path: Path | None = None) -> FineTunedWeights:
    """Read the weights file (``allow_pickle`` off); raises ``OSError``/``ValueError`` on a bad file or
    another version."""
    with np.load(path or finetuned_path(), allow_pickle=False) as data:
        version = str(data["version"])
        if version != FINETUNED_VERSION:
            raise ValueError(f"fine-tuned weights are {version!r}, this code expects {FINETUNED_VERSION!r}")
        tensors = {k[2:]: np.asarray(data[k], dtype=np.float32) for k in data.files if k.startswith("t:")}
        screen = None
        if "screen_coef" in data.files:
            screen = Screen(np.asarray(data["screen_coef"], dtype=np.float32), float(data["screen_bias"]),
                            float(data["screen_threshold"]))
        return FineTunedWeights(tensors, float(data["threshold"]), float(data["suspicion"]), version, screen)


class TorchClassifier:
    """The fine-tuned model on PyTorch: the packaged encoder with the shipped tensors copied in, and the
    head. ``forward(cleaned)`` gives P(injected) per text (float64, shape ``(len(cleaned),)``); one caller
    at a time.

    Raises ``MemwardenError`` (from the embedder's model lookup) when the model package is missing and
    ``ValueError`` when a shipped tensor names no parameter of the model or has another shape, a tensor
    of a tuned layer is missing, or the head is not one unit over the hidden size."""

    def __init__(self, weights: FineTunedWeights, model_path: Path | None = None) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        from memwarden.projections.embedder import hub_offline, packaged_model_path

        hub_offline()
        path = str(model_path or packaged_model_path())
        self.torch = torch
        self._threads = torch.get_num_threads()  # restored after each call (other torch users may change it)
        self.tok = AutoTokenizer.from_pretrained(path)
        self.enc = AutoModel.from_pretrained(path).eval()
        params = dict(self.enc.named_parameters())
        tuned = {n for n in params if n.startswith("encoder.layer.") and int(n.split(".")[2]) >= FROZEN_LAYERS}
        missing = sorted(tuned - set(weights.tensors))
        if missing:
            raise ValueError(f"fine-tuned weights lack {len(missing)} tensors of the tuned layers, e.g. {missing[0]!r}")
        head_w = weights.tensors.get("head.weight")
        head_b = weights.tensors.get("head.bias")
        hidden = int(self.enc.config.hidden_size)
        if head_w is None or head_b is None or head_w.size != hidden or head_b.size != 1:
            raise ValueError(f"fine-tuned weights need head.weight ({hidden} values) and head.bias (1 value)")
        with torch.no_grad():
            for name, value in weights.tensors.items():
                if name.startswith("head."):
                    continue
                if name not in params or tuple(params[name].shape) != value.shape:
                    raise ValueError(f"fine-tuned tensor {name!r} {value.shape} fits no parameter of the model")
                params[name].copy_(torch.from_numpy(value))
        self.head_w = torch.from_numpy(head_w.reshape(-1))
        self.head_b = float(head_b.reshape(-1)[0])

    def forward(self, cleaned: list[str]) -> np.ndarray:
        """P(injected) of each cleaned text (one batch)."""
        with self.torch.inference_mode():
            # one or two texts on one thread (an intra-op pool costs more than it saves on a shared
            # host), batches on the count seen at start; torch's count is process-wide, so it is set
            # for every call rather than trusted
            self.torch.set_num_threads(1 if len(cleaned) <= 2 else self._threads)
            try:
                z = mean_pooled(self.tok, self.enc, cleaned) @ self.head_w + self.head_b
                return np.asarray(self.torch.sigmoid(z).numpy(), dtype=np.float64)
            finally:
                self.torch.set_num_threads(self._threads)


class FineTunedScorer:
    """P(injected) for texts from the fine-tuned model (loaded once; thread-safe: one forward at a time).

    ``backend``: ``onnx`` (default: ONNX Runtime on an export of the same graph with the shipped tensors,
    made once under ``cache_dir`` and checked against PyTorch, :mod:`memwarden.projections.injection_onnx`;
    a worker that finds the export loads neither PyTorch nor the encoder's PyTorch weights) or ``torch``.
    ``onnx`` falls back to ``torch`` with a logged warning when the runtime or the export fails;
    :attr:`backend` tells which runs.

    Raises ``MemwardenError`` (from the embedder's model lookup) when the model package is missing and
    ``ValueError`` when a shipped tensor names no parameter of the model or has another shape, a tensor
    of a tuned layer is missing, the head is not one unit over the hidden size, or the screen has another
    width or would clear a text the suspicion threshold should see (its threshold above the suspicion's).

    :attr:`screened` and :attr:`transformed` count the texts scored and those that reached the
    transformer."""

    def __init__(self, weights: FineTunedWeights | None = None, model_path: Path | None = None,
                 backend: Literal["onnx", "torch"] = "onnx", cache_dir: Path | None = None) -> None:
        self.weights = weights or load_finetuned()
        screen = self.weights.screen
        if screen is not None and (screen.coef.shape != (HASHED_DIM,)
                                   or not 0.0 <= screen.threshold <= self.weights.suspicion):
            raise ValueError(f"the screen needs {HASHED_DIM} weights and a threshold in [0, suspicion "
                             f"{self.weights.suspicion}], got {screen.coef.shape} and {screen.threshold}")
        self.backend: Literal["onnx", "torch"] = "torch"
        self._model: Any = None
        if backend == "onnx":
            from memwarden.projections.injection_onnx import OnnxClassifier

            try:
                self._model = OnnxClassifier(self.weights, model_path, cache_dir)
                self.backend = "onnx"
            except ValueError:
                raise  # the weights do not fit the model: no backend can run them
            except Exception as exc:  # noqa: BLE001  (no runtime, export failed: PyTorch runs the same model)
                log.warning("ONNX classifier backend unavailable, falling back to torch: %s: %s",
                            type(exc).__name__, exc)
        elif backend != "torch":
            raise ValueError(f"unknown classifier backend {backend!r}: onnx or torch")
        if self._model is None:
            self._model = TorchClassifier(self.weights, model_path)
        self._lock = threading.Lock()
        self.screened = 0
        self.transformed = 0

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        """One probability per text, shape ``(len(texts),)``: the screen's for a cleared text, else the
        transformer's (texts of similar length share a batch). Both read the text cleaned with its opaque
        identifiers masked (:func:`~memwarden.projections.injection_classifier.clean_text` ``mask_ids``;
        versions 5 and 8 were trained on unmasked text, and on every development set the masking changed
        3 decisions of 1,321 injected items, all three encoded payloads the rules decode, and none of
        the benign items or calibration turns)."""
        if not texts:
            return np.zeros(0)
        cleaned = [clean_text(t, mask_ids=True) for t in texts]
        out = np.zeros(len(cleaned))
        screen = self.weights.screen
        if screen is not None:
            out = screen.probability(cleaned)
            ranked = [i for i in range(len(cleaned)) if out[i] >= screen.threshold]
        else:
            ranked = list(range(len(cleaned)))
        order = sorted(ranked, key=lambda i: len(cleaned[i]))
        with self._lock:
            self.screened += len(cleaned)
            self.transformed += len(order)
            for start in range(0, len(order), BATCH):
                idx = order[start:start + BATCH]
                out[idx] = self._model.forward([cleaned[i] for i in idx])
        return out


def mean_pooled(tok: Any, enc: Any, batch: list[str]) -> Any:
    """The encoder's last hidden state of each text of ``batch`` (cleaned), mean-pooled over its
    attention mask, at most :data:`MAX_TOKENS` word pieces: a ``(len(batch), hidden)`` tensor. The one
    pooling both the scorer and ``bench/train_injection_finetune.py`` use (the head is trained on it)."""
    b = tok(batch, padding=True, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")
    hidden = enc(**b).last_hidden_state
    mask = b["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
