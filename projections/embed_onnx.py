"""The ONNX backend's export of the embedding model: the cache key and path of the export, the one-off
atomic export of the sentence-transformers pipeline (BERT, mean pooling, L2 normalisation) with
``torch.onnx.export``, its check against the PyTorch path, and ONNX Runtime CPU sessions.
:mod:`memwarden.projections.embedder` runs the export through its ONNX pipeline."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np

from memwarden.errors import MemwardenError

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

#: Inputs of the exported graph, in order: int64 arrays of shape ``(batch, tokens)``.
ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def hub_offline() -> None:
    """Switch the Hugging Face hub off for this process (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``
    default to ``1``; values already set are kept): the model is loaded, never downloaded."""
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


def ort_session(path: Path, threads: int) -> Any:
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


def trace_onnx(module: Any, sample: Any, path: Path, output: str) -> None:
    """Trace ``module`` (a ``torch.nn.Module`` taking :data:`ONNX_INPUTS`) on the tokenised ``sample`` into
    ``path``: opset 17, the batch and token axes dynamic, one output named ``output`` (batch axis dynamic).
    Raises what ``torch.onnx.export`` raises."""
    import torch

    axes = {name: {0: "batch", 1: "tokens"} for name in ONNX_INPUTS} | {output: {0: "batch"}}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer notes on shapes that are constant for this graph
        torch.onnx.export(module.eval(), tuple(sample[n] for n in ONNX_INPUTS), str(path), dynamo=False,
                          input_names=list(ONNX_INPUTS), output_names=[output], dynamic_axes=axes, opset_version=17)


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
        hub_offline()
        import torch
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(model_path), device="cpu")
        kinds = [type(m).__name__ for m in model]
        pooling = model[1] if len(model) > 1 else None
        mean = getattr(pooling, "pooling_mode", None) == "mean" or getattr(pooling, "pooling_mode_mean_tokens", False)
        if kinds != ["Transformer", "Pooling", "Normalize"] or not mean:
            raise MemwardenError(f"cannot export {kinds} (mean pooling: {mean}): needs Transformer, mean Pooling, "
                                 "Normalize")
        # a transformers model, reached through torch's Module.__getattr__ (typed Tensor | Module)
        bert = cast(Any, model[0].auto_model).eval()
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
            trace_onnx(_Pipeline(bert), sample, tmp, "embedding")
            reference = model.encode(list(_PROBES), normalize_embeddings=True, convert_to_numpy=True,
                                     show_progress_bar=False)
            session = ort_session(tmp, 1)
            batched = session.run(None, {n: sample[n].numpy().astype(np.int64) for n in ONNX_INPUTS})[0]
            single = tokenizer([_PROBES[1]], truncation=True, max_length=model.max_seq_length, return_tensors="np")
            alone = session.run(None, {n: single[n].astype(np.int64) for n in ONNX_INPUTS})[0]
            cosine = min(float((batched * reference).sum(1).min()), float((alone[0] * reference[1]).sum()))
            if batched.shape != reference.shape or cosine < MIN_EXPORT_COSINE:
                raise MemwardenError(f"ONNX export disagrees with PyTorch: cosine {cosine:.6f}, "
                                     f"shape {batched.shape} vs {reference.shape}")
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    return target
