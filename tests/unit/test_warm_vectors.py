"""The warm-vector ring of the pre-embedder (issue 11 part 1): a vector is used only for the very text
it was computed from, once; pending point ids are waited for; the ring stays bounded; what the
projector embedded itself is not embedded again."""

from __future__ import annotations

import threading
import time

from memwarden.projections.warm_vectors import WarmVectors


def test_a_vector_is_taken_once_and_only_for_its_own_text() -> None:
    warm = WarmVectors()
    assert warm.claim(["p1", "p2"]) == ["p1", "p2"]
    warm.put([("p1", "tea at noon", [0.1, 0.2]), ("p2", "coffee", [0.3, 0.4])])
    got = warm.take([("p1", "tea at noon"), ("p2", "coffee, edited"), ("p3", "never seen")])
    assert got == {"p1": [0.1, 0.2]}  # p2's text differs: its vector is not used
    assert warm.take([("p1", "tea at noon")]) == {}  # taken once
    assert (warm.hits, warm.misses) == (1, 3) and len(warm) == 0


def test_claim_skips_what_is_pending_held_or_embedded_elsewhere() -> None:
    warm = WarmVectors()
    assert warm.claim(["a", "b"]) == ["a", "b"]
    assert warm.claim(["a", "c", "c"]) == ["c"]
    warm.put([("a", "x", [1.0])])
    warm.embedded_elsewhere(["d"])
    assert warm.claim(["a", "d", "e"]) == ["e"]
    warm.abandon(["b"])
    assert warm.claim(["b"]) == ["b"]  # abandoned: free to claim again


def test_take_waits_for_a_pending_vector_and_gives_up_after_its_wait() -> None:
    warm = WarmVectors()
    warm.claim(["p"])
    threading.Timer(0.2, lambda: warm.put([("p", "late", [9.0])])).start()
    start = time.monotonic()
    assert warm.take([("p", "late")], wait_s=5.0) == {"p": [9.0]}
    assert time.monotonic() - start < 4.0
    warm.claim(["q"])
    start = time.monotonic()
    assert warm.take([("q", "never")], wait_s=0.2) == {}
    assert time.monotonic() - start >= 0.2


def test_the_ring_keeps_at_most_capacity_vectors_oldest_dropped() -> None:
    warm = WarmVectors(capacity=2)
    warm.claim(["1", "2", "3"])
    warm.put([("1", "a", [1.0]), ("2", "b", [2.0]), ("3", "c", [3.0])])
    assert len(warm) == 2 and warm.take([("1", "a")]) == {} and warm.take([("3", "c")]) == {"3": [3.0]}
