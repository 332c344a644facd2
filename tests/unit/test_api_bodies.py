"""The REST API's request bodies and error fields, without a server: strict types, unknown fields,
aware times, bounds, and the dotted field paths of refusals (:mod:`memwarden.api.bodies`,
:func:`memwarden.api.errors.field_of`)."""

from __future__ import annotations

import pydantic
import pytest

from memwarden.api.bodies import ForgetBody, GrantBody, RecallBody, RecordBody
from memwarden.api.errors import field_of


@pytest.mark.parametrize(("loc", "field"), [
    (("body", "k"), "k"), (("body", "fact", "value"), "fact.value"), (("body", "tags", 2), "tags[2]"),
    (("query", "wait"), "wait"), (("path", "memory_id"), "memory_id"), (("body",), "body"), ((), "body"),
])
def test_a_location_becomes_a_dotted_field(loc: tuple[object, ...], field: str) -> None:
    assert field_of(loc) == field


def _error(model: type[pydantic.BaseModel], data: dict[str, object]) -> tuple[str, str]:
    with pytest.raises(pydantic.ValidationError) as info:
        model.model_validate(data)
    first = info.value.errors()[0]
    return field_of(("body", *first["loc"])), first["type"]


@pytest.mark.parametrize(("data", "field", "kind"), [
    ({"query": ""}, "query", "string_too_short"), ({"query": "  "}, "query", "value_error"),
    ({"query": "q" * 2001}, "query", "string_too_long"), ({"query": "q", "k": 0}, "k", "greater_than_equal"),
    ({"query": "q", "k": 101}, "k", "less_than_equal"), ({"query": "q", "k": "5"}, "k", "int_type"),
    ({"query": "q", "k": True}, "k", "int_type"), ({"query": "q", "as_of": "2026-01-01T00:00:00"}, "as_of",
                                                     "timezone_aware"),
    ({"query": "q", "mode": "x"}, "mode", "literal_error"), ({"query": "q", "extra": 1}, "extra", "extra_forbidden"),
    ({"query": "q", "include_untrusted": "yes"}, "include_untrusted", "bool_type"),
    ({"query": "q", "recency": -0.5}, "recency", "value_error"), ({"query": "q", "recency": 101}, "recency",
                                                                  "value_error"),
    ({"query": "q", "recency": "1.5"}, "recency", "value_error"), ({"query": "q", "recency": True}, "recency",
                                                                   "value_error"),
    ({"query": "q", "repeats": "no"}, "repeats", "bool_type"),
])
def test_recall_bodies_are_strict(data: dict[str, object], field: str, kind: str) -> None:
    assert _error(RecallBody, data) == (field, kind)


def test_valid_bodies_keep_their_defaults() -> None:
    r = RecallBody.model_validate({"query": "tea", "as_of": "2026-01-01T00:00:00+01:00"})
    assert r.k == 10 and r.purpose == "general" and r.mode == "hybrid" and r.as_of is not None
    rec = RecordBody.model_validate({"text": "tea"})
    assert rec.scope == "account:default" and rec.subject is None and rec.tags == []


@pytest.mark.parametrize(("data", "field"), [
    ({"text": "t", "fact": {"entity": "e", "attribute": "a", "value": "v", "x": 1}}, "fact.x"),
    ({"text": "t", "tags": ["ok", ""]}, "tags[1]"), ({"text": "t", "purposes": "p"}, "purposes"),
    ({"text": "t", "derived_from": ["not-a-uuid"]}, "derived_from[0]"), ({}, "text"),
])
def test_record_bodies_name_the_bad_field(data: dict[str, object], field: str) -> None:
    assert _error(RecordBody, data)[0] == field


def test_a_forget_without_criteria_is_told_apart() -> None:
    assert not ForgetBody.model_validate({"subject": "user:a"}).criteria()
    assert not ForgetBody.model_validate({"reason": "x", "dry_run": True}).criteria()
    assert ForgetBody.model_validate({"tags": ["trip"]}).criteria()
    assert ForgetBody.model_validate({"query": "tea"}).criteria()


def test_a_grant_needs_rights_and_scopes() -> None:
    assert _error(GrantBody, {"grantee": "u", "rights": [], "scopes": ["s"]})[0] == "rights"
    assert _error(GrantBody, {"grantee": "u", "rights": ["READ"], "scopes": []})[0] == "scopes"
    assert _error(GrantBody, {"grantee": "u", "rights": ["FLY"], "scopes": ["s"]})[0] == "rights[0]"
