"""The projector agent: consumes the events topic in batches, decodes and decrypts them once, and
hands them to the profile projector (Postgres) and the embedding projector (the vector index). It
publishes no shred (every one was published by the gate's decision), only the erasure receipts once
every store has confirmed a forget (:mod:`memwarden.processors.receipts`). Wiring only."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

import faust

from memwarden.bootstrap import Container
from memwarden.processors.gate_agent import BATCH, WITHIN_S, position_of
from memwarden.processors.receipts import ErasureReceipts
from memwarden.processors.resilience import Health, close_quietly, retry_batch
from memwarden.projections.events_in import EventIn, RawEvent, decode_events
from memwarden.projections.index_projector import EmbeddingProjector
from memwarden.projections.profile_projector import ProfileProjector
from memwarden.projections.warm_vectors import WarmVectors


def add_projector_agent(app: faust.App, container: Container, events: faust.TopicT,
                        lock: asyncio.Lock | None = None, receipts: ErasureReceipts | None = None,
                        health: Health | None = None, warm: WarmVectors | None = None) -> None:
    """Register the ``projector`` agent on ``app`` over the ``events`` topic; each batch is applied
    under ``lock`` (a reconciliation holds it to pause the projectors), then ``receipts`` settles
    the erasure receipts of the forgets it applied. A batch a lost database connection interrupts is
    applied again from its start after reconnecting (each projector drops what it already applied).
    ``warm``: vectors the pre-embedder computed ahead (:mod:`memwarden.processors.pre_embed`)."""
    pause = lock or asyncio.Lock()
    s = container.settings

    @app.agent(events, name="projector")
    async def projector(stream: Any) -> None:
        async def open_projectors() -> tuple[ProfileProjector, EmbeddingProjector]:
            return (ProfileProjector(await container.pg(), s.topic("events")),
                    EmbeddingProjector(container.embedder(), container.index(), await container.pg(),
                                       s.topic("events"), f"index:{container.index_label}", warm=warm))

        current: list[ProfileProjector | EmbeddingProjector] = list(await open_projectors())

        async def reconnect() -> None:
            for projector in current:
                await close_quietly(projector.connection)
            current[:] = await open_projectors()
            if receipts is not None:
                await receipts.reset()

        async def step(decoded: list[EventIn]) -> None:
            profile, vectors = current
            await profile.apply(decoded)
            await vectors.apply(decoded)
            if receipts is not None:
                await receipts.after(decoded)

        if health is not None:
            health.running("projector")
        async for batch in stream.take_events(BATCH, within=WITHIN_S):
            decoded = await decode_events(container.codec, container.keyring(),
                                          [RawEvent(e.message.value, position_of(e)) for e in batch])
            async with pause:
                await retry_batch("projector", partial(step, decoded), reconnect, health)
