"""A command the pure decision raises on, against the real broker and PostgreSQL: the gate refuses it
(``UNDECIDABLE``, its bytes on the dead-letter topic with the reason), stores that decision like any other
and decides the rest of the batch. A poison command never stops a partition's gate (field cases of a
newcomer trial: a NUL character and an ended grant each crashed the gate on every redelivery)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from memwarden.bootstrap import Container
from memwarden.commands.ledger import Position
from memwarden.processors import gate_processor
from memwarden.processors.gate_io import Inbound
from memwarden.processors.gate_processor import UNDECIDABLE, GateProcessor
from memwarden.producers.client import MemwardenClient
from memwarden.schemas.codec import default_codec
from memwarden.settings import Settings
from memwarden.stores.pg import connect
from tests.integration.conftest import read_topic

pytestmark = pytest.mark.integration


def test_a_command_the_decision_raises_on_is_refused_and_the_batch_goes_on(namespace: Settings,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    with MemwardenClient(namespace) as client:
        sent = [client.record(principal="user:nobody", subject="user:nobody", text=text, sign=False)
                for text in ("before the fault", "the faulty one", "after the fault")]
    msgs = [m for m in read_topic(namespace, "commands") if m.value() is not None]
    items = [Inbound(m.key(), m.value(), Position(m.topic(), m.partition(), m.offset())) for m in msgs]
    assert len(items) == len(sent)
    real = gate_processor.decide

    def faulty(command: Any, *args: Any, **kwargs: Any) -> Any:  # any unforeseen input's fault in a pure decision
        if command.envelope.command_id == sent[1].command_id:
            raise RuntimeError("a fault no check foresaw")
        return real(command, *args, **kwargs)

    monkeypatch.setattr(gate_processor, "decide", faulty)

    async def scenario() -> tuple[list[Any], list[Any]]:
        container = Container(namespace)
        try:
            gate = GateProcessor(container.codec, container.keyring(), await container.pg(), container.limits,
                                 container.trust_anchor, container.digest_key)
            first = await gate.handle(items, datetime.now(UTC))
            again = await gate.handle(items, datetime.now(UTC))  # a redelivery: the stored decisions
            return first, again
        finally:
            container.close()

    first, again = asyncio.run(scenario())
    codec = default_codec()
    decided = {d["command_id"]: d for d in (codec.decode(r.value)[1] for r in first if r.topic == "decisions")}
    assert set(decided) == {r.command_id for r in sent}
    faulty = decided[sent[1].command_id]
    assert faulty["outcome"] == "REJECTED" and [r["code"] for r in faulty["reasons"]] == [UNDECIDABLE]
    message = faulty["reasons"][0]["message"]
    assert "RuntimeError" in message and "foresaw" not in message  # an error's message may quote the content
    assert all(decided[r.command_id]["reasons"][0]["code"] == "UNSIGNED" for r in (sent[0], sent[2]))  # decided
    letters = [r for r in first if r.topic == "deadletter"]
    assert len(letters) == 1 and letters[0].value == items[1].value
    assert dict(letters[0].headers)["reason_code"] == UNDECIDABLE.encode()
    assert [(r.topic, r.value) for r in again if r.topic == "decisions"] == [
        (r.topic, r.value) for r in first if r.topic == "decisions"]
    with connect(namespace) as conn:
        stored = conn.execute("SELECT command_id::text, outcome FROM gate_decisions").fetchall()
    assert dict(stored)[sent[1].command_id] == "REJECTED" and len(stored) == len(sent)
