"""The REST API against the running stack (issue 10): a real worker process, Kafka and PostgreSQL; the
app in-process through FastAPI's TestClient. The token lifecycle (issue → use → revoke → 401, expiry,
audited refusals), every endpoint, and the gate's refusals with ``?wait=true`` mapped to their status
with machine-readable codes."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memwarden.api.app import create_app
from memwarden.api.gateway import Gateway
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings
from tests.integration.conftest import poll
from tests.integration.rest_fixtures import auth, ends, fresh, issue, poll_get, poll_post, refusals, register

pytestmark = [pytest.mark.integration, pytest.mark.slow]
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def api(namespace: Settings, worker: WorkerProcess) -> Iterator[TestClient]:
    gateway = Gateway(namespace)
    with TestClient(create_app(gateway), raise_server_exceptions=False) as c:
        yield c
    gateway.close()


@pytest.fixture(scope="module")
def users(namespace: Settings, worker: WorkerProcess, client: MemwardenClient) -> dict[str, tuple[str, str]]:
    """alice and bob, registered with key files here, and a token each: ``name -> (principal, token)``."""
    out = {}
    for name in ("alice", "bob"):
        principal = register(client, namespace, f"user:{fresh(name)}")
        out[name] = (principal, issue(client, namespace, principal)[1])
    return out


def _record(api: TestClient, token: str, text: str, wait: bool = True, **body: Any) -> Any:
    return api.post(f"/v1/memories?wait={str(wait).lower()}", headers=auth(token), json={"text": text, **body})


# -- tokens ------------------------------------------------------------------------------------------

def test_token_lifecycle_issue_use_revoke_then_401_audited(api: TestClient, namespace: Settings,
                                                           client: MemwardenClient) -> None:
    principal = register(client, namespace, f"user:{fresh('carol')}")
    token_id, token = issue(client, namespace, principal)
    r = _record(api, token, "Carol keeps bees")
    assert r.status_code == 201, r.text
    assert r.json()["outcome"] == "ACCEPTED" and r.json()["codes"] == ["OK"]
    revoked = client.revoke_token(token_id, by=principal, principal=principal)  # by the token's own principal
    assert client.decisions([revoked.command_id])[revoked.command_id] == "ACCEPTED"
    before = ends(namespace)
    r = _record(api, token, "Carol keeps wasps")
    assert r.status_code == 401 and r.json()["code"] == "TOKEN_REVOKED" and r.json()["field"] == "Authorization"
    assert "Bearer" in r.headers["www-authenticate"]
    assert ends(namespace) == before  # nothing published
    audited = poll(lambda: [a for a in refusals(namespace) if a["token_id"] == token_id], what="audited refusal")
    assert audited[0]["code"] == "TOKEN_REVOKED" and audited[0]["principal"] == principal
    assert audited[0]["route"] == "/v1/memories" and audited[0]["method"] == "POST"
    assert token not in str(audited) and token[4:] not in str(audited)


@pytest.mark.parametrize(("headers", "code"), [
    ({}, "TOKEN_MISSING"), ({"Authorization": "Basic dXNlcjpwdw=="}, "TOKEN_MISSING"),
    ({"Authorization": "Bearer not-a-token"}, "TOKEN_MALFORMED"),
    ({"Authorization": "Bearer mwt_" + "A" * 43}, "UNKNOWN_TOKEN"),
])
def test_no_token_a_malformed_or_an_unknown_one_is_401_with_its_reason(api: TestClient, namespace: Settings,
                                                                       headers: dict[str, str], code: str) -> None:
    r = api.post("/v1/recall", headers=headers, json={"query": "anything"})
    assert r.status_code == 401 and r.json()["code"] == code
    assert any(a["code"] == code and a["route"] == "/v1/recall" for a in refusals(namespace))


def test_an_expired_token_is_401(api: TestClient, namespace: Settings, client: MemwardenClient) -> None:
    principal = register(client, namespace, f"user:{fresh('dora')}")
    _, token = issue(client, namespace, principal, expires_at=datetime.now(UTC) + timedelta(seconds=3))
    assert api.get(f"/v1/memories/{uuid.uuid4()}", headers=auth(token)).status_code == 404  # in force: authenticated
    r = poll_get(api, f"/v1/memories/{uuid.uuid4()}", auth(token), lambda r: r.status_code == 401, 15)
    assert r.json()["code"] == "TOKEN_EXPIRED"


def test_a_token_for_a_principal_without_a_key_on_the_server_is_409(api: TestClient, namespace: Settings,
                                                                    client: MemwardenClient) -> None:
    principal = register(client, namespace, f"agent:{fresh('remote')}", key_file=False)
    _, token = issue(client, namespace, principal)
    before = ends(namespace)
    r = _record(api, token, "never published")
    assert r.status_code == 409 and r.json()["code"] == "NO_SIGNING_KEY"
    assert ends(namespace) == before


# -- every endpoint ----------------------------------------------------------------------------------

def test_record_202_then_its_decision_then_recall_and_history(api: TestClient, users: dict[str, Any]) -> None:
    alice, token = users["alice"]
    r = _record(api, token, "Alice prefers green tea", wait=False, source_ref="chat:42")
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["outcome"] == "PENDING" and body["position"]["topic"].endswith(".commands")
    assert r.headers["location"] == body["decision_url"] == f"/v1/commands/{body['command_id']}"
    decided = poll_get(api, body["decision_url"], auth(token), lambda x: x.status_code == 200).json()
    assert decided["outcome"] == "ACCEPTED" and decided["http_status"] == 201 and decided["codes"] == ["OK"]
    assert decided["command_type"] == "RecordMemory" and decided["memory_id"] == body["memory_id"]
    found = poll_post(api, "/v1/recall", auth(token), {"query": "what does alice drink?", "k": 5},
                      lambda x: x.status_code == 200 and x.json()["memories"]).json()["memories"]
    assert found[0]["text"] == "Alice prefers green tea" and found[0]["memory_id"] == body["memory_id"]
    history = api.get(f"/v1/memories/{body['memory_id']}", headers=auth(token)).json()
    assert history["current"]["text"] == "Alice prefers green tea" and history["current"]["valid_to"] is None
    assert history["current"]["position"]["offset"] == body["position"]["offset"]
    assert history["current"]["source_ref"] == "chat:42" and len(history["versions"]) == 1


def test_recall_takes_a_recency_weight_and_the_repeats_switch(api: TestClient, users: dict[str, Any]) -> None:
    alice, token = users["alice"]
    day = datetime.now(UTC) - timedelta(days=2)
    old = _record(api, token, "Alice's locker code: the locker code is 4411.", observed_at=day.isoformat()).json()
    new = _record(api, token, "Alice changed the code to 9020.",
                  observed_at=(day + timedelta(days=1)).isoformat()).json()
    ours = {old["memory_id"], new["memory_id"]}  # alice holds the other tests' memories too

    def order(memories: list[dict[str, Any]]) -> list[str]:
        return [m["memory_id"] for m in memories if m["memory_id"] in ours]

    query = {"query": "What is Alice's locker code?", "k": 10}
    flat = poll_post(api, "/v1/recall", auth(token), {**query, "recency": 0, "repeats": False},
                     lambda x: x.status_code == 200 and len(order(x.json()["memories"])) == 2).json()["memories"]
    assert order(flat) == [old["memory_id"], new["memory_id"]]
    recent = api.post("/v1/recall", headers=auth(token), json={**query, "recency": 50}).json()["memories"]
    assert order(recent) == [new["memory_id"], old["memory_id"]]
    for bad in ("high", True, -1, 101):
        r = api.post("/v1/recall", headers=auth(token), json={**query, "recency": bad})
        assert r.status_code == 400 and r.json()["field"] == "recency", (bad, r.text)


def test_supersede_keeps_history_with_intervals_and_positions(api: TestClient, users: dict[str, Any]) -> None:
    alice, token = users["alice"]
    first = _record(api, token, "Alice lives in Lyon").json()
    r = api.post(f"/v1/memories/{first['memory_id']}/supersede?wait=true", headers=auth(token),
                 json={"text": "Alice lives in Oslo", "evidence": ["moved in May"]})
    assert r.status_code == 201 and r.json()["outcome"] == "ACCEPTED", r.text
    history = poll_get(api, f"/v1/memories/{first['memory_id']}", auth(token),
                       lambda x: x.status_code == 200 and len(x.json()["versions"]) == 2).json()
    old, new = history["versions"]
    assert old["status"] == "superseded" and old["valid_to"] is not None and old["text"] == "Alice lives in Lyon"
    assert new["status"] == "active" and new["valid_to"] is None and history["current"]["version"] == new["version"]
    assert old["position"] != new["position"] and old["valid_to"] == new["valid_from"]


def test_grant_lets_bob_read_until_it_is_revoked(api: TestClient, users: dict[str, Any]) -> None:
    (alice, a_token), (bob, b_token) = users["alice"], users["bob"]
    mine = _record(api, a_token, "Alice's locker code is 4711").json()
    assert api.get(f"/v1/memories/{mine['memory_id']}", headers=auth(b_token)).status_code == 404
    r = api.post("/v1/grants?wait=true", headers=auth(a_token),
                 json={"grantee": bob, "rights": ["READ"], "scopes": ["account:default"], "subjects": [alice]})
    assert r.status_code == 201 and r.json()["grant_id"], r.text
    grant_id = r.json()["grant_id"]
    seen = poll_get(api, f"/v1/memories/{mine['memory_id']}", auth(b_token), lambda x: x.status_code == 200).json()
    assert seen["current"]["text"] == "Alice's locker code is 4711"
    assert api.delete(f"/v1/grants/{grant_id}?wait=true", headers=auth(b_token)).json()["code"] == "NOT_GRANTOR"
    r = api.delete(f"/v1/grants/{grant_id}?wait=true&reason=done", headers=auth(a_token))
    assert r.status_code == 200 and r.json()["outcome"] == "ACCEPTED", r.text
    assert api.get(f"/v1/memories/{mine['memory_id']}", headers=auth(b_token)).status_code == 404


def test_audit_of_a_memory_for_its_writer_only(api: TestClient, users: dict[str, Any],
                                              client: MemwardenClient) -> None:
    (alice, a_token), (bob, b_token) = users["alice"], users["bob"]
    mine = _record(api, a_token, "Alice plays the cello").json()
    report = api.get(f"/v1/audit/memories/{mine['memory_id']}", headers=auth(a_token))
    assert report.status_code == 200, report.text
    (entry,) = report.json()["timeline"]
    assert entry["command"]["principal"] == alice and entry["decision"]["outcome"] == "ACCEPTED"
    assert "cello" not in report.text  # never content
    assert api.get(f"/v1/audit/memories/{mine['memory_id']}", headers=auth(b_token)).status_code == 404
    # a refused command about alice's memory opens nothing (newcomer trial, nineteenth session: bob's refused
    # forget put him in the timeline, and the audit then showed him alice's commands and reads)
    refused = client.forget(mine["memory_id"], principal=bob, subject=alice, wait=False)  # on the ledger
    assert client.decisions([refused.command_id], timeout_s=120)[refused.command_id] == "REJECTED"
    assert api.get(f"/v1/audit/memories/{mine['memory_id']}", headers=auth(b_token)).status_code == 404


def test_forget_by_id_then_nothing_comes_back(api: TestClient, users: dict[str, Any], namespace: Settings) -> None:
    alice, token = users["alice"]
    mine = _record(api, token, "Alice's old phone number is 555-0199", tags=["oncology"], source_ref="clinic:7").json()
    r = api.delete(f"/v1/memories/{mine['memory_id']}?wait=true&reason=user+request", headers=auth(token))
    assert r.status_code == 200 and r.json()["outcome"] == "ACCEPTED" and mine["memory_id"] in r.json()["memory_ids"]
    history = poll_get(api, f"/v1/memories/{mine['memory_id']}", auth(token),
                       lambda x: x.status_code == 200 and x.json()["versions"][0]["status"] == "forgotten").json()
    assert history["current"] is None and history["versions"][0]["text"] is None
    assert history["versions"][0]["withheld"] == "forgotten"
    # nor what describes it: a tag or a source reference tells what was said (newcomer trial, twentieth session)
    assert history["versions"][0]["tags"] == [] and history["versions"][0]["source_ref"] is None
    from tests.integration.conftest import rows
    kept = rows(namespace, "SELECT tags, source_ref, fact_attribute FROM memory_versions WHERE memory_id = %s",
                (mine["memory_id"],))
    assert kept == [([], None, None)]
    found = api.post("/v1/recall", headers=auth(token), json={"query": "phone number 555-0199", "k": 10}).json()
    assert mine["memory_id"] not in [m["memory_id"] for m in found["memories"]]
    again = api.delete(f"/v1/memories/{mine['memory_id']}?wait=true", headers=auth(token)).json()
    assert again["outcome"] == "ACCEPTED" and again["codes"] == ["ALREADY_FORGOTTEN"]


def test_forget_by_selector_and_subject_with_dry_run(api: TestClient, users: dict[str, Any]) -> None:
    alice, token = users["alice"]
    tagged = [_record(api, token, f"Alice trip note {i}", tags=["trip"]).json()["memory_id"] for i in range(2)]
    dry = api.post("/v1/forget?wait=true", headers=auth(token), json={"tags": ["trip"], "dry_run": True})
    assert dry.status_code == 200 and sorted(dry.json()["memory_ids"]) == sorted(tagged) and "DRY_RUN" in dry.json()[
        "codes"]
    done = api.post("/v1/forget?wait=true", headers=auth(token), json={"tags": ["trip"], "reason": "trip over"})
    assert done.status_code == 200 and sorted(done.json()["memory_ids"]) == sorted(tagged)
    erasure = api.post("/v1/forget?wait=true", headers=auth(token), json={"subject": alice, "dry_run": True})
    assert erasure.status_code == 200 and erasure.json()["command_type"] == "ForgetSubject"


def test_health_without_a_token(api: TestClient, namespace: Settings) -> None:
    r = api.get("/v1/health")
    assert r.status_code == 200 and r.json()["ok"] and r.json()["namespace"] == namespace.topic_prefix
    assert set(r.json()["worker"]["roles"]) == {"gate", "projector"}
    spec = api.get("/openapi.json").json()
    assert {"/v1/memories", "/v1/recall", "/v1/forget", "/v1/grants", "/v1/health"} <= set(spec["paths"])
    docs = api.get("/docs")
    assert docs.status_code == 200 and "https://" not in docs.text  # nothing from a CDN: it shows offline
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
        assert asset in docs.text and api.get(f"/docs-assets/{asset}").status_code == 200


# -- refusals with ?wait=true ------------------------------------------------------------------------

@pytest.mark.parametrize(("body", "status", "outcome", "code"), [
    ({"scope": "project:secret"}, 403, "REJECTED", "SCOPE_NOT_GRANTED"),
    ({"scope": "nowhere:x"}, 422, "REJECTED", "UNKNOWN_SCOPE"),
    ({"source_kind": "MODEL_INFERENCE", "epistemic_status": "CONFIRMED"}, 422, "REJECTED", "STATUS_INFLATED"),
    ({"subject": "user:someone-else"}, 422, "QUARANTINED", "SUBJECT_NOT_GRANTED"),
])
def test_refusals_and_quarantine_answer_4xx_with_their_codes(api: TestClient, users: dict[str, Any],
                                                             body: dict[str, Any], status: int, outcome: str,
                                                             code: str) -> None:
    alice, token = users["alice"]
    r = _record(api, token, f"Alice note {uuid.uuid4().hex[:6]}", **body)
    assert r.status_code == status, r.text
    got = r.json()
    assert got["outcome"] == outcome and code in got["codes"] and got["code"] == code and got["error"]
    assert got["reasons"][0]["message"]


def test_a_held_write_s_decision_shows_its_review_as_it_stands(api: TestClient, users: dict[str, Any],
                                                               namespace: Settings, client: MemwardenClient) -> None:
    """The decision of a quarantined write never changes (the ledger is immutable), but its caller
    learns what became of it: ``review`` is pending, then approved (or rejected) with who and when; a
    command never held has ``review: null``."""
    alice, token = users["alice"]
    held = _record(api, token, f"Alice note {uuid.uuid4().hex[:6]}", subject="user:someone-else").json()
    pending = api.get(held["decision_url"], headers=auth(token)).json()
    assert pending["outcome"] == "QUARANTINED" and pending["review"]["status"] == "pending"
    assert pending["review"]["reviewed_by"] is None
    reviewer = register(client, namespace, f"reviewer:{fresh('rita')}")
    approved = client.approve_quarantined(held["command_id"], by=reviewer, subject="user:someone-else")
    assert approved.outcome in ("ACCEPTED", "ACCEPTED_UNVERIFIED"), approved
    after = api.get(held["decision_url"], headers=auth(token)).json()
    assert after["outcome"] == "QUARANTINED" and after["codes"] == pending["codes"]
    assert after["review"]["status"] == "approved" and after["review"]["reviewed_by"] == reviewer
    assert after["review"]["reviewed_at"] >= after["decided_at"]
    plain = _record(api, token, f"Alice note {uuid.uuid4().hex[:6]}").json()
    assert plain["outcome"] == "ACCEPTED", plain  # a note holding a code is no instruction (rules/48 #codes)
    assert api.get(plain["decision_url"], headers=auth(token)).json()["review"] is None


def test_a_retry_with_the_same_command_id_answers_the_first_decision(api: TestClient, users: dict[str, Any]) -> None:
    """Idempotency by command id: the gate decides the copy DUPLICATE and keeps the first decision,
    which is what the retry is answered with (the same memory, never a second one)."""
    alice, token = users["alice"]
    cid = str(uuid.uuid4())
    first = _record(api, token, "Alice is on call this week", command_id=cid)
    assert first.status_code == 201
    again = _record(api, token, "Alice is on call this week", command_id=cid)
    assert again.status_code == 201 and again.json()["memory_id"] == first.json()["memory_id"]
    assert again.json()["command_position"] == first.json()["command_position"] != again.json()["position"]


def test_another_principal_s_command_id_is_409_and_shows_nothing_of_its_decision(
        api: TestClient, users: dict[str, Any], namespace: Settings) -> None:
    """bob sending alice's command id got 201 ACCEPTED with alice's memory id, time and position, and nothing of
    his was recorded; without ``wait`` a 202 whose decision never came (newcomer trial, twentieth session)."""
    (_alice, a_token), (_bob, b_token) = users["alice"], users["bob"]
    first = _record(api, a_token, "Alice's locker is 12").json()
    before = ends(namespace)
    for wait in (True, False):
        r = _record(api, b_token, "Bob's locker is 14", wait=wait, command_id=first["command_id"])
        assert r.status_code == 409 and r.json()["code"] == "COMMAND_ID_TAKEN" and r.json()["field"] == "command_id"
        assert first["memory_id"] not in r.text and "decided_at" not in r.json()
    assert ends(namespace) == before  # nothing published
    own = _record(api, a_token, "Alice's locker is 12", command_id=first["command_id"])  # alice's retry: hers
    assert own.status_code == 201 and own.json()["memory_id"] == first["memory_id"] and own.json()["http_status"] == 201


def test_reusing_a_memory_id_is_409(api: TestClient, users: dict[str, Any]) -> None:
    alice, token = users["alice"]
    mid = _record(api, token, "Alice's desk is 4.12").json()["memory_id"]
    again = _record(api, token, "Alice's desk is 5.01", memory_id=mid)
    assert again.status_code == 409 and again.json()["outcome"] == "REJECTED"
    assert again.json()["code"] == "MEMORY_ID_EXISTS"


def test_a_decision_is_shown_to_its_principal_only(api: TestClient, users: dict[str, Any]) -> None:
    (_alice, a_token), (_bob, b_token) = users["alice"], users["bob"]
    mine = _record(api, a_token, "Alice's bike is blue").json()
    assert api.get(mine["decision_url"], headers=auth(a_token)).status_code == 200
    r = api.get(mine["decision_url"], headers=auth(b_token))
    assert r.status_code == 404 and r.json()["code"] == "NOT_DECIDED"
    assert api.get(f"/v1/commands/{uuid.uuid4()}", headers=auth(a_token)).status_code == 404


def test_the_gateway_marks_what_it_signed(api: TestClient, users: dict[str, Any], namespace: Settings) -> None:
    from memwarden.schemas.codec import default_codec
    from tests.integration.conftest import read_topic

    alice, token = users["alice"]
    cid = _record(api, token, "Alice likes rain").json()["command_id"]
    codec = default_codec()
    envs = [codec.decode(m.value())[1]["envelope"] for m in read_topic(namespace, "commands")]
    (env,) = [e for e in envs if e["command_id"] == cid]
    assert env["attributes"]["gateway"] == "rest" and env["attributes"]["gateway_token"].startswith("tok_")
    assert env["principal"] == alice and env["signature"] is not None
    time.sleep(0)  # the gate accepted it: a gateway attribute is data, not authority
