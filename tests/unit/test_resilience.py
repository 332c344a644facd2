"""What an agent tells ``/ready`` (:class:`memwarden.processors.resilience.Health`) through
:func:`~memwarden.processors.resilience.retry_batch`: running, retrying a database outage, or crashed.
A gate agent that died on an error no retry mends was reported ``running`` for about a minute (newcomer
trial, twentieth session): readiness must never say a dead agent runs."""

from __future__ import annotations

import asyncio
import time

import psycopg
import pytest

from memwarden.processors.resilience import Backoff, Health, retry_batch

FAST = Backoff(first_s=0.0, max_s=0.0, give_up_s=60.0)


async def _nothing() -> None:
    return None


def test_a_database_outage_is_retried_and_the_agent_is_running_again() -> None:
    health, calls = Health(), {"n": 0}

    async def step() -> str:
        calls["n"] += 1
        if calls["n"] == 1:
            raise psycopg.OperationalError("connection lost")
        assert health.agents["gate"]["state"] == "retrying" and not health.ready
        return "done"

    before = time.time()
    assert asyncio.run(retry_batch("gate", step, _nothing, health, FAST)) == "done"
    assert health.agents["gate"]["state"] == "running" and health.ready
    assert before <= health.agents["gate"]["last_progress_at"] <= time.time()  # what the liveness probe reads


def test_any_other_error_marks_the_agent_crashed_and_propagates() -> None:
    health = Health()
    health.running("gate")

    async def step() -> None:
        raise ValueError("a fault no retry mends")

    with pytest.raises(ValueError):
        asyncio.run(retry_batch("gate", step, _nothing, health, FAST))
    assert health.agents["gate"]["state"] == "crashed" and "ValueError" in health.agents["gate"]["reason"]
    assert not health.ready


def test_giving_up_on_the_database_marks_the_agent_crashed() -> None:
    health = Health()

    async def step() -> None:
        raise psycopg.OperationalError("still down")

    with pytest.raises(psycopg.OperationalError):
        asyncio.run(retry_batch("projector", step, _nothing, health, Backoff(0.0, 0.0, give_up_s=-1.0)))
    assert health.agents["projector"]["state"] == "crashed" and not health.ready
