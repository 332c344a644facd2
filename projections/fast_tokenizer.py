"""The WordPiece tokenizer of a packaged model folder, read by the ``tokenizers`` library alone.

``transformers``' ``AutoTokenizer`` wraps the same Rust tokenizer (``tokenizer.json``), but importing it pulls
in most of ``transformers``, PyTorch and scikit-learn: 6-7 s of a worker's 9 s start on two cores, paid by every
worker, CLI evaluation and REST process that embeds a text. The ONNX Runtime paths (the embedder,
:mod:`memwarden.projections.embedder`, and the fine-tuned classifier's session,
:mod:`memwarden.projections.injection_onnx`) need only the token ids, so they read ``tokenizer.json`` here;
``tests/unit/test_fast_tokenizer.py`` holds the ids equal to ``AutoTokenizer``'s. The PyTorch paths (exports,
training, the ``torch`` backend) keep ``transformers``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FastTokenizer"]

_PAD = "[PAD]"


class FastTokenizer:
    """``tokenizer.json`` of ``model_path``, called as ``transformers`` tokenizers are for a batch.

    ``tok(texts, padding=True, truncation=True, max_length=n, return_tensors="np")`` returns
    ``{"input_ids", "attention_mask", "token_type_ids"}``, each an ``int64`` array ``(len(texts), longest)``:
    special tokens added, each text cut to ``max_length`` tokens, padded on the right with ``[PAD]`` to the
    longest of the batch. Safe to call from several threads (one call at a time).

    Raises ``FileNotFoundError`` when the folder has no ``tokenizer.json``, ``ValueError`` when it has no
    ``[PAD]`` token, and ``ValueError`` from a call with arguments other than the ones above.
    """

    def __init__(self, model_path: Path) -> None:
        from tokenizers import Tokenizer

        path = Path(model_path) / "tokenizer.json"
        if not path.is_file():
            raise FileNotFoundError(f"model_path: no tokenizer.json in {model_path}")
        self._tok = Tokenizer.from_file(str(path))
        pad = self._tok.token_to_id(_PAD)
        if pad is None:
            raise ValueError(f"model_path: the tokenizer in {model_path} has no {_PAD} token")
        self._tok.no_truncation()
        self._tok.enable_padding(pad_id=pad, pad_token=_PAD)
        self._max_length: int | None = None
        self._lock = threading.Lock()

    def __call__(self, texts: Sequence[str], padding: bool = True, truncation: bool = True,
                 max_length: int | None = None, return_tensors: str = "np") -> dict[str, Any]:
        if not (padding and truncation and max_length and return_tensors == "np"):
            raise ValueError("FastTokenizer: padding=True, truncation=True, a max_length and return_tensors='np' "
                             "are the only call it makes")
        with self._lock:
            if self._max_length != max_length:
                self._tok.enable_truncation(max_length)
                self._max_length = max_length
            encs = self._tok.encode_batch(list(texts))
        return {
            "input_ids": np.asarray([e.ids for e in encs], dtype=np.int64),
            "attention_mask": np.asarray([e.attention_mask for e in encs], dtype=np.int64),
            "token_type_ids": np.asarray([e.type_ids for e in encs], dtype=np.int64),
        }
