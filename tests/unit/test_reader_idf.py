"""The reader's lexical IDF (``lexical_idf="reader"``, :mod:`memwarden.projections.vector_index`): the pure
weighting of a lexical query by the document frequencies of the points a read admits."""

from __future__ import annotations

import math

import pytest

from memwarden.errors import ValidationError
from memwarden.projections.edge_template import template_name
from memwarden.projections.vector_index import (
    DEFAULT_LEXICAL_IDF,
    TERMS_FIELD,
    IndexPoint,
    SparseVector,
    bm25_idf,
    check_lexical_idf,
    point_from_record,
    reader_weighted,
    stored_payload,
)


def counter(n_docs: int, held: dict[int, int]) -> tuple[list[int | None], object]:
    """A fake engine count: ``None`` -> ``n_docs``, a term -> ``held`` (0 when absent); records the asks."""
    asked: list[int | None] = []

    def count(term: int | None) -> int:
        asked.append(term)
        return n_docs if term is None else held.get(term, 0)

    return asked, count


@pytest.mark.parametrize(("n_docs", "n", "expected"), [
    (10, 1, math.log(1 + 9.5 / 1.5)),
    (10, 10, math.log(1 + 0.5 / 10.5)),
    (1, 1, math.log(1 + 0.5 / 1.5)),
    (2, 1, math.log(2.0)),
    (10, 0, math.log(1 + 10.5 / 0.5)),
    (10, 20, math.log(1 + 0.5 / 10.5)),  # more holders than points: clamped to N
])
def test_bm25_idf_is_the_okapi_formula(n_docs: int, n: int, expected: float) -> None:
    assert bm25_idf(n_docs, n) == pytest.approx(expected)
    assert bm25_idf(n_docs, n) > 0


def test_rarer_terms_weigh_more() -> None:
    weights = [bm25_idf(100, n) for n in (1, 2, 10, 50, 100)]
    assert weights == sorted(weights, reverse=True)


def test_query_weights_are_multiplied_by_the_readable_idf() -> None:
    asked, count = counter(20, {7: 2, 9: 20})
    got = reader_weighted(SparseVector((7, 9), (1.0, 0.5)), count)  # type: ignore[arg-type]
    assert got.indices == (7, 9)
    assert got.values == pytest.approx((bm25_idf(20, 2), 0.5 * bm25_idf(20, 20)))
    assert asked == [None, 7, 9]


def test_terms_no_readable_point_holds_are_dropped() -> None:
    _, count = counter(5, {3: 1})
    got = reader_weighted(SparseVector((1, 3, 4), (1.0, 1.0, 1.0)), count)  # type: ignore[arg-type]
    assert got == SparseVector((3,), (bm25_idf(5, 1),))


def test_nothing_readable_gives_an_empty_query_without_term_counts() -> None:
    asked, count = counter(0, {1: 3})
    assert reader_weighted(SparseVector((1,), (1.0,)), count) == SparseVector()  # type: ignore[arg-type]
    assert asked == [None]


def test_an_empty_query_asks_nothing() -> None:
    asked, count = counter(5, {})
    assert reader_weighted(SparseVector(), count) == SparseVector()  # type: ignore[arg-type]
    assert asked == []


def test_zero_weight_terms_are_neither_counted_nor_kept() -> None:
    asked, count = counter(5, {1: 1, 2: 1})
    got = reader_weighted(SparseVector((1, 2), (0.0, 1.0)), count)  # type: ignore[arg-type]
    assert got.indices == (2,)
    assert asked == [None, 2]


def test_the_weighting_depends_only_on_the_counts_it_is_given() -> None:
    """The whole point: same readable counts, same query weights, whatever else an index holds."""
    query = SparseVector((11, 12), (1.0, 1.0))
    _, a = counter(40, {11: 3, 12: 9})
    _, b = counter(40, {11: 3, 12: 9})
    assert reader_weighted(query, a) == reader_weighted(query, b)  # type: ignore[arg-type]
    _, c = counter(40, {11: 4, 12: 9})
    assert reader_weighted(query, c) != reader_weighted(query, a)  # type: ignore[arg-type]


def test_stored_payload_keeps_term_ids_only_for_the_reader_idf() -> None:
    point = IndexPoint("p", [0.1], {"owner": "alice"}, SparseVector((5, 9), (1.0, 2.0)))
    assert stored_payload(point, "reader") == {"owner": "alice", TERMS_FIELD: [5, 9]}
    assert stored_payload(point, "namespace") == {"owner": "alice"}
    assert stored_payload(IndexPoint("q", [0.1], {"owner": "bob"}), "reader") == {"owner": "bob"}
    assert stored_payload(IndexPoint("q", [0.1], {"owner": "bob"}, SparseVector()), "reader") == {"owner": "bob"}


def test_a_payload_naming_the_term_field_is_refused() -> None:
    with pytest.raises(ValidationError, match="payload"):
        stored_payload(IndexPoint("p", [0.1], {TERMS_FIELD: [1]}), "reader")


def test_term_ids_never_come_back_from_a_scan() -> None:
    got = point_from_record("p", {"": [0.1]}, {"owner": "alice", TERMS_FIELD: [1, 2]})
    assert got.payload == {"owner": "alice"}


@pytest.mark.parametrize("bad", ["global", "", None, "Reader", 1])
def test_an_unknown_lexical_idf_names_the_field(bad: object) -> None:
    with pytest.raises(ValidationError, match="lexical_idf"):
        check_lexical_idf(bad)


def test_each_idf_has_its_own_template_and_the_namespace_template_keeps_its_name() -> None:
    assert template_name(384, "reader") != template_name(384, "namespace")
    assert template_name(384) == template_name(384, DEFAULT_LEXICAL_IDF) == template_name(384, "reader")
    assert template_name(384, "reader").endswith("-reader")
    namespace = template_name(384, "namespace")
    assert namespace.startswith("layout2-dim384-") and "reader" not in namespace  # the name it always had
