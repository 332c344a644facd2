"""Batching of memory uses into ``MemoryUsed`` events (issue 4 part 4): a use of current memory
resets its freshness clock (SSGM Eq. 3, "time since last valid use"). Pure: no clock, no I/O."""

from __future__ import annotations

from typing import NamedTuple

from memwarden.commands.readmodel.checks import epoch_ms
from memwarden.errors import ValidationError


class Usage(NamedTuple):
    """One use of a memory: its id and when it was returned by a read (epoch ms)."""

    memory_id: str
    used_at_ms: int


class UsageBatcher:
    """Accumulates memory uses for the batched ``MemoryUsed`` event (issue 4 part 4). Pure: no clock,
    no I/O; the caller passes ``now_ms`` and publishes what it gets back.

    A batch is due when it holds ``max_items`` distinct memory ids or when ``max_wait_ms`` have passed
    since its first use was added. Only the latest use per memory id is kept (uses may arrive out of
    order). Batches list memories in the order they were first added. Not thread-safe: one owner.
    Raises ``ValidationError`` for ``max_items < 1``, ``max_wait_ms < 0``, an empty memory id or a
    non-integer time."""

    def __init__(self, max_items: int = 256, max_wait_ms: int = 1_000) -> None:
        if isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 1:
            raise ValidationError("max_items", f"must be an integer >= 1, got {max_items!r}")
        if isinstance(max_wait_ms, bool) or not isinstance(max_wait_ms, int) or max_wait_ms < 0:
            raise ValidationError("max_wait_ms", f"must be an integer >= 0, got {max_wait_ms!r}")
        self.max_items = max_items
        self.max_wait_ms = max_wait_ms
        self._uses: dict[str, int] = {}
        self._first_ms: int | None = None

    def __len__(self) -> int:
        return len(self._uses)

    @property
    def due_at_ms(self) -> int | None:
        """When the pending batch becomes due by time (epoch ms), ``None`` when nothing is pending."""
        return None if self._first_ms is None else self._first_ms + self.max_wait_ms

    def add(self, memory_id: str, used_at_ms: int, now_ms: int) -> tuple[Usage, ...] | None:
        """Record one use; returns the batch (and starts a new one) when it is due, else ``None``."""
        if not isinstance(memory_id, str) or not memory_id.strip():
            raise ValidationError("memory_id", f"must be a non-empty string, got {memory_id!r}")
        epoch_ms("used_at_ms", used_at_ms)
        epoch_ms("now_ms", now_ms)
        if self._first_ms is None:
            self._first_ms = now_ms
        prior = self._uses.get(memory_id)
        self._uses[memory_id] = used_at_ms if prior is None else max(prior, used_at_ms)
        return self.poll(now_ms)

    def add_many(self, memory_ids: list[str] | tuple[str, ...], used_at_ms: int,
                 now_ms: int) -> list[tuple[Usage, ...]]:
        """Record that one read returned ``memory_ids`` at ``used_at_ms``; returns every batch that
        became due (several when one read returns more than ``max_items`` memories)."""
        out = [b for m in memory_ids if (b := self.add(m, used_at_ms, now_ms)) is not None]
        return out

    def poll(self, now_ms: int) -> tuple[Usage, ...] | None:
        """The pending batch if it is due at ``now_ms`` (size or age), else ``None``."""
        epoch_ms("now_ms", now_ms)
        if self._first_ms is None:
            return None
        if len(self._uses) >= self.max_items or now_ms - self._first_ms >= self.max_wait_ms:
            return self.flush()
        return None

    def flush(self) -> tuple[Usage, ...]:
        """Everything pending, due or not (on shutdown); empty when nothing is pending."""
        batch = tuple(Usage(m, t) for m, t in self._uses.items())
        self._uses = {}
        self._first_ms = None
        return batch
