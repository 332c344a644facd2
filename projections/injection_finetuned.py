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
thresholds 0.96 / 0.05.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from memwarden.projections.injection_classifier import clean_text

__all__ = ["FINETUNED_VERSION", "FROZEN_LAYERS", "FineTunedScorer", "FineTunedWeights", "finetuned_path",
           "load_finetuned", "mean_pooled"]

#: Bump with every retraining that changes the shipped tensors.
FINETUNED_VERSION = "minilm-ft/4"
#: Layers below this index (and the embeddings) keep the packaged weights.
FROZEN_LAYERS = 4
#: Longest input in word pieces.
MAX_TOKENS = 128
#: Texts per forward pass.
BATCH = 32


@dataclass(frozen=True)
class FineTunedWeights:
    """The fine-tuned tensors (parameter name -> array, the head as ``head.weight`` / ``head.bias``) and
    the two thresholds on P(injected), as :class:`~memwarden.projections.injection_classifier
    .ClassifierWeights` has them."""

    tensors: dict[str, np.ndarray]
    threshold: float
    suspicion: float
    version: str = FINETUNED_VERSION


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
        return FineTunedWeights(tensors, float(data["threshold"]), float(data["suspicion"]), version)


class FineTunedScorer:
    """P(injected) for texts from the fine-tuned model (loaded once; thread-safe: one forward at a time).

    Raises ``MemwardenError`` (from the embedder's model lookup) when the model package is missing and
    ``ValueError`` when a shipped tensor names no parameter of the model or has another shape, a tensor
    of a tuned layer is missing, or the head is not one unit over the hidden size."""

    def __init__(self, weights: FineTunedWeights | None = None, model_path: Path | None = None) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        from memwarden.projections.embedder import hub_offline, packaged_model_path

        hub_offline()
        path = str(model_path or packaged_model_path())
        self.weights = weights or load_finetuned()
        self._torch = torch
        self._threads = torch.get_num_threads()  # restored after each call (other torch users may change it)
        self._tok = AutoTokenizer.from_pretrained(path)
        self._enc = AutoModel.from_pretrained(path).eval()
        params = dict(self._enc.named_parameters())
        tuned = {n for n in params if n.startswith("encoder.layer.") and int(n.split(".")[2]) >= FROZEN_LAYERS}
        missing = sorted(tuned - set(self.weights.tensors))
        if missing:
            raise ValueError(f"fine-tuned weights lack {len(missing)} tensors of the tuned layers, e.g. {missing[0]!r}")
        head_w = self.weights.tensors.get("head.weight")
        head_b = self.weights.tensors.get("head.bias")
        hidden = int(self._enc.config.hidden_size)
        if head_w is None or head_b is None or head_w.size != hidden or head_b.size != 1:
            raise ValueError(f"fine-tuned weights need head.weight ({hidden} values) and head.bias (1 value)")
        with torch.no_grad():
            for name, value in self.weights.tensors.items():
                if name.startswith("head."):
                    continue
                if name not in params or tuple(params[name].shape) != value.shape:
                    raise ValueError(f"fine-tuned tensor {name!r} {value.shape} fits no parameter of the model")
                params[name].copy_(torch.from_numpy(value))
        self._head_w = torch.from_numpy(head_w.reshape(-1))
        self._head_b = float(head_b.reshape(-1)[0])
        self._lock = threading.Lock()

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        """One probability per text, shape ``(len(texts),)``; texts of similar length share a batch."""
        if not texts:
            return np.zeros(0)
        cleaned = [clean_text(t) for t in texts]
        order = sorted(range(len(cleaned)), key=lambda i: len(cleaned[i]))
        out = np.zeros(len(cleaned))
        with self._lock, self._torch.inference_mode():
            # one or two texts on one thread (an intra-op pool costs more than it saves on a shared
            # host), batches on the count seen at start; torch's count is process-wide, so it is set
            # for every call rather than trusted
            self._torch.set_num_threads(1 if len(cleaned) <= 2 else self._threads)
            try:
                for start in range(0, len(order), BATCH):
                    idx = order[start:start + BATCH]
                    out[idx] = self._forward([cleaned[i] for i in idx])
            finally:
                self._torch.set_num_threads(self._threads)
        return out

    def _forward(self, batch: list[str]) -> Any:
        z = mean_pooled(self._tok, self._enc, batch) @ self._head_w + self._head_b
        return self._torch.sigmoid(z).numpy().astype(np.float64)


def mean_pooled(tok: Any, enc: Any, batch: list[str]) -> Any:
    """The encoder's last hidden state of each text of ``batch`` (cleaned), mean-pooled over its
    attention mask, at most :data:`MAX_TOKENS` word pieces: a ``(len(batch), hidden)`` tensor. The one
    pooling both the scorer and ``bench/train_injection_finetune.py`` use (the head is trained on it)."""
    b = tok(batch, padding=True, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")
    hidden = enc(**b).last_hidden_state
    mask = b["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
