"""``memwarden recall`` against the real broker, worker and database (newcomer trial, twenty-fifth session): with
the namespace's worker running it failed with the embedded engine's own lock error ("Can't init WAL ...
WouldBlock"), and a recall that found nothing printed nothing at all, not even ``[]``."""

from __future__ import annotations

import json
import uuid

import pytest

from memwarden.keystore import key_path, load_or_create_signer
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings
from tests.integration.conftest import poll, run_cli, said

pytestmark = pytest.mark.integration


def test_recall_goes_through_the_running_worker_and_says_when_nothing_matches(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient) -> None:
    noor, empty_handed = f"user:noor-{uuid.uuid4().hex[:8]}", f"user:new-{uuid.uuid4().hex[:8]}"
    try:
        for pid in (noor, empty_handed):  # registered here: their keys in the key folder, as a user's would be
            r = run_cli(namespace, "principal", "register", pid)
            assert r.exit_code == 0, r.output
        client.add_signer(load_or_create_signer(key_path(namespace.data_dir, noor), noor))
        text = "Noor keeps her spare bike lights in the hallway drawer"
        kept = client.record(principal=noor, subject=noor, text=text)
        assert client.decisions([kept.command_id])[kept.command_id] == "ACCEPTED"
        poll(lambda: client.recall(noor, "bike lights"), what="the memory is readable")
        found = run_cli(namespace, "recall", noor, "where are the bike lights?")
        assert found.exit_code == 0 and kept.memory_id in found.output and text in found.output, found.output
        as_json = run_cli(namespace, "recall", noor, "bike lights", "--json")
        assert as_json.exit_code == 0 and [m["memory_id"] for m in json.loads(as_json.output)] == [kept.memory_id]
        nothing = run_cli(namespace, "recall", empty_handed, "bike lights")
        assert nothing.exit_code == 0 and f"no memory {empty_handed} may read" in said(nothing), nothing.output
        empty = run_cli(namespace, "recall", empty_handed, "bike lights", "--json")
        assert empty.exit_code == 0 and json.loads(empty.output) == [], empty.output
        stranger = run_cli(namespace, "recall", "user:nobody-here", "bike lights")
        assert stranger.exit_code == 1 and "no signing key" in said(stranger), stranger.output
    finally:
        for pid in (noor, empty_handed):
            key_path(namespace.data_dir, pid).unlink(missing_ok=True)
