"""Forgetting reaches the disk (issue 14) against the real broker, Postgres, index and worker: a memory
with a unique marker text never has that text in clear in any file of the stack (Postgres heap and
WAL, Kafka segments, the index, the worker's log), and once it is forgotten its wrapped data key
leaves the keys topic's segment files within the documented bound, and no read path returns it."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from memwarden.bootstrap import Container
from memwarden.ops.forensics import read_ledger
from memwarden.ops.forensics_report import audit_memory
from memwarden.ops.kafka_files import kafka_paths
from memwarden.ops.postgres_server import pg_paths
from memwarden.ops.progress import wait_caught_up
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.schemas.codec import default_codec
from memwarden.settings import Settings
from memwarden.stores.pg import connect
from tests.integration.conftest import drop, enroll_ids, make_namespace, poll, read_topic

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LAG_S = 3.0


@pytest.fixture(scope="module")
def quick(stack: Settings) -> Iterator[Settings]:
    """A namespace whose keys topic compacts within ``LAG_S`` seconds (the bound scales with it)."""
    s = make_namespace(stack.model_copy(update={"keys_compaction_lag_s": LAG_S}))
    yield s
    drop(s)


def _files_holding(root: Path, needle: bytes, name_filter: str = "") -> list[Path]:
    """Files under ``root`` (whose path contains ``name_filter``) that hold ``needle``; files and
    folders removed while scanning (a rolled segment, a recycled WAL file, another test's topic) are
    passed over."""
    found = []
    for folder, _, names in os.walk(root):  # os.walk ignores folders that vanish under it
        for name in names:
            path = Path(folder) / name
            if name_filter not in str(path):
                continue
            try:
                if needle in path.read_bytes():
                    found.append(path)
            except OSError:
                continue
    return found


def _wrapped_key(s: Settings, key_id: str) -> bytes:
    for msg in read_topic(s, "keys"):
        if msg.key() == key_id.encode() and msg.value() is not None:
            return bytes(default_codec().decode(msg.value())[1]["wrapped_key"])
    raise AssertionError(f"no data key {key_id} on the keys topic")


def test_a_forgotten_memory_leaves_no_plaintext_and_its_key_leaves_the_disk(quick: Settings) -> None:
    marker = f"zebra-marker-{uuid.uuid4().hex}"
    who = f"user:f{uuid.uuid4().hex[:6]}"
    with MemwardenClient(quick) as client, WorkerProcess(quick) as w:
        enroll_ids(client, quick, who)
        kept = client.record(principal=who, subject=who, text="The user keeps bees on the roof")
        gone = client.record(principal=who, subject=who, text=f"The user's locker phrase is {marker}")
        client.decisions([kept.command_id, gone.command_id], timeout_s=120)
        wait_caught_up(quick, alive=w.alive)
        assert gone.memory_id in [m.memory_id for m in client.recall(who, marker, mode="lexical")]
        with connect(quick) as conn:
            (key_id,) = conn.execute("SELECT content_key_id::text FROM memory_versions WHERE memory_id = %s",
                                     (gone.memory_id,)).fetchone() or (None,)
        wrapped = _wrapped_key(quick, str(key_id))

        started = time.monotonic()
        forget = client.forget(gone.memory_id, principal=who, subject=who, reason="user request", wait=False)
        assert client.decisions([forget.command_id], timeout_s=120)[forget.command_id] == "ACCEPTED"
        for mode in ("hybrid", "dense", "lexical"):  # every read path, with the memory's own words
            found = [m.memory_id for m in client.recall(who, f"locker phrase {marker}", mode=mode)]
            assert gone.memory_id not in found, mode
        assert kept.memory_id in [m.memory_id for m in client.recall(who, "bees on the roof")]

        def receipts() -> list[tuple[bytes, dict[str, object]]]:
            out = []
            for msg in read_topic(quick, "events"):
                if msg.value() is None:
                    continue
                name, rec = default_codec().decode(msg.value())
                if name == "ErasureReceipted" and rec["command_id"] == forget.command_id:
                    out.append((msg.value(), rec))
            return out

        raw, rec = poll(receipts, timeout_s=30, what="the erasure receipt")[0]
        assert rec["memory_id"] == gone.memory_id and rec["versions"] == [1] and rec["verified"] is True
        assert rec["key_ids"] == [str(key_id)] and rec["key_tombstones"][0].startswith(quick.topic("keys") + ":")
        assert set(rec["stores"]) == {"keys", "profile", "vector_cache", "index", "derived"}
        assert marker.encode() not in raw and b"locker" not in raw  # ids and positions only
        assert rec["completed_at"] >= rec["forget_decided_at"]
        c = Container(quick)
        try:  # the lineage shows the receipt, and never the text
            lineage = audit_memory(quick, read_ledger(quick, c.codec, c.kek), gone.memory_id)
        finally:
            c.close()
        assert [r["command_id"] for r in lineage["erasure_receipts"]] == [forget.command_id]
        assert marker not in str(lineage)

        keys_dirs = kafka_paths(quick).data
        bound_s = 2 * LAG_S + 15  # a roll, the cleaner's pass, the old files' deletion delay, slack
        poll(lambda: not _files_holding(keys_dirs, wrapped, quick.topic("keys")), timeout_s=bound_s, every_s=1.0,
             what="the wrapped data key gone from the keys topic's files")
        print(f"wrapped key left the disk {time.monotonic() - started:.1f} s after the forget")
        log = w.log_path

    needle = marker.encode()
    assert not _files_holding(pg_paths(quick).data, needle), "plaintext in the Postgres data folder (heap or WAL)"
    assert not _files_holding(kafka_paths(quick).data, needle), "plaintext in a Kafka segment"
    assert not _files_holding(quick.data_dir / "qdrant" / quick.index_name, needle), "plaintext in the index"
    assert not _files_holding(log.parent, needle, log.name), "plaintext in the worker's log"
    assert b"\x1b[" not in log.read_bytes(), "terminal escape codes (faust's spinner) in the worker's log"


def test_a_worker_killed_after_a_forget_still_appends_its_receipt(quick: Settings) -> None:
    """The receipt owed is a projection of the ledger (``erasure_pending``), not worker memory."""
    who = f"user:k{uuid.uuid4().hex[:6]}"
    with MemwardenClient(quick) as client:
        with WorkerProcess(quick) as w:
            enroll_ids(client, quick, who)
            m = client.record(principal=who, subject=who, text="the spare key is under the blue pot")
            client.decisions([m.command_id], timeout_s=120)
            wait_caught_up(quick, alive=w.alive)
            forget = client.forget(m.memory_id, principal=who, subject=who, wait=False)
            assert client.decisions([forget.command_id], timeout_s=120)[forget.command_id] == "ACCEPTED"
            w.kill()  # before, during or after the receipt: whichever, it is owed until it is on the ledger

        def receipts() -> list[dict[str, object]]:
            out = []
            for msg in read_topic(quick, "events"):
                if msg.value() is not None:
                    name, rec = default_codec().decode(msg.value())
                    if name == "ErasureReceipted" and rec["command_id"] == forget.command_id:
                        out.append(rec)
            return out

        with WorkerProcess(quick) as w:
            found = poll(receipts, timeout_s=60, what="the receipt after the restart")
            assert found[0]["memory_id"] == m.memory_id and found[0]["verified"]
            wait_caught_up(quick, alive=w.alive)
            with connect(quick) as conn:
                owed = poll(lambda: conn.execute("SELECT count(*) FROM erasure_pending WHERE command_id = %s",
                                                 (forget.command_id,)).fetchone() == (0,) or None,
                            timeout_s=30, what="nothing owed")
            assert owed
