"""The supervisor's liveness probe (:mod:`memwarden.ops.liveness`): a worker whose gate decides nothing
while commands wait and the database and broker answer is stalled; an outage, a slow gate that still
completes batches, a quiet one, a crashed or retrying agent, or a worker without the gate is not."""

from __future__ import annotations

from typing import Any

import pytest

from memwarden.ops.liveness import StallWatch, stall_reason

NOW = 1_000_000.0
LIMIT = 300.0


def body(*, database: Any = True, broker: Any = True, state: str | None = "running", last: float | None = NOW - 900,
         oldest: float | None = 600.0, agent: str = "gate") -> dict[str, Any]:
    gate: dict[str, Any] = {"state": state}
    if last is not None:
        gate["last_progress_at"] = last
    agents = {agent: gate, "projector": {"state": "running", "last_progress_at": NOW}} if state else {}
    return {"ready": False, "database": database, "broker": broker, "agents": agents, "oldest_undecided_s": oldest,
            "lag": {"gate": 40}}


def test_a_gate_with_commands_waiting_and_no_batch_for_the_limit_is_stalled() -> None:
    reason = stall_reason(body(), NOW, LIMIT)
    assert reason is not None and "600 s" in reason and "900 s ago" in reason


def test_a_gate_that_never_reported_a_batch_is_judged_by_the_wait_alone() -> None:
    reason = stall_reason(body(last=None), NOW, LIMIT)
    assert reason is not None and "no batch since it started" in reason


@pytest.mark.parametrize(("changes", "why"), [
    ({"database": "connection refused"}, "the database is down: the agents retry on their own"),
    ({"broker": "timed out"}, "the broker is down"),
    ({"database": None}, "the database was not checked"),
    ({"state": "retrying"}, "the gate retries an outage"),
    ({"state": "crashed"}, "a crashed agent ends the process anyway"),
    ({"state": None}, "no gate agent reported"),
    ({"agent": "projector-only"}, "a worker without the gate role"),
    ({"oldest": None}, "nothing waits"),
    ({"oldest": 299.0}, "the oldest command waited less than the limit"),
    ({"oldest": 300.0}, "exactly the limit is not past it"),
    ({"last": NOW - 10}, "the gate completed a batch 10 s ago: slow, not stalled"),
    ({"last": NOW - 300}, "its last batch exactly the limit ago"),
])
def test_not_stalled(changes: dict[str, Any], why: str) -> None:
    assert stall_reason(body(**changes), NOW, LIMIT) is None, why


@pytest.mark.parametrize("limit", [0.0, -1.0])
def test_a_limit_of_zero_turns_the_check_off(limit: float) -> None:
    assert stall_reason(body(oldest=1e9, last=0.0), NOW, limit) is None


@pytest.mark.parametrize("odd", [{}, {"agents": None}, {"agents": {"gate": "running"}}, {"agents": {"gate": {}}},
                                 {"database": True, "broker": True, "agents": {"gate": {"state": "running"}},
                                  "oldest_undecided_s": "600"}])
def test_a_body_that_is_not_a_ready_answer_is_never_stalled(odd: dict[str, Any]) -> None:
    assert stall_reason(odd, NOW, LIMIT) is None


def test_a_stall_counts_only_once_it_held_on_every_probe_for_the_confirmation_time() -> None:
    watch = StallWatch(confirm_s=60.0)
    assert watch.observe("stalled", 0.0) is None  # just seen (e.g. the broker back a moment ago)
    assert watch.observe("stalled", 30.0) is None
    assert watch.observe(None, 45.0) is None  # the gate took a batch: start over
    assert watch.observe("stalled", 50.0) is None
    assert watch.observe("stalled", 100.0) is None
    acted = watch.observe("stalled", 110.0)
    assert acted is not None and acted.startswith("stalled") and "60 s" in acted
