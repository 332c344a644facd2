"""What users ask to forget (issue 14 part 3) against the real broker, Postgres, index and worker:
the right to erasure (``ForgetSubject``, field case F2), forgetting by selector with a dry run,
lineage (derivatives go with their source, F3's kind), the legal hold, retention, and the bad inputs
(unknown id, another subject's memory, twice, empty selector, a stranger's ForgetSubject)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memwarden.keystore import admin_signer
from memwarden.ops.progress import wait_caught_up
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.schemas.codec import default_codec
from memwarden.settings import Settings
from tests.integration.conftest import poll, read_topic, rows

pytestmark = [pytest.mark.integration]


def _decided(client: MemwardenClient, receipt: Any) -> dict[str, Any]:
    return client.decided([receipt.command_id], timeout_s=120)[receipt.command_id]


def _codes(decision: dict[str, Any]) -> list[str]:
    return [r["code"] for r in decision["reasons"]]


def _readable(client: MemwardenClient, who: str, query: str) -> set[str]:
    return {m.memory_id for mode in ("hybrid", "dense", "lexical")
            for m in client.recall(who, query, k=20, mode=mode, freshness=False, include_untrusted=True)}


def _receipts(settings: Settings, command_id: str | None = None, memory_id: str | None = None) -> list[dict[str, Any]]:
    out = []
    for msg in read_topic(settings, "events"):
        if msg.value() is not None:
            name, rec = default_codec().decode(msg.value())
            if name == "ErasureReceipted" and rec["command_id"] == (command_id or rec["command_id"]) and (
                    rec["memory_id"] == (memory_id or rec["memory_id"])):
                out.append(rec)
    return out


def test_forget_subject_erases_one_subject_and_leaves_the_others(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient, principal: Callable[..., str]) -> None:
    alice, bob = principal(), principal()
    mine = [client.record(principal=alice, subject=alice, text=f"alice note {i} about gardening roses")
            for i in range(3)]
    theirs = [client.record(principal=bob, subject=bob, text=f"bob note {i} about gardening roses")
              for i in range(2)]
    client.decisions([r.command_id for r in mine + theirs], timeout_s=120)
    stranger = _decided(client, client.forget_subject(alice, principal=bob))
    assert stranger["outcome"] == "REJECTED" and _codes(stranger) == ["NOT_SUBJECT"]
    dry = _decided(client, client.forget_subject(alice, principal=alice, dry_run=True))
    assert dry["outcome"] == "ACCEPTED" and sorted(dry["memory_ids"]) == sorted(r.memory_id for r in mine)
    wait_caught_up(namespace, alive=worker.alive)
    assert {r.memory_id for r in mine} <= _readable(client, alice, "gardening roses")  # a dry run forgets nothing
    forget = client.forget_subject(alice, principal=alice, reason="right to erasure")
    done = _decided(client, forget)
    assert done["outcome"] == "ACCEPTED" and sorted(done["memory_ids"]) == sorted(r.memory_id for r in mine)
    assert not {r.memory_id for r in mine} & _readable(client, alice, "alice note gardening roses")
    assert {r.memory_id for r in theirs} <= _readable(client, bob, "bob note gardening roses")
    receipts = poll(lambda: _receipts(namespace, forget.command_id) if len(
        _receipts(namespace, forget.command_id)) == 3 else None, timeout_s=60, what="three erasure receipts")
    assert sorted(r["memory_id"] for r in receipts) == sorted(r.memory_id for r in mine)
    assert all(r["verified"] for r in receipts)
    left = rows(namespace, "SELECT count(*) FROM memory_versions WHERE memory_id = ANY(%s::uuid[])"
                " AND status <> 'forgotten'", ([r.memory_id for r in theirs],))
    assert left == [(2,)]


def test_forget_matching_by_tag_and_source_with_lineage_and_refusals(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient, principal: Callable[..., str]) -> None:
    carol = principal()
    tagged = client.record(principal=carol, subject=carol, text="carol's trip plan to Lisbon", tags=["travel"])
    other = client.record(principal=carol, subject=carol, text="carol likes green tea", tags=["food"])
    ref = f"import-{uuid.uuid4().hex[:6]}"
    sourced = client.record(principal=carol, subject=carol, text="carol's dentist is on Elm street", source_ref=ref)
    client.decisions([tagged.command_id, other.command_id, sourced.command_id], timeout_s=120)
    derived = client.record(principal=carol, subject=carol, text="summary: carol travels to Lisbon, dentist on Elm",
                            source_kind="MODEL_INFERENCE", derived_from=[tagged.memory_id, sourced.memory_id],
                            quoted_span="trip plan to Lisbon", epistemic_status="INFERRED")
    assert _decided(client, derived)["outcome"].startswith("ACCEPTED")
    grand = client.record(principal=carol, subject=carol, text="digest of carol's summary about Lisbon",
                          source_kind="MODEL_INFERENCE", derived_from=[derived.memory_id],
                          quoted_span="carol travels to Lisbon", epistemic_status="INFERRED")
    assert _decided(client, grand)["outcome"].startswith("ACCEPTED")

    empty = _decided(client, client.forget_matching(principal=carol))
    assert empty["outcome"] == "REJECTED" and _codes(empty) == ["EMPTY_SELECTOR"]
    by_tag = _decided(client, client.forget_matching(principal=carol, tags=["travel"], reason="trip cancelled"))
    assert by_tag["outcome"] == "ACCEPTED"
    assert set(by_tag["memory_ids"]) == {tagged.memory_id, derived.memory_id, grand.memory_id}  # lineage
    by_ref = _decided(client, client.forget_matching(principal=carol, source_references=[ref]))
    assert by_ref["memory_ids"] == [sourced.memory_id]
    wait_caught_up(namespace, alive=worker.alive)
    seen = _readable(client, carol, "carol Lisbon dentist Elm summary digest")
    assert not {tagged.memory_id, derived.memory_id, grand.memory_id, sourced.memory_id} & seen
    assert other.memory_id in _readable(client, carol, "carol likes green tea")

    twice = _decided(client, client.forget(tagged.memory_id, principal=carol, subject=carol))
    assert twice["outcome"] == "ACCEPTED" and _codes(twice) == ["ALREADY_FORGOTTEN"]
    unknown = _decided(client, client.forget(str(uuid.uuid4()), principal=carol, subject=carol))
    assert unknown["outcome"] == "REJECTED" and _codes(unknown) == ["UNKNOWN_MEMORY"]
    dave = principal()
    foreign = _decided(client, client.forget(other.memory_id, principal=dave, subject=dave))
    assert foreign["outcome"] == "REJECTED" and _codes(foreign) == ["SUBJECT_MISMATCH"]
    posing = _decided(client, client.forget(other.memory_id, principal=dave, subject=carol))
    assert posing["outcome"] == "REJECTED" and _codes(posing) == ["NOT_OWNER"]
    not_theirs = _decided(client, client.forget_matching(principal=dave, subjects=[carol]))
    assert not_theirs["memory_ids"] == [] and "NOT_PERMITTED" in _codes(not_theirs)
    assert other.memory_id in _readable(client, carol, "carol likes green tea")


def test_a_legal_hold_makes_a_forget_wait_until_it_is_lifted(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient, principal: Callable[..., str]) -> None:
    erin = principal()
    admin = admin_signer(namespace)
    client.add_signer(admin)
    kept = client.record(principal=erin, subject=erin, text="erin signed the lease on March 3")
    client.decisions([kept.command_id], timeout_s=120)
    hold_id = f"case-{uuid.uuid4().hex[:6]}"
    assert _decided(client, client.place_hold(hold_id, by=admin.principal_id, subjects=[erin],
                                              reason="litigation"))["outcome"] == "ACCEPTED"
    stranger = _decided(client, client.place_hold("nope", by=erin, subjects=[erin]))
    assert stranger["outcome"] == "REJECTED" and _codes(stranger) == ["NOT_ADMIN"]
    forget = client.forget(kept.memory_id, principal=erin, subject=erin, reason="please forget")
    waiting = _decided(client, forget)
    assert waiting["outcome"] == "DEFERRED" and _codes(waiting)[0] == "LEGAL_HOLD" and hold_id in str(waiting)
    wait_caught_up(namespace, alive=worker.alive)
    assert kept.memory_id in _readable(client, erin, "erin lease March")  # held: preserved
    lift = _decided(client, client.lift_hold(hold_id, by=admin.principal_id))
    assert lift["outcome"] == "ACCEPTED" and lift["memory_ids"] == [kept.memory_id]
    assert not {kept.memory_id} & _readable(client, erin, "erin lease March")
    receipt = poll(lambda: _receipts(namespace, forget.command_id), timeout_s=60, what="the receipt")[0]
    assert receipt["memory_id"] == kept.memory_id and receipt["verified"]
    again = _decided(client, client.lift_hold(hold_id, by=admin.principal_id))
    assert _codes(again) == ["ALREADY_LIFTED"]


def test_a_memory_past_expires_at_is_forgotten_with_a_receipt(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient, principal: Callable[..., str]) -> None:
    frank = principal()
    soon = datetime.now(UTC) + timedelta(seconds=3)
    short = client.record(principal=frank, subject=frank, text="frank's one-time code is 7731", expires_at=soon)
    stays = client.record(principal=frank, subject=frank, text="frank's favourite colour is teal")
    client.decisions([short.command_id, stays.command_id], timeout_s=120)
    started = time.monotonic()

    def expired() -> list[tuple[Any, ...]] | None:
        found = rows(namespace, "SELECT forgotten FROM gate_memories WHERE memory_id = %s", (short.memory_id,))
        return found if found == [(True,)] else None

    poll(expired, timeout_s=60, what="the expired memory forgotten by retention")
    print(f"retention forgot the memory {time.monotonic() - started:.1f} s after it was decided")
    receipts = poll(lambda: _receipts(namespace, memory_id=short.memory_id), timeout_s=60,
                    what="the retention receipt")
    assert receipts[0]["verified"]
    assert stays.memory_id in _readable(client, frank, "favourite colour teal")
