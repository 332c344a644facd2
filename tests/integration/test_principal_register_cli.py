"""``memwarden principal register`` against the real broker, worker and database: an accepted registration
exits 0, a refused one is no success (it names the gate's reason and exits 1, and keeps no key file it made for
the refused call), and nothing is published when the worker does not answer."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from memwarden.keystore import key_path
from memwarden.ops.pidfiles import free_port
from memwarden.ops.worker_process import WorkerProcess
from memwarden.settings import Settings
from tests.integration.conftest import run_cli, said


def _register(namespace: Settings, principal_id: str, worker_port: int | None = None) -> Any:
    return run_cli(namespace, "principal", "register", principal_id, worker_port=worker_port)


def _key(namespace: Settings, principal_id: str) -> Path:
    return key_path(namespace.data_dir, principal_id)


def test_a_second_registration_is_refused_with_its_reason_and_no_orphan_key(
        namespace: Settings, worker: WorkerProcess) -> None:
    principal = f"user:cli-{uuid.uuid4().hex[:8]}"
    path = _key(namespace, principal)
    try:
        first = _register(namespace, principal)
        assert first.exit_code == 0, first.output
        assert f"{principal}: ACCEPTED" in said(first) and path.exists()

        again = _register(namespace, principal)  # the same key file: the gate refuses a second registration
        assert again.exit_code == 1, again.output
        assert "REJECTED" in said(again) and "PRINCIPAL_EXISTS" in said(again)
        assert path.exists()  # the key it had before stays: it is the registered one

        path.unlink()  # a host without the key: the call makes one, and removes it when refused
        third = _register(namespace, principal)
        assert third.exit_code == 1 and "PRINCIPAL_EXISTS" in said(third), third.output
        assert not path.exists()
    finally:
        path.unlink(missing_ok=True)


def test_nothing_is_published_when_the_worker_does_not_answer(namespace: Settings, worker: WorkerProcess) -> None:
    principal = f"user:cli-{uuid.uuid4().hex[:8]}"
    path = _key(namespace, principal)
    try:
        down = _register(namespace, principal, worker_port=free_port())
        assert down.exit_code == 1 and "does not answer" in said(down), down.output
        assert not path.exists()

        # had the first call published, this one would be refused as PRINCIPAL_EXISTS
        up = _register(namespace, principal)
        assert up.exit_code == 0 and f"{principal}: ACCEPTED" in said(up), up.output
    finally:
        path.unlink(missing_ok=True)
