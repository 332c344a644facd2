"""``memwarden audit at | memory | principal`` against the real broker, worker and database: what the audit says
of content it does not show is true for each command (``audit memory`` has no ``--as``: it points at ``audit at
<position> --as``), a missing data key says the content is gone whoever asks, an unknown memory id is an error
(exit 1), a principal with nothing recorded is said so, and a time without a UTC offset is one line (exit 1)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient, Receipt
from memwarden.settings import Settings
from tests.integration.conftest import run_cli, said

pytestmark = pytest.mark.integration


def _at(r: Receipt) -> str:
    return f"commands:{r.partition}:{r.offset}"


def _json(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_withheld_and_gone_content_is_named_truly_by_each_command(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient,
        principal: Callable[..., str]) -> None:
    user = principal("user")
    kept = client.record(principal=user, subject=user, text="Wren waters the fern on Thursdays")
    command, _ = client.build_record(principal=user, subject=user, text="Wren's spare key is under the mat")
    keyless = client._publish([(command, command.memory_id, None)])[0]  # its data key never published
    decided = client.decisions([kept.command_id, keyless.command_id], timeout_s=120)
    assert decided == {kept.command_id: "ACCEPTED", keyless.command_id: "REJECTED"}, decided

    lineage = _json(run_cli(namespace, "audit", "memory", kept.memory_id, "--json"))
    assert lineage["timeline"][0]["content"] == (f"(withheld: see `memwarden audit at {_at(kept)} --as "
                                                 "<principal>`)")
    at = _json(run_cli(namespace, "audit", "at", _at(kept), "--json"))
    assert at["content"] == "(withheld: name a principal allowed to read it with --as)"
    # the full topic name, as receipts and `memwarden forget` print it, is the same position (it was refused)
    full = _json(run_cli(namespace, "audit", "at", f"{kept.topic}:{kept.partition}:{kept.offset}", "--json"))
    assert full == at
    stranger = principal("user")
    at_stranger = _json(run_cli(namespace, "audit", "at", _at(kept), "--as", stranger, "--json"))
    assert at_stranger["content"] == f"(withheld: {stranger} may not read it)"

    gone = "(the data key is missing: the content is gone)"
    assert _json(run_cli(namespace, "audit", "memory", keyless.memory_id, "--json"))["timeline"][0]["content"] == gone
    assert _json(run_cli(namespace, "audit", "at", _at(keyless), "--json"))["content"] == gone
    assert _json(run_cli(namespace, "audit", "at", _at(keyless), "--as", user, "--json"))["content"] == gone


def test_an_unknown_memory_is_an_error_and_an_idle_principal_is_said_so(
        namespace: Settings, worker: WorkerProcess) -> None:
    unknown = str(uuid.uuid4())
    r = run_cli(namespace, "audit", "memory", unknown)
    assert r.exit_code == 1 and f"no memory {unknown} on the ledger" in said(r), r.output

    nobody = f"user:nobody-{uuid.uuid4().hex[:6]}"
    idle = run_cli(namespace, "audit", "principal", nobody)
    assert idle.exit_code == 0 and f"nothing recorded for {nobody}" in said(idle), idle.output

    # newcomer trial, twenty-fifth session: these were answered "nothing recorded" / nothing, exit 0
    reversed_ = run_cli(namespace, "audit", "principal", nobody, "--from", "2030-01-01T00:00:00+00:00",
                        "--to", "2020-01-01T00:00:00+00:00")
    assert reversed_.exit_code == 1 and "--to" in said(reversed_) and "before --from" in said(reversed_)
    blank = run_cli(namespace, "audit", "principal", " ")
    assert blank.exit_code == 1 and "principal" in said(blank), blank.output
    garbage = run_cli(namespace, "audit", "reads", "--memory", "garbage")
    assert garbage.exit_code == 1 and "--memory" in said(garbage) and "UUID" in said(garbage), garbage.output


@pytest.mark.parametrize("option", ["--from", "--to"])
def test_a_time_without_offset_is_one_line(namespace: Settings, worker: WorkerProcess, client: MemwardenClient,
                                           principal: Callable[..., str], option: str) -> None:
    user = principal("user")  # with a decided write: a naive bound met an aware decision time (a TypeError)
    wrote = client.record(principal=user, subject=user, text="Wren's bus leaves at 8:05")
    client.decisions([wrote.command_id], timeout_s=120)
    r = run_cli(namespace, "audit", "principal", user, option, "2026-12-07T06:40:00")
    assert r.exit_code == 1, r.output
    assert f"{option}: must carry a UTC offset" in said(r) and "Traceback" not in r.output, r.output


def test_the_lineage_names_the_forget_of_many_that_removed_a_memory_and_the_review_of_a_held_write(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient,
        principal: Callable[..., str]) -> None:
    """Newcomer trial, nineteenth session: a memory forgotten by ``forget --tag`` (a ``ForgetMatching``, which
    names no memory id itself) showed no forget in ``audit memory`` or in ``audit at``'s ``later``; the review
    that closed a held write was missing from its timeline too."""
    user, agent, reviewer = principal("user"), principal("agent"), principal("reviewer")
    pet = client.record(principal=user, subject=user, text="Wren's cat is called Pixel", tags=["pets"])
    held = client.record(principal=agent, subject=user, text="Wren asked me to feed Pixel at noon")
    assert client.decisions([pet.command_id, held.command_id], timeout_s=120) == {
        pet.command_id: "ACCEPTED", held.command_id: "QUARANTINED"}
    by_tag = client.forget_matching(principal=user, tags=["pets"], wait=False)
    rejected = client.reject_quarantined(held.command_id, by=reviewer, subject=user, wait=False)
    assert client.decisions([by_tag.command_id, rejected.command_id], timeout_s=120) == {
        by_tag.command_id: "ACCEPTED", rejected.command_id: "ACCEPTED"}

    kinds = [(e["command"]["kind"], e["command"]["command_id"])
             for e in _json(run_cli(namespace, "audit", "memory", pet.memory_id, "--json"))["timeline"]]
    assert kinds == [("RecordMemory", pet.command_id), ("ForgetMatching", by_tag.command_id)]
    later = _json(run_cli(namespace, "audit", "at", _at(pet), "--json"))["later"]
    assert [(x["kind"], x["command_id"]) for x in later] == [("ForgetMatching", by_tag.command_id)]
    reviewed = [e["command"]["kind"] for e in _json(run_cli(namespace, "audit", "memory", held.memory_id,
                                                            "--json"))["timeline"]]
    assert reviewed == ["RecordMemory", "RejectQuarantined"]
