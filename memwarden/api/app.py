"""The REST API application: ``create_app(gateway)`` puts the routes of :mod:`.writes` and :mod:`.reads`,
the error handlers and the body limit together. OpenAPI at ``/openapi.json``, docs at ``/docs``.
Nothing connects here: the :class:`~memwarden.api.gateway.Gateway` holds the clients."""

from __future__ import annotations

from fastapi import FastAPI

from memwarden import __version__

from . import inspect, reads, writes
from .errors import MAX_BODY_BYTES, BodyLimit, install
from .gateway import Gateway

DESCRIPTION = """Governed long-term memory for LLM agents, over HTTP.

Every request but `GET /v1/health` carries `Authorization: Bearer mwt_...` (a token from
`memwarden token issue PRINCIPAL`; revoked with `memwarden token revoke TOKEN_ID`). Every write is a
command signed with the token's principal's key and decided by the write gate on the ledger: it answers
202 with its ledger position and `decision_url`, or with `?wait=true` the decision (201/200 accepted,
202 deferred by a legal hold, 403/404/409/422 refused or quarantined) with its reason codes. Every read
is filtered by the principal's permissions inside the search and audited. Errors: `{"error", "code",
"field"}`; bad input is 400 naming the field and publishes nothing."""


def create_app(gateway: Gateway, max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    """The FastAPI app over ``gateway``; bodies over ``max_body_bytes`` are refused with 413."""
    app = FastAPI(title="memwarden", version=__version__, description=DESCRIPTION, openapi_url="/openapi.json",
                  docs_url="/docs", redoc_url=None)
    app.state.gateway = gateway
    install(app)
    app.include_router(writes.router)
    app.include_router(reads.router)
    app.include_router(inspect.router)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    return app


__all__ = ["create_app"]
