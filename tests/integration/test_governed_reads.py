"""Governed reads end to end (issue 4; SSGM Eq. 5, Principle 3; field cases R1, R2, T1, T2) against the
real broker, the real database and a real worker: principals enrolled and grants issued through the
gate (signed commands), memories recorded through the pipeline, recall through the worker's
``/recall`` on every retrieval path (hybrid, dense, lexical). Covered: principal isolation (R1),
tenant isolation (R2), purpose limitation, role grants, revocation from the next read on, expiry at
read, supersession and valid time (T1, T2), ``known_at``, untrusted content, the read audit (ids
only; the CLI) and ``MemoryUsed`` (last use in the profile projection)."""

from __future__ import annotations

import functools
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from memwarden.commands.readmodel.query import RECALL_MODES, RecalledMemory, RecallMode
from memwarden.keystore import admin_signer
from memwarden.ops.audit import reads_of
from memwarden.ops.worker_process import WorkerProcess, settings_env
from memwarden.producers.client import MemwardenClient, Receipt
from memwarden.settings import Settings
from tests.integration.conftest import enroll_ids, poll, read_topic, rows

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def admin(namespace: Settings, client: MemwardenClient) -> str:
    """The root admin's principal id; the client signs for it."""
    signer = admin_signer(namespace)
    client.add_signer(signer)
    return signer.principal_id


def _id(kind: str) -> str:
    return f"{kind}:{uuid.uuid4().hex[:8]}"


def accepted(client: MemwardenClient, *receipts: Receipt) -> None:
    """Wait for the gate's decisions on ``receipts`` and assert every one is ACCEPTED."""
    outcomes = client.decisions([r.command_id for r in receipts])
    assert set(outcomes.values()) == {"ACCEPTED"}, outcomes


def projected(settings: Settings, *receipts: Receipt) -> None:
    """Wait until each receipt's version is in ``memory_versions`` and its point is in the index."""
    def stored(command_id: str) -> bool:
        return bool(rows(settings, "SELECT 1 FROM memory_versions WHERE command_id = %s", (command_id,)))

    def indexed(command_id: str) -> bool:
        count = httpx.get(f"{settings.worker_url}/index/count", params={"command_id": command_id}, timeout=10)
        return bool(count.json()["count"] == 1)

    for r in receipts:
        poll(functools.partial(stored, r.command_id), what=f"row of {r.command_id}")
        poll(functools.partial(indexed, r.command_id), what=f"point of {r.command_id}")


def texts(found: list[RecalledMemory]) -> list[str]:
    return [m.text for m in found]


def ids(found: list[RecalledMemory]) -> set[str]:
    return {m.memory_id for m in found}


# -- R1: principal isolation on every path -------------------------------------------------------------------


@dataclass(frozen=True)
class R1:
    alice: str
    bob: str
    alices: Receipt
    bobs: Receipt


@pytest.fixture(scope="module")
def r1(namespace: Settings, worker: WorkerProcess, client: MemwardenClient) -> R1:
    alice, bob = _id("user"), _id("user")
    enroll_ids(client, namespace, alice, bob)
    alices = client.record(principal=alice, subject=alice, text="colleague Sam likes apples")
    bobs = client.record(principal=bob, subject=bob, text="colleague Sam likes chess")
    accepted(client, alices, bobs)
    projected(namespace, alices, bobs)
    return R1(alice, bob, alices, bobs)


@pytest.mark.parametrize("mode", RECALL_MODES)
def test_r1_bob_gets_only_his_own_note_about_sam(client: MemwardenClient, r1: R1, mode: RecallMode) -> None:
    found = client.recall(r1.bob, "what does Sam like?", k=10, mode=mode)
    assert texts(found) == ["colleague Sam likes chess"]
    assert all(m.principal == r1.bob for m in found)
    theirs = client.recall(r1.alice, "what does Sam like?", k=10, mode=mode)
    assert texts(theirs) == ["colleague Sam likes apples"]
    for who in (r1.alice, r1.bob):  # not even for a query that is nearly the other note's text
        other = r1.bobs if who == r1.alice else r1.alices
        assert other.memory_id not in ids(client.recall(who, "Sam likes apples chess", k=50, mode=mode))


