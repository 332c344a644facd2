"""A projection worker killed mid-batch and restarted loses no row and doubles none (S1/S2 kind)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import httpx
import pytest

from memwarden.ops.progress import wait_caught_up
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings
from tests.integration.conftest import drop, enroll_ids, make_namespace, poll, rows

pytestmark = [pytest.mark.integration, pytest.mark.slow]
N = 600


class _Stopper:
    """Stops a worker on exit even when an assertion fails first (no process left behind)."""

    def __init__(self, worker: WorkerProcess) -> None:
        self.worker = worker

    def close(self) -> None:
        self.worker.stop()


@pytest.fixture()
def own_namespace(stack: Settings) -> Iterator[Settings]:
    s = make_namespace(stack)
    yield s
    drop(s)


def test_worker_killed_mid_batch_and_restarted_loses_and_doubles_nothing(own_namespace: Settings) -> None:
    s = own_namespace
    worker = WorkerProcess(s).start()
    with MemwardenClient(s) as client, contextlib.closing(_Stopper(worker)):
        writers = [f"user:p{i}" for i in range(7)]
        enroll_ids(client, s, *writers)  # 7 ACCEPTED registrations before any memory
        receipts = client.record_many(
            [{"principal": writers[i % 7], "subject": writers[i % 7], "text": f"memory {i} on topic {i % 13}"}
             for i in range(N)])
        count = "SELECT count(*) FROM memory_versions"
        poll(lambda: 0 < rows(s, count)[0][0] < N, timeout_s=120, every_s=0.02, what="a first batch projected")
        worker.kill()  # SIGKILL mid-run: no clean shutdown, no offset commit
        assert rows(s, count)[0][0] < N, "the kill must land before the projection finished"
        with WorkerProcess(s):
            wait_caught_up(s, timeout_s=300)
            assert rows(s, count) == [(N,)]
            assert rows(s, "SELECT count(DISTINCT command_id), max(version) FROM memory_versions") == [(N, 1)]
            assert httpx.get(f"{s.worker_url}/index/count", timeout=10).json()["count"] == N
            ids = {r[0] for r in rows(s, "SELECT command_id::text FROM memory_versions")}
            assert ids == {r.command_id for r in receipts}
            assert rows(s, "SELECT outcome, count(*) FROM gate_decisions GROUP BY outcome") == [
                ("ACCEPTED", N + len(writers))]
