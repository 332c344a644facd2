"""Replay against the real broker, Postgres and index (issue 9): every projection rebuilt from the
ledger into a fresh namespace has the live digests after a workload mixing records, supersessions,
forgets, a memory id reused after a forget, duplicates, grants and revocations, key rotation and
revocation, quarantine approved and rejected, dead letters and reads; a forgotten memory stays
unreadable; a point-in-time replay answers recalls as ``known_at`` then does on the live namespace;
the vectors are reused, not embedded again."""

from __future__ import annotations

import asyncio
import secrets
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from memwarden.bootstrap import Container, drop_projections, namespace_digests
from memwarden.commands.signing import Signer
from memwarden.commands.tokens import make_token, token_hash
from memwarden.errors import ValidationError
from memwarden.keystore import admin_signer
from memwarden.ops.progress import wait_caught_up
from memwarden.ops.worker_process import WorkerProcess
from memwarden.processors.replay import build_index, run_replay, target_settings
from memwarden.processors.replay_cut import resolve_cut
from memwarden.processors.replay_ledger import EventsPart, read_ledger
from memwarden.producers.client import MemwardenClient
from memwarden.projections.recall import Recaller
from memwarden.settings import Settings
from memwarden.stores.ledger import ends_of
from tests.integration.conftest import enroll_ids, rows

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _drop(s: Settings) -> None:
    drop_projections(s)


@pytest.fixture(scope="module")
def ledger(namespace: Settings, client: MemwardenClient) -> Iterator[dict[str, object]]:
    """The mixed workload, decided and projected; the worker is stopped afterwards so that this
    process can open the live index. Yields the ids the tests look at and the time between phases."""
    w = WorkerProcess(namespace).start()
    try:
        found = _workload(namespace, client, w)
    finally:
        w.stop()
    yield found


def _decide(client: MemwardenClient, receipts: list) -> dict[str, str]:  # type: ignore[type-arg]
    return client.decisions([r.command_id for r in receipts], timeout_s=120)


def _workload(ns: Settings, client: MemwardenClient, w: WorkerProcess) -> dict[str, object]:
    alice, bob, rita, agent = (f"user:a{uuid.uuid4().hex[:6]}", f"user:b{uuid.uuid4().hex[:6]}",
                               f"user:r{uuid.uuid4().hex[:6]}", f"agent:x{uuid.uuid4().hex[:6]}")
    enroll_ids(client, ns, alice, bob, agent)
    enroll_ids(client, ns, rita, roles=["reviewer"])
    tea = client.record(principal=alice, subject=alice, text="Alice prefers green tea in the morning")
    city = client.record(principal=alice, subject=alice, text="Alice lives in Lyon")
    gone = client.record(principal=alice, subject=alice, text="Alice's locker code is 4711")
    _decide(client, [tea, city, gone])
    wait_caught_up(ns, alive=w.alive)  # recalled only once projected
    client.recall(alice, "what does alice drink?")
    locker_reads = client.recall(alice, "Alice's locker code")
    assert gone.memory_id in [m.memory_id for m in locker_reads]
    wait_caught_up(ns, alive=w.alive)
    time.sleep(1.2)
    cut_time = datetime.now(UTC)
    time.sleep(1.2)
    moved = client.supersede(city.memory_id, principal=alice, subject=alice, text="Alice moved to Paris", wait=False)
    dup = client.record(principal=alice, subject=alice, text="Alice prefers green tea in the morning")
    forget = client.forget(gone.memory_id, principal=alice, subject=alice, reason="user request", wait=False)
    _decide(client, [moved, dup, forget])
    hobby = client.record(principal=alice, subject=alice, text="Alice plays the cello")
    _decide(client, [hobby])
    changed = client.supersede(hobby.memory_id, principal=alice, subject=alice, text="Alice plays the viola",
                               wait=False)
    _decide(client, [changed])
    dropped = client.forget(hobby.memory_id, principal=alice, subject=alice, wait=False)  # superseded, then forgotten
    again = client.record(principal=alice, subject=alice, text="a new locker code", memory_id=gone.memory_id)
    _decide(client, [dropped])
    grant = client.grant_access(bob, by=alice, rights=["READ"], scopes=["account:default"], subjects=[alice],
                                wait=False)
    _decide(client, [again, grant])
    client.recall(bob, "where does alice live?")
    client.revoke_access(grant.memory_id, by=alice, grantee=bob, wait=False)
    issued = client.issue_token(bob, by=ns.admin_principal,
                                token_sha256=token_hash(make_token(secrets.token_bytes(32))))
    _decide(client, [issued])
    client.revoke_token(issued.memory_id, by=bob, principal=bob)  # the REST API's tokens fold on replay too
    new_key = Signer.generate(bob, f"{bob}#2")
    rotated = client.rotate_key(bob, by=bob, public_key=new_key.public_key, key_id=new_key.key_id, wait=False)
    _decide(client, [rotated])
    old_key = client._signers[bob].key_id
    client.add_signer(new_key)
    revoked = client.revoke_key(bob, old_key, by=bob, wait=False)
    held = client.record(principal=agent, subject=alice, text="Alice asked me to water the plants on Friday")
    held2 = client.record(principal=agent, subject=alice, text="Alice's neighbour has a spare key")
    outcomes = _decide(client, [revoked, held, held2])
    assert outcomes[held.command_id] == outcomes[held2.command_id] == "QUARANTINED"
    approve = client.approve_quarantined(held.command_id, by=rita, subject=alice, wait=False)
    reject = client.reject_quarantined(held2.command_id, by=rita, subject=alice, wait=False)
    client.publish_raw(b"garbage", b"not a command")
    outcomes = _decide(client, [approve, reject])
    assert outcomes[approve.command_id] == "ACCEPTED_UNVERIFIED" and outcomes[reject.command_id] == "ACCEPTED"
    client.recall(alice, "plants")
    forgetting = _forgetting(ns, client)
    wait_caught_up(ns, alive=w.alive)
    time.sleep(2.5)  # the read endpoint's MemoryUsed batch is due after 1 s
    wait_caught_up(ns, alive=w.alive)
    return {"alice": alice, "gone": gone.memory_id, "cut_time": cut_time, "city": city.memory_id,
            "gone_at": f"commands:{gone.partition}:{gone.offset}", **forgetting}


