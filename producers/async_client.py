"""The asyncio client (issue 10 part 4): the calls of :class:`~memwarden.producers.client.MemwardenClient`
as coroutines, for agents written on asyncio.

``async with memwarden.connect_async("user:alice") as client: await client.record(...)``.

Each call runs the synchronous client's call in a worker thread (``asyncio.to_thread``): publishing
waits for the broker's acknowledgement and a recall for the read API, neither on the event loop.
Waiting for the gate's decision is done on the loop itself (a lookup in a thread every ``poll_s``
seconds, ``asyncio.sleep`` in between), so that a thousand tasks waiting for decisions hold no thread.
Refusals raise :class:`~memwarden.errors.Refused` with the gate's reason codes, exactly as the
synchronous client does; ``wait=False`` returns as soon as the broker acknowledged.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from types import TracebackType
from typing import Any

from memwarden.commands.readmodel.query import Recalled
from memwarden.errors import Refused, StackUnavailable
from memwarden.producers.building import Receipt, undecided_message
from memwarden.producers.client import MemwardenClient, connect
from memwarden.producers.governance import REFUSED, REFUSED_WRITE, DecidedReceipt
from memwarden.settings import Settings

#: Command ids per decisions lookup.
_CHUNK = 200


class AsyncMemwardenClient:
    """Coroutines over ``client`` (see the module doc). ``poll_s``: seconds between two decision
    lookups while waiting. Use as an async context manager, or call :meth:`close`."""

    def __init__(self, client: MemwardenClient, poll_s: float = 0.1) -> None:
        self.client = client
        self.poll_s = poll_s

    async def __aenter__(self) -> AsyncMemwardenClient:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        """Flush pending records and close the connections (in a thread: the flush may wait)."""
        await asyncio.to_thread(self.client.close)

    # -- writes -------------------------------------------------------------------------------------
    async def record(self, **kwargs: Any) -> Receipt:
        """:meth:`MemwardenClient.record`: a ``RecordMemory``, acknowledged by the broker (not waited for)."""
        return await asyncio.to_thread(lambda: self.client.record(**kwargs))

    async def record_many(self, items: Iterable[Mapping[str, Any]]) -> list[Receipt]:
        """:meth:`MemwardenClient.record_many`: validate all, then publish all (two round trips)."""
        batch = list(items)
        return await asyncio.to_thread(self.client.record_many, batch)

    async def supersede(self, memory_id: str, *, wait: bool = True, **kwargs: Any) -> DecidedReceipt:
        """:meth:`MemwardenClient.supersede`; raises ``Refused`` when rejected or quarantined."""
        receipt = await asyncio.to_thread(lambda: self.client.supersede(memory_id, wait=False, **kwargs))
        return await self._settled(receipt, wait, REFUSED_WRITE)

    async def forget(self, memory_id: str, *, wait: bool = True, **kwargs: Any) -> DecidedReceipt:
        """:meth:`MemwardenClient.forget`; raises ``Refused`` when rejected."""
        receipt = await asyncio.to_thread(lambda: self.client.forget(memory_id, wait=False, **kwargs))
        return await self._settled(receipt, wait, REFUSED)

    async def forget_subject(self, subject: str, *, wait: bool = True, **kwargs: Any) -> DecidedReceipt:
        """:meth:`MemwardenClient.forget_subject` (the right to erasure); raises ``Refused`` when rejected."""
        receipt = await asyncio.to_thread(lambda: self.client.forget_subject(subject, wait=False, **kwargs))
        return await self._settled(receipt, wait, REFUSED)

    async def forget_matching(self, *, wait: bool = True, **kwargs: Any) -> DecidedReceipt:
        """:meth:`MemwardenClient.forget_matching`; raises ``Refused`` when rejected."""
        receipt = await asyncio.to_thread(lambda: self.client.forget_matching(wait=False, **kwargs))
        return await self._settled(receipt, wait, REFUSED)

    async def grant_access(self, grantee: str, *, wait: bool = True, **kwargs: Any) -> DecidedReceipt:
        """:meth:`MemwardenClient.grant_access`; raises ``Refused`` when rejected."""
        receipt = await asyncio.to_thread(lambda: self.client.grant_access(grantee, wait=False, **kwargs))
        return await self._settled(receipt, wait, REFUSED)

    async def revoke_access(self, grant_id: str, *, wait: bool = True, **kwargs: Any) -> DecidedReceipt:
        """:meth:`MemwardenClient.revoke_access`; raises ``Refused`` when rejected."""
        receipt = await asyncio.to_thread(lambda: self.client.revoke_access(grant_id, wait=False, **kwargs))
        return await self._settled(receipt, wait, REFUSED)

    # -- reads --------------------------------------------------------------------------------------
    async def recall(self, principal: str, query: str, **kwargs: Any) -> Recalled:
        """:meth:`MemwardenClient.recall` (filtered inside the search, audited)."""
        return await asyncio.to_thread(lambda: self.client.recall(principal, query, **kwargs))

    async def history(self, principal: str, memory_id: str, **kwargs: Any) -> dict[str, Any] | None:
        """:meth:`MemwardenClient.history`: every version ``principal`` may read, or ``None``."""
        return await asyncio.to_thread(lambda: self.client.history(principal, memory_id, **kwargs))

    async def decision(self, command_id: str) -> dict[str, Any] | None:
        """The gate's decision of ``command_id`` so far, or ``None`` (does not wait)."""
        return await asyncio.to_thread(self.client.decision, command_id)

    async def decided(self, command_ids: Sequence[str], timeout_s: float = 60.0) -> dict[str, dict[str, Any]]:
        """Wait (on the loop) until the gate decided every command id; ``command_id -> decision``.
        Raises ``StackUnavailable`` after ``timeout_s`` seconds or when the read API does not answer."""
        wanted = list(dict.fromkeys(command_ids))
        found: dict[str, dict[str, Any]] = {}
        deadline = time.monotonic() + timeout_s
        while True:
            missing = [cid for cid in wanted if cid not in found]
            for i in range(0, len(missing), _CHUNK):
                found.update(await asyncio.to_thread(self.client.decisions_now, missing[i:i + _CHUNK]))
            if len(found) >= len(wanted):
                return found
            if time.monotonic() > deadline:
                raise StackUnavailable(undecided_message([c for c in wanted if c not in found], timeout_s))
            await asyncio.sleep(self.poll_s)

    async def decisions(self, command_ids: Sequence[str], timeout_s: float = 60.0) -> dict[str, str]:
        """:meth:`decided`, outcomes only."""
        return {cid: d["outcome"] for cid, d in (await self.decided(command_ids, timeout_s)).items()}

    async def _settled(self, receipt: DecidedReceipt, wait: bool, refused: frozenset[str]) -> DecidedReceipt:
        """As the synchronous client's ``_settled``, waiting on the loop."""
        if not wait:
            return receipt
        decision = (await self.decided([receipt.command_id], self.client.decision_timeout_s))[receipt.command_id]
        if decision["outcome"] in refused:
            raise Refused.of(decision, receipt.command_id)
        return replace(receipt, decision=decision)


def connect_async(*principals: str, settings: Settings | None = None, poll_s: float = 0.1) -> AsyncMemwardenClient:
    """:func:`~memwarden.producers.client.connect` as an :class:`AsyncMemwardenClient` (the signing
    keys of ``principals`` from the local keystore). Raises ``ValidationError`` (field ``principals``)
    when a principal has no key file here."""
    return AsyncMemwardenClient(connect(*principals, settings=settings), poll_s)


__all__ = ["AsyncMemwardenClient", "connect_async"]