# -- R2: tenant isolation on every path ----------------------------------------------------------------------


@dataclass(frozen=True)
class R2:
    planner: str
    team_a: tuple[Receipt, ...]
    team_b: tuple[Receipt, ...]


@pytest.fixture(scope="module")
def r2(namespace: Settings, worker: WorkerProcess, client: MemwardenClient, admin: str) -> R2:
    writer_a, writer_b, planner = _id("user"), _id("user"), _id("agent")
    enroll_ids(client, namespace, writer_a, writer_b, planner)
    grants = [client.grant_access(writer_a, by=admin, rights=["READ", "WRITE"], scopes=["team:a"], wait=False),
              client.grant_access(writer_b, by=admin, rights=["READ", "WRITE"], scopes=["team:b"], wait=False),
              client.grant_access(planner, by=admin, rights=["READ"], scopes=["team:a"],
                                  relationship="project_member", wait=False)]
    accepted(client, *grants)
    team_a = tuple(client.record(principal=writer_a, subject=writer_a, text=t, scope="team:a") for t in (
        "Project Orion launch moves to March", "Project Orion uses the Lisbon data centre"))
    team_b = tuple(client.record(principal=writer_b, subject=writer_b, text=t, scope="team:b") for t in (
        "Project Orion budget is frozen until the audit", "Project Orion: team B owns the billing module"))
    accepted(client, *team_a, *team_b)
    projected(namespace, *team_a, *team_b)
    return R2(planner, team_a, team_b)


@pytest.mark.parametrize("mode", RECALL_MODES)
def test_r2_planner_with_a_team_a_grant_sees_nothing_of_team_b(
        client: MemwardenClient, r2: R2, mode: RecallMode) -> None:
    for query in ("Project Orion", "what is the Orion budget and who owns billing?"):
        found = client.recall(r2.planner, query, k=20, mode=mode)
        assert {m.scope for m in found} <= {"team:a"}, texts(found)
        assert not ids(found) & {r.memory_id for r in r2.team_b}
    everything = client.recall(r2.planner, "Project Orion", k=20, mode=mode)
    assert ids(everything) == {r.memory_id for r in r2.team_a}


# -- purpose limitation and role grants ----------------------------------------------------------------------


def test_a_grant_for_support_does_not_open_reads_for_marketing(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient) -> None:
    carol, dave = _id("user"), _id("user")
    enroll_ids(client, namespace, carol, dave)
    note = client.record(principal=carol, subject=carol, text="Carol's printer jams on the second page")
    grant = client.grant_access(dave, by=carol, rights=["READ"], scopes=["account:default"], subjects=[carol],
                                purposes=["support"], wait=False)
    accepted(client, note, grant)
    projected(namespace, note)
    for mode in RECALL_MODES:
        assert ids(client.recall(dave, "printer jams", purpose="support", mode=mode)) == {note.memory_id}
        assert client.recall(dave, "printer jams", purpose="marketing", mode=mode) == []


def test_a_role_grant_opens_reads_to_holders_of_the_role_only(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient) -> None:
    pat, doctor, visitor = _id("user"), _id("user"), _id("user")
    enroll_ids(client, namespace, pat)
    enroll_ids(client, namespace, doctor, roles=["clinician"])
    enroll_ids(client, namespace, visitor)
    note = client.record(principal=pat, subject=pat, text="Pat is allergic to penicillin")
    grant = client.grant_access("role:clinician", by=pat, rights=["READ"], scopes=["account:default"],
                                subjects=[pat], relationship="assigned_clinician", wait=False)
    accepted(client, note, grant)
    projected(namespace, note)
    for mode in RECALL_MODES:
        assert ids(client.recall(doctor, "penicillin allergy", mode=mode)) == {note.memory_id}
        assert client.recall(visitor, "penicillin allergy", mode=mode) == []