def _forgetting(ns: Settings, client: MemwardenClient) -> dict[str, object]:
    """Forgets by selector and subject, lineage, a legal hold that defers a forget until lifted, and
    (field case F5) a data key followed by its tombstone on the compacted keys topic."""
    admin = admin_signer(ns)
    client.add_signer(admin)
    carol = f"user:c{uuid.uuid4().hex[:6]}"
    enroll_ids(client, ns, carol)
    stamps = client.record(principal=carol, subject=carol, text="Carol collects stamps", tags=["hobby"])
    badge = client.record(principal=carol, subject=carol, text="Carol's badge number is 4411")
    _decide(client, [stamps, badge])
    summary = client.record(principal=carol, subject=carol, text="summary: Carol collects stamps, badge 4411",
                            source_kind="MODEL_INFERENCE", derived_from=[stamps.memory_id, badge.memory_id],
                            quoted_span="collects stamps", epistemic_status="INFERRED")
    hold = client.place_hold(f"h-{uuid.uuid4().hex[:6]}", by=admin.principal_id, subjects=[carol], wait=False)
    assert all(o.startswith("ACCEPTED") for o in _decide(client, [summary, hold]).values())
    waiting = client.forget_matching(principal=carol, tags=["hobby"], reason="hobby list cleared", wait=False)
    dry = client.forget_subject(carol, principal=carol, dry_run=True, wait=False)
    outcomes = _decide(client, [waiting, dry])
    assert outcomes[waiting.command_id] == "DEFERRED" and outcomes[dry.command_id] == "ACCEPTED"
    lift = client.lift_hold(hold.memory_id, by=admin.principal_id, wait=False)
    key_id, data_key = client._encrypt("field case F5", carol)[1]
    client._send([(ns.topic("keys"), key_id.encode(), data_key), (ns.topic("keys"), key_id.encode(), None)],
                 ["", ""])
    after = client.record(principal=carol, subject=carol, text="Carol joined the chess club")
    assert _decide(client, [lift, after])[lift.command_id] == "ACCEPTED"  # the gate kept advancing
    return {"carol": carol, "carol_gone": [stamps.memory_id, summary.memory_id], "f5_key": key_id}


def _recall(s: Settings, principal: str, query: str, known_at: datetime | None = None,
            mode: str = "hybrid") -> list[str]:
    c = Container(s)

    async def run() -> list[str]:
        found = await Recaller(c.embedder(), c.index(), await c.pg(), keys=c.keyring()).recall(
            principal, query, 10, as_of=known_at, known_at=known_at, freshness=False, mode=mode)  # type: ignore[arg-type]
        return [m.memory_id for m in found]

    try:
        return asyncio.run(run())
    finally:
        c.close()


