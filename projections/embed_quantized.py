"""An 8-bit copy of the ONNX export for embedding *queries* (issue 11, "recall as a user pays it").

A recall embeds one short query, usually after the worker sat idle for a moment: the fp32 graph's
90 MB of weights are then out of the CPU caches and a query costs about 8 ms on this 2-core host
(about 4.7 ms back to back). ONNX Runtime's dynamic quantization (``quantize_dynamic``, per-channel
signed 8-bit weights, activations quantized on the fly) makes the weights 23 MB and the same query
about 3.8 ms after idle (1.8 ms back to back).

Only queries use it. Stored memories keep the fp32 vectors of the export (the model identity, the
index and every replay are unchanged), so a quantized query meets fp32 documents. Measured on
LoCoMo (``bench/locomo_hybrid_offline.py``-style run, 7 conversations, thread context on): recall@10
0.738 with fp32 queries, 0.735 with 8-bit queries (dev conversations 0.778 / 0.773, held-out 0.715 /
0.713); quantizing the documents too cost more (0.730) and is not done. The copy is checked against
the fp32 export on :data:`_PROBES` before use (cosine at least :data:`MIN_QUANTIZED_COSINE`); on any
failure the embedder keeps using fp32 for queries. ``MEMWARDEN_QUERY_QUANTIZED=false`` turns it off.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from memwarden.errors import MemwardenError

from .embed_onnx import _PROBES, ONNX_INPUTS, _file_lock, ort_session

#: A quantized copy is used only if its vectors agree with the fp32 export at least this well on
#: every probe (cosine; 600 LoCoMo turns measured min 0.982, mean 0.992).
MIN_QUANTIZED_COSINE = 0.97


def quantized_path(export: Path) -> Path:
    """``<export stem>.int8pc.onnx`` beside the fp32 export (the same cache key)."""
    return export.with_name(f"{export.stem}.int8pc.onnx")


def quantize_export(export: Path, target: Path) -> Path:
    """Write the per-channel 8-bit dynamic quantization of the fp32 ONNX ``export`` at ``target``,
    once (advisory lock ``<target>.lock``; written under a temporary name and renamed; nothing else is
    left beside the export, even when the quantization fails). Returns
    ``target``. Raises whatever ``onnxruntime.quantization`` raises (e.g. ``onnx`` missing)."""
    with _file_lock(target.with_name(target.name + ".lock")):
        if target.is_file():
            return target
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic

        tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            # given the loaded model (not its path), the shape-inference copy is written in a temporary
            # directory of its own, not as a fixed-name "<export>-inferred.onnx" beside the export
            quantize_dynamic(onnx.load(str(export)), str(tmp), per_channel=True, weight_type=QuantType.QInt8)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    return target


def quantized_session(export: Path, fp32_session: Any, tokenizer: Any, max_length: int) -> Any:
    """A one-thread session on the 8-bit copy of ``export`` (made once), after checking its vectors
    against ``fp32_session`` on :data:`_PROBES`. Raises ``MemwardenError`` when they disagree
    (cosine below :data:`MIN_QUANTIZED_COSINE`), or what the quantization or ONNX Runtime raise."""
    session = ort_session(quantize_export(export, quantized_path(export)), 1)
    enc = tokenizer(list(_PROBES), padding=True, truncation=True, max_length=max_length, return_tensors="np")
    feed = {n: enc[n].astype(np.int64) for n in ONNX_INPUTS}
    a, b = fp32_session.run(None, feed)[0], session.run(None, feed)[0]
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    if not float(cos.min()) >= MIN_QUANTIZED_COSINE:
        raise MemwardenError(f"the 8-bit query model disagrees with fp32 (min cosine {float(cos.min()):.4f} < "
                             f"{MIN_QUANTIZED_COSINE})")
    return session