def test_revoke_access_holds_from_the_next_read(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient) -> None:
    eve, frank = _id("user"), _id("user")
    enroll_ids(client, namespace, eve, frank)
    note = client.record(principal=eve, subject=eve, text="Eve keeps the spare key under the blue pot")
    grant = client.grant_access(frank, by=eve, rights=["READ"], scopes=["account:default"], subjects=[eve], wait=False)
    accepted(client, note, grant)
    projected(namespace, note)
    assert ids(client.recall(frank, "spare key")) == {note.memory_id}
    revoke = client.revoke_access(grant.memory_id, by=eve, grantee=frank, reason="moved out", wait=False)
    accepted(client, revoke)
    for mode in RECALL_MODES:  # no waiting: the very next read
        assert client.recall(frank, "spare key", mode=mode) == []
    assert ids(client.recall(eve, "spare key")) == {note.memory_id}


def test_expiry_is_enforced_at_read_at_once(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient) -> None:
    gus = _id("user")
    enroll_ids(client, namespace, gus)
    expires = datetime.now(UTC) + timedelta(seconds=20)  # room for the projection on a loaded machine
    note = client.record(principal=gus, subject=gus, text="Gus is at gate 14 for the Oslo flight", expires_at=expires)
    accepted(client, note)
    projected(namespace, note)
    assert ids(client.recall(gus, "which gate is the flight?")) == {note.memory_id}
    wait_s = (expires - datetime.now(UTC)).total_seconds()
    assert wait_s > 0, "the note expired before it could be read once; the projection took too long"
    time.sleep(wait_s + 0.05)
    for mode in RECALL_MODES:  # no waiting for any projection: expiry is part of the read
        assert client.recall(gus, "which gate is the flight?", mode=mode) == []
    assert rows(namespace, "SELECT status FROM memory_versions WHERE memory_id = %s", (note.memory_id,)) == [
        ("active",)]  # kept in history, only not returned


# -- T1, T2: supersession and valid time ---------------------------------------------------------------------


def test_t1_old_and_new_are_never_both_current(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient) -> None:
    alice = _id("user")
    enroll_ids(client, namespace, alice)
    t1 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3)
    t2, t3 = t1 + timedelta(hours=1), t1 + timedelta(hours=2)
    tea = client.record(principal=alice, subject=alice, text="drinks green tea", observed_at=t1)
    accepted(client, tea)
    stopped = client.supersede(tea.memory_id, principal=alice, subject=alice, text="stopped drinking green tea",
                               observed_at=t2, wait=False)
    accepted(client, stopped)
    coffee = client.record(principal=alice, subject=alice, text="drinks coffee", observed_at=t3)
    accepted(client, coffee)
    projected(namespace, tea, stopped, coffee)
    query = "what does alice drink?"
    for mode in RECALL_MODES:
        now = texts(client.recall(alice, query, mode=mode))
        assert "drinks green tea" not in now and "drinks coffee" in now, (mode, now)
        then = texts(client.recall(alice, query, as_of=t1 + timedelta(minutes=30), mode=mode))
        assert then == ["drinks green tea"], (mode, then)
        between = texts(client.recall(alice, query, as_of=t2 + timedelta(minutes=30), mode=mode))
        assert between == ["stopped drinking green tea"], (mode, between)
    history = rows(namespace, "SELECT version, status, valid_from, valid_to FROM memory_versions WHERE memory_id = %s"
                              " ORDER BY version", (tea.memory_id,))
    assert history == [(1, "superseded", t1, t2), (2, "active", t2, None)]


def test_t2_lyon_then_oslo_two_versions_and_as_of_reads_history(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient) -> None:
    who = _id("user")
    enroll_ids(client, namespace, who)
    t1 = datetime.now(UTC).replace(microsecond=0) - timedelta(days=2)
    t2 = t1 + timedelta(days=1)
    lyon = client.record(principal=who, subject=who, text="lives in Lyon", observed_at=t1)
    accepted(client, lyon)
    oslo = client.supersede(lyon.memory_id, principal=who, subject=who, text="lives in Oslo", observed_at=t2,
                            wait=False)
    accepted(client, oslo)
    projected(namespace, lyon, oslo)
    for mode in RECALL_MODES:
        assert texts(client.recall(who, "where does the user live?", mode=mode)) == ["lives in Oslo"]
        half = t1 + timedelta(hours=12)
        assert texts(client.recall(who, "where does the user live?", as_of=half, mode=mode)) == ["lives in Lyon"]
        assert client.recall(who, "where does the user live?", as_of=t1 - timedelta(hours=1), mode=mode) == []
    versions = rows(namespace, "SELECT version, content_sealed IS NOT NULL, valid_from, valid_to FROM memory_versions"
                               " WHERE memory_id = %s ORDER BY version", (lyon.memory_id,))
    assert versions == [(1, True, t1, t2), (2, True, t2, None)]


