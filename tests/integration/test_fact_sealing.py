"""No typed-fact value in clear at rest (issue 14) against the real broker, Postgres and worker: a
memory whose fact value is a unique marker never has it in any record of the ledger (commands,
decisions, events, keys) nor in the gate's fact slots (a keyed digest only) nor in any Postgres or Kafka
file; the contradiction and protected-fact checks decide as they did on clear values (a write a
reviewer releases too, its event carrying the value as sealed by the client); once the
memories are forgotten, nothing gives the value back (the key ring, a whole-ledger key snapshot as a
replay reads it), and a replay rebuilds the gate's state with the live digest."""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memwarden.bootstrap import Container, drop_projections
from memwarden.commands.facts import fact_key, value_digest
from memwarden.crypto import open_fact
from memwarden.ops.kafka_files import kafka_paths
from memwarden.ops.postgres_server import pg_paths
from memwarden.ops.progress import wait_caught_up
from memwarden.ops.worker_process import WorkerProcess
from memwarden.processors.replay import run_replay, target_settings
from memwarden.processors.replay_cut import resolve_cut
from memwarden.producers.client import MemwardenClient, Receipt
from memwarden.projections.state_digest import TABLES, row_form
from memwarden.schemas.codec import default_codec
from memwarden.settings import Settings
from memwarden.stores.keyring import KeySnapshot
from memwarden.stores.pg import connect
from tests.integration.conftest import read_topic, rows

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPICS = ("commands", "decisions", "events", "keys")


def _decided(client: MemwardenClient, *receipts: Receipt) -> list[dict[str, Any]]:
    found = client.decided([r.command_id for r in receipts], timeout_s=120)
    return [found[r.command_id] for r in receipts]


def _codes(decision: dict[str, Any]) -> list[str]:
    return [r["code"] for r in decision["reasons"]]


