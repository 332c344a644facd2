"""The read API's routes on a Faust worker's web server (127.0.0.1): ``POST /recall``,
``POST /history``, ``POST /held``, ``POST /decisions``, ``POST /reconcile``, ``POST /switch``, ``GET /index/count``,
``GET /health``, ``GET /ready``, and the timer that flushes due ``MemoryUsed`` batches. Thin: parse JSON, call
:class:`~memwarden.read_api.service.ReadService`."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import faust
from faust.web import Request, Response, View

from memwarden.errors import ValidationError
from memwarden.read_api.service import ReadService, Reply

log = logging.getLogger("memwarden.read_api")


async def _json(request: Request) -> Any:
    try:
        return await request.json()
    except ValueError as exc:
        raise ValidationError("body", f"not JSON: {exc}") from None


def mount_health(app: faust.App, service: ReadService, roles: Sequence[str],
                 agents: Callable[[], Mapping[str, Mapping[str, Any]]] | None = None) -> None:
    """Register ``GET /health`` (liveness) and ``GET /ready`` (readiness: database, broker, every agent
    of ``roles`` running, the gate's backlog) on ``app``: every worker that serves HTTP has them, a
    gate-only worker too (on ``health_port``)."""

    def answer(view: View, reply: Reply) -> Response:
        return view.json(reply.body, status=reply.status, headers=reply.headers or None)

    @app.page("/health")
    class HealthView(View):
        async def get(self, request: Request) -> Response:
            return answer(self, service.health(roles))

    @app.page("/ready")
    class ReadyView(View):
        """Readiness: database, broker and every agent of the worker's roles."""

        async def get(self, request: Request) -> Response:
            return answer(self, await service.ready(roles, agents() if agents is not None else {}))


def mount(app: faust.App, service: ReadService, roles: Sequence[str],
          agents: Callable[[], Mapping[str, Mapping[str, Any]]] | None = None) -> None:
    """Register the read API's routes and its usage-flush timer on ``app``; ``agents`` tells the
    state of the worker's agents (``/ready``)."""

    def answer(view: View, reply: Reply) -> Response:
        return view.json(reply.body, status=reply.status, headers=reply.headers or None)

    async def with_body(view: View, request: Request, call: Callable[[Any], Awaitable[Reply]]) -> Response:
        """``call`` with the request's JSON body; a body that is not JSON is a 400 naming ``body``."""
        try:
            body = await _json(request)
        except ValidationError as exc:
            return view.json({"error": str(exc), "code": "BAD_JSON", "field": exc.field}, status=400)
        return answer(view, await call(body))

    @app.page("/recall")
    class RecallView(View):
        async def post(self, request: Request) -> Response:
            return await with_body(self, request, service.recall)

    @app.page("/history")
    class HistoryView(View):
        """Every version of one memory the (signed) reader may read."""

        async def post(self, request: Request) -> Response:
            return await with_body(self, request, service.history)

    @app.page("/held")
    class HeldView(View):
        """A write held for review, to a (signed) reviewer who may review it."""

        async def post(self, request: Request) -> Response:
            return await with_body(self, request, service.held)

    @app.page("/decisions")
    class DecisionsView(View):
        async def post(self, request: Request) -> Response:
            return await with_body(self, request, service.decisions)

    @app.page("/reconcile")
    class ReconcileView(View):
        async def post(self, request: Request) -> Response:
            return answer(self, await service.reconcile())

    @app.page("/switch")
    class SwitchView(View):
        """Replace the projections by a rebuild of the same ledger, in one step."""

        async def post(self, request: Request) -> Response:
            return await with_body(self, request, service.switch)

    @app.page("/index/count")
    class IndexCountView(View):
        """Points in the derived index, optionally for one ``memory_id`` or ``command_id``."""

        async def get(self, request: Request) -> Response:
            return answer(self, await service.index_count(request.query))

    mount_health(app, service, roles, agents)

    @app.timer(1.0)
    async def flush_usage() -> None:
        """Publish the pending ``MemoryUsed`` batch once it is due, even without further reads."""
        try:
            await service.flush_usage()
        except Exception as exc:  # noqa: BLE001 - a broker outage: the batch stays pending, next tick
            log.warning("usage flush skipped: %s", type(exc).__name__)
