"""The ONNX Runtime backend of the embedder (issue 4, "Speed"): same vectors as the PyTorch path,
a one-off atomic export shared by concurrent workers, and a logged fallback to PyTorch.

Runs the real packaged all-MiniLM-L6-v2 (no hub): each export takes a few seconds on CPU.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memwarden.errors import MemwardenError
from memwarden.projections import embed_onnx
from memwarden.projections import embedder as emb
from memwarden.projections.embedder import SentenceTransformerEmbedder
from memwarden.settings import Settings

SENTENCES = [
    "ok",
    "The subject asked to be reminded about the dentist appointment next Tuesday at 9am.",
    "service:ops-bot: the nightly backup of the ledger finished in 42 minutes, two warnings",
    "Which purpose tags may the support team read under its grant?",
    "a memory text far longer than the window of the model, cut at 256 word pieces " * 30,
]


@pytest.fixture(scope="module")
def torch_embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(backend="torch")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def onnx_embedder(cache_dir: Path) -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(backend="onnx", cache_dir=cache_dir)


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_onnx_backend_is_used_when_available(onnx_embedder: SentenceTransformerEmbedder) -> None:
    assert onnx_embedder.backend == "onnx"
    assert onnx_embedder.dim == 384


def test_onnx_vectors_match_torch_in_a_padded_batch(torch_embedder: SentenceTransformerEmbedder,
                                                    onnx_embedder: SentenceTransformerEmbedder) -> None:
    expected = torch_embedder.embed(SENTENCES)
    got = onnx_embedder.embed(SENTENCES)
    assert got.shape == expected.shape == (len(SENTENCES), 384)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-4)
    assert _cosines(got, expected).min() >= 0.999


def test_onnx_single_query_matches_torch(torch_embedder: SentenceTransformerEmbedder,
                                         onnx_embedder: SentenceTransformerEmbedder) -> None:
    for text in SENTENCES:
        got = onnx_embedder.embed([text])
        assert got.shape == (1, 384)
        assert _cosines(got, torch_embedder.embed([text]))[0] >= 0.999


def test_batches_of_several_chunks_keep_input_order(torch_embedder: SentenceTransformerEmbedder,
                                                    cache_dir: Path) -> None:
    small = SentenceTransformerEmbedder(batch_size=2, backend="onnx", cache_dir=cache_dir)
    texts = SENTENCES + [s.upper() for s in SENTENCES] + ["x"]
    got = small.embed(texts)
    assert _cosines(got, torch_embedder.embed(texts)).min() >= 0.999


def test_empty_call_and_clipping(onnx_embedder: SentenceTransformerEmbedder) -> None:
    assert onnx_embedder.embed([]).shape == (0, 384)
    long = "word " * 5_000
    assert _cosines(onnx_embedder.embed([long]), onnx_embedder.embed([long[: emb.MAX_EMBED_CHARS]]))[0] > 0.9999


def test_export_is_cached_and_reused(onnx_embedder: SentenceTransformerEmbedder, cache_dir: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    exports = sorted(p.name for p in cache_dir.iterdir() if p.suffix == ".onnx")
    assert len(exports) == 1 and exports[0].startswith("all-minilm-")
    assert not [p for p in cache_dir.iterdir() if p.name.endswith(".tmp")]

    def no_export(*_: object) -> Path:
        raise AssertionError("exported again although the cache holds an export")

    monkeypatch.setattr(emb, "export_onnx", no_export)
    again = SentenceTransformerEmbedder(backend="onnx", cache_dir=cache_dir)
    assert again.backend == "onnx"


def test_concurrent_exports_run_once_and_leave_one_complete_file(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    calls: list[int] = []
    real_export = torch.onnx.export

    def counting_export(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real_export(*args, **kwargs)

    monkeypatch.setattr(torch.onnx, "export", counting_export)
    model_path = emb.packaged_model_path()
    target = emb.onnx_export_path(model_path, tmp_path)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            emb.export_onnx(model_path, target)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(calls) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, target.name + ".lock"])
    assert SentenceTransformerEmbedder(backend="onnx", cache_dir=tmp_path).backend == "onnx"


@pytest.fixture
def caplog_warn(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.WARNING, logger="memwarden.embedder"):
        yield caplog


def test_falls_back_to_torch_when_onnxruntime_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         caplog_warn: pytest.LogCaptureFixture,
                                                         torch_embedder: SentenceTransformerEmbedder) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime -> ImportError
    fallback = SentenceTransformerEmbedder(backend="onnx", cache_dir=tmp_path)
    assert fallback.backend == "torch"
    assert any("falling back to torch" in r.getMessage() for r in caplog_warn.records)
    assert _cosines(fallback.embed(SENTENCES), torch_embedder.embed(SENTENCES)).min() >= 0.9999
    assert list(tmp_path.iterdir()) == []


def test_falls_back_and_keeps_no_file_when_the_export_disagrees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                caplog_warn: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(embed_onnx, "MIN_EXPORT_COSINE", 1.5)  # no export can pass: the check must reject it
    fallback = SentenceTransformerEmbedder(backend="onnx", cache_dir=tmp_path)
    assert fallback.backend == "torch"
    assert any("disagrees with PyTorch" in r.getMessage() for r in caplog_warn.records)
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == []
    assert fallback.embed(["still works"]).shape == (1, 384)


def test_unknown_backend_is_refused() -> None:
    with pytest.raises(MemwardenError, match="unknown embedding backend"):
        SentenceTransformerEmbedder(backend="gpu")  # type: ignore[arg-type]


def test_setting_selects_the_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMWARDEN_EMBED_BACKEND", raising=False)
    assert Settings().embed_backend == "onnx"
    monkeypatch.setenv("MEMWARDEN_EMBED_BACKEND", "torch")
    assert Settings().embed_backend == "torch"
    monkeypatch.setenv("MEMWARDEN_EMBED_BACKEND", "tensorflow")
    with pytest.raises(ValueError, match="embed_backend"):
        Settings()


def test_queries_run_on_an_8_bit_copy_close_to_fp32_and_documents_stay_fp32(cache_dir: Path,
                                                                           onnx_embedder: SentenceTransformerEmbedder
                                                                           ) -> None:
    quantized = SentenceTransformerEmbedder(backend="onnx", cache_dir=cache_dir, query_quantized=True)
    assert quantized.query_quantized and not onnx_embedder.query_quantized
    assert any(p.name.endswith(".int8pc.onnx") for p in cache_dir.iterdir())
    assert not [p.name for p in cache_dir.iterdir() if "inferred" in p.name or p.name.endswith(".tmp")]
    fp32 = onnx_embedder.embed(SENTENCES)
    assert np.array_equal(quantized.embed(SENTENCES), fp32)  # what is stored never changes
    queries = quantized.embed_query(SENTENCES)
    assert queries.shape == fp32.shape and not np.array_equal(queries, fp32)
    cos = _cosines(queries, fp32)  # a one-word text moves most ("ok": about 0.965)
    assert cos.min() >= 0.95 and cos.mean() >= 0.98
    assert np.allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-3)
    assert np.array_equal(onnx_embedder.embed_query(SENTENCES), fp32)  # without the copy: fp32
    assert quantized.embed_query([]).shape == (0, 384)


def test_a_quantized_copy_that_disagrees_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     caplog_warn: pytest.LogCaptureFixture) -> None:
    from memwarden.projections import embed_quantized

    monkeypatch.setattr(embed_quantized, "MIN_QUANTIZED_COSINE", 1.5)  # no copy can pass
    embedder = SentenceTransformerEmbedder(backend="onnx", cache_dir=tmp_path, query_quantized=True)
    assert embedder.backend == "onnx" and not embedder.query_quantized
    assert any("queries use fp32" in r.getMessage() for r in caplog_warn.records)
    assert np.array_equal(embedder.embed_query(["tea"]), embedder.embed(["tea"]))


def test_setting_turns_the_query_model_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMWARDEN_QUERY_QUANTIZED", raising=False)
    assert Settings().query_quantized is True
    monkeypatch.setenv("MEMWARDEN_QUERY_QUANTIZED", "false")
    assert Settings().query_quantized is False
