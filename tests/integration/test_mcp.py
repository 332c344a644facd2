"""The MCP server against the running stack (issue 10, item 2), through the ``mcp`` SDK's own client
over stdio: ``memwarden mcp`` spawned as a subprocess with the environment of the test namespace (a real
worker, Kafka, PostgreSQL). The tools are listed; remember → recall returns it, with history and why;
the commands it signs carry ``gateway = "mcp"``; a forget of another principal's memory is an error
result with ``NOT_OWNER``; without a (valid) token the server does not start and says why in one line.
Over streamable HTTP every request carries its own bearer token."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from memwarden.mcp.answers import TOKEN_ENV
from memwarden.ops.worker_process import WorkerProcess, settings_env
from memwarden.producers.client import MemwardenClient
from memwarden.schemas.codec import default_codec
from memwarden.settings import Settings
from tests.integration.conftest import read_topic
from tests.integration.rest_fixtures import ends, fresh, issue, refusals, register

pytestmark = [pytest.mark.integration, pytest.mark.slow]
MEMWARDEN = str(Path(sys.executable).parent / "memwarden")
TOOLS = {"remember", "recall", "supersede", "forget", "history", "why"}


@pytest.fixture(scope="module")
def users(namespace: Settings, worker: WorkerProcess, client: MemwardenClient) -> dict[str, tuple[str, str]]:
    """alice and bob, registered with key files here, and a token each: ``name -> (principal, token)``."""
    out = {}
    for name in ("alice", "bob"):
        principal = register(client, namespace, f"user:{fresh(name)}")
        out[name] = (principal, issue(client, namespace, principal)[1])
    return out


def _env(settings: Settings, token: str | None) -> dict[str, str]:
    env = settings_env(settings)
    env.pop(TOKEN_ENV, None)
    if token is not None:
        env[TOKEN_ENV] = token
    return env


def session(settings: Settings, token: str, body: Callable[[Client], Awaitable[None]]) -> None:
    """Spawn ``memwarden mcp`` for ``token`` and run ``body`` with an SDK client connected over stdio."""
    params = StdioServerParameters(command=MEMWARDEN, args=["mcp"], env=_env(settings, token))

    async def main() -> None:
        with anyio.fail_after(180):
            async with Client(params, read_timeout_seconds=90) as c:
                await body(c)

    anyio.run(main)


def structured(r: CallToolResult) -> dict[str, Any]:
    assert isinstance(r.structured_content, dict), r.content
    return r.structured_content


def test_the_tools_remember_recall_history_why_over_stdio(namespace: Settings, users: dict[str, Any]) -> None:
    alice, token = users["alice"]
    text = f"Alice keeps her bicycle in shed {uuid.uuid4().hex[:6]}"
    seen: dict[str, Any] = {}

    async def body(c: Client) -> None:
        listed = await c.list_tools()
        assert {t.name for t in listed.tools} == TOOLS
        assert all(t.description for t in listed.tools)
        assert "principal" not in listed.tools[0].input_schema.get("properties", {})
        wrote = await c.call_tool("remember", {"text": text, "source_ref": "chat:mcp", "tags": ["bike"]})
        assert not wrote.is_error, wrote.content
        seen["remember"] = structured(wrote)
        found: list[str] = []
        deadline = time.monotonic() + 60
        while not found and time.monotonic() < deadline:  # the projection follows the decision
            got = await c.call_tool("recall", {"query": "where is alice's bicycle?", "k": 5})
            assert not got.is_error, got.content
            found = [m["text"] for m in structured(got)["memories"] if m.get("memory_id") == seen["remember"]
                     ["memory_id"]]
            if not found:
                await anyio.sleep(0.5)
        seen["recall"] = found
        seen["history"] = await c.call_tool("history", {"memory_id": seen["remember"]["memory_id"]})
        seen["why"] = await c.call_tool("why", {"memory_id": seen["remember"]["memory_id"]})
        seen["bad"] = await c.call_tool("recall", {"query": "   "})
        seen["floor"] = await c.call_tool("recall", {"query": "zxqv-unknown-token", "k": 5, "min_score": 0.35})

    session(namespace, token, body)
    assert seen["remember"]["outcome"] == "ACCEPTED" and seen["remember"]["status"] == 201
    assert seen["recall"] == [text]
    assert not seen["history"].is_error and structured(seen["history"])["memory_id"] == seen["remember"]["memory_id"]
    why = structured(seen["why"])
    assert not seen["why"].is_error
    (step,) = [s for s in why["timeline"] if s["command"]["command_id"] == seen["remember"]["command_id"]]
    assert step["decision"]["outcome"] == "ACCEPTED" and step["command"]["principal"] == alice
    assert step["command"]["source_ref"] == "chat:mcp"
    assert seen["bad"].is_error and structured(seen["bad"])["code"] == "INVALID_FIELD"
    assert structured(seen["bad"])["field"] == "query"
    floored = structured(seen["floor"])  # the relevance floor reaches an agent too (it was UNKNOWN_FIELD)
    assert not seen["floor"].is_error and floored["min_score"] == 0.35 and floored["memories"] == []
    assert floored["below_floor"] >= 1
    codec = default_codec()
    envs = [codec.decode(m.value())[1]["envelope"] for m in read_topic(namespace, "commands")]
    (env,) = [e for e in envs if e["command_id"] == seen["remember"]["command_id"]]
    assert env["attributes"]["gateway"] == "mcp" and env["attributes"]["gateway_token"].startswith("tok_")
    assert env["principal"] == alice and env["signature"] is not None


def test_a_forget_of_another_principals_memory_is_an_error_with_its_code(
        namespace: Settings, users: dict[str, Any], client: MemwardenClient) -> None:
    bob, _ = users["bob"]
    _, token = users["alice"]
    r = client.record(principal=bob, subject=bob, text="Bob's locker code is not alice's business")
    assert client.decisions([r.command_id])[r.command_id] == "ACCEPTED"
    seen: dict[str, CallToolResult] = {}

    async def body(c: Client) -> None:
        seen["forget"] = await c.call_tool("forget", {"memory_id": r.memory_id, "reason": "mine now"})
        seen["supersede"] = await c.call_tool("supersede", {"memory_id": r.memory_id, "text": "changed"})

    session(namespace, token, body)
    for name in ("forget", "supersede"):
        assert seen[name].is_error, (name, seen[name].content)
        out = structured(seen[name])
        assert out["code"] == "NOT_OWNER" and "NOT_OWNER" in out["codes"] and out["status"] == 403
    assert client.history(bob, r.memory_id) is not None  # still there


BAD_ARGUMENTS: list[tuple[str, dict[str, Any], str, str]] = [
    # (tool, arguments, code, field): what the SDK's own argument validation refused with its text only
    ("recall", {"query": "tea", "k": 0}, "INVALID_FIELD", "k"),
    ("recall", {"query": "tea", "k": 500}, "INVALID_FIELD", "k"),
    ("recall", {"query": "tea", "k": "5"}, "INVALID_FIELD", "k"),  # strict, as REST: not coerced
    ("recall", {"query": "tea", "include_untrusted": "true"}, "INVALID_FIELD", "include_untrusted"),
    ("recall", {"query": "tea", "min_score": "0.3"}, "INVALID_FIELD", "min_score"),
    ("recall", {"query": "tea", "min_score": 1.5}, "INVALID_FIELD", "min_score"),
    ("recall", {"query": "tea", "principal": "user:bob"}, "UNKNOWN_FIELD", "principal"),  # was silently ignored
    ("recall", {}, "MISSING_FIELD", "query"),
    ("remember", {}, "MISSING_FIELD", "text"),
    ("remember", {"text": "tea", "colour": "red"}, "UNKNOWN_FIELD", "colour"),
    ("remember", {"text": "tea", "tags": [1]}, "INVALID_FIELD", "tags[0]"),
    ("supersede", {"memory_id": "not-a-uuid", "text": "tea"}, "INVALID_FIELD", "memory_id"),
    ("forget", {"subject": "user:x", "dry_run": "yes"}, "INVALID_FIELD", "dry_run"),
    ("history", {"memory_id": str(uuid.uuid4()), "purpose": 7}, "INVALID_FIELD", "purpose"),
    ("why", {}, "MISSING_FIELD", "memory_id"),
]


def test_bad_arguments_are_an_error_result_naming_the_field(namespace: Settings, users: dict[str, Any]) -> None:
    """Arguments the tool's schema refuses (a value out of range or of the wrong type, strictly as the
    REST API: ``"k": "5"`` is not 5; an unknown argument; a missing one) are an error result with
    ``status`` 400 and the REST API's ``code``, ``codes``, ``error`` and ``field``, never the SDK's
    text with a pydantic URL; nothing is published."""
    _, token = users["alice"]
    seen: list[tuple[str, str, str, CallToolResult]] = []
    before = ends(namespace)

    async def body(c: Client) -> None:
        listed = {t.name: t for t in (await c.list_tools()).tools}
        assert all(t.input_schema.get("additionalProperties") is False for t in listed.values())
        for tool, arguments, code, field in BAD_ARGUMENTS:
            seen.append((tool, code, field, await c.call_tool(tool, arguments)))

    session(namespace, token, body)
    for tool, code, field, r in seen:
        assert r.is_error, (tool, field)
        out = structured(r)
        assert (out["status"], out["code"], out["codes"], out["field"]) == (400, code, [code], field), (tool, out)
        assert out["error"].startswith(f"{field}: ")
        text = json.dumps([c.model_dump() for c in r.content])
        assert "pydantic" not in text and "Error executing tool" not in text, text
    assert ends(namespace) == before


@pytest.mark.parametrize("token", [None, "mwt_not-a-token-" + "x" * 20])
def test_without_a_valid_token_the_server_refuses_to_start_in_one_line(namespace: Settings, worker: WorkerProcess,
                                                                      token: str | None) -> None:
    done = subprocess.run([MEMWARDEN, "mcp"], env=_env(namespace, token), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stdout == ""  # stdout is the protocol's
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "MEMWARDEN_MCP_TOKEN" in last
    if token is not None:
        assert "UNKNOWN_TOKEN" in last or "TOKEN_MALFORMED" in last


@contextmanager
def http_server(namespace: Settings) -> Iterator[str]:
    """``memwarden mcp --transport http`` on a free port, without a token of its own: its ``/mcp`` URL."""
    from memwarden.ops.pidfiles import free_port, port_answers

    port = free_port()
    proc = subprocess.Popen([MEMWARDEN, "mcp", "--transport", "http", "--port", str(port)], env=_env(namespace, None),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not port_answers(port) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_streamable_http_transport_authenticates_every_request(namespace: Settings, users: dict[str, Any]) -> None:
    """Over HTTP the server holds no token of its own: each request carries its bearer token and the
    tools act for that token's principal; no token or an unknown one is 401 from the SDK's auth."""
    import httpx
    from mcp.shared._httpx_utils import create_mcp_http_client

    (alice, a_token), (_, b_token) = users["alice"], users["bob"]
    seen: dict[str, Any] = {}

    async def as_(token: str, body: Callable[[Client], Awaitable[None]]) -> None:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60) as c:
            await body(c)

    async def main() -> None:
        async def alice_writes(c: Client) -> None:
            seen["tools"] = {t.name for t in (await c.list_tools()).tools}
            seen["remember"] = await c.call_tool("remember", {"text": "Alice reads over http"})

        async def bob_forgets(c: Client) -> None:
            memory_id = structured(seen["remember"])["memory_id"]
            seen["bob"] = await c.call_tool("forget", {"memory_id": memory_id})

        with anyio.fail_after(120):
            await as_(a_token, alice_writes)
            await as_(b_token, bob_forgets)

    with http_server(namespace) as url:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        for headers in ({}, {"Authorization": "Bearer mwt_not-a-token-" + "x" * 20}):
            refused = httpx.post(url, json=init, headers={"Accept": "application/json, text/event-stream", **headers},
                                 timeout=30)
            assert refused.status_code == 401, refused.text
        anyio.run(main)
    assert seen["tools"] == TOOLS
    assert not seen["remember"].is_error and structured(seen["remember"])["outcome"] == "ACCEPTED"
    assert seen["bob"].is_error and "NOT_OWNER" in json.dumps(structured(seen["bob"]))  # acted as bob, not alice
    codec = default_codec()
    memory_id = structured(seen["remember"])["memory_id"]
    commands = [codec.decode(m.value())[1] for m in read_topic(namespace, "commands")]
    (wrote,) = [r for r in commands if r.get("memory_id") == memory_id]  # bob's forget was refused before the ledger
    assert wrote["envelope"]["principal"] == alice and wrote["envelope"]["attributes"]["gateway"] == "mcp"


@pytest.mark.parametrize(("authorization", "code"), [
    (None, "TOKEN_MISSING"),  # the SDK's middleware answers 401 without asking the token verifier
    ("Basic YWxpY2U6c2VjcmV0", "TOKEN_MISSING"),
    ("Bearer mwt_short", "TOKEN_MALFORMED"),
    ("Bearer mwt_" + "x" * 43, "UNKNOWN_TOKEN"),
])
def test_every_refused_http_request_is_audited_and_names_its_reason(namespace: Settings, worker: WorkerProcess,
                                                                   authorization: str | None, code: str) -> None:
    """Over streamable HTTP a request without a token, with another scheme, a malformed or an unknown
    token is 401, audited as ``AuthRefused`` with its reason code (route ``mcp:http``), and the answer
    names the code (body ``code`` and ``error_description``, ``WWW-Authenticate``) as the REST API does
    (newcomer trial: no token was not audited, and every body was the SDK's generic one)."""
    import httpx

    def audited() -> int:  # named as the MCP gateway's, not the REST API's
        return len([r for r in refusals(namespace) if r["code"] == code and r["route"] == "mcp:http"
                    and r["gateway"] == "mcp"])

    before = audited()
    with http_server(namespace) as url:
        headers = {"Accept": "application/json, text/event-stream"}
        if authorization is not None:
            headers["Authorization"] = authorization
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        refused = httpx.post(url, json=init, headers=headers, timeout=30)
        health = httpx.get(url.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/mcp", timeout=30)
    assert refused.status_code == 401, refused.text
    body = refused.json()
    assert body["code"] == code and body["field"] == "Authorization" and body["error"] == "invalid_token", body
    assert body["error_description"].startswith(f"{code}: ")
    assert f'error_description="{code}"' in refused.headers["www-authenticate"]
    assert refused.headers["www-authenticate"].startswith("Bearer ")
    assert int(refused.headers["content-length"]) == len(refused.content)
    assert health.status_code == 200  # the SDK's metadata route is public: nothing refused, nothing audited
    deadline = time.monotonic() + 30
    while audited() == before and time.monotonic() < deadline:  # the audit topic is read back
        time.sleep(0.5)
    assert audited() == before + 1


def test_the_http_server_is_on_the_stack_s_books_until_it_ends(namespace: Settings) -> None:
    """``memwarden mcp --transport http`` records itself where ``memwarden stack down`` stops every process of
    ours (and ``stack status`` lists it); its record goes when it ends (newcomer trial, twenty-fourth session:
    ``make down`` left it running)."""
    from memwarden.ops import pidfiles, stack

    with http_server(namespace) as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        path = pidfiles.pidfile_path(namespace, f"mcp-{namespace.topic_prefix}-{port}")
        pid = pidfiles.read_pidfile(path)
        assert pid is not None and pidfiles.is_alive(pid)
        assert stack.status(namespace)[path.stem]["pid"] == pid
        pidfiles.terminate([pid], 30)  # what stack down does with every recorded process
        assert not pidfiles.is_alive(pid)
    assert not path.exists()
