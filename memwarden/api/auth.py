"""The bearer-token dependency of every authenticated route: ``Authorization: Bearer mwt_...`` checked
against the gate's token state on every request (:meth:`memwarden.api.gateway.Gateway.authenticate`).
Declared as an HTTP bearer security scheme, so ``/docs`` offers to send a token."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from .gateway import Caller, Gateway

#: The scheme as OpenAPI shows it; the header itself is parsed by the gateway (one rule for every refusal).
BEARER = HTTPBearer(auto_error=False, bearerFormat="mwt_ token",
                    description="A token from `memwarden token issue PRINCIPAL` (shown once; revocable).")


def gateway_of(request: Request) -> Gateway:
    """The app's :class:`Gateway`."""
    gateway: Gateway = request.app.state.gateway
    return gateway


def route_of(request: Request) -> str:
    """The route template of the request (``/v1/memories/{memory_id}``), never the raw path."""
    route = request.scope.get("route")
    return str(getattr(route, "path", request.url.path))


def caller(request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)]) -> Caller:
    """The authenticated caller, or a 401/409 refusal (audited)."""
    return gateway_of(request).authenticate(request.headers.get("authorization"), request.method, route_of(request))


#: A route parameter holding the authenticated caller.
Authenticated = Annotated[Caller, Depends(caller)]
#: A route parameter holding the app's gateway.
Served = Annotated[Gateway, Depends(gateway_of)]

__all__ = ["Authenticated", "BEARER", "Served", "caller", "gateway_of", "route_of"]
