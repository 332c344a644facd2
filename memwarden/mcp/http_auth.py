"""The refusals of the MCP server's streamable HTTP transport, audited and answered as the REST API's.

The SDK's bearer middleware (``BearerAuthBackend`` then ``RequireAuthMiddleware``) asks the token
verifier (:class:`memwarden.mcp.server.GatewayTokens`) only when a request carries ``Authorization:
Bearer ...``, and answers every refusal 401 with one generic body. :class:`AuthAnswers` wraps the
SDK's app: a request to the MCP endpoint without a bearer token is authenticated by the gateway all
the same (``TOKEN_MISSING``, audited as ``AuthRefused`` like every other refusal), the verifier notes
the reason of a refused token (:func:`note_refusal`), and the SDK's 401 answer then names it:

- body ``{"error": "invalid_token", "error_description": "CODE: message", "code": CODE, "field":
  "Authorization"}`` (RFC 6750's members, which MCP clients read, plus the REST API's ``code`` and
  ``field``);
- ``WWW-Authenticate: Bearer error="invalid_token", error_description="CODE", resource_metadata=...``
  (the REST API's header, the SDK's ``resource_metadata`` kept).

Codes: ``TOKEN_MISSING``, ``TOKEN_MALFORMED``, ``UNKNOWN_TOKEN``, ``TOKEN_REVOKED``, ``TOKEN_EXPIRED``
(and ``NO_SIGNING_KEY`` when this host holds no key for the token's principal).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from contextvars import ContextVar

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memwarden.api.errors import ApiError
from memwarden.errors import StackUnavailable

#: The refusal of the HTTP request being served (``{"code", "message"}``), filled by :func:`note_refusal`.
_REFUSAL: ContextVar[dict[str, str] | None] = ContextVar("memwarden_mcp_refusal", default=None)
_DESCRIPTION = re.compile(r'error_description="[^"]*"')


def note_refusal(code: str, message: str) -> None:
    """Remember why the token of the HTTP request being served was refused (the verifier's answer to
    the SDK is only ``None``), for :class:`AuthAnswers` to name in the 401. A no-op outside a request."""
    refusal = _REFUSAL.get()
    if refusal is not None:
        refusal.update(code=code, message=message)


def authorization(scope: Scope) -> str | None:
    """The request's ``Authorization`` header value, or ``None``."""
    for name, value in scope.get("headers") or []:
        if name.lower() == b"authorization":
            return str(value.decode("latin-1"))
    return None


def has_bearer(scope: Scope) -> bool:
    """Whether the request carries ``Authorization: Bearer ...``, as the SDK's ``BearerAuthBackend``
    decides it (only then does it ask the token verifier)."""
    return (authorization(scope) or "").lower().startswith("bearer ")


def answer_401(code: str, message: str, www_authenticate: str | None) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """The body and headers of a 401 naming ``code`` (see the module doc); ``www_authenticate`` is the
    SDK's header, whose ``error_description`` is replaced by the code."""
    body = json.dumps({"error": "invalid_token", "error_description": f"{code}: {message}", "code": code,
                       "field": "Authorization"}).encode()
    challenge = f'Bearer error="invalid_token", error_description="{code}"'
    if www_authenticate and _DESCRIPTION.search(www_authenticate):
        challenge = _DESCRIPTION.sub(f'error_description="{code}"', www_authenticate, count=1)
    return body, [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                  (b"www-authenticate", challenge.encode("latin-1", "replace"))]


class AuthAnswers:
    """ASGI middleware around the SDK's streamable HTTP app (see the module doc). ``refuse_missing(header)``
    authenticates a request to ``path`` that carries no bearer token (raising the gateway's audited
    :class:`ApiError`), in a worker thread."""

    def __init__(self, app: ASGIApp, refuse_missing: Callable[[str | None], object], path: str = "/mcp") -> None:
        self.app = app
        self.refuse_missing = refuse_missing
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal: dict[str, str] = {}
        token = _REFUSAL.set(refusal)
        try:
            if scope.get("path", "").rstrip("/") == self.path.rstrip("/") and not has_bearer(scope):
                try:  # the SDK refuses it without asking the verifier: the gateway audits it here
                    await anyio.to_thread.run_sync(self.refuse_missing, authorization(scope))
                except ApiError as exc:
                    refusal.update(code=exc.code, message=exc.message)
                except StackUnavailable:
                    pass  # unaudited (the broker or database is down): the SDK's own 401 stands
            await self.app(scope, receive, self._naming(send, refusal))
        finally:
            _REFUSAL.reset(token)

    def _naming(self, send: Send, refusal: dict[str, str]) -> Send:
        """``send`` with a 401 rewritten to name ``refusal``'s code (once it is known)."""
        rewriting = False

        async def naming(message: Message) -> None:
            nonlocal rewriting
            if message["type"] == "http.response.start" and message["status"] == 401 and "code" in refusal:
                rewriting = True
                given = dict(message.get("headers") or [])
                challenge = given.get(b"www-authenticate")
                body, headers = answer_401(refusal["code"], refusal.get("message", ""),
                                           challenge.decode("latin-1") if challenge else None)
                await send({**message, "headers": headers})
                await send({"type": "http.response.body", "body": body, "more_body": False})
                return
            if rewriting:  # the SDK's own body: replaced above
                return
            await send(message)

        return naming


__all__ = ["AuthAnswers", "answer_401", "authorization", "has_bearer", "note_refusal"]
