"""Faults operators meet (issue 13), against the real broker and PostgreSQL: a PostgreSQL restart
under load leaves every command decided exactly once, every accepted memory recallable, and the
worker ready again without manual action; ``/ready`` is false while the database is down and a recall
then answers 503 with ``Retry-After`` (never a 500)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx
import pytest

from memwarden.errors import StackUnavailable
from memwarden.ops import stack
from memwarden.ops.postgres_server import running_pid
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.schemas.codec import default_codec
from memwarden.settings import Settings
from tests.integration.conftest import enroll_ids, poll, read_topic

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _stack_up(attempts: int = 1) -> None:
    """``memwarden stack up`` as an operator runs it, once: it waits itself for the backends a killed
    postmaster left behind."""
    cli = Path(sys.executable).with_name("memwarden")
    for _ in range(attempts):
        done = subprocess.run([str(cli), "stack", "up"], capture_output=True, timeout=120)
        if done.returncode == 0:
            return
        time.sleep(2.0)
    raise AssertionError(f"stack up failed: {done.stderr.decode()[-2000:]}")


def _decided_or_diagnosed(client: MemwardenClient, namespace: Settings, w: WorkerProcess, ids: list[str],
                          timeout_s: float) -> dict[str, str]:
    """``client.decisions``; when some stay undecided, fail with what tells why: the worker's ``/ready``
    (lag, oldest undecided, agents) and its log tail (a restart test that CI once saw time out)."""
    try:
        return client.decisions(ids, timeout_s=timeout_s)
    except StackUnavailable as exc:
        try:
            ready = httpx.get(f"{namespace.worker_url}/ready", timeout=10.0).text
        except httpx.HTTPError as why:
            ready = f"no answer: {why}"
        tail = w.log_path.read_text(errors="replace")[-6000:] if w.log_path.exists() else ""
        raise AssertionError(f"{exc}; worker alive: {w.alive()}; /ready: {ready}\nworker log tail:\n{tail}") from exc


def test_a_postgres_restart_under_load_loses_nothing_and_the_worker_recovers(namespace: Settings) -> None:
    who = f"user:f{uuid.uuid4().hex[:6]}"
    with MemwardenClient(namespace) as client, WorkerProcess(namespace) as w:
        enroll_ids(client, namespace, who)
        sent = [client.record(principal=who, subject=who, text=f"note {i} before the outage") for i in range(20)]
        client.decisions([r.command_id for r in sent], timeout_s=120)
        assert httpx.get(f"{namespace.worker_url}/ready").status_code == 200
        mine = {k: v for k, v in stack.status(namespace).items() if v.get("pid") == w.proc.pid}
        assert [v["ready"] for v in mine.values()] == [True]  # stack status shows the worker ready
        os.kill(running_pid(namespace) or 0, signal.SIGKILL)
        during = [client.record(principal=who, subject=who, text=f"note {i} during the outage") for i in range(20)]

        def not_ready() -> httpx.Response | None:
            answer = httpx.get(f"{namespace.worker_url}/ready")
            return answer if answer.status_code == 503 else None

        down = poll(not_ready, timeout_s=30, what="/ready false while the database is down")
        assert down.json()["database"] is not True and down.headers["retry-after"]
        recall = httpx.post(f"{namespace.worker_url}/recall", json={"principal": who, "query": "outage"})
        assert recall.status_code == 503 and recall.headers["retry-after"] and "Traceback" not in recall.text
        _stack_up()
        after = [client.record(principal=who, subject=who, text=f"note {i} after the outage") for i in range(5)]
        everything = sent + during + after
        outcomes = _decided_or_diagnosed(client, namespace, w, [r.command_id for r in everything], 180)
        assert set(outcomes.values()) == {"ACCEPTED"}
        poll(lambda: httpx.get(f"{namespace.worker_url}/ready").status_code == 200 or None, timeout_s=60,
             what="ready again")
        assert w.alive()
        time.sleep(1.0)
        found = {m.memory_id for q in ("before the outage", "during the outage", "after the outage")
                 for m in client.recall(who, q, k=50, mode="lexical")}
        assert {r.memory_id for r in everything} <= found
        gone = w.proc.pid
        w.kill()
        assert not [v for v in stack.status(namespace).values() if v.get("pid") == gone]  # dead: forgotten

    decided: Counter[str] = Counter()
    distinct: dict[str, set[str]] = {}
    for msg in read_topic(namespace, "decisions"):
        if msg.value() is not None:
            _, rec = default_codec().decode(msg.value())
            if rec["command_id"] in {r.command_id for r in everything}:
                decided[rec["command_id"]] += 1
                distinct.setdefault(rec["command_id"], set()).add(rec["decision_id"])
    assert set(decided) == {r.command_id for r in everything}  # none lost
    assert all(len(ids) == 1 for ids in distinct.values())  # one decision each (a re-send is the same record)


def test_a_broker_restart_under_load_loses_nothing_and_the_worker_recovers(namespace: Settings) -> None:
    from memwarden.ops import kafka_broker

    who = f"user:b{uuid.uuid4().hex[:6]}"
    with MemwardenClient(namespace) as client, WorkerProcess(namespace) as w:
        enroll_ids(client, namespace, who)
        sent = [client.record(principal=who, subject=who, text=f"entry {i} before the broker restart")
                for i in range(20)]
        client.decisions([r.command_id for r in sent], timeout_s=120)
        os.kill(kafka_broker.running_pid(namespace) or 0, signal.SIGKILL)
        down = poll(lambda: (lambda a: a if a.status_code == 503 else None)(
            httpx.get(f"{namespace.worker_url}/ready", timeout=10.0)), timeout_s=60, what="/ready false")
        assert down.json()["broker"] is not True
        _stack_up()
        after = [client.record(principal=who, subject=who, text=f"entry {i} after the broker restart")
                 for i in range(20)]
        everything = sent + after
        outcomes = _decided_or_diagnosed(client, namespace, w, [r.command_id for r in everything], 240)
        assert set(outcomes.values()) == {"ACCEPTED"}
        poll(lambda: httpx.get(f"{namespace.worker_url}/ready", timeout=10.0).status_code == 200 or None,
             timeout_s=120, what="ready again")
        assert w.alive()
        time.sleep(1.0)
        found = {m.memory_id for q in ("before the broker restart", "after the broker restart")
                 for m in client.recall(who, q, k=50, mode="lexical")}
        assert {r.memory_id for r in everything} <= found


def test_ready_reports_the_gate_backlog_and_the_age_of_the_oldest_undecided_command(namespace: Settings) -> None:
    who = f"user:r{uuid.uuid4().hex[:6]}"
    with MemwardenClient(namespace) as client:
        with WorkerProcess(namespace) as w:
            enroll_ids(client, namespace, who)
            answer = httpx.get(f"{namespace.worker_url}/ready", timeout=20.0).json()
            assert answer["ready"] and answer["lag"]["gate"] == 0 and answer["oldest_undecided_s"] is None
            w.stop()
        with WorkerProcess(namespace, roles=("projector",)):  # nobody decides: the backlog shows
            waiting = [client.record(principal=who, subject=who, text=f"waiting {i}") for i in range(3)]
            time.sleep(1.5)
            answer = httpx.get(f"{namespace.worker_url}/ready", timeout=20.0).json()
            assert answer["lag"]["gate"] >= len(waiting)
            assert answer["oldest_undecided_s"] is not None and answer["oldest_undecided_s"] >= 1.0
