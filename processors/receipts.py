"""Erasure receipts, wired: after each projector batch, a receipt (:mod:`memwarden.projections.erasure`)
for every forget it applied, appended to the events topic once every store confirmed; a forget whose
stores have not all confirmed yet is asked again after the next batch and every few seconds."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from memwarden.bootstrap import Container
from memwarden.commands.ledger import Outbound
from memwarden.processors.resilience import close_quietly
from memwarden.projections.erasure import receipt
from memwarden.projections.events_in import EventIn
from memwarden.stores.profile_rows import pending_forgets

log = logging.getLogger("memwarden.receipts")
#: Seconds between two attempts for forgets still waiting for a store.
RETRY_S = 2.0


class ErasureReceipts:
    """Receipts of the forgets the projectors applied; ``publish`` appends them to the ledger.

    What is owed is the ``erasure_pending`` projection (a ``MemoryForgotten`` adds a row, its
    ``ErasureReceipted`` removes it), so a worker restarted between a forget and its receipt still
    appends it, and a ``MemoryForgotten`` appended again after its receipt (a decision re-sent after a
    kill) owes nothing. A receipt sent but not yet read back is not sent again by this process; one
    sent just before a crash may be appended twice (same command and memory; readers keep the first)."""

    def __init__(self, container: Container, publish: Callable[[Sequence[Outbound]], Awaitable[None]]) -> None:
        self._c = container
        self._publish = publish
        self._sent: set[tuple[str, str]] = set()
        self._owed = 0
        self._conn: Any = None

    async def after(self, applied: Sequence[EventIn]) -> None:
        """Settle what can be after a batch the projectors just applied (if it held a forget); a
        receipt read back is no longer remembered as sent (the projection holds it now)."""
        for e in applied:
            if e.name == "ErasureReceipted":
                self._sent.discard((e.record["command_id"], e.record["memory_id"]))
        if any(e.name == "MemoryForgotten" for e in applied):
            await self.settle()

    async def settle(self) -> None:
        """Append the receipt of every owed forget whose stores all confirm."""
        if self._conn is None:
            self._conn = await self._c.pg()
        try:
            pending = await pending_forgets(self._conn)
        except Exception:
            await self.reset()  # a lost connection: the next settle opens a new one
            raise
        owed = [r for r in pending if (r["command_id"], r["memory_id"]) not in self._sent]
        self._owed = len(owed)
        if not owed:
            return
        s = self._c.settings
        out = []
        for record in owed:
            found = await receipt(self._conn, self._c.index(), self._c.keyring(), s.topic("keys"), s.topic_prefix,
                                  record)
            if found is None:
                continue
            self._sent.add((record["command_id"], record["memory_id"]))
            out.append(Outbound("events", record["memory_id"].encode(),
                                self._c.codec.encode("ErasureReceipted", found)))
        if out:
            await self._publish(out)
            self._owed -= len(out)
            log.info("erasure receipts appended: %d", len(out))

    async def reset(self) -> None:
        """Drop the database connection (lost); the next settle opens a new one."""
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await close_quietly(conn)

    @property
    def pending(self) -> int:
        """Forgets still waiting for a store to confirm (as of the last settle)."""
        return self._owed


__all__ = ["RETRY_S", "ErasureReceipts"]
