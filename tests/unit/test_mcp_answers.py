"""The MCP server's pure mappings (issue 10, item 2): a refusal is an error result with its codes, never
success; bad arguments name their field; the token comes from the environment only; which forget a
``forget`` call is; what ``why`` shows of a memory's audit; the gateway mark of what the server signs."""

from __future__ import annotations

import json
import uuid

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memwarden.api.bodies import ForgetBody, RecallBody
from memwarden.commands.model import PrincipalKind
from memwarden.commands.principals import PrincipalRecord
from memwarden.errors import MemwardenError
from memwarden.mcp.answers import (
    TOKEN_ENV,
    forget_call,
    given,
    invalid,
    refusal,
    result,
    token_from_env,
    why_of,
)


def test_the_token_comes_from_the_environment_or_the_server_does_not_start() -> None:
    assert token_from_env({TOKEN_ENV: " mwt_abc \n"}) == "mwt_abc"
    for env in ({}, {TOKEN_ENV: ""}, {TOKEN_ENV: "  "}):
        with pytest.raises(MemwardenError, match=TOKEN_ENV) as caught:
            token_from_env(env)
        assert "\n" not in str(caught.value)


@pytest.mark.parametrize(("status", "error"), [(200, False), (201, False), (202, False), (400, True), (403, True),
                                               (404, True), (409, True), (422, True), (503, True), (504, True)])
def test_a_status_of_400_or_more_is_an_error_result(status: int, error: bool) -> None:
    r = result(status, {"outcome": "REJECTED" if error else "ACCEPTED", "codes": ["X"]})
    assert r.is_error is error
    assert r.structured_content == {"outcome": "REJECTED" if error else "ACCEPTED", "codes": ["X"], "status": status}
    assert json.loads(r.content[0].text) == r.structured_content  # type: ignore[union-attr]


def test_a_refusal_carries_its_code_and_codes() -> None:
    r = refusal(403, "NOT_OWNER", "not yours", "memory_id")
    assert r.is_error and r.structured_content == {"error": "not yours", "code": "NOT_OWNER", "codes": ["NOT_OWNER"],
                                                   "field": "memory_id", "status": 403}
    kept = refusal(422, "QUARANTINED", "held", None, {"codes": ["INJECTION_SUSPECTED", "QUARANTINED"]})
    assert kept.structured_content["codes"] == ["INJECTION_SUSPECTED", "QUARANTINED"]


def test_bad_arguments_name_their_field() -> None:
    with pytest.raises(ValidationError) as blank:
        RecallBody.model_validate({"query": "  "})
    assert invalid(blank.value).structured_content["field"] == "query"
    with pytest.raises(ValidationError) as missing:
        RecallBody.model_validate({"k": 3})
    assert invalid(missing.value).structured_content["code"] == "MISSING_FIELD"

    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")
        items: list[int] = Field(default_factory=list)

    with pytest.raises(ValidationError) as extra:
        Strict.model_validate({"nope": 1})
    assert invalid(extra.value).structured_content["code"] == "UNKNOWN_FIELD"
    with pytest.raises(ValidationError) as nested:
        Strict.model_validate({"items": [1, "x"]})
    out = invalid(nested.value)
    assert out.is_error and out.structured_content["field"] == "items[1]"
    with pytest.raises(ValidationError) as whole:
        Strict.model_validate(["not", "an", "object"])
    assert invalid(whole.value).structured_content["field"] == "arguments"
    # An argument named like a part of an HTTP request keeps its name (REST drops "query" as a source).
    with pytest.raises(ValidationError) as missing_query:
        RecallBody.model_validate({"k": 3})
    assert invalid(missing_query.value).structured_content["field"] == "query"


def test_given_drops_what_was_not_given() -> None:
    assert given(a=None, b=[], c="x", d=0, e=False) == {"c": "x", "d": 0, "e": False}


def test_which_forget_a_call_is() -> None:
    mid = uuid.uuid4()
    none: dict[str, object] = {"scopes": None, "tags": None, "memory_ids": None, "query": None}
    assert forget_call(mid, None, none, "", False) == mid
    dry = forget_call(mid, None, none, "why", True)
    assert isinstance(dry, ForgetBody) and dry.memory_ids == [mid] and dry.dry_run and dry.reason == "why"
    subject = forget_call(None, "user:alice", none, "", False)
    assert isinstance(subject, ForgetBody) and subject.subject == "user:alice" and not subject.criteria()
    matching = forget_call(mid, None, {**none, "tags": ["bike"]}, "", False)
    assert isinstance(matching, ForgetBody) and matching.memory_ids == [mid] and matching.tags == ["bike"]
    empty = forget_call(None, None, none, "", False)
    assert isinstance(empty, ForgetBody) and empty.subject is None and not empty.criteria()  # refused by the route
    with pytest.raises(ValidationError):
        forget_call(None, None, {**none, "query": ""}, "", False)


def test_why_shows_commands_and_decisions_never_content_or_reads() -> None:
    report = {"memory_id": "m1", "reads": [{"principal": "user:eve"}], "erasure_receipts": [],
              "timeline": [{"at": "commands:0:5", "command": {"kind": "RecordMemory", "principal": "user:a"},
                            "decision": {"outcome": "REJECTED", "policy_version": "p1", "decided_at": "t",
                                         "reasons": [{"code": "NOT_OWNER", "message": "m", "field": "f"}]},
                            "events": [], "content": "the secret text"},
                           {"at": "commands:0:6", "command": {"kind": "ForgetMemory"}, "decision": None}]}
    why = why_of(report)
    assert "reads" not in why and "the secret text" not in json.dumps(why)
    first, second = why["timeline"]
    assert first["decision"]["codes"] == ["NOT_OWNER"] and first["decision"]["outcome"] == "REJECTED"
    assert second["decision"]["outcome"] == "PENDING" and second["decision"]["codes"] == []


def test_what_the_server_signs_is_marked_mcp() -> None:
    from memwarden.mcp.server import McpCaller

    who = McpCaller("user:alice", "tok_1", PrincipalRecord("user:alice", PrincipalKind.USER), "MCP", "mcp:remember")
    assert who.attributes == {"gateway": "mcp", "gateway_token": "tok_1"}
