"""The REST gateway's mapping from a gate decision (outcome, reason codes) and from an authentication
refusal to an HTTP status (:mod:`memwarden.commands.gateway_status`): a refusal is never a success."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memwarden.commands.gateway_status import (
    AUTH_STATUS,
    CONFLICT,
    FORBIDDEN,
    INFORMATIVE,
    NOT_FOUND,
    auth_status,
    decision_status,
    refusal_status,
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
    known = set(re.findall(r'"([A-Z][A-Z_]{1,})"', source))
    assert (NOT_FOUND | FORBIDDEN | CONFLICT | INFORMATIVE) - known == set()


@pytest.mark.parametrize(("code", "status"), [
    ("TOKEN_MISSING", 401), ("TOKEN_MALFORMED", 401), ("UNKNOWN_TOKEN", 401), ("TOKEN_REVOKED", 401),
    ("TOKEN_EXPIRED", 401), ("PRINCIPAL_MISMATCH", 403), ("NOT_PERMITTED", 403), ("NO_SIGNING_KEY", 409),
    ("SOMETHING_ELSE", 401),
])
def test_authentication_refusals(code: str, status: int) -> None:
    assert auth_status(code) == status
    assert set(AUTH_STATUS.values()) == {401, 403, 409}
