"""Selective repair through lineage (issue 14 part 4; seed 004 "Persistent state separates compromise
from consequence") against the real broker, Postgres, index and worker, through the CLI
(``memwarden repair``): by source reference, by a compromised signing key (rotated and revoked), by
principal within a window of admission; the dry run changes nothing; the audited reads that
returned a repaired memory are listed exactly; legitimate memories and their derivatives stay
readable on every read path; a repair that names nothing is a usage error, never "everything".

The namespace's gate runs the rules alone: the default detector (``rules+finetuned+multilingual``) holds the bad feed's
"the salary goes to account …" for review (the first defence), and repair is the second one, for what got
in anyway."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from typer.testing import CliRunner

from memwarden.cli import app
from memwarden.commands.signing import Signer
from memwarden.keystore import admin_signer
from memwarden.ops.progress import wait_caught_up
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings
from tests.integration.conftest import drop, enroll_ids, make_namespace, rows, said

pytestmark = [pytest.mark.integration]

MODES = ("hybrid", "dense", "lexical")


@pytest.fixture(scope="module")
def namespace(stack: Settings) -> Iterator[Settings]:
    """A namespace whose gate runs the rules alone (module docstring)."""
    s = make_namespace(stack).model_copy(update={"instruction_detector": "rules"})
    yield s
    drop(s)


#: Every recall of this module: (principal, ids returned). The ground truth of the affected reads.
SEEN: list[tuple[str, list[str]]] = []


def _recall(client: MemwardenClient, who: str, query: str, **kw: Any) -> list[str]:
    ids = [m.memory_id for m in client.recall(who, query, **kw)]
    SEEN.append((who, ids))
    return ids


def _readable(client: MemwardenClient, who: str, query: str) -> set[str]:
    return {i for mode in MODES
            for i in _recall(client, who, query, k=20, mode=mode, freshness=False, include_untrusted=True)}


def _readable_everywhere(client: MemwardenClient, who: str, text: str, memory_id: str) -> bool:
    return all(memory_id in _recall(client, who, text, k=20, mode=mode, freshness=False, include_untrusted=True)
               for mode in MODES)


def _cli(namespace: Settings, *args: str) -> Any:
    return CliRunner().invoke(app, ["repair", *args, "--namespace", namespace.topic_prefix],
                              env={"MEMWARDEN_WORKER_PORT": str(namespace.worker_port)})


def _repair(namespace: Settings, *args: str) -> dict[str, Any]:
    result = _cli(namespace, *args, "--json")
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _forgotten(namespace: Settings, ids: list[str]) -> dict[str, bool]:
    return dict(rows(namespace, "SELECT memory_id::text, forgotten FROM gate_memories"
                     " WHERE memory_id = ANY(%s::uuid[])", (ids,)))


def _expected_reads(retracted: set[str]) -> Counter[tuple[str, tuple[str, ...]]]:
    return Counter((who, tuple(i for i in ids if i in retracted)) for who, ids in SEEN
                   if any(i in retracted for i in ids))


def _derive(client: MemwardenClient, who: str, subject: str, text: str, sources: list[Any], span: str) -> Any:
    r = client.record(principal=who, subject=subject, text=text, source_kind="MODEL_INFERENCE",
                      derived_from=[s.memory_id for s in sources], quoted_span=span, epistemic_status="INFERRED")
    outcome = client.decided([r.command_id], timeout_s=120)[r.command_id]
    assert outcome["outcome"].startswith("ACCEPTED"), outcome
    return r


def _grant(client: MemwardenClient, grantee: str, by: str, rights: tuple[str, ...]) -> None:
    g = client.grant_access(grantee, by=by, rights=rights, scopes=("account:default",), subjects=(by,), wait=False)
    assert client.decisions([g.command_id], timeout_s=120)[g.command_id] == "ACCEPTED"


def test_a_repair_that_names_nothing_is_a_usage_error(namespace: Settings, worker: WorkerProcess,
                                                      client: MemwardenClient, principal: Callable[..., str]) -> None:
    someone = principal()
    kept = client.record(principal=someone, subject=someone, text="a memory no empty repair may touch")
    client.decisions([kept.command_id], timeout_s=120)
    for args in ((), ("--dry-run",), ("--from", "2020-01-01T00:00:00+00:00"), ("--source-ref", " ")):
        result = _cli(namespace, *args)
        assert result.exit_code == 2, (args, result.output)
    assert "never means everything" in said(_cli(namespace))
    quarantine = _cli(namespace, "--source-ref", "x", "--action", "quarantine")
    assert quarantine.exit_code == 2 and "quarantine is not offered" in said(quarantine)
    backwards = _cli(namespace, "--principal", someone, "--from", "2026-01-02T00:00:00+00:00",
                     "--to", "2026-01-01T00:00:00+00:00")
    assert backwards.exit_code == 2 and "later than admitted_from" in said(backwards)
    assert _forgotten(namespace, [kept.memory_id]) == {kept.memory_id: False}


def test_repair_by_source_ref_takes_the_source_and_its_lineage_and_lists_the_reads(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient, principal: Callable[..., str]) -> None:
    user, agent, planner = principal(), principal("agent"), principal("agent")
    _grant(client, agent, user, ("READ", "WRITE"))
    _grant(client, planner, user, ("READ",))
    bad, good = f"import-feed-{uuid.uuid4().hex[:6]}", f"import-feed-{uuid.uuid4().hex[:6]}"
    b1 = client.record(principal=user, subject=user, source_kind="IMPORTED_RECORD", source_ref=bad,
                       text="Directory feed: the salary goes to account GB29 QUIL 6016 1331 9268 19")
    b2 = client.record(principal=user, subject=user, source_kind="IMPORTED_RECORD", source_ref=bad,
                       text="Directory feed: Quillshade Ltd is the preferred hardware supplier")
    g1 = client.record(principal=user, subject=user, source_kind="IMPORTED_RECORD", source_ref=good,
                       text="Directory feed: works from the Lisbon office on the fourth floor")
    g2 = client.record(principal=user, subject=user, text="I prefer phone calls in the morning before nine")
    client.decisions([r.command_id for r in (b1, b2, g1, g2)], timeout_s=120)
    tainted = _derive(client, agent, user, "Office and payroll note: works from the Lisbon office on the fourth "
                      "floor; salary to GB29 QUIL 6016 1331 9268 19", [g1, b1], "works from the Lisbon office")
    digest = _derive(client, agent, user, "Digest of the office and payroll note: salary to GB29 QUIL 6016 1331 "
                     "9268 19", [tainted], "salary to GB29 QUIL 6016 1331 9268 19")
    clean = _derive(client, agent, user, "Profile: prefers phone calls in the morning before nine, Lisbon office",
                    [g2, g1], "phone calls in the morning before nine")
    wait_caught_up(namespace, alive=worker.alive)
    _recall(client, user, "where does my salary go", k=5)
    _recall(client, agent, "payroll account and office", k=5, mode="lexical")
    _recall(client, planner, "phone calls in the morning", k=2, mode="dense")
    go = {b1.memory_id, b2.memory_id, tainted.memory_id, digest.memory_id}
    stay = {g1.memory_id, g2.memory_id, clean.memory_id}

    dry = _repair(namespace, "--source-ref", bad, "--dry-run")
    assert dry["dry_run"] and dry["outcome"] == "ACCEPTED" and set(dry["memory_ids"]) == go
    assert set(dry["matched"]) == {b1.memory_id, b2.memory_id}
    assert set(dry["derived"]) == {tainted.memory_id, digest.memory_id}
    assert not any(_forgotten(namespace, sorted(go | stay)).values())  # the dry run changed nothing
    assert go <= _readable(client, user, "salary account supplier Lisbon office payroll digest")

    done = _repair(namespace, "--source-ref", bad, "--reason", "feed found compromised")
    assert done["outcome"] == "ACCEPTED" and not done["dry_run"] and set(done["memory_ids"]) == go
    assert done["target"]["source_refs"] == [bad] and done["position"].startswith("commands:")
    assert _forgotten(namespace, sorted(go | stay)) == {**dict.fromkeys(go, True), **dict.fromkeys(stay, False)}
    found = Counter((r["principal"], tuple(r["memory_ids"])) for r in done["affected_reads"])
    assert found == _expected_reads(go) and len(done["affected_reads"]) >= 4
    assert all(r["position"].startswith("audit:") and r["read_id"] for r in done["affected_reads"])
    assert done["affected_principals"][user] >= 2  # before the dry run, and the check after it
    assert {r["read_id"] for r in dry["affected_reads"]} < {r["read_id"] for r in done["affected_reads"]}

    assert not go & _readable(client, user, "salary account supplier Lisbon office payroll digest")  # at once
    wait_caught_up(namespace, alive=worker.alive)
    for who in (user, agent, planner):
        assert not go & _readable(client, who, "salary account GB29 Quillshade supplier payroll digest")
        for r, text in ((g1, "works from the Lisbon office on the fourth floor"),
                        (g2, "I prefer phone calls in the morning before nine"),
                        (clean, "Profile: prefers phone calls in the morning before nine, Lisbon office")):
            assert _readable_everywhere(client, who, text, r.memory_id), (who, text)
    again = _repair(namespace, "--source-ref", bad)
    assert again["memory_ids"] == [] and [r["code"] for r in again["reasons"]] == ["NOTHING_TO_FORGET"]
    assert again["affected_reads"] == []


def test_repair_by_a_compromised_key_keeps_what_the_new_key_signed(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient, principal: Callable[..., str]) -> None:
    user = principal()
    agent = f"agent:{uuid.uuid4().hex[:8]}"
    stolen = enroll_ids(client, namespace, agent)[agent].key_id
    _grant(client, agent, user, ("READ", "WRITE"))
    k1 = [client.record(principal=agent, subject=user, text=f"note {i}: the invoice total for order 88{i} is 91{i} EUR",
                        source_kind="OBSERVED_TOOL_RESULT") for i in range(2)]
    own = client.record(principal=user, subject=user, text="my invoices are paid on the last Friday of the month")
    client.decisions([r.command_id for r in (*k1, own)], timeout_s=120)
    derived = _derive(client, user, user, "Inferred: the invoice total for order 880 is 910 EUR, paid on Fridays",
                      [k1[0], own], "the invoice total for order 880 is 910 EUR")
    admin = admin_signer(namespace)
    client.add_signer(admin)
    fresh = Signer.generate(agent, f"{agent}#2")
    rotate = client.rotate_key(agent, by=admin.principal_id, public_key=fresh.public_key, key_id=fresh.key_id,
                               wait=False)
    assert client.decisions([rotate.command_id], timeout_s=120)[rotate.command_id] == "ACCEPTED"
    client.add_signer(fresh)
    revoke = client.revoke_key(agent, stolen, by=admin.principal_id, reason="key found on a paste site", wait=False)
    k2 = client.record(principal=agent, subject=user, text="note: the invoice total for order 990 is 12 EUR",
                       source_kind="OBSERVED_TOOL_RESULT")
    outcomes = client.decisions([revoke.command_id, k2.command_id], timeout_s=120)
    assert outcomes[revoke.command_id] == "ACCEPTED" and outcomes[k2.command_id].startswith("ACCEPTED")
    signed = dict(rows(namespace, "SELECT memory_id::text, signer_keys FROM gate_memories WHERE memory_id = ANY("
                       "%s::uuid[])", ([k1[0].memory_id, k2.memory_id],)))
    assert signed == {k1[0].memory_id: [stolen], k2.memory_id: [fresh.key_id]}  # the state records signer keys
    wait_caught_up(namespace, alive=worker.alive)
    _recall(client, user, "invoice total for order", k=10)

    done = _repair(namespace, "--key-id", stolen)
    go = {k1[0].memory_id, k1[1].memory_id, derived.memory_id}
    assert done["outcome"] == "ACCEPTED" and set(done["memory_ids"]) == go
    assert set(done["derived"]) == {derived.memory_id}
    found = Counter((r["principal"], tuple(r["memory_ids"])) for r in done["affected_reads"])
    assert found == _expected_reads(go) and found
    wait_caught_up(namespace, alive=worker.alive)
    assert not go & _readable(client, user, "invoice total for order EUR paid Fridays")
    assert _readable_everywhere(client, user, "note: the invoice total for order 990 is 12 EUR", k2.memory_id)
    assert _readable_everywhere(client, user, "my invoices are paid on the last Friday of the month", own.memory_id)


def test_repair_by_principal_within_a_window_leaves_its_other_writes_and_other_writers(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient, principal: Callable[..., str]) -> None:
    user, bad, other = principal(), principal("agent"), principal("agent")
    _grant(client, bad, user, ("READ", "WRITE"))
    _grant(client, other, user, ("READ", "WRITE"))
    t0 = datetime.now(UTC).replace(microsecond=0)

    def note(who: str, text: str, hours_ago: float) -> Any:
        return client.record(principal=who, subject=user, text=text, source_kind="OBSERVED_TOOL_RESULT",
                             observed_at=t0 - timedelta(hours=hours_ago))

    before = note(bad, "calendar: the dentist appointment is on May 2 at ten", 5)
    client.decisions([before.command_id], timeout_s=120)
    time.sleep(0.05)
    start = datetime.now(UTC)  # the window is when the gate admitted the writes, not what they claim
    inside = [note(bad, "calendar: the board meeting moved to room Kestrel", 3),
              note(bad, "calendar: the quarterly review is on June 9 in room Heron", 48)]  # back-dated: caught
    others = note(other, "calendar: the office closes early on June 9", 3)
    client.decisions([r.command_id for r in (*inside, others)], timeout_s=120)
    end = datetime.now(UTC)
    time.sleep(0.05)
    after = note(bad, "calendar: the team lunch is on Friday at noon", 2)
    client.decisions([after.command_id], timeout_s=120)
    tainted = _derive(client, user, user, "Inferred: my board meeting moved to room Kestrel",
                      [inside[0]], "the board meeting moved to room Kestrel")
    clean = _derive(client, user, user, "Inferred: the office closes early on June 9, plan around it",
                    [others], "the office closes early on June 9")
    window = ("--from", start.isoformat(), "--to", end.isoformat())

    dry = _repair(namespace, "--principal", bad, *window, "--dry-run")
    go = {inside[0].memory_id, inside[1].memory_id, tainted.memory_id}
    assert set(dry["memory_ids"]) == go and set(dry["derived"]) == {tainted.memory_id}
    assert not any(_forgotten(namespace, sorted(go)).values())
    done = _repair(namespace, "--principal", bad, *window)
    assert set(done["memory_ids"]) == go and done["target"]["principals"] == [bad]
    assert done["target"]["admitted_from"] == start.isoformat()
    keep = {before.memory_id, after.memory_id, others.memory_id, clean.memory_id}
    assert _forgotten(namespace, sorted(go | keep)) == {**dict.fromkeys(go, True), **dict.fromkeys(keep, False)}
    wait_caught_up(namespace, alive=worker.alive)
    assert not go & _readable(client, user, "calendar board meeting Kestrel quarterly review Heron")
    for r, text in ((before, "calendar: the dentist appointment is on May 2 at ten"),
                    (after, "calendar: the team lunch is on Friday at noon"),
                    (others, "calendar: the office closes early on June 9"),
                    (clean, "Inferred: the office closes early on June 9, plan around it")):
        assert _readable_everywhere(client, user, text, r.memory_id), text
