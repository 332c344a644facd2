"""The walking skeleton end to end, against the real broker, the real database and a real worker:
command → gate decision → projections → recall; dead letters; idempotency; tombstones; forgetting.
Every writer is a registered principal and every command is signed (issue 3)."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from memwarden.commands.model import to_avro
from memwarden.crypto import encrypt_text, new_data_key
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.schemas.codec import MAGIC, default_codec
from memwarden.settings import Settings
from tests.integration.conftest import decisions, poll, read_topic, rows

pytestmark = pytest.mark.integration


def _index_count(settings: Settings, **query: str) -> int:
    return int(httpx.get(f"{settings.worker_url}/index/count", params=query, timeout=10).json()["count"])


def test_command_is_decided_projected_and_recalled_with_provenance(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient,
        principal: Callable[..., str]) -> None:
    alice, bob = principal(), principal()
    receipt = client.record(principal=alice, subject=alice, text="Alice prefers green tea in the morning",
                            source_ref="chat:42", observed_at=datetime(2025, 7, 25, 2, 0, tzinfo=UTC))
    client.record(principal=bob, subject=bob, text="Bob prefers green tea in the morning")
    found = poll(lambda: client.recall(alice, "what does alice drink?", k=5), what="recall of the new memory")
    top = found[0]
    assert top.memory_id == receipt.memory_id and top.text == "Alice prefers green tea in the morning"
    assert (top.ledger_topic, top.ledger_partition, top.ledger_offset) == (
        receipt.topic, receipt.partition, receipt.offset)
    assert top.source_ref == "chat:42" and top.principal == alice and 0 < top.score <= 1
    assert all(m.principal == alice for m in found), "owner-only: bob's memory never reaches alice"
    decided = [d for d in decisions(namespace) if d["command_id"] == receipt.command_id]
    assert [d["outcome"] for d in decided] == ["ACCEPTED"]
    assert decided[0]["position"] == {"topic": receipt.topic, "partition": receipt.partition,
                                      "offset": receipt.offset}


def test_malformed_input_goes_to_the_dead_letter_topic_and_the_worker_keeps_going(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient,
        principal: Callable[..., str]) -> None:
    codec = default_codec()
    good = client.build_record(principal="user:x", subject="user:x", text="valid")[0]
    bad_uuid = to_avro(good)
    bad_uuid["envelope"]["command_id"] = "not-a-uuid"
    bad = {
        "NOT_SINGLE_OBJECT": b"plain text, not avro",
        "NULL_VALUE": None,
        "UNKNOWN_SCHEMA": MAGIC + b"\x01" * 8 + b"\x00",
        "MALFORMED_BODY": codec.encode("RecordMemory", to_avro(good))[:40],
        "INVALID_FIELD": codec.encode("RecordMemory", bad_uuid),
        "NOT_A_COMMAND": codec.encode("GateDecided", {
            "decision_id": str(uuid.uuid4()), "command_id": None, "command_type": None, "principal": None,
            "subject": None, "memory_id": None, "outcome": "ACCEPTED", "reasons": [], "gate_version": "x",
            "policy_version": "x", "position": {"topic": "t", "partition": 0, "offset": 1},
            "decided_at": datetime.now(UTC)}),
    }
    receipts = {code: client.publish_raw(f"k-{code}".encode(), value) for code, value in bad.items()}
    after = principal()
    later = client.record(principal=after, subject=after, text="recorded after the garbage")
    poll(lambda: client.recall(after, "after the garbage"), what="a later command is still processed")
    letters = [dict(m.headers()) for m in read_topic(namespace, "deadletter") if m.key() and m.key().startswith(b"k-")]
    by_code = {h["reason_code"].decode(): h for h in letters}
    for code, receipt in receipts.items():
        assert code in by_code, f"no dead letter for {code}"
        h = by_code[code]
        assert int(h["source_offset"]) == receipt.offset and h["reason"]
    assert by_code["INVALID_FIELD"]["field"] == b"envelope.command_id"
    rejected = [d for d in decisions(namespace) if d["command_id"] is None]
    assert {(d["position"]["offset"], d["position"]["partition"]) for d in rejected} >= {
        (r.offset, r.partition) for r in receipts.values()}
    assert all(d["outcome"] == "REJECTED" and d["reasons"] for d in rejected)
    assert later.command_id in {d["command_id"] for d in decisions(namespace)}


def test_a_poison_command_is_refused_and_never_stops_the_gate(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient,
        principal: Callable[..., str]) -> None:
    """Field cases of a newcomer trial: a NUL character in a tag (PostgreSQL's ``text`` refuses it) and a
    grant that ended before it began each stopped the namespace's gate for good, on every redelivery. Each is
    now a refusal naming the field, and the next command is decided and recalled."""
    from memwarden.errors import Refused

    who, agent = principal(), principal()
    good = client.build_record(principal=who, subject=who, text="a tag with a NUL")[0]
    nul = to_avro(good)
    nul["tags"] = ["a\x00b"]
    receipt = client.publish_raw(b"k-nul", default_codec().encode("RecordMemory", nul))
    letter = poll(lambda: [dict(m.headers()) for m in read_topic(namespace, "deadletter") if m.key() == b"k-nul"],
                  what="the NUL command's dead letter")[0]
    assert letter["reason_code"] == b"INVALID_FIELD" and letter["field"] == b"tags.0"
    assert b"NUL" in letter["reason"] and int(letter["source_offset"]) == receipt.offset
    with pytest.raises(Refused) as ended:
        client.grant_access(agent, by=who, rights=["READ"], scopes=["account:default"],
                            valid_to=datetime.now(UTC) - timedelta(hours=1))
    assert "INVALID_VALIDITY" in str(ended.value)
    later = client.record(principal=who, subject=who, text="recorded after the poison commands")
    assert client.decisions([later.command_id])[later.command_id] == "ACCEPTED"
    poll(lambda: client.recall(who, "after the poison commands"), what="a later command is still processed")


def test_empty_and_oversize_text_published_past_the_client_is_rejected_with_no_row(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient,
        principal: Callable[..., str]) -> None:
    who = principal()
    ids = []
    for text in ("   ", "x" * (namespace.max_text_chars + 1)):
        command, data_key = client.build_record(principal=who, subject=who, text="placeholder")
        key = new_data_key()
        nonce, ct = encrypt_text(text, key, command.content.key_id)
        wrap_nonce, wrapped = client._kek.wrap(key, command.content.key_id)
        client._send([(namespace.topic("keys"), command.content.key_id.encode(), default_codec().encode("DataKey", {
            "key_id": command.content.key_id, "subject": who, "kek_id": client._kek.kek_id,
            "algorithm": "AES-256-GCM", "wrap_nonce": wrap_nonce, "wrapped_key": wrapped,
            "created_at": datetime.now(UTC)}))], [""])
        forged = command.model_copy(update={"content": command.content.model_copy(
            update={"nonce": nonce, "ciphertext": ct})})
        ids.append(client._publish([(forged, forged.memory_id, None)])[0].command_id)
    def decided() -> dict[str, str] | None:
        found = {d["command_id"]: d["reasons"][0]["code"] for d in decisions(namespace) if d["command_id"] in ids}
        return found if len(found) == 2 else None

    reasons = poll(decided, what="two decisions")
    assert reasons == {ids[0]: "EMPTY_TEXT", ids[1]: "TEXT_TOO_LONG"}
    assert rows(namespace, "SELECT count(*) FROM memory_versions WHERE command_id = ANY(%s::uuid[])", (ids,)) == [
        (0,)]


def test_the_same_command_published_twice_gives_one_row_and_one_point(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient,
        principal: Callable[..., str]) -> None:
    who = principal()
    command, data_key = client.build_record(principal=who, subject=who, text="prefers tea")
    first = client._publish([(command, command.memory_id, data_key)])[0]
    second = client._publish([(command, command.memory_id, None)])[0]
    assert first.offset != second.offset
    outcomes = poll(lambda: (o := sorted(d["outcome"] for d in decisions(namespace)
                                         if d["command_id"] == command.envelope.command_id)) and len(o) == 2 and o,
                    what="two decisions")
    assert outcomes == ["ACCEPTED", "DUPLICATE"]
    poll(lambda: _index_count(namespace, memory_id=command.memory_id) == 1, what="one point")
    assert rows(namespace, "SELECT count(*) FROM memory_versions WHERE memory_id = %s",
                (command.memory_id,)) == [(1,)]
    assert len(client.recall(who, "tea")) == 1


def test_supersession_closes_the_old_version_and_as_of_reads_history(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient,
        principal: Callable[..., str]) -> None:
    who = principal()
    t1 = datetime(2025, 1, 1, tzinfo=UTC)
    t2 = t1 + timedelta(days=30)
    first = client.record(principal=who, subject=who, text="lives in Lyon", observed_at=t1)
    client.supersede(first.memory_id, principal=who, subject=who, text="lives in Oslo", observed_at=t2, wait=False)
    poll(lambda: rows(namespace, "SELECT count(*) FROM memory_versions WHERE memory_id = %s",
                      (first.memory_id,)) == [(2,)], what="two versions")
    now = [m.text for m in client.recall(who, "where does the user live?")]
    assert now == ["lives in Oslo"]
    then = [m.text for m in client.recall(who, "where does the user live?", as_of=t1 + timedelta(days=15))]
    assert then == ["lives in Lyon"]
    history = rows(namespace, "SELECT version, status, valid_from, valid_to FROM memory_versions"
                              " WHERE memory_id = %s ORDER BY version", (first.memory_id,))
    assert [(v, s) for v, s, _, _ in history] == [(1, "superseded"), (2, "active")]
    assert history[0][3] == t2 and history[1][3] is None
    again = client.supersede(first.memory_id, principal=who, subject=who, text="lives in Oslo", wait=False)
    decided = client.decided([again.command_id])[again.command_id]  # the current text again: no third version
    assert decided["outcome"] == "DUPLICATE" and decided["memory_ids"] == [first.memory_id]
    assert rows(namespace, "SELECT count(*) FROM memory_versions WHERE memory_id = %s", (first.memory_id,)) == [(2,)]


def test_tombstones_never_crash_a_consumer_and_forget_shreds_the_key(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient,
        principal: Callable[..., str]) -> None:
    who = principal()
    kept = client.record(principal=who, subject=who, text="likes chess")
    gone = client.record(principal=who, subject=who, text="badge number 4411")
    poll(lambda: len(client.recall(who, "badge chess")) == 2, what="both memories")
    client._send([(namespace.topic("keys"), str(uuid.uuid4()).encode(), None)], [""])  # tombstone, unknown key
    client.publish_raw(who.encode(), None)  # a null value on the ledger itself
    forget = client.forget(gone.memory_id, principal=who, subject=who, reason="user asked", wait=False)
    poll(lambda: [m.memory_id for m in client.recall(who, "badge chess")] == [kept.memory_id],
         what="forgotten memory no longer recalled")
    status = rows(namespace, "SELECT status, content_sealed FROM memory_versions WHERE memory_id = %s",
                  (gone.memory_id,))
    assert status == [("forgotten", None)]
    assert _index_count(namespace, memory_id=gone.memory_id) == 0
    key_id = rows(namespace, "SELECT content_key_id::text FROM memory_versions WHERE memory_id = %s",
                  (gone.memory_id,))[0][0]
    poll(lambda: any(m.key() == key_id.encode() and m.value() is None for m in read_topic(namespace, "keys")),
         what="data key tombstone")
    # the gate's forget decision itself carries the tombstone (stored with it: no crash gap)
    (outputs,) = rows(namespace, "SELECT outputs FROM gate_decisions WHERE command_id = %s", (forget.command_id,))[0]
    assert {"topic": "keys", "key": base64.b64encode(key_id.encode()).decode(), "value": None} in outputs
    later = client.record(principal=who, subject=who, text="still working after tombstones")
    poll(lambda: later.memory_id in {m.memory_id for m in client.recall(who, "still working")}, what="later record")
