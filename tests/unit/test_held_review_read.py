"""Who reads a write held for review (:func:`memwarden.read_api.held.held_refusal`): the principals who may review
it, a reviewer that did not write it, while it is held; a non-reviewer learns nothing of what is held."""

from __future__ import annotations

from typing import Any

import pytest

from memwarden.commands.principals import PrincipalKind, PrincipalRecord
from memwarden.read_api.held import held_refusal

CID = "00000000-0000-4000-8000-0000000000c1"
RITA = PrincipalRecord("user:rita", PrincipalKind.USER, frozenset({"reviewer"}))
REVIEWER_KIND = PrincipalRecord("reviewer:ida", PrincipalKind.REVIEWER)
BOB = PrincipalRecord("user:bob", PrincipalKind.USER)


def row(status: str = "pending", writer: str = "agent:scribe") -> dict[str, Any]:
    return {"command_id": CID, "status": status, "principal": writer}


@pytest.mark.parametrize(("record", "held", "expected"), [
    (RITA, row(), None),  # the reviewer role
    (REVIEWER_KIND, row(), None),  # the REVIEWER kind implies it, as at the gate
    (BOB, row(), (403, "NOT_A_REVIEWER")),
    (None, row(), (403, "NOT_A_REVIEWER")),  # unknown to the registry
    (BOB, None, (403, "NOT_A_REVIEWER")),  # a non-reviewer is told nothing of what is held
    (RITA, None, (404, "NOT_QUARANTINED")),
    (RITA, row("approved"), (409, "ALREADY_REVIEWED")),
    (RITA, row("rejected"), (409, "ALREADY_REVIEWED")),
    (RITA, row(writer="user:rita"), (403, "SELF_REVIEW")),  # its own write: no review, no reviewer's read
])
def test_only_a_reviewer_that_did_not_write_it_reads_a_held_write(
        record: PrincipalRecord | None, held: dict[str, Any] | None, expected: tuple[int, str] | None) -> None:
    principal = record.principal_id if record is not None else "user:ghost"
    refusal = held_refusal(principal, record, held, CID)
    assert (refusal[:2] if refusal is not None else None) == expected


def test_the_answer_names_the_source_from_the_envelope() -> None:
    from datetime import UTC, datetime

    from memwarden.read_api.held import held_json

    held = {**row(), "memory_id": "m1", "subject": "user:carol", "reasons": [{"code": "INSTRUCTIONS_IN_CONTENT"}],
            "quarantined_at": datetime(2026, 12, 8, tzinfo=UTC), "ledger_partition": 2, "ledger_offset": 41}
    rec = {"envelope": {"scope": "account:default", "source": {"kind": "EMAIL_CONTENT", "reference": "mail:7"}}}
    shown = held_json(held, "RecordMemory", rec, "the text", "mw.commands")
    assert (shown["scope"], shown["source_kind"], shown["source_ref"]) == ("account:default", "EMAIL_CONTENT", "mail:7")
    assert shown["position"] == {"topic": "mw.commands", "partition": 2, "offset": 41} and shown["withheld"] is None
    assert held_json(held, "RecordMemory", rec, None, "mw.commands")["withheld"] == "forgotten"