def test_a_superseded_version_whose_own_validity_ended_earlier_takes_no_result_slot(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient) -> None:
    """The index keeps the earlier end of a superseded version (as the profile projection does); a
    later end in the index made it a candidate that SQL then dropped after ranking: an empty top-1."""
    hal = _id("user")
    enroll_ids(client, namespace, hal)
    t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=10)
    chess = client.record(principal=hal, subject=hal, text="Hal likes chess in Lyon", observed_at=t0)
    leave = client.record(principal=hal, subject=hal, text="Hal is on leave in Lyon", observed_at=t0 + timedelta(
        hours=5), effective_to=t0 + timedelta(hours=6))
    accepted(client, chess, leave)
    back = client.supersede(leave.memory_id, principal=hal, subject=hal, text="Hal is back at the office in Lyon",
                            observed_at=t0 + timedelta(hours=8), wait=False)
    accepted(client, back)
    projected(namespace, chess, leave, back)
    assert rows(namespace, "SELECT valid_to FROM memory_versions WHERE memory_id = %s AND version = 1",
                (leave.memory_id,)) == [(t0 + timedelta(hours=6),)]
    gap = t0 + timedelta(hours=7)  # the leave ended, the return not yet recorded as valid
    for mode in ("dense", "hybrid"):
        found = client.recall(hal, "Hal is on leave in Lyon", k=1, as_of=gap, mode=mode)
        assert texts(found) == ["Hal likes chess in Lyon"], mode


# -- known_at ----------------------------------------------------------------------------------------------------


def test_known_at_hides_versions_decided_later_and_shows_superseded_ones_as_then_current(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient) -> None:
    ivy = _id("user")
    enroll_ids(client, namespace, ivy)
    before = datetime.now(UTC)
    acme = client.record(principal=ivy, subject=ivy, text="Ivy works at Acme")
    accepted(client, acme)
    projected(namespace, acme)
    middle = datetime.now(UTC)
    globex = client.supersede(acme.memory_id, principal=ivy, subject=ivy, text="Ivy works at Globex", wait=False)
    accepted(client, globex)
    projected(namespace, globex)
    after = datetime.now(UTC)
    query = "where does Ivy work?"
    for mode in RECALL_MODES:
        assert client.recall(ivy, query, known_at=before, mode=mode) == []
        then = client.recall(ivy, query, known_at=middle, mode=mode)
        assert texts(then) == ["Ivy works at Acme"]
        # as the ledger knew it then: current, no close nobody knew of yet (newcomer trial, twentieth session:
        # status "superseded" and a valid_to known only after the supersede)
        assert (then[0].status, then[0].valid_to) == ("active", None), then[0]
        assert texts(client.recall(ivy, query, known_at=after, mode=mode)) == ["Ivy works at Globex"]
        assert texts(client.recall(ivy, query, mode=mode)) == ["Ivy works at Globex"]


# -- untrusted content ---------------------------------------------------------------------------------------------


def test_untrusted_content_comes_back_only_with_include_untrusted(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient) -> None:
    jo = _id("user")
    enroll_ids(client, namespace, jo)
    web = client.record(principal=jo, subject=jo, text="A web page says the museum opens at nine",
                        source_kind="WEB_CONTENT", source_uri="https://example.org/museum")
    said = client.record(principal=jo, subject=jo, text="Jo wants to visit the museum on Sunday")
    outcomes = client.decisions([web.command_id, said.command_id])
    assert outcomes == {web.command_id: "ACCEPTED_UNVERIFIED", said.command_id: "ACCEPTED"}
    projected(namespace, web, said)
    for mode in RECALL_MODES:
        plain = client.recall(jo, "when does the museum open?", mode=mode)
        assert ids(plain) == {said.memory_id}
        wide = client.recall(jo, "when does the museum open?", include_untrusted=True, mode=mode)
        assert ids(wide) == {web.memory_id, said.memory_id}
        assert next(m for m in wide if m.memory_id == web.memory_id).tags == ("untrusted",)


