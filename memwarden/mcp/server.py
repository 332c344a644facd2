"""The MCP server's tools over one namespace (see :mod:`memwarden.mcp`). Each tool authenticates the
server's token again (a revoked or expired token stops the next call), calls the REST API's route
function with a body built from its arguments, and maps the answer to a tool result
(:mod:`.answers`): the same checks, signer lookup, pre-checks and decision mapping as ``memwarden
serve``, with ``gateway = "mcp"`` on the commands it signs. Writes always wait for the decision.

Arguments are checked as strictly as the REST API's bodies (:func:`strict_tool`): an unknown argument,
a missing one or a value of the wrong type (``"k": "5"`` is not 5, ``"true"`` is no boolean) or out of
range is an error result with ``status`` 400 and the REST API's code (``UNKNOWN_FIELD``,
``MISSING_FIELD``, ``INVALID_FIELD``) naming the field (:class:`StrictServer`), never the SDK's text."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

import anyio
from fastapi.responses import JSONResponse
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import AnyHttpUrl, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr
from pydantic import ValidationError as PydanticValidationError

from memwarden import __version__
from memwarden.api import reads, writes
from memwarden.api.bodies import RecallBody, RecordBody, SupersedeBody
from memwarden.api.errors import ApiError
from memwarden.api.gateway import Caller, Gateway
from memwarden.api.serve import prepare
from memwarden.commands.readmodel.query import DEFAULT_PURPOSE, MAX_K
from memwarden.commands.readmodel.recency import CURRENT_WEIGHT, MAX_RECENCY
from memwarden.commands.vocabulary import EpistemicStatus, Sensitivity, SourceKind, StoreKind
from memwarden.errors import MemwardenError, StackUnavailable, ValidationError
from memwarden.settings import Settings

from .answers import GATEWAY, TOKEN_ENV, forget_call, given, invalid, refusal, result, token_from_env, why_of
from .http_auth import AuthAnswers, note_refusal

log = logging.getLogger("memwarden.mcp")
#: The "method" and "route" of MCP calls in the gateway's audit of refusals.
METHOD = "MCP"

INSTRUCTIONS = """Governed long-term memory. Everything you write is a signed command that a write gate
decides (it may refuse or quarantine it for review: the result is then an error with reason codes);
everything you read is filtered by what your principal may read and is audited. Use `remember` for a new
fact, `supersede` when a fact changed (keeps its history), `forget` when it must go (irreversible),
`recall` to look things up, `history` for a memory's versions, `why` for where it came from and what the
gate decided."""

MemoryId = Annotated[UUID, Field(description="the memory's id (memory_id of remember or recall)")]
Time = Annotated[datetime | None, Field(description="ISO 8601 with a timezone, e.g. 2026-03-01T12:00:00Z")]
Labels = Annotated[list[str] | None, Field(description="short labels")]


def strict_tool(fn: Callable[..., Any]) -> Tool:
    """``fn`` as an MCP tool (the SDK's :meth:`Tool.from_function`) whose argument model also refuses
    unknown arguments (``extra="forbid"``; its input schema says ``additionalProperties: false``). The
    strict types (``StrictInt``, ``StrictBool``, ``StrictStr``) are in ``fn``'s own annotations."""
    tool = Tool.from_function(fn)
    base = tool.fn_metadata.arg_model
    strict: type[ArgModelBase] = type(base.__name__, (base,), {"model_config": ConfigDict(extra="forbid"),
                                                               "__module__": base.__module__, "__doc__": base.__doc__})
    tool.fn_metadata.arg_model = strict  # read at every call (FuncMetadata's documented contract)
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool


class StrictServer(MCPServer):
    """The SDK's ``MCPServer`` whose tool calls answer arguments the tool's model refuses (the SDK raises
    ``ToolError`` caused by the ``ValidationError``) as the REST API answers a bad body: an error result
    with ``status`` 400, ``code`` (``UNKNOWN_FIELD``, ``MISSING_FIELD``, ``INVALID_FIELD``), ``codes``,
    ``error`` and ``field`` (:func:`memwarden.mcp.answers.invalid`), not the SDK's text."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
                        ) -> CallToolResult | InputRequiredResult:
        """The tool's result; bad arguments as a 400 error result (see the class doc). Raises what
        ``MCPServer.call_tool`` raises otherwise (an unknown tool, a crash: ``ToolError``)."""
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, PydanticValidationError) or isinstance(exc, UnexpectedToolError):
                raise
            refused = invalid(exc.__cause__)
            log.info("tool %s refused its arguments: %s", name, (refused.structured_content or {}).get("error"))
            return refused


class McpCaller(Caller):
    """The token's principal, marking the commands it signs ``gateway = "mcp"``."""

    @property
    def attributes(self) -> dict[str, str]:
        return {"gateway": GATEWAY, "gateway_token": self.token_id}


def authenticate(gateway: Gateway, token: str, tool: str) -> McpCaller:
    """The principal of ``token`` (the REST API's check: known, not revoked, not expired, a signing key
    on this host); raises :class:`ApiError` (audited by the gateway) otherwise."""
    who = gateway.authenticate(f"Bearer {token}", METHOD, f"mcp:{tool}")
    return McpCaller(who.principal, who.token_id, who.record, who.method, who.route)


def answered(out: Any) -> CallToolResult:
    """A route's return value as a tool result: a ``JSONResponse`` keeps its status, a dict is 200."""
    if isinstance(out, JSONResponse):
        return result(out.status_code, json.loads(bytes(out.body)))
    return result(200, out)


def guarded(gateway: Gateway, token: str, tool: str, call: Callable[[McpCaller], Any]) -> CallToolResult:
    """Authenticate, run ``call`` and map what it answers or raises to a tool result."""
    try:
        return answered(call(authenticate(gateway, token, tool)))
    except ApiError as exc:
        return refusal(exc.status, exc.code, exc.message, exc.field, exc.extra)
    except PydanticValidationError as exc:
        return invalid(exc)
    except ValidationError as exc:
        return refusal(400, "INVALID_FIELD", str(exc), exc.field)
    except StackUnavailable as exc:
        return refusal(503, "STACK_UNAVAILABLE", str(exc).splitlines()[0] if str(exc) else "stack unavailable")


class GatewayTokens:
    """The SDK's bearer check for the streamable HTTP transport (``TokenVerifier``): a request's
    ``Authorization: Bearer mwt_...`` is accepted when the REST API would accept it (known, not
    revoked, not expired, a signing key on this host); a refusal is audited by the gateway, its code
    noted for the 401 (:mod:`.http_auth`) and the SDK answers 401. The access token names the principal
    (``client_id``). A request without a bearer token never reaches it: :class:`.http_auth.AuthAnswers`
    audits that one."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's principal as an ``AccessToken``, or ``None`` (refused)."""
        try:
            who = await anyio.to_thread.run_sync(authenticate, self.gateway, token, "http")
        except ApiError as exc:
            note_refusal(exc.code, exc.message)  # named in the 401 by AuthAnswers
            return None
        except StackUnavailable:
            return None
        return AccessToken(token=token, client_id=who.principal, scopes=[])


def http_app(server: MCPServer, gateway: Gateway, host: str) -> AuthAnswers:
    """The SDK's streamable HTTP app of ``server`` (at ``/mcp``, behind its bearer middleware) wrapped
    in :class:`.http_auth.AuthAnswers`: a request without a bearer token is audited (``AuthRefused``,
    ``TOKEN_MISSING``) and every 401 names its reason code, as the REST API's."""
    def refuse_missing(header: str | None) -> object:
        return gateway.authenticate(header, METHOD, "mcp:http")

    return AuthAnswers(server.streamable_http_app(host=host), refuse_missing)


def request_token() -> str | None:
    """The bearer token of the HTTP request being served (checked by :class:`GatewayTokens`), or
    ``None`` on stdio."""
    access = get_access_token()
    return access.token if access is not None else None


def build_server(gateway: Gateway, token: str | None, http_url: str | None = None) -> MCPServer:
    """The MCP server with memwarden's tools. Over stdio (``http_url`` ``None``) it acts for
    ``token``'s principal (the server's configuration); over streamable HTTP at ``http_url`` every
    request must carry its own bearer token, checked by the SDK's auth middleware
    (:class:`GatewayTokens`) and again by every tool call, which acts for that token's principal."""
    def run(tool: str, call: Callable[[McpCaller], Any]) -> CallToolResult:
        current = request_token() if http_url is not None else token
        if current is None:
            return refusal(401, "TOKEN_MISSING", "send Authorization: Bearer mwt_... with every request",
                           "Authorization")
        return guarded(gateway, current, tool, call)

    def remember(
        text: Annotated[StrictStr, Field(description="the memory, one self-contained statement")],
        subject: Annotated[str | None, Field(description="whom it concerns (default: your principal)")] = None,
        scope: Annotated[str | None, Field(description="where it belongs (default account:default)")] = None,
        tags: Labels = None,
        source_ref: Annotated[str | None, Field(description="where it was said, e.g. chat:42")] = None,
        source_kind: Annotated[SourceKind | None, Field(description="how it was learnt")] = None,
        store_kind: Annotated[StoreKind | None, Field(description="which store (default PROFILE)")] = None,
        epistemic_status: Annotated[EpistemicStatus | None, Field(description="quoted, inferred ...")] = None,
        sensitivity: Annotated[Sensitivity | None, Field(description="default INTERNAL")] = None,
        purposes: Labels = None,
        observed_at: Time = None,
        effective_from: Time = None,
        effective_to: Time = None,
        follows: Annotated[str | None, Field(description="memory_id of the previous turn of this conversation"
                                             " (helps recall find replies; never access)")] = None,
    ) -> CallToolResult:
        """Record a new memory. Waits for the write gate: accepted → its memory_id; refused or
        quarantined → an error with the reason codes (nothing is stored)."""
        args = given(text=text, subject=subject, scope=scope, tags=tags, source_ref=source_ref,
                     source_kind=source_kind, store_kind=store_kind, epistemic_status=epistemic_status,
                     sensitivity=sensitivity, purposes=purposes, observed_at=observed_at,
                     effective_from=effective_from, effective_to=effective_to, follows=follows)
        return run("remember", lambda who: writes.record(RecordBody.model_validate(args), who, gateway, wait=True))

    def recall(
        query: Annotated[StrictStr, Field(description="what you want to know, in plain words")],
        k: Annotated[StrictInt, Field(ge=1, le=MAX_K, description="how many memories at most")] = 10,
        mode: Annotated[Literal["hybrid", "dense", "lexical"], Field(description="search mode")] = "hybrid",
        as_of: Annotated[datetime | None, Field(description="memories valid at this time (ISO 8601, with a"
                                                 " timezone; default now)")] = None,
        known_at: Annotated[datetime | None, Field(description="as the ledger knew them at this time")] = None,
        purpose: Annotated[str, Field(description="why you read (grants may be limited to purposes)")]
        = DEFAULT_PURPOSE,
        include_untrusted: Annotated[StrictBool, Field(description="also unverified memories")] = False,
        recency: Annotated[StrictFloat | None, Field(ge=0.0, le=MAX_RECENCY, description=(
            f"weight of recency in the ranking (score x (1 + recency x rank in time / (n - 1)); default:"
            f" {CURRENT_WEIGHT:g} for questions about a current, latest or final value, else 0)"))] = None,
        min_score: Annotated[StrictFloat, Field(ge=0.0, le=1.0, description=(
            "relevance floor in [0, 1], the same scale for every query (0 = none, 0.35 recommended): memories"
            " below it are dropped and counted in below_floor; nothing left means nothing relevant"))] = 0.0,
    ) -> CallToolResult:
        """Look up the memories your principal may read that best match ``query``; each with its text,
        memory_id, validity, provenance, score and relevance. Audited."""
        args = given(query=query, k=k, mode=mode, as_of=as_of, known_at=known_at, purpose=purpose,
                     include_untrusted=include_untrusted, recency=recency, min_score=min_score)
        return run("recall", lambda who: reads.recall(RecallBody.model_validate(args), who, gateway))

    def supersede(
        memory_id: MemoryId,
        text: Annotated[StrictStr, Field(description="the new version of the memory")],
        evidence: Annotated[list[str] | None, Field(description="why it changed (quotes, references)")] = None,
        source_ref: Annotated[str | None, Field(description="where the change was said")] = None,
    ) -> CallToolResult:
        """Replace a memory with a new version (the old one stays in its history, closed). Waits for
        the gate's decision; a refusal (not yours, unknown, forgotten ...) is an error with codes."""
        args = given(text=text, evidence=evidence, source_ref=source_ref)
        return run("supersede", lambda who: writes.supersede(memory_id, SupersedeBody.model_validate(args), who,
                                                             gateway, wait=True))

    def forget(
        memory_id: Annotated[UUID | None, Field(description="forget this memory (every version)")] = None,
        subject: Annotated[str | None, Field(description="alone: forget everything about this subject")] = None,
        scopes: Labels = None,
        tags: Labels = None,
        source_references: Labels = None,
        memory_ids: Annotated[list[UUID] | None, Field(description="several memories")] = None,
        query: Annotated[str | None, Field(description="memories matching this search")] = None,
        reason: Annotated[str, Field(description="why (kept on the ledger)")] = "",
        dry_run: Annotated[StrictBool, Field(description="only list what would be forgotten")] = False,
    ) -> CallToolResult:
        """Forget memories irreversibly (their keys are shredded, derivatives follow): one memory_id, a
        subject alone, or selector criteria (all must match). Waits for the decision: memory_ids names
        what was (or, with dry_run, would be) forgotten; a refusal is an error with codes."""
        selector = {"scopes": scopes, "tags": tags, "source_references": source_references,
                    "memory_ids": memory_ids, "query": query}

        def call(who: McpCaller) -> Any:
            what = forget_call(memory_id, subject, selector, reason, dry_run)
            if isinstance(what, UUID):
                return writes.forget(what, who, gateway, wait=True, reason=reason)
            return writes.forget_many(what, who, gateway, wait=True)

        return run("forget", call)

    def history(
        memory_id: MemoryId,
        purpose: Annotated[str, Field(description="why you read")] = DEFAULT_PURPOSE,
    ) -> CallToolResult:
        """Every version of a memory you may read: validity intervals, status, writer, provenance,
        ledger position, and the text where it may be shown. Audited."""
        return run("history", lambda who: reads.history(memory_id, who, gateway, purpose=purpose))

    def why(memory_id: MemoryId) -> CallToolResult:
        """Where a memory came from and what the write gate decided: each command about it (writer,
        subject, source, when, signing key) with the decision's outcome and reason codes, and its
        erasure receipts. Never content."""
        return run("why", lambda who: why_of(reads.audit(memory_id, who, gateway)))

    tools = [strict_tool(fn) for fn in (remember, recall, supersede, forget, history, why)]
    if http_url is None:
        return StrictServer(name="memwarden", version=__version__, instructions=INSTRUCTIONS, tools=tools)
    return StrictServer(name="memwarden", version=__version__, instructions=INSTRUCTIONS, tools=tools,
                        token_verifier=GatewayTokens(gateway),
                        auth=AuthSettings(issuer_url=AnyHttpUrl(http_url), resource_server_url=AnyHttpUrl(
                            f"{http_url}/mcp"), validate_token_resource=False))


def _exit(signum: int, frame: object) -> None:
    raise SystemExit(0)


def serve(settings: Settings, transport: Literal["stdio", "http"] = "stdio", host: str = "127.0.0.1",
          port: int = 8090, say: Callable[[str], None] | None = None) -> None:
    """Run the MCP server until its client leaves (stdio) or it is interrupted (http). Before that, in
    one line each: the token is set, the stack answers, a worker of the namespace answers (started as a
    child when none does, as ``memwarden serve`` does), the token is valid. Raises ``MemwardenError``
    (one line) otherwise. Nothing but the protocol goes to stdout."""
    def err(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    say = say or err
    token = token_from_env(os.environ) if transport == "stdio" else os.environ.get(TOKEN_ENV, "").strip() or None
    # stdio listens on no port of ours: port 0 always binds, so only the stack and worker are checked
    worker = prepare(settings, host, port if transport == "http" else 0, True, say)
    gateway = None
    signal.signal(signal.SIGTERM, _exit)
    try:
        gateway = Gateway(settings, name=GATEWAY)
        who = None
        if token is not None:
            try:
                who = authenticate(gateway, token, "start")
            except ApiError as exc:
                raise MemwardenError(f"the token in {TOKEN_ENV} is refused: {exc.code} ({exc.message})") from None
        logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per read API call otherwise
        if transport == "http":
            server = build_server(gateway, None, f"http://{host}:{port}")
            say(f"memwarden MCP server on http://{host}:{port}/mcp: every request carries its own"
                " Authorization: Bearer mwt_... and acts for that token's principal")
            import uvicorn

            config = uvicorn.Config(http_app(server, gateway, host), host=host, port=port,
                                    log_level=server.settings.log_level.lower())
            anyio.run(uvicorn.Server(config).serve)
        else:
            assert who is not None
            server = build_server(gateway, token)
            say(f"memwarden MCP server for {who.principal} on stdio")
            server.run("stdio")
    finally:
        if gateway is not None:
            gateway.close()
        if worker is not None:
            worker.stop()


__all__ = ["INSTRUCTIONS", "GatewayTokens", "McpCaller", "StrictServer", "authenticate", "build_server", "guarded",
           "http_app", "request_token", "serve", "strict_tool"]
