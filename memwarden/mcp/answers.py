"""Pure mappings of the MCP server: how a route's answer, a refusal or bad input becomes a tool
result (a refusal is ``isError`` with its reason codes, never success), the server token from the
environment, which forget a ``forget`` call is, and what ``why`` shows of a memory's audit."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError as PydanticValidationError

from memwarden.api.bodies import ForgetBody
from memwarden.api.errors import invalid_field
from memwarden.errors import MemwardenError

#: The environment variable holding the server's token (``mwt_...`` from ``memwarden token issue``).
TOKEN_ENV = "MEMWARDEN_MCP_TOKEN"
#: ``envelope.attributes["gateway"]`` of every command this server signs.
GATEWAY = "mcp"


def token_from_env(env: Mapping[str, str]) -> str:
    """The server's token from ``env``; a one-line ``MemwardenError`` when it is not set."""
    token = env.get(TOKEN_ENV, "").strip()
    if not token:
        raise MemwardenError(f"{TOKEN_ENV} is not set: issue one with `memwarden token issue PRINCIPAL`")
    return token


def result(status: int, body: Mapping[str, Any]) -> CallToolResult:
    """A tool result of a route's answer: ``isError`` when ``status`` is 400 or more (refused,
    quarantined, bad input), the body as JSON text and as structured content, ``status`` added."""
    out = {**body, "status": status}
    return CallToolResult(content=[TextContent(text=json.dumps(out, default=str))], structured_content=out,
                          is_error=status >= 400)


def refusal(status: int, code: str, message: str, field: str | None = None,
            extra: Mapping[str, Any] | None = None) -> CallToolResult:
    """An error result ``{"error", "code", "codes", "field"}`` (the REST API's error shape)."""
    codes = list((extra or {}).get("codes") or [code])
    return result(status, {**(extra or {}), "error": message, "code": code, "codes": codes, "field": field})


def invalid(exc: PydanticValidationError) -> CallToolResult:
    """Bad tool arguments as the REST API names them (:func:`memwarden.api.errors.invalid_field`): 400
    ``INVALID_FIELD`` / ``MISSING_FIELD`` / ``UNKNOWN_FIELD`` with the field's dotted path, the
    arguments themselves being ``arguments``."""
    code, message, field = invalid_field(exc.errors(), whole="arguments", sources=())
    return refusal(400, code, message, field)


def given(**values: Any) -> dict[str, Any]:
    """The arguments actually given (``None`` and empty lists dropped, so the bodies' defaults hold)."""
    return {k: v for k, v in values.items() if v is not None and v != []}


def forget_call(memory_id: UUID | None, subject: str | None, selector: Mapping[str, Any], reason: str,
                dry_run: bool) -> UUID | ForgetBody:
    """Which forget a ``forget`` call is: a memory id alone (not a dry run) is ``ForgetMemory`` of that
    memory (its id returned); anything else a ``ForgetBody`` (``subject`` alone: ``ForgetSubject``;
    criteria: ``ForgetMatching``, the memory id among them). Raises the body's validation error."""
    criteria = given(**selector)
    if memory_id is not None and subject is None and not criteria and not dry_run:
        return memory_id
    if memory_id is not None:
        criteria["memory_ids"] = [memory_id, *criteria.get("memory_ids", [])]
    return ForgetBody.model_validate(given(subject=subject, reason=reason, dry_run=dry_run, **criteria))


def why_of(report: Mapping[str, Any]) -> dict[str, Any]:
    """What ``why`` shows of a memory's forensic audit: each command about it (type, writer, subject,
    provenance as the command names it, ledger position) with the gate's decision (outcome, reason
    codes and messages, policy version) and its erasure receipts. Never content, never the reads."""
    steps = []
    for entry in report.get("timeline") or []:
        decision = entry.get("decision") or {}
        reasons: Sequence[Mapping[str, Any]] = decision.get("reasons") or []
        steps.append({"at": entry.get("at"), "command": entry.get("command"),
                      "decision": {"outcome": decision.get("outcome", "PENDING"),
                                   "codes": [r.get("code") for r in reasons],
                                   "reasons": [{"code": r.get("code"), "message": r.get("message"),
                                                "field": r.get("field")} for r in reasons],
                                   "policy_version": decision.get("policy_version"),
                                   "decided_at": decision.get("decided_at")}})
    return {"memory_id": report.get("memory_id"), "timeline": steps,
            "erasure_receipts": report.get("erasure_receipts") or []}


__all__ = ["GATEWAY", "TOKEN_ENV", "forget_call", "given", "invalid", "refusal", "result", "token_from_env",
           "why_of"]
