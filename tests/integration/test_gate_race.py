"""Two gate workers holding one partition for a moment (a rebalance in progress, issue 11 part 3),
against the real broker and PostgreSQL: the worker whose batch was decided meanwhile by the other one
stores nothing of its own and re-sends the stored decision byte for byte — one decision per command,
never two with different contents."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memwarden.bootstrap import Container
from memwarden.commands.ledger import Position
from memwarden.processors import gate_processor
from memwarden.processors.gate_io import Inbound
from memwarden.processors.gate_processor import GateProcessor
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings
from memwarden.stores.pg import connect
from tests.integration.conftest import read_topic

pytestmark = pytest.mark.integration


def test_a_batch_raced_by_another_worker_resends_the_stored_decision(namespace: Settings,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    with MemwardenClient(namespace) as client:
        sent = [client.record(principal="user:nobody", subject="user:nobody", text=f"unsigned note {i}", sign=False)
                for i in range(3)]
    msgs = [m for m in read_topic(namespace, "commands") if m.value() is not None]
    items = [Inbound(m.key(), m.value(), Position(m.topic(), m.partition(), m.offset())) for m in msgs]
    assert len(items) == len(sent)
    real = gate_processor.load_batch
    calls = {"n": 0}

    async def stale_once(*args: Any, **kwargs: Any) -> Any:
        loaded = await real(*args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 1:  # worker B loaded its priors before worker A stored its decisions
            loaded.priors.clear()
        return loaded

    async def scenario() -> tuple[list[Any], list[Any]]:
        container = Container(namespace)
        try:
            def processor(conn: Any) -> GateProcessor:
                return GateProcessor(container.codec, container.keyring(), conn, container.limits,
                                     container.trust_anchor, container.digest_key)

            a, b = processor(await container.pg()), processor(await container.pg())
            now = datetime.now(UTC)
            first = await a.handle(items, now)
            monkeypatch.setattr(gate_processor, "load_batch", stale_once)
            second = await b.handle(items, now + timedelta(seconds=1))  # its own decision would differ
            return first, second
        finally:
            container.close()

    first, second = asyncio.run(scenario())
    assert calls["n"] == 2  # decided, raced, decided again from the stored state
    assert [(r.topic, r.key, r.value) for r in second] == [(r.topic, r.key, r.value) for r in first]
    with connect(namespace) as conn:
        rows = conn.execute("SELECT count(*) FROM gate_decisions").fetchone()
    assert rows is not None and rows[0] == len(sent)
