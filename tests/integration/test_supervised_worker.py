"""``memwarden stack up --worker`` runs the worker under ``memwarden worker --supervise`` (issue 13
part 2): a worker killed with SIGKILL is started again by its supervisor without anyone's action and
decides what was published meanwhile; stopping the supervisor stops the worker and restarts nothing."""

from __future__ import annotations

import os
import signal
import time
import uuid

import httpx
import pytest

from memwarden.ops import pidfiles, stack
from memwarden.ops.liveness import ready_probe, stall_reason
from memwarden.ops.worker_process import WorkerProcess, worker_health
from memwarden.processors.run import worker_name
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings
from tests.integration.conftest import enroll_ids, poll

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_a_killed_worker_is_restarted_by_its_supervisor(namespace: Settings) -> None:
    s = namespace.model_copy(update={"worker_port": pidfiles.free_port()})
    line = stack.start_supervised_worker(s)
    assert "supervised" in line
    supervisor = pidfiles.read_pidfile(pidfiles.pidfile_path(s, "supervisor-" + worker_name(s, ("gate", "projector"))
                                                             .removeprefix("worker-")))
    worker_file = pidfiles.pidfile_path(s, worker_name(s, ("gate", "projector")))
    try:
        first = poll(lambda: pidfiles.read_pidfile(worker_file), timeout_s=60, what="the worker's pid file")
        assert supervisor is not None and first != supervisor
        who = f"user:s{uuid.uuid4().hex[:6]}"
        with MemwardenClient(s) as client:
            enroll_ids(client, s, who)
            os.kill(first, signal.SIGKILL)
            sent = [client.record(principal=who, subject=who, text=f"written while the worker was dead {i}")
                    for i in range(5)]
            second = poll(lambda: (lambda p: p if p not in (None, first) else None)(pidfiles.read_pidfile(worker_file)),
                          timeout_s=90, what="a new worker started by the supervisor")
            poll(lambda: worker_health(s) is not None or None, timeout_s=120, what="the new worker answers")
            outcomes = client.decisions([r.command_id for r in sent], timeout_s=120)
            assert set(outcomes.values()) == {"ACCEPTED"} and second != first
            assert httpx.get(f"{s.worker_url}/ready", timeout=20).status_code == 200
        listed = stack.status(s)
        assert any(v.get("pid") == supervisor for v in listed.values())  # stack status shows the supervisor
    finally:
        pidfiles.terminate([p for p in (supervisor,) if p is not None], 30)
    time.sleep(1.0)
    assert not pidfiles.is_alive(second)  # stopped with its supervisor, and not restarted
    assert pidfiles.read_pidfile(worker_file) is None


def test_the_liveness_probe_reads_the_real_ready_answer(namespace: Settings, worker: WorkerProcess) -> None:
    """The supervisor's probe (``memwarden.ops.liveness``) against a real worker: a healthy one is not
    stalled, and the fields it judges by are those ``/ready`` gives (the gate's ``last_progress_at``):
    the same answer with a command waiting for an hour and no batch since would be."""
    assert ready_probe(namespace.worker_url, 300.0)() is None
    body = httpx.get(f"{namespace.worker_url}/ready", timeout=20).json()
    gate = body["agents"]["gate"]
    assert gate["state"] == "running" and abs(gate["last_progress_at"] - time.time()) < 3600
    assert stall_reason(body, time.time(), 300.0) is None
    later = {**body, "oldest_undecided_s": 3600.0}
    assert stall_reason(later, time.time() + 3600.0, 300.0) is not None
    assert ready_probe("http://127.0.0.1:9", 300.0)() is None  # nobody answers: not judged


def test_stack_up_api_leaves_the_rest_api_reachable_until_stack_down(namespace: Settings,
                                                                   worker: WorkerProcess) -> None:
    port = pidfiles.free_port()
    line = stack.start_api(namespace, port=port)
    assert f"http://127.0.0.1:{port}" in line
    api = pidfiles.pidfile_path(namespace, stack.api_name(namespace))
    pid = pidfiles.read_pidfile(api)
    try:
        health = httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=10)
        assert health.status_code == 200 and health.json()["namespace"] == namespace.topic_prefix
        assert httpx.get(f"http://127.0.0.1:{port}/v1/recall", timeout=10).status_code in (401, 405)
        assert "already answers" in stack.start_api(namespace, port=port)  # idempotent
        listed = stack.status(namespace)[api.stem]
        assert listed["running"] and listed["ready"] is True and listed["pid"] == pid
    finally:
        pidfiles.terminate([p for p in (pid,) if p is not None], 20)  # what `stack down` does to it
    assert not pidfiles.is_alive(pid)
