"""More than one gate worker (issue 11 part 3), against the real broker and PostgreSQL: two gate-only
workers share the commands partitions through their consumer group; under a steady load from subjects
spread over every partition one is SIGKILLed (the survivor takes its partitions over once the session
times out) and a third one joins (the group hands it partitions back). Afterwards every acknowledged
command has exactly one decision on the decisions topic — one decision id, and every copy of it
byte-identical (a redelivered command re-sends the stored decision, it is never decided again) — none
is missing, and every memory the decisions leave live is recallable."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memwarden.evals.gate_scaling import (
    SpreadLoad,
    gate_assignment,
    ledger_decisions,
    live_memories,
    spread_subjects,
    stable_assignment,
    takeover_s,
    verdict,
)
from memwarden.ops.pidfiles import free_port
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings
from tests.integration.conftest import enroll_ids, poll

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: The broker's smallest group session timeout (``group.min.session.timeout.ms``): a killed member
#: keeps its partitions this long.
SESSION_S = 6.0


def start_gate(settings: Settings, log_path: Path) -> WorkerProcess:
    """A gate-only worker with its own ``/health`` port, once it answers there."""
    own = settings.model_copy(update={"health_port": free_port()})
    return WorkerProcess(own, ("gate",), log_path=log_path).start()


@pytest.fixture
def scaled(namespace: Settings, tmp_path: Path) -> Iterator[tuple[Settings, dict[str, WorkerProcess], Path]]:
    """The namespace with a short session timeout, one projector-only worker and two gate-only
    workers; every worker is stopped afterwards."""
    s = namespace.model_copy(update={"session_timeout_s": SESSION_S})
    workers: dict[str, WorkerProcess] = {}
    try:
        workers["projector"] = WorkerProcess(s, ("projector",), log_path=tmp_path / "projector.log").start()
        workers["gate1"] = start_gate(s, tmp_path / "gate1.log")
        workers["gate2"] = start_gate(s, tmp_path / "gate2.log")
        yield s, workers, tmp_path
    finally:
        for w in workers.values():
            w.stop()


def test_two_gate_workers_a_kill_and_a_join_under_load_decide_every_command_exactly_once(
        scaled: tuple[Settings, dict[str, WorkerProcess], Path]) -> None:
    s, workers, logs = scaled
    subjects = spread_subjects(s.partitions, per_partition=2)
    with MemwardenClient(s) as client, MemwardenClient(s) as checker:
        signers = enroll_ids(client, s, *subjects)
        for signer in signers.values():
            checker.add_signer(signer)
        two = stable_assignment(s, members=2)  # both gate workers hold partitions: scaling, not one idle
        load = SpreadLoad(client, subjects, rate_hz=25.0)
        load.start()
        try:
            time.sleep(8.0)
            workers["gate1"].kill()
            killed_at = time.time()
            alone = stable_assignment(s, members=1, timeout_s=SESSION_S * 6)
            (survivor,) = alone
            assert survivor in two  # the surviving member took every partition over
            orphaned = [p for m, ps in two.items() if m != survivor for p in ps]
            time.sleep(3.0)
            workers["gate3"] = start_gate(s, logs / "gate3.log")
            joined = stable_assignment(s, members=2)
            assert survivor in joined and len(set(joined) - set(two)) == 1  # the newcomer got partitions
            time.sleep(6.0)
        finally:
            load.stopping.set()
            load.join(60)
        acks = load.acks
        assert not load.errors, load.errors[:3]
        assert sum(1 for a in acks if a.at > killed_at) >= 100  # the kill and the join happened under load
        assert {a.partition for a in acks} == set(range(s.partitions))
        checker.decided([a.command_id for a in acks], timeout_s=180)
        assert workers["gate2"].alive() and workers["gate3"].alive()
        assert gate_assignment(s) == joined  # no rebalance since: the figures above describe the end state

        decided = ledger_decisions(s)
        found = verdict(acks, decided)
        assert found["lost"] == [] and found["duplicated"] == [] and found["diverged"] == [], found
        assert takeover_s(decided, orphaned, killed_at) is not None

        live = live_memories(acks, decided)
        assert len(live) >= 50

        def unrecallable() -> list[str]:
            return [mid for mid, ack in live.items()
                    if mid not in {m.memory_id for m in checker.recall(load.owners[mid], ack.marker, k=3,
                                                                       mode="lexical")}]

        poll(lambda: not unrecallable(), timeout_s=120, every_s=1.0, what="every live memory recallable")
