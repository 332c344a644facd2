"""The REST API application: ``create_app(gateway)`` puts the routes of :mod:`.writes` and :mod:`.reads`,
the error handlers and the body limit together. OpenAPI at ``/openapi.json``, docs at ``/docs`` (Swagger UI served
from the installed ``swagger-ui-bundle`` under ``/docs-assets``: nothing loads from the internet).
Nothing connects here: the :class:`~memwarden.api.gateway.Gateway` holds the clients."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path

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


#: Where the docs page's Swagger UI files are served from (package data of ``swagger-ui-bundle``).
DOCS_ASSETS = "/docs-assets"


def create_app(gateway: Gateway, max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    """The FastAPI app over ``gateway``; bodies over ``max_body_bytes`` are refused with 413."""
    app = FastAPI(title="memwarden", version=__version__, description=DESCRIPTION, openapi_url="/openapi.json",
                  docs_url=None, redoc_url=None)
    app.state.gateway = gateway
    # the docs page's Swagger UI from the installed swagger-ui-bundle, not a CDN: a host without internet
    # showed a blank page (newcomer trial, twenty-fourth session)
    app.mount(DOCS_ASSETS, StaticFiles(directory=swagger_ui_path), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title="memwarden API",
                                   swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
                                   swagger_favicon_url=f"{DOCS_ASSETS}/favicon-32x32.png")

    install(app)
    app.include_router(writes.router)
    app.include_router(reads.router)
    app.include_router(inspect.router)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    return app


__all__ = ["create_app"]
