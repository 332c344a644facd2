"""The REST gateway's mapping from a gate decision (outcome, reason codes) and from an authentication
refusal to an HTTP status (:mod:`memwarden.commands.gateway_status`): a refusal is never a success."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from memwarden.commands.gateway_status import (
    AUTH_STATUS,
    COMMAND_ID_TAKEN,
    CONFLICT,
    FORBIDDEN,
    INFORMATIVE,
    NOT_FOUND,
    auth_status,
    decision_status,
    refusal_status,
    taken,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("outcome", "creates", "status"), [
    ("ACCEPTED", True, 201), ("ACCEPTED_UNVERIFIED", True, 201), ("ACCEPTED", False, 200),
    ("ACCEPTED_UNVERIFIED", False, 200), ("DEFERRED", False, 202), ("QUARANTINED", True, 422),
    ("DUPLICATE", True, 409), ("SOMETHING_NEW", True, 502),
])
def test_each_outcome_has_its_status(outcome: str, creates: bool, status: int) -> None:
    assert decision_status(outcome, ["OK"], creates=creates) == status


@pytest.mark.parametrize(("codes", "status"), [
    (["UNKNOWN_MEMORY"], 404), (["UNKNOWN_GRANT"], 404), (["UNKNOWN_TOKEN"], 404),
    (["NOT_OWNER"], 403), (["NO_WRITE_AUTHORITY"], 403), (["SCOPE_NOT_GRANTED"], 403), (["NOT_GRANTOR"], 403),
    (["BAD_SIGNATURE"], 403), (["KEY_REVOKED"], 403), (["NOT_SUBJECT"], 403),
    (["DUPLICATE_COMMAND_ID"], 409), (["GRANT_EXISTS"], 409), (["CORE_FACT_CONFLICT"], 409),
    (["MEMORY_FORGOTTEN"], 409),
    (["TEXT_TOO_LONG"], 422), (["STATUS_INFLATED"], 422), (["UNKNOWN_SCOPE"], 422), (["EMPTY_SELECTOR"], 422),
    (["OBSERVED_IN_FUTURE"], 422), (["A_CODE_NOBODY_KNOWS"], 422), ([], 422),
    (["NOT_PERMITTED", "UNKNOWN_MEMORY"], 404),  # informative codes never decide
    (["LEGAL_HOLD", "NOT_OWNER", "UNKNOWN_MEMORY"], 403),  # the first refusal decides
])
def test_a_rejection_is_mapped_by_its_first_refusal_code(codes: list[str], status: int) -> None:
    assert refusal_status(codes) == status == decision_status("REJECTED", codes, creates=True)


def test_no_refusal_is_ever_a_success() -> None:
    for code in {*NOT_FOUND, *FORBIDDEN, *CONFLICT, *INFORMATIVE, "ANYTHING"}:
        assert decision_status("REJECTED", [code], creates=True) >= 400
    for outcome in ("QUARANTINED", "DUPLICATE", "REJECTED"):
        assert decision_status(outcome, ["OK"], creates=False) >= 400


def test_the_code_sets_do_not_overlap() -> None:
    assert not (NOT_FOUND & FORBIDDEN) and not (NOT_FOUND & CONFLICT) and not (FORBIDDEN & CONFLICT)
    assert not (INFORMATIVE & (NOT_FOUND | FORBIDDEN | CONFLICT))


def test_the_mapped_gate_codes_exist_in_the_gate() -> None:
    """Every code the table names is one the gate (or the token rules) can give: no dead entries."""
    source = "\n".join(p.read_text() for p in (ROOT / "commands").rglob("*.py") if p.name != "gateway_status.py")
    known = set(re.findall(r'"([A-Z][A-Z_]{1,})"', source)) | {COMMAND_ID_TAKEN}  # the gateways' own (taken)
    assert (NOT_FOUND | FORBIDDEN | CONFLICT | INFORMATIVE) - known == set()


def test_a_decision_under_a_reused_command_id_is_shown_to_its_own_principal_only() -> None:
    """A command id another principal's command holds: its caller sees ``COMMAND_ID_TAKEN`` (409), nothing of
    the other decision (newcomer trial, twentieth session: bob got alice's ACCEPTED with her memory id)."""
    alices = {"outcome": "ACCEPTED", "reasons": [{"code": "OK", "message": "accepted", "field": None}],
              "principal": "user:alice", "memory_id": "m-alice", "position": {"offset": 7}, "decided_at": "t"}
    assert taken(alices, "user:alice") is None and taken({"outcome": "REJECTED"}, "user:bob") is None
    shown = taken(alices, "user:bob")
    assert shown is not None and shown["outcome"] == "REJECTED" and "m-alice" not in str(shown)
    assert [r["code"] for r in shown["reasons"]] == [COMMAND_ID_TAKEN] and shown["position"] is None
    assert decision_status(shown["outcome"], [COMMAND_ID_TAKEN], creates=True) == 409


def test_a_waiting_client_call_raises_for_a_reused_command_id() -> None:
    from memwarden.errors import Refused
    from memwarden.producers.building import Receipt
    from memwarden.producers.governance import Settling

    class Stub(Settling):
        def decided(self, command_ids: Any, timeout_s: float = 60.0) -> dict[str, dict[str, Any]]:
            return {"c1": {"outcome": "ACCEPTED", "reasons": [{"code": "OK", "message": "", "field": None}],
                           "principal": "user:alice"}}

    with pytest.raises(Refused) as raised:
        Stub()._settled(Receipt("c1", "g1", "t", 0, 3, "user:bob"), wait=True)
    assert "COMMAND_ID_TAKEN" in str(raised.value)
    assert Stub()._settled(Receipt("c1", "g1", "t", 0, 3, "user:alice"), wait=True).outcome == "ACCEPTED"


@pytest.mark.parametrize(("code", "status"), [
    ("TOKEN_MISSING", 401), ("TOKEN_MALFORMED", 401), ("UNKNOWN_TOKEN", 401), ("TOKEN_REVOKED", 401),
    ("TOKEN_EXPIRED", 401), ("PRINCIPAL_MISMATCH", 403), ("NOT_PERMITTED", 403), ("NO_SIGNING_KEY", 409),
    ("SOMETHING_ELSE", 401),
])
def test_authentication_refusals(code: str, status: int) -> None:
    assert auth_status(code) == status
    assert set(AUTH_STATUS.values()) == {401, 403, 409}
