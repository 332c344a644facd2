"""The lexical sparse encoder (projections/sparse.py): tokens, term ids, BM25 document/query weights."""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memwarden.errors import ValidationError
from memwarden.projections.sparse import (
    CJK,
    SOUTHEAST_ASIAN,
    STOPWORDS,
    TIEBREAK,
    Bm25Encoder,
    stem,
    term_id,
    tokens,
)
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


# --- every script (issue 12, field case Q2) -------------------------------------------------------------------

#: Field case Q2: one memory per script written without spaces between words, and an English one.
MEMORIES = {"zh": "今天玩成语接龙游戏", "ja": "週末は京都で紅葉を見ました", "ko": "오늘은 도서관에서 공부했어요",
            "en": "We went hiking in the mountains last weekend."}
QUERIES = {"zh": "成语接龙", "ja": "紅葉", "ko": "도서관"}


def _first_version(text: str) -> list[str]:
    """The tokeniser as it was before scripts were told apart (``[^\\W_]+`` runs), for comparison."""
    normal = unicodedata.normalize("NFKC", text).casefold()
    return [stem(w) for w in re.findall(r"[^\W_]+", normal) if len(w) > 1 and w not in STOPWORDS]


def _bm25(query: str, docs: dict[str, str]) -> dict[str, float]:
    """BM25 of ``query`` against ``docs`` as the index computes it: the dot product of the query and
    document vectors with each term weighted by its IDF over ``docs``."""
    enc = Bm25Encoder()
    vecs = {k: dict(zip(v.indices, v.values, strict=True)) for k, v in ((k, enc.document(t)) for k, t in docs.items())}
    n = len(vecs)

    def idf(tid: int) -> float:
        df = sum(tid in v for v in vecs.values())
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    q = enc.query(query)
    return {k: sum(idf(t) * w * v.get(t, 0.0) for t, w in zip(q.indices, q.values, strict=True))
            for k, v in vecs.items()}


@pytest.mark.parametrize(("text", "expected"), [
    # Pinned from the tokeniser before issue 12 (computed with that code): English must not move.
    ("Caroline went to the LGBTQ support group yesterday and felt accepted.",
     ["caroline", "went", "lgbtq", "support", "group", "yesterday", "felt", "accept"]),
    ("Melanie's kids loved the camping trip; they're planning another one in 2024!",
     ["melanie", "kid", "lov", "camp", "trip", "plan", "another", "one", "2024"]),
    ("What hobbies does she enjoy? Painting, running & pottery classes.",
     ["hobby", "enjoy", "paint", "run", "pottery", "class"]),
    ("I went to a pride parade last Friday with my friends, and it was amazing!",
     ["went", "pride", "parade", "last", "friday", "friend", "amaz"]),
    ("Don't forget: the kids' swimming lessons were moved to 5:30pm on Tuesdays.",
     ["forget", "kid", "swim", "lesson", "mov", "30pm", "tuesday"]),
    ("The café served crème brûlée — naïve résumé, ｆｕｌｌｗｉｄｔｈ text, snake_case x y.",
     ["café", "serv", "crème", "brûlée", "naïve", "résumé", "fullwidth", "text", "snake", "case"]),
])
def test_english_and_latin_tokens_are_unchanged(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected
    assert _first_version(text) == expected


def _in(ranges: tuple[tuple[int, int], ...], ch: str) -> bool:
    return any(lo <= ord(ch) <= hi for lo, hi in ranges)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Mn", "Mc", "Me")), max_size=40))
def test_texts_without_cjk_or_marks_tokenise_as_before(text: str) -> None:
    """Any text whose normal form holds no CJK/Southeast Asian character and no combining mark (all of
    Latin, Cyrillic, Greek, ... as NFKC composes them) gets the first version's tokens exactly."""
    normal = unicodedata.normalize("NFKC", text).casefold()
    if any(_in(CJK, ch) or _in(SOUTHEAST_ASIAN, ch) or unicodedata.category(ch).startswith("M") for ch in normal):
        return
    assert tokens(text) == _first_version(text)


def test_cjk_runs_give_character_unigrams_and_bigrams() -> None:
    assert tokens("紅葉") == ["紅", "紅葉", "葉"]
    assert tokens("成语接龙") == ["成", "成语", "语", "语接", "接", "接龙", "龙"]
    assert tokens("도서관에서") == ["도", "도서", "서", "서관", "관", "관에", "에", "에서", "서"]
    assert tokens("猫") == ["猫"]  # a one-character word of an ideographic script is a term
    assert tokens("ｶﾀｶﾅ") == tokens("カタカナ")  # NFKC: half-width katakana
    # Latin, digits and CJK in one run split where the script changes; the Latin part stays a word.
    assert tokens("iPhone手机 2023年") == ["iphone", "手", "手机", "机", "2023", "年"]


def test_southeast_asian_runs_give_cluster_bigrams_and_indic_words_keep_their_marks() -> None:
    assert tokens("ภาษาไทย") == ["ภา", "าษ", "ษา", "าไ", "ไท", "ทย"]
    assert tokens("ฉัน") == ["ฉัน"]  # one bigram of two clusters: ฉ + its vowel mark, น
    assert "ภาษา" not in tokens("ภาษาไทย") and set(tokens("ภาษา")) <= set(tokens("ฉันเรียนภาษาไทย"))
    # Devanagari vowel signs are combining marks: the words stay whole (the first version cut them).
    assert tokens("मैं हिन्दी सीख रहा हूँ") == ["मैं", "हिन्दी", "सीख", "रहा", "हूँ"]
    assert _first_version("मैं हिन्दी सीख रहा हूँ") == ["रह"]


@pytest.mark.parametrize("lang", sorted(QUERIES))
def test_field_case_queries_match_their_memory_lexically_and_no_other(lang: str) -> None:
    scores = _bm25(QUERIES[lang], MEMORIES)
    assert scores[lang] > 0
    assert {k for k, v in scores.items() if v > 0} == {lang}


def test_a_query_ranks_the_text_holding_its_characters_in_order_first() -> None:
    docs = {"match": "週末は京都で紅葉を見ました", "scattered": "葉っぱが紅くなった", "other": "京都で寿司を食べた"}
    scores = _bm25("紅葉", docs)
    assert scores["match"] > scores["scattered"] > 0 and scores["other"] == 0
    scores = _bm25("도서관", {"match": "오늘은 도서관에서 공부했어요", "other": "도시에서 살아요"})
    assert scores["match"] > scores["other"]


def test_an_english_query_matches_only_the_english_memory() -> None:
    scores = _bm25("hiking mountains", MEMORIES)
    assert scores["en"] > 0 and {k for k, v in scores.items() if v > 0} == {"en"}
