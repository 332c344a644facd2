"""Reader document frequencies kept between recalls (:mod:`memwarden.projections.reader_frequencies`) and the
filter they are counted under (:func:`memwarden.projections.vector_index.idf_filter`): a kept count is
answered again only while no write could have changed it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memwarden.commands.readmodel.payload import ACL_FIELD
from memwarden.commands.readmodel.read_filter import read_filter
from memwarden.epoch import from_ms
from memwarden.projections import reader_frequencies
from memwarden.projections.reader_frequencies import ReaderFrequencies
from memwarden.projections.vector_index import (
    FieldIn,
    FieldRange,
    Filter,
    SparseVector,
    bm25_idf,
    idf_filter,
    read_as_of,
    reader_access_keys,
    reader_weighted,
)

ALICE = ("k-alice-own", "k-alice-grant")
BOB = ("k-bob-own",)


class Engine:
    """A fake engine count that records what it was asked: ``None`` -> ``n_docs``, a term -> ``held``."""

    def __init__(self, n_docs: int, held: dict[int, int]) -> None:
        self.n_docs, self.held, self.asked = n_docs, held, []  # type: ignore[var-annotated]

    def __call__(self, term: int | None) -> int:
        self.asked.append(term)
        return self.n_docs if term is None else self.held.get(term, 0)


def ask(freq: ReaderFrequencies, keys: tuple[str, ...], engine: Engine, *terms: int | None) -> list[int]:
    count: Callable[[int | None], int] = freq.counter(keys, engine)
    return [count(t) for t in terms]


def test_a_second_recall_of_the_same_reader_is_answered_without_the_engine() -> None:
    freq, engine = ReaderFrequencies(), Engine(20, {7: 2, 9: 5})
    assert ask(freq, ALICE, engine, None, 7, 9) == [20, 2, 5]
    assert ask(freq, ALICE, engine, None, 7, 9) == [20, 2, 5]
    assert engine.asked == [None, 7, 9]
    assert (freq.hits, freq.misses) == (3, 3)


def test_a_written_point_makes_its_terms_stale_and_leaves_the_others() -> None:
    freq, engine = ReaderFrequencies(), Engine(20, {7: 2, 9: 5})
    ask(freq, ALICE, engine, None, 7, 9)
    engine.n_docs, engine.held = 21, {7: 3, 9: 5}
    freq.written([(["k-alice-own"], [7, 11])])
    engine.asked.clear()
    assert ask(freq, ALICE, engine, None, 7, 9) == [21, 3, 5]
    assert engine.asked == [None, 7]  # 9 was not written: still kept


def test_points_is_stale_only_for_key_sets_holding_one_of_the_written_keys() -> None:
    freq = ReaderFrequencies()
    alice, bob = Engine(20, {}), Engine(4, {})
    ask(freq, ALICE, alice, None)
    ask(freq, BOB, bob, None)
    freq.written([(["k-alice-grant", "k-carol"], [])])
    alice.asked.clear()
    bob.asked.clear()
    ask(freq, ALICE, alice, None)
    ask(freq, BOB, bob, None)
    assert alice.asked == [None]
    assert bob.asked == []


def test_a_replaced_or_deleted_point_passes_its_old_terms_too() -> None:
    freq, engine = ReaderFrequencies(), Engine(20, {7: 2, 9: 5})
    ask(freq, ALICE, engine, 7, 9)
    freq.written([(["k-alice-own"], [7]), (["k-alice-own"], [9])])  # new terms, then the replaced point's
    engine.asked.clear()
    ask(freq, ALICE, engine, 7, 9)
    assert engine.asked == [7, 9]


def test_reset_makes_every_kept_count_stale() -> None:
    freq, engine = ReaderFrequencies(), Engine(20, {7: 2})
    ask(freq, ALICE, engine, None, 7)
    freq.reset()
    engine.asked.clear()
    ask(freq, ALICE, engine, None, 7)
    assert engine.asked == [None, 7]


def test_key_sets_never_share_counts() -> None:
    freq = ReaderFrequencies()
    ask(freq, ALICE, Engine(20, {7: 2}), None, 7)
    bob = Engine(4, {7: 1})
    assert ask(freq, BOB, bob, None, 7) == [4, 1]
    assert ask(freq, ALICE[:1], bob, None, 7) == [4, 1]  # a subset of a reader's keys is another reader
    assert bob.asked == [None, 7, None, 7]


def test_the_least_recently_used_key_set_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader_frequencies, "MAX_READERS", 2)
    freq = ReaderFrequencies()
    a, b, c = Engine(1, {}), Engine(2, {}), Engine(3, {})
    ask(freq, ("a",), a, None)
    ask(freq, ("b",), b, None)
    ask(freq, ("a",), a, None)  # a is now the most recent
    ask(freq, ("c",), c, None)  # b goes
    ask(freq, ("a",), a, None)
    ask(freq, ("b",), b, None)
    assert (a.asked, b.asked) == ([None], [None, None])


def test_a_full_key_set_clears_its_terms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader_frequencies, "MAX_TERMS", 2)
    freq, engine = ReaderFrequencies(), Engine(9, {1: 1, 2: 2, 3: 3})
    assert ask(freq, ALICE, engine, 1, 2, 3, 3, 1) == [1, 2, 3, 3, 1]
    assert engine.asked == [1, 2, 3, 1]


def test_weights_from_kept_counts_equal_weights_from_the_engine() -> None:
    engine = Engine(50, {7: 3, 9: 50, 11: 0})
    query = SparseVector((7, 9, 11), (1.0, 0.5, 1.0))
    freq = ReaderFrequencies()
    first = reader_weighted(query, freq.counter(ALICE, engine))
    again = reader_weighted(query, freq.counter(ALICE, engine))
    assert first == again == reader_weighted(query, Engine(50, {7: 3, 9: 50}))
    assert first.values == pytest.approx((bm25_idf(50, 3), 0.5 * bm25_idf(50, 50)))


# -- the filter the counts run under --------------------------------------------------------------


def test_a_read_filter_is_counted_under_its_access_keys_and_its_as_of_bounds() -> None:
    now, then = from_ms(1_800_000_000_000), from_ms(1_700_000_000_000)
    where = read_filter("user:alice", then, now, known_at=from_ms(1_750_000_000_000))
    keys = reader_access_keys(where)
    assert keys is not None and keys
    assert idf_filter(where) == Filter(must=(FieldIn(ACL_FIELD, keys),
                                             FieldRange("valid_from_ms", lte=1_700_000_000_000),
                                             FieldRange("decided_ms", lte=1_750_000_000_000)))
    assert read_as_of(where) == 1_700_000_000_000
    # validity end, expiry and freshness narrow the candidates, not the counts
    assert {c.key for c in where.must if isinstance(c, FieldRange)} > {c.key for c in idf_filter(where).must
                                                                       if isinstance(c, FieldRange)}
    assert read_as_of(read_filter("user:alice", now, now)) == 1_800_000_000_000


def test_a_filter_without_access_keys_is_counted_as_it_is() -> None:
    owner = Filter(must=(FieldIn("owner", ("alice",)), FieldRange("valid_from_ms", lte=5)))
    assert reader_access_keys(owner) is None
    assert idf_filter(owner) is owner
    assert read_as_of(owner) == 5 and read_as_of(None) is None
    assert idf_filter(None) is None
    nested = Filter(should=(Filter(must=(FieldIn(ACL_FIELD, ("k",)),)),))  # only a top-level `must` is a read's
    assert reader_access_keys(nested) is None
