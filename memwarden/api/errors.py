"""One error shape for every refusal of the REST API, ``{"error": message, "code": CODE, "field":
dotted.path | null}``, and no stack trace ever: bad JSON, wrong types, unknown fields and missing
fields are 400 naming the field (FastAPI's 422 validation errors reshaped); a body over the limit is
413 before it is read whole; an unexpected error is 500 with an incident id (the trace goes to the
server's log only)."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError as PydanticValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memwarden.errors import MemwardenError, StackUnavailable, ValidationError

log = logging.getLogger("memwarden.api")

#: Largest request body, in bytes (1 MiB).
MAX_BODY_BYTES = 1_048_576


class ApiError(MemwardenError):
    """A refusal with its HTTP ``status``, machine-readable ``code``, ``message``, the ``field`` it
    concerns and ``extra`` members of the answer."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None,
                 extra: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.field = status, code, message, field
        self.extra = extra or {}
        self.headers = headers or {}


def problem(status: int, code: str, message: str, field: str | None = None,
            headers: dict[str, str] | None = None, **extra: Any) -> JSONResponse:
    """The JSON answer of a refusal."""
    return JSONResponse({"error": message, "code": code, "field": field, **extra}, status_code=status,
                        headers=headers)


#: Where a pydantic error location of a request starts (the part of the request, not a field).
REQUEST_PARTS = ("body", "query", "path", "header")


def field_of(loc: Sequence[Any], whole: str = "body", sources: Sequence[str] = REQUEST_PARTS) -> str:
    """A pydantic error location as a dotted path without its source (``("body", "fact", "value")`` →
    ``fact.value``, list indexes as ``[i]``); a first element in ``sources`` is dropped, and an empty
    path is ``whole`` (the body itself, or an MCP tool's ``arguments`` with ``sources=()``)."""
    parts = list(loc[1:]) if loc and loc[0] in sources else list(loc)
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or whole


def invalid_field(errors: Sequence[Mapping[str, Any]], whole: str = "body",
                  sources: Sequence[str] = REQUEST_PARTS) -> tuple[str, str, str]:
    """The first pydantic error of ``errors`` as ``(code, message, field)``: ``UNKNOWN_FIELD`` for an
    extra field, ``MISSING_FIELD`` for a required one, ``INVALID_FIELD`` otherwise, the message led by
    the field's dotted path (:func:`field_of`). The REST API and the MCP tools answer bad input alike."""
    first = errors[0] if errors else {"loc": (), "msg": "invalid", "type": ""}
    kind, field = str(first.get("type", "")), field_of(first.get("loc", ()), whole, sources)
    if kind == "extra_forbidden":
        return "UNKNOWN_FIELD", f"{field}: unknown field", field
    if kind == "missing":
        return "MISSING_FIELD", f"{field}: required", field
    return "INVALID_FIELD", f"{field}: {str(first.get('msg', 'invalid')).removeprefix('Value error, ')}", field


def _validation(exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    if errors and str(errors[0].get("type", "")) == "json_invalid":
        return problem(400, "BAD_JSON", "the body is not valid JSON", "body")
    code, message, field = invalid_field(errors)
    return problem(400, code, message, field)


def install(app: FastAPI) -> None:
    """Register the error handlers on ``app`` (see the module doc)."""

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        kind = request.headers.get("content-type", "")
        if request.method in ("POST", "PUT", "PATCH") and kind and "json" not in kind.lower():
            return problem(415, "UNSUPPORTED_MEDIA_TYPE", f"the body must be JSON (Content-Type: application/json), "
                           f"got {kind.split(';')[0][:80]!r}", "body")
        return _validation(exc)

    @app.exception_handler(ApiError)
    async def refused(request: Request, exc: ApiError) -> JSONResponse:
        return problem(exc.status, exc.code, exc.message, exc.field, exc.headers or None, **exc.extra)

    @app.exception_handler(ValidationError)
    async def bad_value(request: Request, exc: ValidationError) -> JSONResponse:
        return problem(400, "INVALID_FIELD", str(exc), exc.field)

    @app.exception_handler(PydanticValidationError)
    async def bad_model(request: Request, exc: PydanticValidationError) -> JSONResponse:
        # a command model built from the request refused a value no route type checked first: bad input, 400
        code, message, field = invalid_field(exc.errors(), sources=())
        return problem(400, code, message, field)

    @app.exception_handler(StackUnavailable)
    async def down(request: Request, exc: StackUnavailable) -> JSONResponse:
        first = str(exc).splitlines()[0] if str(exc) else "a dependency does not answer"
        return problem(503, "STACK_UNAVAILABLE", first, None, {"Retry-After": "2"})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and "parsing the body" in str(exc.detail):  # JSON the parser gave up on
            return problem(400, "BAD_JSON", "the body is not JSON this API can read (malformed or nested too deep)",
                           "body")
        return problem(exc.status_code, f"HTTP_{exc.status_code}", str(exc.detail), None,
                       dict(exc.headers) if exc.headers else None)

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> JSONResponse:
        incident = uuid.uuid4().hex[:12]
        log.exception("incident %s on %s %s", incident, request.method, request.url.path)
        return problem(500, "INTERNAL", f"internal error (incident {incident}; see the server log)", None)


class BodyLimit:
    """ASGI middleware: a request whose body exceeds ``max_bytes`` gets 413 ``BODY_TOO_LARGE`` (by its
    ``Content-Length`` before anything is read, or while a chunked body arrives); nothing past the
    limit reaches the app."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _too_large(self, send: Send) -> None:
        body = json.dumps({"error": f"the body exceeds {self.max_bytes} bytes", "code": "BODY_TOO_LARGE",
                           "field": "body"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            await self._too_large(send)
            return
        messages: list[Message] = []
        size, more = 0, True
        while more:  # read the body here, bounded, and hand it on (chunked bodies have no length)
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await self._too_large(send)
                return
            more = bool(message.get("more_body", False))

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


__all__ = ["ApiError", "BodyLimit", "MAX_BODY_BYTES", "REQUEST_PARTS", "field_of", "install", "invalid_field",
           "problem"]