def _records(settings: Settings, logical: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for msg in read_topic(settings, logical):
        if msg.value() is not None:
            out.append(default_codec().decode(msg.value()))
    return out


def _files_holding(root: Path, needles: tuple[bytes, ...]) -> list[Path]:
    found = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            try:
                data = path.read_bytes()
            except OSError:  # a rolled segment or a recycled WAL file
                continue
            if any(n in data for n in needles):
                found.append(path)
    return found


def _gate_digest(settings: Settings, digest_key: bytes) -> str:
    """The ``gate`` projection's state digest (projections/state_digest.py), without opening the index."""
    h = hashlib.sha256()
    with connect(settings) as conn, conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        for table, order in TABLES["gate"]:
            cur.execute(f"SELECT * FROM {table} ORDER BY {order}")  # noqa: S608
            for row in cur:
                h.update(f"{table}:{row_form(row, digest_key)}\n".encode())
    return h.hexdigest()


def test_a_fact_value_is_sealed_on_the_ledger_digested_in_the_gate_and_shredded_by_a_forget(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient, principal: Callable[..., str]) -> None:
    who = principal()
    marker = f"fact-marker-{uuid.uuid4().hex}"
    needles = (marker.encode(), marker.upper().encode())

    def fact(value: str, attribute: str = "employer") -> dict[str, str]:
        return {"entity": "persona", "attribute": attribute, "value": value}

    # compares as clear values did: the same value in other case and spacing is the same fact
    holder = client.record(principal=who, subject=who, text="I work for a small research lab", fact=fact(marker))
    same = client.record(principal=who, subject=who, text="My employer has not changed",
                         fact=fact(f"  {marker.upper()} "))
    assert [d["outcome"] for d in _decided(client, holder, same)] == ["ACCEPTED", "ACCEPTED"]
    assert "SUPERSEDES_CONTRADICTED" not in _codes(_decided(client, same)[0])
    # protected: another value is refused, the same value is admitted
    protect = client.protect_fact(who, "persona", "employer", by=who, wait=False)
    assert _decided(client, protect)[0]["outcome"] == "ACCEPTED"
    conflicting = client.record(principal=who, subject=who, text="I now work at the bakery", fact=fact("the bakery"))
    agreeing = client.record(principal=who, subject=who, text="Still at the same lab", fact=fact(marker))
    refused, admitted = _decided(client, conflicting, agreeing)
    assert (refused["outcome"], _codes(refused)[:1]) == ("REJECTED", ["CORE_FACT_CONFLICT"])
    assert admitted["outcome"] == "ACCEPTED" and "SUPERSEDES_CONTRADICTED" not in _codes(admitted)
    # unprotected: another value closes the slot's holder
    omnivore = client.record(principal=who, subject=who, text="I eat everything", fact=fact("omnivore", "diet"))
    assert _decided(client, omnivore)[0]["outcome"] == "ACCEPTED"
    vegetarian = client.record(principal=who, subject=who, text="I am vegetarian now", fact=fact("Vegetarian", "diet"))
    (veg,) = _decided(client, vegetarian)
    assert veg["outcome"] == "ACCEPTED" and "SUPERSEDES_CONTRADICTED" in _codes(veg)
    assert omnivore.memory_id in " ".join(r["message"] for r in veg["reasons"])
    # a held write released by a reviewer: decided on the digest, its event carries the sealed value
    scribe, reviewer = principal("agent"), principal("reviewer")
    held = client.record(principal=scribe, subject=who, text="Their lab is on the third floor", fact=fact(marker))
    assert _decided(client, held)[0]["outcome"] == "QUARANTINED"
    approve = client.approve_quarantined(held.command_id, by=reviewer, subject=who, wait=False)
    (released,) = _decided(client, approve)
    assert released["outcome"] in ("ACCEPTED", "ACCEPTED_UNVERIFIED") and released["memory_id"] == held.memory_id
    wait_caught_up(namespace, alive=worker.alive)

    # the ledger: the value sealed in the command and its event, in no record in clear
    for logical in TOPICS:
        for msg in read_topic(namespace, logical):
            assert not any(n in (msg.value() or b"") for n in needles), logical
    ours = {holder.command_id, same.command_id, agreeing.command_id, held.command_id}
    sealed: dict[str, tuple[str, dict[str, Any]]] = {}  # command id -> (key id, fact record)
    for name, rec in _records(namespace, "commands"):
        if name == "RecordMemory" and rec["envelope"]["command_id"] in ours:
            assert rec["fact"]["value"] == "" and rec["fact"]["value_sealed"]
            sealed[rec["envelope"]["command_id"]] = (rec["content"]["key_id"], rec["fact"])
    events = {rec["envelope"]["command_id"]: rec["fact"] for name, rec in _records(namespace, "events")
              if name == "MemoryRecorded" and rec["envelope"]["command_id"] in ours}
    assert set(sealed) == set(events) == ours
    assert all(events[cid] == fact for cid, (_, fact) in sealed.items())  # the event copies the sealed fact
    c = Container(namespace)
    try:
        digest_key, ring = c.digest_key, c.keyring()
        key_ids = [k for k, _ in sealed.values()]
        live_keys = ring.lookup(key_ids)
        assert sorted(open_fact(f, k, live_keys) or "" for k, f in sealed.values()) == sorted(
            [marker, f"  {marker.upper()} ", marker, marker])

        # the gate: a keyed digest of the folded value, no value column
        columns = rows(namespace, "SELECT column_name FROM information_schema.columns WHERE table_schema = %s"
                       " AND table_name = 'gate_facts'", (namespace.pg_schema,))
        assert "value" not in {r[0] for r in columns} and "value_digest" in {r[0] for r in columns}
        slots = {r[0]: r[1:] for r in rows(namespace, "SELECT attribute, value_digest, memory_id::text FROM"
                                          " gate_facts WHERE subject = %s", (who,))}
        assert slots["employer"] == (value_digest(digest_key, fact_key(who, "persona", "employer"), marker),
                                     held.memory_id)
        assert slots["diet"] == (value_digest(digest_key, fact_key(who, "persona", "diet"), "vegetarian"),
                                 vegetarian.memory_id)
        assert not any(n.decode() in str(r) for r in rows(namespace, "SELECT * FROM gate_facts") for n in needles)
        assert not any(n.decode() in str(r) for r in rows(namespace, "SELECT * FROM memory_versions WHERE subject"
                                                          " = %s", (who,)) for n in needles)

        # forget every memory that held the value: nothing gives it back
        forgets = [client.forget(r.memory_id, principal=who, subject=who, reason="user request", wait=False)
                   for r in (holder, same, agreeing, held)]
        assert [d["outcome"] for d in _decided(client, *forgets)] == ["ACCEPTED"] * 4
        wait_caught_up(namespace, alive=worker.alive)
        assert set(rows(namespace, "SELECT attribute FROM gate_facts WHERE subject = %s", (who,))) == {("diet",)}
        after = ring.lookup(key_ids)
        assert all(after[k] is None for k in key_ids)
        assert all(open_fact(f, k, after) is None for k, f in sealed.values())
        snapshot = KeySnapshot(c.kek, c.codec)  # the keys topic from offset 0, as a replay reads it
        for msg in read_topic(namespace, "keys"):
            snapshot.add(msg.key(), msg.value())
        replay_keys = snapshot.lookup(key_ids)
        assert all(open_fact(f, k, replay_keys) is None for k, f in sealed.values())

        # a replay of the whole ledger rebuilds the gate's state with the live digest
        target = target_settings(namespace, f"test.factreplay-{uuid.uuid4().hex[:8]}")
        try:
            cut, pit = resolve_cut(namespace, None, None)
            run_replay(namespace, target, cut, pit)
            assert _gate_digest(target, digest_key) == _gate_digest(namespace, digest_key)
            assert rows(target, "SELECT attribute, value_digest FROM gate_facts WHERE subject = %s", (who,)) == [
                ("diet", slots["diet"][0])]
        finally:
            drop_projections(target)
    finally:
        c.close()

    # no file of the stack holds the value (Postgres heap and WAL, Kafka segments)
    assert not _files_holding(pg_paths(namespace).data, needles), "a fact value in the Postgres data folder"
    assert not _files_holding(kafka_paths(namespace).data, needles), "a fact value in a Kafka segment"