def test_a_whole_ledger_replay_has_the_live_digests(namespace: Settings, ledger: dict[str, object]) -> None:
    target = target_settings(namespace, f"test.replay-{uuid.uuid4().hex[:8]}")
    try:
        cut, pit = resolve_cut(namespace, None, None)
        report = run_replay(namespace, target, cut, pit)
        assert report.commands >= 20 and report.undecided == 0 and report.embedded == 0 and report.reused > 0
        live, replayed = namespace_digests(namespace), namespace_digests(target)
        assert replayed == live
        assert all(d["rows"] for d in live.values())
        # the review queue keeps its times (newcomer trial, nineteenth session: a rebuilt row took the replay's)
        queue = ("SELECT command_id::text, status, reviewed_by, date_trunc('milliseconds', quarantined_at),"
                 " date_trunc('milliseconds', reviewed_at) FROM gate_quarantine ORDER BY command_id")
        assert rows(target, queue) == rows(namespace, queue) and len(rows(namespace, queue)) >= 2
        assert ledger["gone"] not in _recall(target, str(ledger["alice"]), "locker code")
        gone = set(ledger["carol_gone"])  # type: ignore[call-overload]
        assert not gone & set(_recall(target, str(ledger["carol"]), "Carol stamps summary badge"))
        for s in (namespace, target):  # F5: the tombstone reads as a delete, live and rebuilt
            c = Container(s)
            try:
                assert c.keyring().get(str(ledger["f5_key"])) is None
            finally:
                c.close()
        again = run_replay(namespace, target, cut, pit)  # a second run resumes: nothing left to do
        assert again.commands == again.events == 0 and namespace_digests(target) == live
    finally:
        _drop(target)


def test_an_index_built_apart_from_the_profile_starts_each_point_from_its_last_use(
        namespace: Settings, ledger: dict[str, object]) -> None:
    """The replay's index builder (a child process next to the gate fold) cannot read the uses
    from profile rows that do not exist yet. Partitions interleave in any order, so a ``MemoryUsed``
    may be read before the version it touches: here every use comes first, and no profile row is
    ever written, and the index must still have the live digest (uses commute)."""
    target = target_settings(namespace, f"test.replay-{uuid.uuid4().hex[:8]}")
    try:
        cut, pit = resolve_cut(namespace, None, None)
        reader = Container(target)
        try:
            index = read_ledger(target, reader.codec, reader.kek, cut)
        finally:
            reader.close()
        index.events.sort(key=lambda e: e[1] != "MemoryUsed")  # stable: every use first
        assert index.events[0][1] == "MemoryUsed"
        embedded, reused, _ = build_index(namespace, target, cut, pit, lambda *_: None,
                                          lambda: EventsPart.of(index))
        assert embedded == 0 and reused > 0
        assert namespace_digests(target)["profile"]["rows"] == 0
        assert namespace_digests(target)["index"] == namespace_digests(namespace)["index"]
    finally:
        _drop(target)


def test_a_point_in_time_replay_answers_as_known_at_then(namespace: Settings, ledger: dict[str, object]) -> None:
    when = ledger["cut_time"]
    assert isinstance(when, datetime)
    target = target_settings(namespace, f"test.pit-{uuid.uuid4().hex[:8]}")
    try:
        cut, pit = resolve_cut(namespace, None, when)
        assert pit and sum(cut.values()) < sum(resolve_cut(namespace, None, None)[0].values())
        run_replay(namespace, target, cut, pit)
        alice = str(ledger["alice"])
        for query in ("where does alice live?", "what does alice drink?", "locker code", "plants"):
            # dense ranking is per point: the same order; lexical IDF is a statistic of the corpus, which is
            # smaller at that time, so hybrid returns the same memories, possibly in another order
            assert _recall(target, alice, query, mode="dense") == _recall(namespace, alice, query, when, "dense")
            assert set(_recall(target, alice, query)) == set(_recall(namespace, alice, query, known_at=when)), query
        assert ledger["city"] in _recall(target, alice, "where does alice live?")
        # the forgets after the cut left no erasure receipt in it (it kept those of later forgets)
        assert rows(namespace, "SELECT count(*) FROM erasure_receipted")[0][0] > 0
        assert rows(target, "SELECT count(*) FROM erasure_receipted") == [(0,)]
        # a past state stays past (newcomer trial, twentieth session): a whole replay resumed into it reported
        # success half done, a reconciliation carried it past its cut, and so would a worker
        whole, _ = resolve_cut(namespace, None, None)
        with pytest.raises(ValidationError, match="point-in-time") as resumed:
            run_replay(namespace, target, whole, False)
        assert resumed.value.field == "into"
        run_replay(namespace, target, cut, pit)  # the same cut again: resumed, nothing to do
        from memwarden.processors.reconciler import reconcile
        from memwarden.processors.run import run_worker

        c = Container(target)
        try:
            with pytest.raises(ValidationError, match="point-in-time"):
                asyncio.run(reconcile(c))
        finally:
            c.close()
        for roles in (("gate", "projector"), ("projector",)):
            with pytest.raises(ValueError, match="replays|point-in-time"):
                run_worker(target, roles)
    finally:
        _drop(target)


