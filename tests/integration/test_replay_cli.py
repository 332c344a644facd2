"""``memwarden replay`` and ``memwarden state digest`` against the real broker, database and index: ``--until``
takes ``commands:P:-1`` (nothing from P, the only cut of an empty partition) and says what to write for a
partition left out; ``--verify`` is refused with a point-in-time or in-place replay (usage error, exit 2) and
exits 1 when the digests differ; while the namespace's worker holds its embedded index, the digests fail in
one line naming the cause and the remedy."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from memwarden.bootstrap import drop_projections
from memwarden.ops.progress import wait_caught_up
from memwarden.ops.worker_process import WorkerProcess
from memwarden.processors.replay import target_settings
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings
from memwarden.stores.pg import connect
from tests.integration.conftest import drop, enroll_ids, make_namespace, poll, rows, run_cli, said

pytestmark = pytest.mark.integration


def _into(source: Settings, made: list[Settings]) -> str:
    """A fresh target namespace name for a replay of ``source``, dropped at the end of the test."""
    name = f"{source.topic_prefix}.r{uuid.uuid4().hex[:6]}"
    made.append(target_settings(source, name))
    return name


@pytest.fixture
def targets() -> Iterator[list[Settings]]:
    made: list[Settings] = []
    yield made
    for t in made:
        drop_projections(t)


def test_until_takes_minus_one_for_a_partition_with_nothing_to_replay(
        namespace: Settings, targets: list[Settings]) -> None:
    """``namespace`` has nothing written: every commands partition is empty (log end 0)."""
    parts = range(namespace.partitions)
    nothing = ",".join(f"commands:{p}:-1" for p in parts)
    ok = run_cli(namespace, "replay", "--into", _into(namespace, targets), "--until", nothing)
    assert ok.exit_code == 0 and "replayed 0 commands" in said(ok), ok.output

    zero = run_cli(namespace, "replay", "--into", _into(namespace, targets),
                   "--until", ",".join(f"commands:{p}:0" for p in parts))
    assert zero.exit_code == 1, zero.output
    assert "partition 0 is empty" in said(zero) and "write commands:0:-1" in said(zero), zero.output

    left_out = run_cli(namespace, "replay", "--into", _into(namespace, targets), "--until", "commands:0:-1")
    assert left_out.exit_code == 1, left_out.output
    assert "name every partition of commands: add commands:1:-1 (empty)" in said(left_out), left_out.output
    assert "Traceback" not in left_out.output


def test_a_future_until_time_is_refused(namespace: Settings, targets: list[Settings]) -> None:
    """Newcomer trial, twenty-fifth session: ``--until-time 2030-...`` replayed the whole ledger and marked the
    target point-in-time, and a later replay of the whole ledger into it was refused with the cut as raw JSON."""
    future = run_cli(namespace, "replay", "--into", _into(namespace, targets),
                     "--until-time", "2999-01-01T00:00:00+00:00")
    assert future.exit_code == 1 and "is in the future" in said(future) and "Traceback" not in future.output


@pytest.mark.parametrize("other", [("--until-time", "2026-12-01T12:00:00+00:00"), ("--until", "commands:0:-1"),
                                   ("--in-place",)])
def test_verify_is_refused_where_no_digest_can_equal_the_live_one(namespace: Settings, other: tuple[str, ...]) -> None:
    refused = run_cli(namespace, "replay", "--verify", *other)
    assert refused.exit_code == 2, refused.output
    assert "'--verify'" in said(refused) and f"'{other[0]}'" in said(refused), refused.output


@pytest.fixture
def live(stack: Settings) -> Iterator[tuple[Settings, WorkerProcess, str]]:
    """A namespace with one recorded memory, its worker running (the test may stop it); the memory id."""
    s = make_namespace(stack)
    w = WorkerProcess(s).start()
    try:
        with MemwardenClient(s) as client:
            alice = f"user:a{uuid.uuid4().hex[:6]}"
            enroll_ids(client, s, alice)
            r = client.record(principal=alice, subject=alice, text="Alice keeps her bicycle in the courtyard")
            assert client.decisions([r.command_id], timeout_s=120)[r.command_id] == "ACCEPTED"
        wait_caught_up(s, alive=w.alive)
        poll(lambda: rows(s, "SELECT 1 FROM memory_versions WHERE memory_id = %s", (r.memory_id,)),
             what="profile row of the memory")
        yield s, w, r.memory_id
    finally:
        w.stop()
        drop(s)


def test_digests_name_the_worker_holding_the_index(live: tuple[Settings, WorkerProcess, str],
                                                  targets: list[Settings]) -> None:
    s = live[0]
    held = run_cli(s, "state", "digest")
    assert held.exit_code == 1, held.output
    assert f"the embedded index of {s.topic_prefix} is held open by its running worker (pid" in said(held)
    assert "stop the worker" in said(held) and "WouldBlock" not in held.output, held.output

    into = _into(s, targets)
    verify_held = run_cli(s, "replay", "--into", into, "--verify")
    assert verify_held.exit_code == 1, verify_held.output
    assert f"the replay into {into} is done: stop the worker" in said(verify_held), verify_held.output


def test_verify_exits_1_when_the_digests_differ(live: tuple[Settings, WorkerProcess, str],
                                                targets: list[Settings]) -> None:
    s, w, memory_id = live
    w.stop()
    equal = run_cli(s, "replay", "--into", _into(s, targets), "--verify")
    assert equal.exit_code == 0 and "digests equal" in said(equal), equal.output

    with connect(s) as conn:  # drift: the live profile lost a row
        conn.execute("DELETE FROM memory_versions WHERE memory_id = %s", (memory_id,))
        conn.commit()
    differ = run_cli(s, "replay", "--into", _into(s, targets), "--verify")
    assert differ.exit_code == 1 and "digests differ" in said(differ), differ.output
