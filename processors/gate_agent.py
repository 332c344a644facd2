"""The gate agent: consumes the commands topic (the ledger) in batches, lets the
:class:`~memwarden.processors.gate_processor.GateProcessor` decide, publishes what it returns, then
records the next offsets (lag reports read them). Wiring only."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any

import faust

from memwarden.bootstrap import Container
from memwarden.commands.ledger import Outbound, Position
from memwarden.processors.gate_io import Inbound
from memwarden.processors.gate_processor import GateProcessor
from memwarden.processors.resilience import Health, close_quietly, retry_batch
from memwarden.stores.offsets import next_offsets, save_offsets

#: Consumer name of the gate in ``projection_offsets``.
GATE = "gate"
#: Largest batch, and how long a batch waits to fill (seconds).
BATCH = 256
WITHIN_S = 0.05


def position_of(event: Any) -> Position:
    """The ledger position of a Faust event."""
    msg = event.message
    return Position(msg.topic, msg.partition, msg.offset)


def add_gate_agent(app: faust.App, container: Container, commands: faust.TopicT,
                   publish: Callable[[Sequence[Outbound]], Awaitable[None]],
                   lock: asyncio.Lock | None = None, health: Health | None = None) -> None:
    """Register the ``gate`` agent on ``app`` over the ``commands`` topic; each batch is decided,
    published and tracked under ``lock`` (an in-place switch holds it to pause the gate). A batch a
    lost database connection interrupts is retried from its start after reconnecting
    (:func:`~memwarden.processors.resilience.retry_batch`); ``health`` hears of it."""
    s = container.settings
    pause = lock or asyncio.Lock()

    @app.agent(commands, name="gate")
    async def gate(stream: Any) -> None:
        detector = container.instruction_detector() if s.gate_mode == "full" else None
        processor = GateProcessor(container.codec, container.keyring(), await container.pg(), container.limits,
                                  container.trust_anchor, container.digest_key, s.gate_mode, detector)
        conns = {"tracking": await container.pg()}

        async def reconnect() -> None:
            await close_quietly(processor.connection)
            await close_quietly(conns["tracking"])
            processor.connection = await container.pg()
            conns["tracking"] = await container.pg()

        async def step(items: list[Inbound]) -> None:
            await publish(await processor.handle(items))
            async with conns["tracking"].transaction(), conns["tracking"].cursor() as cur:
                await save_offsets(cur, GATE, s.topic("commands"), next_offsets(items))

        if health is not None:
            health.running("gate")
        async for batch in stream.take_events(BATCH, within=WITHIN_S):
            items = [Inbound(e.message.key, e.message.value, position_of(e)) for e in batch]
            async with pause:
                await retry_batch("gate", partial(step, items), reconnect, health)