def test_audit_at_a_forgotten_record_shows_the_decision_and_reads_but_no_content(
        namespace: Settings, ledger: dict[str, object]) -> None:
    from memwarden.ops.forensics import read_ledger
    from memwarden.ops.forensics_report import audit_at, audit_memory, audit_principal

    c = Container(namespace)
    try:
        led = read_ledger(namespace, c.codec, c.kek)
    finally:
        c.close()
    alice = str(ledger["alice"])
    report = audit_at(namespace, led, str(ledger["gone_at"]), reader=alice)  # even its own subject
    assert report["decision"]["outcome"] == "ACCEPTED" and report["command"]["signed_with"]
    assert report["content"].startswith("shredded at keys:")
    assert any(r["principal"] == alice for r in report["reads"])
    assert [x["kind"] for x in report["later"]] == ["ForgetMemory", "RecordMemory"]  # the forget, the reuse
    assert "4711" not in str(report) and "locker" not in str(report).lower()
    lineage = audit_memory(namespace, led, str(ledger["gone"]))
    assert [e["command"]["kind"] for e in lineage["timeline"]] == ["RecordMemory", "ForgetMemory", "RecordMemory"]
    assert [e["decision"]["outcome"] for e in lineage["timeline"]][-1] == "REJECTED"  # MEMORY_ID_EXISTS
    trail = audit_principal(led, alice)
    assert trail["read"] and trail["granted"] and any(e["reasons"] == ["MEMORY_ID_EXISTS"] for e in trail["refused"])
    with pytest.raises(ValidationError, match="past the log end"):
        audit_at(namespace, led, "commands:0:999999")


def test_a_key_and_its_tombstone_share_a_partition(namespace: Settings, client: MemwardenClient) -> None:
    """The client and the worker (aiokafka) pick the same partition for a key: a data key and the
    tombstone the gate publishes for it are compacted together (crypto-shredding on disk), and no
    reader sees the tombstone before the key."""
    from aiokafka.partitioner import DefaultPartitioner

    keys = [str(uuid.uuid4()).encode() for _ in range(40)]
    receipts = client._send([(namespace.topic("keys"), k, None) for k in keys], [""] * len(keys))
    parts = list(range(namespace.partitions))
    assert [r.partition for r in receipts] == [DefaultPartitioner()(k, parts, parts) for k in keys]


def test_bad_cuts_are_refused_naming_the_field(namespace: Settings, ledger: dict[str, object]) -> None:
    with pytest.raises(ValidationError) as err:
        resolve_cut(namespace, "commands:99:0", None)
    assert err.value.field == "until" and "no partition 99" in str(err.value)
    # past the end of a partition that holds records, or any offset of one that holds none (which one the
    # fixture's keys fill varies from run to run)
    with pytest.raises(ValidationError, match="past the log end|is empty"):
        resolve_cut(namespace, ",".join(f"commands:{p}:999999" for p in range(namespace.partitions)), None)
    with pytest.raises(ValidationError, match="before the first record"):
        resolve_cut(namespace, None, datetime(2001, 1, 1, tzinfo=UTC))
    for same in (namespace.topic_prefix, namespace.topic_prefix.upper(), namespace.topic_prefix.replace(".", "_"),
                 namespace.topic_prefix + ".x" * 40):  # the live schema under another spelling; a cut name
        with pytest.raises(ValidationError) as into:
            target_settings(namespace, same)
        assert into.value.field == "into", same
    from memwarden.stores import namespaces
    from memwarden.stores.pg import migrate

    spelled = f"test.Case-{uuid.uuid4().hex[:8]}"
    first, second = target_settings(namespace, spelled), target_settings(namespace, spelled.lower())
    try:  # one schema, two spellings: the second replay found the first's rows and an empty index of its own
        migrate(first)
        namespaces.claim(first, namespace)
        with pytest.raises(ValidationError) as shared:
            namespaces.claim(second, namespace)
        assert shared.value.field == "into" and spelled in str(shared.value)
    finally:
        drop_projections(first)
    # a replay is read-only: a forget named for it changed the live namespace (newcomer trial, twentieth session)
    replica = target_settings(namespace, f"test.readonly-{uuid.uuid4().hex[:8]}")
    before = ends_of(namespace, ["commands"])
    with MemwardenClient(replica) as through, pytest.raises(ValidationError) as readonly:
        through.record(principal="user:nobody", subject="user:nobody", text="never published", sign=False)
    assert readonly.value.field == "namespace" and "read-only" in str(readonly.value)
    assert ends_of(namespace, ["commands"]) == before
