"""The inspector page (issue 10 part 3): ``GET /inspect`` serves a small read-only page, rendered on the
server (:mod:`.inspect_page`, no script, no build step), where an operator looks up a memory or a
principal and sees its timeline (:mod:`.inspect_data`): versions with validity intervals and ledger
positions, the gate's decisions with reason codes, grants, audited reads, forget (erasure) receipts —
ids, positions and codes, never content, least of all a forgotten memory's.

Authentication: ``POST /inspect`` carries the operator's bearer token (``memwarden token issue
PRINCIPAL``) in the form body with the lookup, never in a URL (no query string lands in a log), and is
answered with the rendered page; no cookie is set, so there is no ambient credential a cross-site form
could ride on. The token is checked like every REST request (unknown, revoked, expired → 401), and its
principal must be the root admin or hold the ``admin`` or ``reviewer`` role (else 403
``NOT_PERMITTED``); every refusal is audited (``AuthRefused`` on the audit topic) and shown on the
page with its status, code and reason. Nothing here publishes a command. Responses are ``no-store``
with a Content-Security-Policy that loads and runs nothing."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Form
from fastapi.responses import HTMLResponse

from memwarden.commands.principals import ADMIN_ROLE, REVIEWER_ROLE
from memwarden.commands.tokens import bearer_token, token_hash, token_problem
from memwarden.epoch import now_ms
from memwarden.errors import StackUnavailable
from memwarden.stores.tokens import token_by_hash

from .auth import Served
from .errors import ApiError
from .gateway import Caller, Gateway
from .inspect_data import memory_report, principal_report
from .inspect_page import CSP, KINDS, memory_body, page, principal_body

router = APIRouter()
ROUTE = "/inspect"
#: Roles whose tokens may open the inspector (the root admin holds ``admin``).
INSPECT_ROLES = (ADMIN_ROLE, REVIEWER_ROLE)
#: Longest lookup target and token accepted from the form.
MAX_FIELD = 200
HEADERS = {"Content-Security-Policy": CSP, "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "no-referrer", "Cache-Control": "no-store", "Pragma": "no-cache"}


def _html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=HEADERS)


def inspector(gw: Gateway, token: str) -> Caller:
    """The operator holding ``token``; raises :class:`ApiError` (401 for a missing, malformed,
    unknown, revoked or expired token, 403 ``NOT_PERMITTED`` for a principal that is neither admin
    nor reviewer), audited by :meth:`Gateway.refuse`."""
    found = bearer_token(f"Bearer {token.strip()}" if token.strip() else None)
    if not isinstance(found, str):
        gw.refuse(found.code, found.message, "POST", ROUTE, field="token")
    hashed = token_hash(found)
    with gw.db() as conn:
        stored = token_by_hash(conn, hashed)
    problem = token_problem(hashed, stored, now_ms())
    if problem is not None or stored is None:
        gw.refuse(problem.code if problem else "UNKNOWN_TOKEN", problem.message if problem else "no such token",
                  "POST", ROUTE, stored, field="token")
    caller = Caller(stored.principal, stored.token_id, gw.record_of(stored.principal), "POST", ROUTE)
    if not caller.record.has_role(*INSPECT_ROLES):
        gw.refuse("NOT_PERMITTED", f"{caller.principal} holds neither the admin nor the reviewer role; the"
                  " inspector is for operators", "POST", ROUTE, caller=caller, field="token")
    return caller


def _lookup(kind: str, target: str, followed: str) -> tuple[str, str]:
    """The lookup asked for: a followed link (``memory:ID`` / ``principal:NAME``) wins over the form's
    fields. Raises :class:`ApiError` 400 naming the field."""
    if followed:
        kind, _, target = followed.partition(":")
    kind, target = kind.strip(), target.strip()
    if kind not in KINDS:
        raise ApiError(400, "INVALID_FIELD", f"kind must be one of {', '.join(KINDS)}", "kind")
    if not target or len(target) > MAX_FIELD or not target.isprintable():
        raise ApiError(400, "INVALID_FIELD", f"a {kind} id of 1 to {MAX_FIELD} printable characters", "target")
    if kind == "memory":
        try:
            target = str(uuid.UUID(target))
        except ValueError:
            raise ApiError(400, "INVALID_FIELD", "a memory id is a UUID", "target") from None
    return kind, target


def _body(gw: Gateway, kind: str, target: str) -> str:
    """The rendered timeline of a checked lookup; 404 ``UNKNOWN_MEMORY`` when the ledger and the
    projections know nothing of the memory."""
    if kind == "principal":
        return principal_body(principal_report(gw, target))
    report = memory_report(gw, target)
    if not report["audit"]["timeline"] and not report["versions"]:
        raise ApiError(404, "UNKNOWN_MEMORY", f"no memory {target} on the ledger", "target")
    return memory_body(report)


@router.get(ROUTE, response_class=HTMLResponse, tags=["inspector"])
def inspect_form(gw: Served) -> HTMLResponse:
    """The inspector page: a form asking for an admin or reviewer token and a memory id or principal
    (it shows nothing until ``POST /inspect``)."""
    return _html(page(gw.settings.topic_prefix))


@router.post(ROUTE, response_class=HTMLResponse, tags=["inspector"])
def inspect_lookup(gw: Served, token: Annotated[str, Form(max_length=MAX_FIELD)] = "",
                   kind: Annotated[str, Form(max_length=20)] = "memory",
                   target: Annotated[str, Form(max_length=MAX_FIELD)] = "",
                   follow: Annotated[str, Form(max_length=MAX_FIELD + 20)] = "") -> HTMLResponse:
    """The timeline of a memory or a principal for an operator holding an admin or reviewer token
    (form fields ``token``, ``kind`` = ``memory`` | ``principal``, ``target``). Refusals are the page
    with status, code and reason: 400 bad lookup, 401 bad token, 403 not admin nor reviewer, 404
    nothing on the ledger, 503 the stack does not answer."""
    namespace = gw.settings.topic_prefix
    shown_kind, shown_target = (kind if kind in KINDS else "memory"), target
    try:
        who = inspector(gw, token)
        shown_kind, shown_target = _lookup(kind, target, follow)
        body = _body(gw, shown_kind, shown_target)
    except ApiError as exc:
        kept = token if exc.status not in (401, 403) else ""
        return _html(page(namespace, kind=shown_kind, target=shown_target, token=kept,
                          refusal=(exc.status, exc.code, exc.message)), exc.status)
    except StackUnavailable as exc:
        return _html(page(namespace, kind=shown_kind, target=shown_target, token=token,
                          refusal=(503, "STACK_UNAVAILABLE", str(exc).splitlines()[0])), 503)
    roles = ", ".join(sorted(who.record.roles)) or "none"
    return _html(page(namespace, kind=shown_kind, target=shown_target, token=token, body=body,
                      who=f"inspecting as {who.principal} ({who.record.kind.lower()}, roles {roles};"
                      f" token {who.token_id})"))


__all__ = ["INSPECT_ROLES", "inspector", "router"]