# -- read audit and MemoryUsed ------------------------------------------------------------------------------------


def test_every_recall_is_audited_with_ids_only_and_the_cli_lists_it(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient) -> None:
    kim = _id("user")
    enroll_ids(client, namespace, kim)
    secret = "Kim's locker combination is 3-1-4-1-5"
    note = client.record(principal=kim, subject=kim, text=secret)
    accepted(client, note)
    projected(namespace, note)
    start = datetime.now(UTC)
    query = "what is Kim's locker combination?"
    assert ids(client.recall(kim, query, purpose="support")) == {note.memory_id}
    end = datetime.now(UTC)
    reads = poll(lambda: reads_of(namespace, note.memory_id), what="audited read")
    assert len(reads) == 1
    (read,) = reads
    assert (read["principal"], read["purpose"], read["rank"]) == (kim, "support", 1)
    assert start - timedelta(seconds=1) <= datetime.fromisoformat(read["read_at"]) <= end + timedelta(seconds=1)
    raw = [m.value() for m in read_topic(namespace, "audit")]
    assert raw and not any(word.encode() in value for value in raw for word in (secret, "3-1-4-1-5", "locker", query))
    cli = Path(sys.executable).with_name("memwarden")
    out = subprocess.run([str(cli), "audit", "reads", "--memory", note.memory_id], env=settings_env(namespace),
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert kim in out and "purpose=support" in out and read["read_at"] in out
    unknown = str(uuid.uuid4())
    out = subprocess.run([str(cli), "audit", "reads", "--memory", unknown], env=settings_env(namespace),
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert f"no audited read returned {unknown}" in out


def test_a_recall_marks_the_memory_used_in_the_profile_projection(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient) -> None:
    lee = _id("user")
    enroll_ids(client, namespace, lee)
    used, unused = (client.record(principal=lee, subject=lee, text=t) for t in (
        "Lee's bike is a green Brompton", "Lee's favourite soup is miso"))
    accepted(client, used, unused)
    projected(namespace, used, unused)
    before = datetime.now(UTC)
    assert ids(client.recall(lee, "Brompton bike", k=1, mode="lexical")) == {used.memory_id}
    last = poll(lambda: rows(namespace, "SELECT last_used_at FROM memory_versions WHERE memory_id = %s",
                             (used.memory_id,))[0][0], timeout_s=20, what="last_used_at set by MemoryUsed")
    assert before - timedelta(seconds=1) <= last <= datetime.now(UTC)
    assert rows(namespace, "SELECT last_used_at FROM memory_versions WHERE memory_id = %s", (unused.memory_id,)) == [
        (None,)]
    # as of a moment when both memories were decided and projected (``now - 1 s`` was flaky: on a fast run
    # the whole test takes under a second, and "one second ago" fell before the memory existed)
    past = client.recall(lee, "miso soup", k=1, as_of=before, mode="lexical")
    assert ids(past) == {unused.memory_id}
    time.sleep(3)  # a read of the past is not a use: the batch would have been flushed by now
    assert rows(namespace, "SELECT last_used_at FROM memory_versions WHERE memory_id = %s", (unused.memory_id,)) == [
        (None,)]


def test_bad_recall_requests_are_refused_with_400(
        client: MemwardenClient, worker: WorkerProcess, namespace: Settings) -> None:
    from memwarden.errors import ValidationError

    with pytest.raises(ValidationError) as exc:
        client.recall("user:x", "anything", mode="graph")  # type: ignore[arg-type]
    assert exc.value.field == "mode"
    url = f"{namespace.worker_url}/recall"
    response = httpx.post(url, json={"principal": "user:x", "query": "q", "mode": "graph"}, timeout=10)
    assert response.status_code == 400 and response.json()["field"] == "mode"
    for body in (["user:x", "q"], "user:x", 42):  # JSON that is not an object
        assert httpx.post(url, json=body, timeout=10).status_code == 400
