"""Vectors embedded ahead of the gate's decision (issue 11 part 1: ingest at the embedding limit), in
memory only.

The embedding projector embeds a memory when its ``MemoryRecorded`` event arrives, i.e. after the
gate decided the command: embedding, the one costly step, then waits for the gate, and the gate's
latency adds to every batch. The pre-embedder (:mod:`memwarden.processors.pre_embed`) reads the
commands topic as commands arrive, embeds the texts of memory writes while the gate decides them and
leaves the vectors here; the projector takes a vector from here when its point id and its text match
(SHA-256 of the text, so a vector is never used for another text), and embeds itself otherwise.

Nothing here reaches a disk: plaintext and vectors stay in the worker's memory, like the texts the
projector decrypts, and a vector nobody takes (a command the gate refused, a batch replayed
elsewhere) is dropped when the ring is full (``capacity`` vectors, oldest first). Thread-safe: the
pre-embedder fills it from its own thread.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence


def text_digest(text: str) -> bytes:
    """SHA-256 of ``text`` (UTF-8): what binds a warm vector to the text it was computed from."""
    return hashlib.sha256(text.encode("utf-8")).digest()


class WarmVectors:
    """Point id -> (text digest, vector), at most ``capacity`` entries; point ids being embedded are
    *pending* (:meth:`claim`) until :meth:`put` or :meth:`abandon`, and :meth:`take` may wait for them."""

    def __init__(self, capacity: int = 20_000) -> None:
        self.capacity = capacity
        self._vectors: OrderedDict[str, tuple[bytes, list[float]]] = OrderedDict()
        self._pending: set[str] = set()
        self._done: OrderedDict[str, None] = OrderedDict()
        self._cond = threading.Condition()
        self.hits = 0
        self.misses = 0

    def claim(self, point_ids: Sequence[str]) -> list[str]:
        """The ``point_ids`` nobody has embedded or is embedding (the projector may have been first),
        now marked pending: the caller embeds exactly these and then calls :meth:`put` or
        :meth:`abandon`."""
        with self._cond:
            fresh = [p for p in dict.fromkeys(point_ids)
                     if p not in self._pending and p not in self._vectors and p not in self._done]
            self._pending.update(fresh)
            return fresh

    def embedded_elsewhere(self, point_ids: Sequence[str]) -> None:
        """The projector embedded ``point_ids`` itself: the pre-embedder need not (bounded memory)."""
        with self._cond:
            for pid in point_ids:
                self._done[pid] = None
            while len(self._done) > self.capacity:
                self._done.popitem(last=False)

    def put(self, items: Sequence[tuple[str, str, Sequence[float]]]) -> None:
        """Keep ``(point_id, text, vector)`` items (no longer pending), dropping the oldest past capacity."""
        with self._cond:
            for pid, text, vector in items:
                self._vectors[pid] = (text_digest(text), [float(x) for x in vector])
                self._vectors.move_to_end(pid)
                self._pending.discard(pid)
            while len(self._vectors) > self.capacity:
                self._vectors.popitem(last=False)
            self._cond.notify_all()

    def abandon(self, point_ids: Sequence[str]) -> None:
        """``point_ids`` will not be embedded here after all (an error): nobody should wait for them."""
        with self._cond:
            self._pending.difference_update(point_ids)
            self._cond.notify_all()

    def take(self, items: Sequence[tuple[str, str]], wait_s: float = 0.0) -> dict[str, list[float]]:
        """The vectors of ``(point_id, text)`` items held for that very text, removed from the ring;
        waits up to ``wait_s`` seconds for items still pending. Missing ones are simply absent."""
        deadline = time.monotonic() + wait_s
        out: dict[str, list[float]] = {}
        with self._cond:
            while True:
                waiting = [pid for pid, _ in items if pid in self._pending and pid not in self._vectors]
                left = deadline - time.monotonic()
                if not waiting or left <= 0:
                    break
                self._cond.wait(left)
            for pid, text in items:
                held = self._vectors.pop(pid, None)
                if held is not None and held[0] == text_digest(text):
                    out[pid] = held[1]
            self.hits += len(out)
            self.misses += len(items) - len(out)
        return out

    def __len__(self) -> int:
        with self._cond:
            return len(self._vectors)
