"""The lexical sparse encoder (projections/sparse.py): tokens, term ids, BM25 document/query weights."""

from __future__ import annotations

import hashlib
import math

import pytest

from memwarden.errors import ValidationError
from memwarden.projections.sparse import TIEBREAK, Bm25Encoder, stem, term_id, tokens
from memwarden.projections.vector_index import SparseVector


def test_tokens_normalise_casefold_drop_stopwords_and_stem() -> None:
    assert tokens("The Paintings were PAINTED in Straße!") == ["paint", "paint", "strasse"]
    assert tokens("ｆｕｌｌｗｉｄｔｈ ＡＢＣ") == ["fullwidth", "abc"]  # NFKC
    assert tokens("I am a, and the ... of") == []
    assert tokens("snake_case x y 2023") == ["snake", "case", "2023"]  # underscores split, 1-char dropped


@pytest.mark.parametrize(
    ("word", "expected"),
    [("hobbies", "hobby"), ("paintings", "paint"), ("running", "run"), ("planned", "plan"), ("glass", "glass"),
     ("classes", "class"), ("watches", "watch"), ("bus", "bus"), ("sing", "sing"), ("dressed", "dress"),
     ("2023", "2023"), ("cats", "cat")],
)
def test_stem_merges_common_inflections(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_term_ids_are_stable_32_bit_hashes() -> None:
    assert term_id("paint") == int.from_bytes(hashlib.blake2b(b"paint", digest_size=4).digest(), "big")
    assert term_id("paint") == 3861671845  # pinned: changing it silently breaks every stored sparse vector
    assert 0 <= term_id("anything") < 2**32
    assert term_id("paint") != term_id("paints")


def test_document_weights_are_saturated_term_frequencies() -> None:
    enc = Bm25Encoder(k1=1.2, b=0.5, avg_len=4.0)
    vec = enc.document("museum museum painting trip")  # 4 terms, len == avg_len
    weights = dict(zip(vec.indices, vec.values, strict=True))
    norm = 1.2 * (1 - 0.5 + 0.5 * 4 / 4.0)
    assert weights[term_id("museum")] == pytest.approx(2 * 2.2 / (2 + norm))
    assert weights[term_id("paint")] == pytest.approx(1 * 2.2 / (1 + norm))
    assert list(vec.indices) == sorted(vec.indices)


def test_longer_documents_weigh_less_only_when_b_is_positive() -> None:
    short, long_ = "museum trip", "museum trip with friends after lunch downtown yesterday"
    for b, expect_lower in ((0.0, False), (0.75, True)):
        enc = Bm25Encoder(b=b)
        w_short = dict(zip(*(lambda v: (v.indices, v.values))(enc.document(short)), strict=True))
        w_long = dict(zip(*(lambda v: (v.indices, v.values))(enc.document(long_)), strict=True))
        lower = w_long[term_id("museum")] < w_short[term_id("museum")]
        assert lower is expect_lower


def test_query_gives_each_distinct_term_weight_one() -> None:
    vec = Bm25Encoder().query("museum museum trip?")
    assert sorted(vec.indices) == sorted({term_id("museum"), term_id("trip")})
    assert set(vec.values) == {1.0}


def test_empty_texts_give_empty_vectors() -> None:
    enc = Bm25Encoder()
    assert enc.document("the and of") == SparseVector()
    assert enc.query("   ") == SparseVector()


def test_tiebreak_key_scales_within_the_bound_and_is_deterministic() -> None:
    enc = Bm25Encoder()
    plain = enc.document("museum trip")
    a, a2, b = enc.document("museum trip", key="p-1"), enc.document("museum trip", key="p-1"), enc.document(
        "museum trip", key="p-2")
    assert a == a2 and a != b
    for x, y in zip(a.values, plain.values, strict=True):
        assert 1.0 <= x / y < 1.0 + TIEBREAK
    assert a.indices == plain.indices


@pytest.mark.parametrize(("k1", "b", "avg_len"), [(-0.1, 0.5, 10.0), (1.2, 1.5, 10.0), (1.2, -0.1, 10.0),
                                                  (1.2, 0.5, 0.0)])
def test_bad_parameters_are_refused(k1: float, b: float, avg_len: float) -> None:
    with pytest.raises(ValidationError):
        Bm25Encoder(k1, b, avg_len)


def test_sparse_vector_validates_its_shape() -> None:
    with pytest.raises(ValidationError):
        SparseVector((1, 2), (1.0,))
    with pytest.raises(ValidationError):
        SparseVector((1, 1), (1.0, 2.0))
    with pytest.raises(ValidationError):
        SparseVector((2**32,), (1.0,))
    assert math.isclose(SparseVector((3,), (0.5,)).values[0], 0.5)
