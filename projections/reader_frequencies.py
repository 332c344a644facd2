"""Reader document frequencies, kept between recalls (``lexical_idf="reader"``; "Lexical IDF" in the README).

Under ``MEMWARDEN_LEXICAL_IDF=reader`` the lexical leg weighs a query word by the BM25 IDF of the memories
the reader may read (:func:`memwarden.projections.vector_index.reader_weighted`), so a score never moves
with the words of memories it may not read. Counting them per recall costs one exact engine count per
query word (about 1 ms each at 100k points). This module keeps those counts between recalls, exact:

* **What is kept.** The counts of a read that no point of the index postdates: the points whose access
  keys (``acl``, :mod:`memwarden.commands.readmodel.access_keys`) hold one of the reader's keys, ``N`` of
  them and ``n`` of them holding a term. That is the ACL, purpose and trust part of the Eq. 5 filter, which
  is what separates principals; the read's as-of bounds (valid from, decided by) exclude nothing then, and
  its other time conditions narrow the candidates, not the IDF
  (:func:`~memwarden.projections.vector_index.idf_filter`). A read of the past is counted afresh by the
  index. The keys are stable between grant changes, so the counts of one key set can be reused; a new
  grant gives a new key set, counted afresh.
* **When a count is stale.** Every write to the index moves generation counters
  (:meth:`ReaderFrequencies.written`): each term of each upserted point (old and new terms of a replaced
  one), and each access key of those points for ``N``. A cached count carries the generations it was
  counted under and is counted again when they moved. Generations live in fixed tables indexed by a
  hash of the term id or key (:data:`SLOTS`), so two terms sharing a slot only cost a recount. Writes
  whose effect is not known term by term (a delete by filter, a payload change touching ``acl`` or the
  term ids, a switch to a rebuilt shard) move one epoch that every cached count carries
  (:meth:`ReaderFrequencies.reset`).
* **Ordering.** The owner of the index moves the generations after the engine applied the write and
  under the same lock as its counts; a count reads the generations before it asks the engine, so a
  write landing in between leaves a count that is already stale and is counted again, never a stale
  count that looks fresh.

Memory is bounded: at most :data:`MAX_READERS` key sets (least recently used dropped) of at most
:data:`MAX_TERMS` terms each (a full set is cleared). Pure: no I/O; the engine counts come from the
callable the caller passes. Not thread-safe on its own: the index adapter calls it under its lock.
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

__all__ = ["MAX_READERS", "MAX_TERMS", "SLOTS", "ReaderFrequencies"]

#: Generation-table size (slots for term ids and for access keys; a power of two).
SLOTS = 1 << 18
#: Key sets whose counts are kept (one per reader and purpose, roughly).
MAX_READERS = 256
#: Terms kept per key set before its counts are cleared.
MAX_TERMS = 20_000

_MASK = SLOTS - 1


@dataclass
class _KeySet:
    """Cached counts of one reader key set: ``n_docs`` = (count, token) and per term id (count, token)."""

    n_docs: tuple[int, tuple[int, int]] | None = None
    terms: dict[int, tuple[int, tuple[int, int]]] = field(default_factory=dict)


class ReaderFrequencies:
    """Exact reader document frequencies between writes, for one index owner (see the module notes).

    ``counter(keys, count)`` returns the ``count(term_id | None) -> int`` callable that
    :func:`~memwarden.projections.vector_index.reader_weighted` expects, answering from the cache and
    falling back to ``count`` (the engine's exact count under ``acl`` holding one of ``keys``: ``None`` for
    the points, a term id for those of them holding it). ``written`` and ``reset`` are called by the owner
    on writes. ``hits`` and ``misses`` count lookups (for benchmarks)."""

    def __init__(self) -> None:
        self._term_gen = array("q", bytes(8 * SLOTS))
        self._key_gen = array("q", bytes(8 * SLOTS))
        self._epoch = 0
        self._sets: OrderedDict[tuple[str, ...], _KeySet] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def written(self, points: Iterable[tuple[Sequence[str], Iterable[int]]]) -> None:
        """Record upserted (or replaced) points, each as ``(access keys, term ids)``: the terms' counts and
        ``N`` of every key set holding one of the keys are stale from now on. Pass a replaced point's
        old terms and keys as another entry."""
        term_gen, key_gen = self._term_gen, self._key_gen
        for keys, terms in points:
            for t in terms:
                term_gen[t & _MASK] += 1
            for k in keys:
                key_gen[hash(k) & _MASK] += 1

    def reset(self) -> None:
        """Every cached count is stale (a write whose terms or keys are not known one by one)."""
        self._epoch += 1

    def counter(self, keys: Sequence[str], count: Callable[[int | None], int]) -> Callable[[int | None], int]:
        """``count`` with the counts of key set ``keys`` kept between calls while no write makes them
        stale. ``keys`` is the reader's access-key tuple (order matters only for the cache's identity)."""
        ident = tuple(keys)
        entry = self._sets.get(ident)
        if entry is None:
            entry = self._sets[ident] = _KeySet()
            if len(self._sets) > MAX_READERS:
                self._sets.popitem(last=False)
        else:
            self._sets.move_to_end(ident)
        key_slots = [hash(k) & _MASK for k in ident]

        def cached(term: int | None) -> int:
            if term is None:
                token = (self._epoch, sum(self._key_gen[s] for s in key_slots))
                if entry.n_docs is not None and entry.n_docs[1] == token:
                    self.hits += 1
                    return entry.n_docs[0]
                self.misses += 1
                value = count(None)
                entry.n_docs = (value, token)
                return value
            token = (self._epoch, self._term_gen[term & _MASK])
            held = entry.terms.get(term)
            if held is not None and held[1] == token:
                self.hits += 1
                return held[0]
            self.misses += 1
            value = count(term)
            if len(entry.terms) >= MAX_TERMS:
                entry.terms.clear()
            entry.terms[term] = (value, token)
            return value

        return cached
