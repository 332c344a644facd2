"""Reconciliation against the real broker, Postgres and index (issue 9, SSGM Eq. 7): each fault kind
injected straight into the projections is found by kind and repaired from the ledger, a second run
finds nothing, the state comes back to its digests before the faults, and every run is appended to
the ledger as a ``ReconciliationRun``."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from memwarden.bootstrap import Container, namespace_digests
from memwarden.evals.faults import KINDS, inject
from memwarden.ops.progress import wait_caught_up
from memwarden.ops.worker_process import WorkerProcess
from memwarden.processors.reconciler import reconcile
from memwarden.producers.client import MemwardenClient
from memwarden.read_api.local import publish_now
from memwarden.settings import Settings
from tests.integration.conftest import decisions, enroll_ids, read_topic

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: What a fault of each kind looks like to the reconciler (row kinds and point kinds it reports).
EXPECTED = {
    "lost_write": {"lost_write", "lost_point"},
    "stale_payload": {"stale_payload"},
    "missed_delete": {"missed_delete", "extra_point"},
    "resurrected": {"resurrected", "extra_point"},
    "corrupted_interval": {"corrupted_interval", "stale_payload"},
}


@pytest.fixture(scope="module")
def settled(namespace: Settings, client: MemwardenClient) -> Iterator[Settings]:
    """A namespace with a few memories, one superseded and one forgotten, its worker stopped."""
    w = WorkerProcess(namespace).start()
    try:
        who = f"user:{uuid.uuid4().hex[:8]}"
        enroll_ids(client, namespace, who)
        got = [client.record(principal=who, subject=who, text=t) for t in
               ("likes jazz", "works in Lyon", "has a cat named Tom", "badge 4471", "runs on Sundays")]
        client.decisions([r.command_id for r in got])
        later = [client.supersede(got[1].memory_id, principal=who, subject=who, text="works in Paris", wait=False),
                 client.forget(got[3].memory_id, principal=who, subject=who, wait=False)]
        client.decisions([r.command_id for r in later])
        wait_caught_up(namespace, alive=w.alive)
    finally:
        w.stop()
    yield namespace


def _run(s: Settings, **kw: Any) -> dict[str, Any]:
    c = Container(s)
    try:
        return asyncio.run(reconcile(c, publish=lambda r: asyncio.to_thread(publish_now, s, r), **kw))
    finally:
        c.close()


def _inject(s: Settings, kind: str) -> None:
    c = Container(s)

    async def go() -> None:
        fault = await inject(kind, await c.pg(), c.index(), random.Random(7))
        assert fault is not None, kind

    try:
        asyncio.run(go())
    finally:
        c.close()


@pytest.mark.parametrize("kind", KINDS)
def test_each_fault_kind_is_found_and_repaired_from_the_ledger(settled: Settings, kind: str) -> None:
    before = namespace_digests(settled)
    assert _run(settled)["diverged"] == {}
    _inject(settled, kind)
    run = _run(settled)
    assert set(run["diverged"]) == EXPECTED[kind] and run["repaired"] >= 1 and run["drift"] > 0
    again = _run(settled)
    assert again["diverged"] == {} and again["drift"] == 0.0
    assert namespace_digests(settled) == before


def test_a_measuring_run_repairs_nothing_and_every_run_is_on_the_ledger(settled: Settings) -> None:
    _inject(settled, "lost_write")
    measured = _run(settled, repair=False)
    assert measured["repaired"] == 0 and _run(settled, repair=False)["diverged"] == measured["diverged"]
    assert _run(settled)["repaired"] >= 1
    from memwarden.schemas.codec import default_codec

    runs = [default_codec().decode(m.value())[1] for m in read_topic(settled, "events")
            if m.key() == b"reconciliation"]
    assert len(runs) >= 3 and all(r["namespace"] == settled.topic_prefix for r in runs)
    assert decisions(settled)  # the ledger still holds every decision: a reconciliation never touches it
