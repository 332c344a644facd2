"""``memwarden review approve | reject`` against the real broker, worker and database: a refusal is no success
(a non-reviewer's approval, a second review of a reviewed command: the gate's reason code and message, exit 1),
an accepted review exits 0."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from memwarden.keystore import key_path
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings
from tests.integration.conftest import enroll_ids, run_cli, said

pytestmark = pytest.mark.integration


@pytest.fixture
def cli_principals(namespace: Settings, worker: WorkerProcess) -> Iterator[tuple[str, str]]:
    """A user and a reviewer registered with ``memwarden principal register`` (their keys in the key folder)."""
    user, reviewer = f"user:cli-{uuid.uuid4().hex[:8]}", f"reviewer:cli-{uuid.uuid4().hex[:8]}"
    try:
        for pid, kind in ((user, "USER"), (reviewer, "REVIEWER")):
            r = run_cli(namespace, "principal", "register", pid, "--kind", kind)
            assert r.exit_code == 0 and f"{pid}: ACCEPTED" in said(r), r.output
        yield user, reviewer
    finally:
        for pid in (user, reviewer):
            key_path(namespace.data_dir, pid).unlink(missing_ok=True)


def test_a_refused_review_names_the_reason_and_exits_1(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient,
        cli_principals: tuple[str, str]) -> None:
    user, reviewer = cli_principals
    bob, scribe = f"user:{uuid.uuid4().hex[:8]}", f"agent:{uuid.uuid4().hex[:8]}"
    enroll_ids(client, namespace, bob, scribe)
    held = client.record(principal=scribe, subject=bob, text="Bob's locker code at the gym is 2291")
    assert client.decisions([held.command_id])[held.command_id] == "QUARANTINED"

    not_reviewer = run_cli(namespace, "review", "approve", held.command_id, "--by", user)
    assert not_reviewer.exit_code == 1, not_reviewer.output
    assert "REJECTED" in said(not_reviewer) and "NOT_A_REVIEWER" in said(not_reviewer), not_reviewer.output

    reject = run_cli(namespace, "review", "reject", held.command_id, "--by", reviewer, "--note", "not from bob")
    assert reject.exit_code == 0 and f"reject {held.command_id}: ACCEPTED" in said(reject), reject.output

    again = run_cli(namespace, "review", "reject", held.command_id, "--by", reviewer)
    assert again.exit_code == 1, again.output
    assert "ALREADY_REVIEWED" in said(again), again.output
