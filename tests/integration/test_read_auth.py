"""Authenticated reads end to end (real broker, Postgres and worker with MEMWARDEN_READ_AUTH=required):
a recall is served only when signed by a valid, unrevoked key of the principal it reads as."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from memwarden.commands.read_auth import sign_request
from memwarden.errors import ValidationError
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings
from tests.integration.conftest import drop, enroll_ids, make_namespace, poll

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def strict(stack: Settings) -> Iterator[Settings]:
    s = make_namespace(stack).model_copy(update={"read_auth": "required"})
    with WorkerProcess(s):
        yield s
    drop(s)


def test_only_signed_reads_by_the_principal_itself_are_served(strict: Settings) -> None:
    with MemwardenClient(strict) as client, MemwardenClient(strict) as stranger:
        signers = enroll_ids(client, strict, "user:ra-alice", "user:ra-bob")
        r = client.record(principal="user:ra-alice", subject="user:ra-alice", text="Alice keeps bees in her garden")
        found = poll(lambda: client.recall("user:ra-alice", "who keeps bees?"), what="signed recall")
        assert [m.memory_id for m in found] == [r.memory_id]

        with pytest.raises(ValidationError) as unsigned:  # a client without alice's key cannot read as alice
            stranger.recall("user:ra-alice", "who keeps bees?")
        # the refusal names what is missing: this client holds no key of alice's (it said "auth: READ_UNSIGNED")
        assert unsigned.value.field == "principal" and "no signing key held for user:ra-alice" in str(unsigned.value)
        raw = httpx.post(f"{strict.worker_url}/recall", json={"principal": "user:ra-alice", "query": "bees"},
                         timeout=10)
        assert raw.status_code == 401 and raw.json()["code"] == "READ_UNSIGNED"  # the worker's answer is unchanged

        body = {"principal": "user:ra-alice", "query": "who keeps bees?", "k": 5}
        as_bob = sign_request(body, signers["user:ra-bob"], int(time.time() * 1000))  # bob's key, alice's name
        resp = httpx.post(f"{strict.worker_url}/recall", json=as_bob, timeout=10)
        assert resp.status_code == 401 and resp.json()["code"] == "UNKNOWN_KEY"
        tampered = {**sign_request(body, signers["user:ra-alice"], int(time.time() * 1000)), "k": 50}
        resp = httpx.post(f"{strict.worker_url}/recall", json=tampered, timeout=10)
        assert resp.status_code == 401 and resp.json()["code"] == "BAD_SIGNATURE"
        fresh = sign_request(body, signers["user:ra-alice"], int(time.time() * 1000))
        assert httpx.post(f"{strict.worker_url}/recall", json=fresh, timeout=10).status_code == 200
        resp = httpx.post(f"{strict.worker_url}/recall", json=fresh, timeout=10)  # the same bytes again: a replay
        assert resp.status_code == 401 and resp.json()["code"] == "REPLAYED_REQUEST"
        stale = sign_request(body, signers["user:ra-alice"], int(time.time() * 1000) - 3_600_000)
        resp = httpx.post(f"{strict.worker_url}/recall", json=stale, timeout=10)
        assert resp.status_code == 401 and resp.json()["code"] == "STALE_REQUEST"

        revoke = client.revoke_key("user:ra-alice", signers["user:ra-alice"].key_id, by="user:ra-alice", wait=False)
        assert client.decisions([revoke.command_id])[revoke.command_id] == "ACCEPTED"
        with pytest.raises(ValidationError) as revoked:
            client.recall("user:ra-alice", "who keeps bees?")
        assert "KEY_REVOKED" in str(revoked.value)


@pytest.fixture(scope="module")
def restarted(stack: Settings) -> Iterator[Settings]:
    s = make_namespace(stack).model_copy(update={"read_auth": "required"})
    yield s
    drop(s)


def test_a_replay_after_a_restart_is_refused(restarted: Settings) -> None:
    """The replay window is shared through Postgres, not held by one process: a signed request served
    before the worker restarted is refused after it, while a fresh signing is served."""
    with MemwardenClient(restarted) as client:
        with WorkerProcess(restarted):
            signers = enroll_ids(client, restarted, "user:rr-alice")
            client.record(principal="user:rr-alice", subject="user:rr-alice", text="Alice keeps bees in her garden")
            poll(lambda: client.recall("user:rr-alice", "who keeps bees?"), what="signed recall")
            body = {"principal": "user:rr-alice", "query": "who keeps bees?", "k": 5}
            # signed half the skew ahead, so the restart has the whole window to happen in
            served = sign_request(body, signers["user:rr-alice"], int(time.time() * 1000) + 30_000)
            assert httpx.post(f"{restarted.worker_url}/recall", json=served, timeout=10).status_code == 200
        with WorkerProcess(restarted):
            resp = httpx.post(f"{restarted.worker_url}/recall", json=served, timeout=10)
            assert resp.status_code == 401 and resp.json()["code"] == "REPLAYED_REQUEST"
            fresh = sign_request(body, signers["user:rr-alice"], int(time.time() * 1000))
            assert httpx.post(f"{restarted.worker_url}/recall", json=fresh, timeout=10).status_code == 200
