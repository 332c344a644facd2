"""Erasure receipts, wired: after each projector batch, a receipt (:mod:`memwarden.projections.erasure`)
for every forget it applied, appended to the events topic once every store confirmed; a forget whose
stores have not all confirmed yet is asked again after the next batch and every few seconds."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from memwarden.bootstrap import Container
from memwarden.commands.ledger import Outbound
from memwarden.projections.erasure import receipt
from memwarden.projections.events_in import EventIn

log = logging.getLogger("memwarden.receipts")
#: Seconds between two attempts for forgets still waiting for a store.
RETRY_S = 2.0


class ErasureReceipts:
    """Receipts of the forgets the projectors applied; ``publish`` appends them to the ledger."""

    def __init__(self, container: Container, publish: Callable[[Sequence[Outbound]], Awaitable[None]]) -> None:
        self._c = container
        self._publish = publish
        self._pending: dict[tuple[str, str], Mapping[str, Any]] = {}
        self._conn: Any = None

    async def after(self, applied: Sequence[EventIn]) -> None:
        """Note the forgets of a batch the projectors just applied, and settle what can be."""
        for e in applied:
            if e.name == "MemoryForgotten":
                self._pending[(e.record["command_id"], e.record["memory_id"])] = e.record
        await self.settle()

    async def settle(self) -> None:
        """Append the receipt of every pending forget whose stores all confirm."""
        if not self._pending:
            return
        if self._conn is None:
            self._conn = await self._c.pg()
        s = self._c.settings
        out = []
        for pending, record in list(self._pending.items()):
            found = await receipt(self._conn, self._c.index(), self._c.keyring(), s.topic("keys"), s.topic_prefix,
                                  record)
            if found is None:
                continue
            del self._pending[pending]
            out.append(Outbound("events", record["memory_id"].encode(),
                                self._c.codec.encode("ErasureReceipted", found)))
        if out:
            await self._publish(out)
            log.info("erasure receipts appended: %d", len(out))

    @property
    def pending(self) -> int:
        """Forgets still waiting for a store to confirm."""
        return len(self._pending)


__all__ = ["RETRY_S", "ErasureReceipts"]
