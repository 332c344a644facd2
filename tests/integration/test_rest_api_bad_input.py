"""Bad input to the REST API against the running stack (issue 10 "Bad input"): malformed JSON, wrong
types, unknown fields, a 10 MB body, an empty query, ``k`` of 0 or 10,000, a naive datetime, a
principal in the body that differs from the token's, an unknown memory id, a forget of another
principal's memory. Each is a 4xx naming the field or the reason, nothing is published (the commands
and keys topics keep their end offsets), and the server keeps serving."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memwarden.api.app import create_app
from memwarden.api.gateway import Gateway
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings
from tests.integration.rest_fixtures import auth, ends, fresh, issue, refusals, register

pytestmark = [pytest.mark.integration, pytest.mark.slow]
_MEMORY = str(uuid.uuid4())  # a memory id nobody recorded


@pytest.fixture(scope="module")
def api(namespace: Settings, worker: WorkerProcess) -> Iterator[TestClient]:
    gateway = Gateway(namespace)
    with TestClient(create_app(gateway), raise_server_exceptions=False) as c:
        yield c
    gateway.close()


@pytest.fixture(scope="module")
def people(namespace: Settings, worker: WorkerProcess, client: MemwardenClient, api: TestClient) -> dict[str, Any]:
    """alice (token) with one memory, and bob (token)."""
    alice = register(client, namespace, f"user:{fresh('alice')}")
    bob = register(client, namespace, f"user:{fresh('bob')}")
    a_token, b_token = issue(client, namespace, alice)[1], issue(client, namespace, bob)[1]
    r = api.post("/v1/memories?wait=true", headers=auth(a_token), json={"text": "Alice's dentist is Dr. Moreau"})
    assert r.status_code == 201, r.text
    return {"alice": alice, "bob": bob, "a": auth(a_token), "b": auth(b_token), "memory": r.json()["memory_id"]}


_RAW = {"Content-Type": "application/json"}
CASES: list[tuple[str, str, str, Any, int, str, str | None]] = [
    # (name, method, url, body (str = raw bytes), status, code, field)
    ("malformed json", "POST", "/v1/memories", '{"text": "tea",', 400, "BAD_JSON", "body"),
    ("not an object", "POST", "/v1/memories", '["tea"]', 400, "INVALID_FIELD", "body"),
    ("text of the wrong type", "POST", "/v1/memories", {"text": 42}, 400, "INVALID_FIELD", "text"),
    ("empty text", "POST", "/v1/memories", {"text": ""}, 400, "INVALID_FIELD", "text"),
    ("blank text", "POST", "/v1/memories", {"text": "   "}, 400, "INVALID_FIELD", "text"),
    ("a lone surrogate", "POST", "/v1/memories", '{"text": "tea \\ud800"}', 400, "INVALID_FIELD", "text"),
    ("text over the limit", "POST", "/v1/memories", {"text": "x" * 20_001}, 400, "INVALID_FIELD", "text"),
    ("unknown field", "POST", "/v1/memories", {"text": "tea", "colour": "red"}, 400, "UNKNOWN_FIELD", "colour"),
    ("unknown nested field", "POST", "/v1/memories",
     {"text": "tea", "fact": {"entity": "a", "attribute": "b", "value": "c", "x": 1}}, 400, "UNKNOWN_FIELD",
     "fact.x"),
    ("missing text", "POST", "/v1/memories", {"scope": "account:default"}, 400, "MISSING_FIELD", "text"),
    ("bad enum", "POST", "/v1/memories", {"text": "tea", "store_kind": "DIARY"}, 400, "INVALID_FIELD", "store_kind"),
    ("naive datetime", "POST", "/v1/memories", {"text": "tea", "observed_at": "2026-11-30T10:00:00"}, 400,
     "INVALID_FIELD", "observed_at"),
    ("a string list given as a string", "POST", "/v1/memories", {"text": "tea", "tags": "a"}, 400, "INVALID_FIELD",
     "tags"),
    ("follows: not a memory id", "POST", "/v1/memories", {"text": "tea", "follows": "turn-1"}, 400, "INVALID_FIELD",
     "follows"),
    ("principal of another", "POST", "/v1/memories", {"text": "tea", "principal": "user:mallory"}, 403,
     "PRINCIPAL_MISMATCH", "principal"),
    ("empty query", "POST", "/v1/recall", {"query": ""}, 400, "INVALID_FIELD", "query"),
    ("blank query", "POST", "/v1/recall", {"query": "  \n "}, 400, "INVALID_FIELD", "query"),
    ("query over the limit", "POST", "/v1/recall", {"query": "q" * 2001}, 400, "INVALID_FIELD", "query"),
    ("k of 0", "POST", "/v1/recall", {"query": "tea", "k": 0}, 400, "INVALID_FIELD", "k"),
    ("k of 10000", "POST", "/v1/recall", {"query": "tea", "k": 10_000}, 400, "INVALID_FIELD", "k"),
    ("k as a string", "POST", "/v1/recall", {"query": "tea", "k": "5"}, 400, "INVALID_FIELD", "k"),
    ("naive as_of", "POST", "/v1/recall", {"query": "tea", "as_of": "2026-11-30T10:00:00"}, 400, "INVALID_FIELD",
     "as_of"),
    ("bad mode", "POST", "/v1/recall", {"query": "tea", "mode": "psychic"}, 400, "INVALID_FIELD", "mode"),
    ("principal mismatch on a read", "POST", "/v1/recall", {"query": "tea", "principal": "user:mallory"}, 403,
     "PRINCIPAL_MISMATCH", "principal"),
    ("unknown memory: supersede", "POST", f"/v1/memories/{_MEMORY}/supersede", {"text": "coffee"}, 404,
     "UNKNOWN_MEMORY", "memory_id"),
    ("unknown memory: forget", "DELETE", f"/v1/memories/{_MEMORY}", None, 404, "UNKNOWN_MEMORY", "memory_id"),
    ("unknown memory: history", "GET", f"/v1/memories/{_MEMORY}", None, 404, "UNKNOWN_MEMORY", "memory_id"),
    ("not a memory id", "DELETE", "/v1/memories/not-a-uuid", None, 400, "INVALID_FIELD", "memory_id"),
    ("unknown grant", "DELETE", "/v1/grants/g-nobody", None, 404, "UNKNOWN_GRANT", "grant_id"),
    # newcomer trial, twentieth session: each of these was a 500 (a NUL reached PostgreSQL; a long id a model)
    ("a NUL in a grant id", "DELETE", "/v1/grants/g%00x", None, 400, "INVALID_FIELD", "grant_id"),
    ("a grant id over the limit", "DELETE", "/v1/grants/" + "g" * 300, None, 400, "INVALID_FIELD", "grant_id"),
    ("a NUL in a tag", "POST", "/v1/memories", {"text": "tea", "tags": ["a\u0000b"]}, 400, "INVALID_FIELD",
     "tags[0]"),
    ("min_score as a string", "POST", "/v1/recall", {"query": "tea", "min_score": "0.3"}, 400, "INVALID_FIELD",
     "min_score"),
    ("min_score as a boolean", "POST", "/v1/recall", {"query": "tea", "min_score": True}, 400, "INVALID_FIELD",
     "min_score"),
    ("JSON nested too deep", "POST", "/v1/recall", '{"query": ' + "[" * 5000 + "]" * 5000 + "}", 400, "BAD_JSON",
     "body"),
    ("empty forget", "POST", "/v1/forget", {}, 400, "EMPTY_SELECTOR", "selector"),
    ("forget with only a reason", "POST", "/v1/forget", {"reason": "all of it"}, 400, "EMPTY_SELECTOR", "selector"),
    ("grant without rights", "POST", "/v1/grants", {"grantee": "user:x", "rights": [], "scopes": ["account:a"]},
     400, "INVALID_FIELD", "rights"),
    ("unknown route", "GET", "/v1/nothing", None, 404, "HTTP_404", None),
    ("wrong method", "PUT", "/v1/recall", None, 405, "HTTP_405", None),
]


@pytest.mark.parametrize(("name", "method", "url", "body", "status", "code", "field"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_a_4xx_naming_the_field_and_publishes_nothing(api: TestClient, namespace: Settings,
                                                                   people: dict[str, Any], name: str, method: str,
                                                                   url: str, body: Any, status: int, code: str,
                                                                   field: str | None) -> None:
    before = ends(namespace)
    kwargs: dict[str, Any] = {"headers": people["a"]}
    if isinstance(body, str):
        kwargs = {"headers": {**people["a"], **_RAW}, "content": body.encode("utf-8", "surrogatepass")}
    elif body is not None:
        kwargs["json"] = body
    r = api.request(method, url, **kwargs)
    assert r.status_code == status, (name, r.text)
    got = r.json()
    assert got["code"] == code and got["field"] == field and got["error"], (name, got)
    assert "Traceback" not in r.text and "File \"" not in r.text
    assert ends(namespace) == before, name


def test_a_body_that_is_not_json_is_415_naming_the_content_type(api: TestClient, namespace: Settings,
                                                                people: dict[str, Any]) -> None:
    """``Content-Type: text/plain`` answered "body: Input should be a valid dictionary", nothing about the type
    (newcomer trial, twentieth session)."""
    before = ends(namespace)
    r = api.post("/v1/memories", headers={**people["a"], "Content-Type": "text/plain"}, content=b'{"text": "tea"}')
    assert r.status_code == 415 and r.json()["code"] == "UNSUPPORTED_MEDIA_TYPE" and "text/plain" in r.json()["error"]
    assert ends(namespace) == before


def test_a_10_mb_body_is_413_and_the_server_keeps_serving(api: TestClient, namespace: Settings,
                                                          people: dict[str, Any]) -> None:
    before = ends(namespace)
    big = b'{"text": "' + b"x" * (10 * 1024 * 1024) + b'"}'
    r = api.post("/v1/memories", headers={**people["a"], **_RAW}, content=big)
    assert r.status_code == 413 and r.json()["code"] == "BODY_TOO_LARGE" and r.json()["field"] == "body"
    chunked = api.post("/v1/memories", headers={**people["a"], **_RAW}, content=iter([big[:600_000], big[600_000:]]))
    assert chunked.status_code == 413
    assert ends(namespace) == before
    assert api.get("/v1/health").status_code == 200


def test_a_forget_of_another_principals_memory_is_403_and_publishes_nothing(
        api: TestClient, namespace: Settings, people: dict[str, Any]) -> None:
    before = ends(namespace)
    r = api.delete(f"/v1/memories/{people['memory']}?wait=true", headers=people["b"])
    assert r.status_code == 403 and r.json()["code"] == "NOT_OWNER" and r.json()["field"] == "envelope.principal"
    s = api.post(f"/v1/memories/{people['memory']}/supersede", headers=people["b"], json={"text": "Dr. Who"})
    assert s.status_code == 403 and s.json()["code"] == "NOT_OWNER"
    e = api.post("/v1/forget", headers=people["b"], json={"subject": people["alice"]})
    assert e.status_code == 403 and e.json()["code"] == "NOT_SUBJECT"
    assert ends(namespace) == before
    mine = api.get(f"/v1/memories/{people['memory']}", headers=people["a"]).json()
    assert mine["current"]["text"] == "Alice's dentist is Dr. Moreau"


def test_principal_mismatch_is_audited_and_the_server_keeps_serving(api: TestClient, namespace: Settings,
                                                                    people: dict[str, Any]) -> None:
    r = api.post("/v1/recall", headers=people["b"], json={"query": "dentist", "principal": people["alice"]})
    assert r.status_code == 403 and r.json()["code"] == "PRINCIPAL_MISMATCH"
    audited = [a for a in refusals(namespace) if a["code"] == "PRINCIPAL_MISMATCH"
               and a["claimed_principal"] == people["alice"]]
    assert audited and audited[0]["principal"] == people["bob"] and audited[0]["route"] == "/v1/recall"
    ok = api.post("/v1/recall", headers=people["a"], json={"query": "who is alice's dentist?", "k": 3})
    assert ok.status_code == 200 and api.get("/v1/health").status_code == 200


def test_a_request_signed_by_the_callers_own_key_is_served_once_and_a_replay_is_401(
        api: TestClient, namespace: Settings, people: dict[str, Any]) -> None:
    from memwarden.commands.read_auth import sign_request
    from memwarden.epoch import now_ms
    from memwarden.keystore import key_path, load_or_create_signer

    signer = load_or_create_signer(key_path(namespace.data_dir, people["alice"]), people["alice"])
    signed = sign_request({"principal": people["alice"], "query": "who is alice's dentist?", "k": 3}, signer,
                          now_ms())
    first = api.post("/v1/signed/recall", json=signed)  # no token: the signature authenticates
    assert first.status_code == 200, first.text
    assert people["memory"] in [m["memory_id"] for m in first.json()["memories"]]
    replay = api.post("/v1/signed/recall", json=signed)
    assert replay.status_code == 401 and replay.json()["code"] == "REPLAYED_REQUEST"
    forged = {**sign_request({"principal": people["alice"], "query": "dentist"}, signer, now_ms()), "k": 50}
    assert api.post("/v1/signed/recall", json=forged).json()["code"] == "BAD_SIGNATURE"
    unsigned = api.post("/v1/signed/recall", json={"principal": people["alice"], "query": "dentist"})
    assert unsigned.status_code == 401 and unsigned.json()["code"] == "READ_UNSIGNED"
    history = api.post("/v1/signed/history", json=sign_request({"principal": people["alice"],
                                                                 "memory_id": people["memory"]}, signer, now_ms()))
    assert history.status_code == 200 and history.json()["memory_id"] == people["memory"]
    assert api.post("/v1/signed/recall", json=["not", "an", "object"]).status_code == 400


@pytest.mark.parametrize(("path", "body", "code", "field"), [
    ("/v1/signed/recall", {"query": "dentist", "k": 0}, "INVALID_FIELD", "k"),
    ("/v1/signed/recall", {"query": "dentist", "k": 500}, "INVALID_FIELD", "k"),
    ("/v1/signed/recall", {"query": "dentist", "k": "5"}, "INVALID_FIELD", "k"),
    ("/v1/signed/recall", {"query": "dentist", "colour": "red"}, "UNKNOWN_FIELD", "colour"),
    ("/v1/signed/recall", {"query": "dentist", "include_untrusted": "yes"}, "INVALID_FIELD", "include_untrusted"),
    ("/v1/signed/recall", {"k": 3}, "MISSING_FIELD", "query"),
    ("/v1/signed/history", {"memory_id": "not-a-uuid"}, "INVALID_FIELD", "memory_id"),
    ("/v1/signed/history", {"memory_id": _MEMORY, "colour": "red"}, "UNKNOWN_FIELD", "colour"),
    ("/v1/signed/history", {}, "MISSING_FIELD", "memory_id"),
])
def test_a_signed_read_with_bad_input_is_a_400_with_the_token_routes_code(
        api: TestClient, namespace: Settings, people: dict[str, Any], path: str, body: dict[str, Any], code: str,
        field: str) -> None:
    """A body signed by the caller's own key, as the Python client signs it, with a bad, missing or unknown
    field: 400 ``{"error", "code", "field"}`` with the code the token routes give the same input (newcomer
    trial: no ``code``, and an unknown field answered 200)."""
    from memwarden.commands.read_auth import sign_request
    from memwarden.epoch import now_ms
    from memwarden.keystore import key_path, load_or_create_signer

    signer = load_or_create_signer(key_path(namespace.data_dir, people["alice"]), people["alice"])
    r = api.post(path, json=sign_request({"principal": people["alice"], **body}, signer, now_ms()))
    assert r.status_code == 400, r.text
    assert r.json()["code"] == code and r.json()["field"] == field, r.json()
    assert set(r.json()) == {"error", "code", "field"}
