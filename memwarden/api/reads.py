"""The read routes: recall, the history of a memory, the gate's decision of a command, the forensic
audit of a memory, health. Recall and history go through the worker's read API, signed with the
caller's key (filtered inside the search, audited there: SSGM Eq. 5); decisions are the read API's
public lookup, shown to the command's principal or subject (or an admin); the audit is the ledger's
forensic timeline of a memory (:mod:`memwarden.ops.forensics_report`), never content, shown to an
admin or auditor or to a principal that wrote or is the subject of one of its commands the gate did not
refuse (a refused command about someone else's memory opens nothing: :func:`involved`)."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Body, Query
from fastapi.responses import JSONResponse

from memwarden.commands.principals import ADMIN_ROLE
from memwarden.commands.readmodel.query import DEFAULT_PURPOSE
from memwarden.ops.forensics import read_ledger
from memwarden.ops.forensics_report import audit_memory
from memwarden.ops.worker_process import worker_health

from .answers import decision_json, decision_url, with_status
from .auth import Authenticated, Served
from .bodies import Name, RecallBody
from .errors import ApiError
from .gateway import Gateway

router = APIRouter(prefix="/v1")
#: Roles that may read the forensic audit of any memory.
AUDIT_ROLES = (ADMIN_ROLE, "auditor")


def involved(report: dict[str, Any], principal: str) -> bool:
    """Whether ``principal`` wrote, or is the subject of, a command of the audit ``report``'s timeline that
    the gate did not refuse (admitted, held for review or waiting for a legal hold). A refused command
    opens nothing: anyone can send a forget of someone else's memory id and be refused (``NOT_OWNER``);
    that must not show them the memory's timeline and reads (newcomer trial, nineteenth session)."""
    return any(principal in (e["command"]["principal"], e["command"]["subject"])
               and (e["decision"] or {}).get("outcome") not in (None, "REJECTED") for e in report["timeline"])


def _unknown_memory(memory_id: str) -> ApiError:
    return ApiError(404, "UNKNOWN_MEMORY", f"no memory {memory_id} you may read", "memory_id")


@router.post("/recall", tags=["reads"])
def recall(body: RecallBody, who: Authenticated, gw: Served) -> dict[str, Any]:
    """Top-``k`` memories the token's principal may read for ``purpose`` and ``query``, valid at
    ``as_of`` as the ledger knew them at ``known_at`` (SSGM Eq. 5; audited by ids). Each memory has its
    ``relevance`` in [0, 1]; ``min_score`` drops those below it, ``below_floor`` counts them and
    ``reason: "BELOW_FLOOR"`` says that nothing relevant was found."""
    gw.same_principal(who, body.principal)
    found = gw.client.recall(who.principal, body.query, k=body.k, as_of=body.as_of, known_at=body.known_at,
                             purpose=body.purpose, freshness=body.freshness,
                             include_untrusted=body.include_untrusted, mode=body.mode, min_score=body.min_score,
                             recency=body.recency, repeats=body.repeats, decompose=body.decompose)
    return found.to_json()


@router.get("/memories/{memory_id}", tags=["memories"])
def history(memory_id: UUID, who: Authenticated, gw: Served,
            purpose: Annotated[Name, Query(description="the purpose of the read")] = DEFAULT_PURPOSE,
            include_untrusted: bool = False) -> dict[str, Any]:
    """The current version and every version the caller may read: validity intervals, statuses,
    provenance, ledger positions, and the text where it may be shown (audited like a recall)."""
    found = gw.client.history(who.principal, str(memory_id), purpose=purpose, include_untrusted=include_untrusted)
    if found is None:
        raise _unknown_memory(str(memory_id))
    return found


@router.get("/commands/{command_id}", tags=["decisions"])
def command(command_id: UUID, who: Authenticated, gw: Served) -> JSONResponse:
    """The gate's decision of a command with its reason codes, and ``http_status``: the status its write
    would have had with ``?wait=true``. 404 ``NOT_DECIDED`` while there is none (or it is not the
    caller's: its principal, its subject, or an admin)."""
    found = gw.client.decision(str(command_id))
    mine = found is not None and (who.principal in (found.get("principal"), found.get("subject"))
                                  or who.record.has_role(ADMIN_ROLE))
    if found is None or not mine:
        raise ApiError(404, "NOT_DECIDED", f"no decision of command {command_id} (not yet on the ledger, or not"
                       " yours)", "command_id")
    decided = decision_json(found)
    creates = decided["command_type"] in ("RecordMemory", "SupersedeMemory", "GrantAccess", "IssueToken")
    status, body = with_status(decided, creates)
    return JSONResponse({"command_id": str(command_id), **body, "http_status": status,
                         "decision_url": decision_url(str(command_id))})


@router.get("/audit/memories/{memory_id}", tags=["audit"])
def audit(memory_id: UUID, who: Authenticated, gw: Served) -> dict[str, Any]:
    """The lineage of a memory read from the ledger: every command about it with its decision and
    events, every audited read that returned it, its erasure receipts; never content."""
    report = audit_memory(gw.settings, read_ledger(gw.settings, gw.codec, gw.kek), str(memory_id))
    if not report["timeline"] or not (involved(report, who.principal) or who.record.has_role(*AUDIT_ROLES)):
        raise _unknown_memory(str(memory_id))
    return report


def _signed(path: str, body: Any, gw: Gateway) -> JSONResponse:
    if not isinstance(body, dict):
        raise ApiError(400, "BAD_REQUEST", "the body must be a JSON object", "body")
    status, answer = gw.client.forward_signed(path, body)
    if status >= 500 and status != 503:
        raise ApiError(502, "WORKER_ERROR", f"the read API answered HTTP {status}", None)
    unavailable = status == 503 and isinstance(answer, dict)
    headers = {"Retry-After": str(answer.get("retry_after_s", 2))} if unavailable else None
    return JSONResponse(answer, status_code=status, headers=headers)


@router.post("/signed/recall", tags=["reads"])
def signed_recall(body: Annotated[Any, Body(description=(
        "the recall body signed by the caller's own key, as `memwarden.commands.read_auth.sign_request` "
        "makes it: principal, query, k, ... plus signed_at_ms, nonce and auth {key_id, signature}"))],
        gw: Served) -> JSONResponse:
    """A recall signed by a key of the principal it reads as, for clients that hold their own key
    instead of a token: no ``Authorization`` header; the read API verifies the signature, the clock
    (60 s) and that the request was not served before (401 ``BAD_SIGNATURE``, ``STALE_REQUEST``,
    ``REPLAYED_REQUEST`` ...). The answer is the recall's (SSGM Eq. 5; audited)."""
    return _signed("/recall", body, gw)


@router.post("/signed/history", tags=["memories"])
def signed_history(body: Annotated[Any, Body(description=(
        "principal, memory_id, purpose, include_untrusted, signed_at_ms, nonce, auth {key_id, signature}"))],
        gw: Served) -> JSONResponse:
    """The history of a memory, signed by the caller's own key (as ``/v1/signed/recall``)."""
    return _signed("/history", body, gw)


@router.get("/health", tags=["health"])
def health(gw: Served) -> JSONResponse:
    """Whether the namespace's worker answers (no token needed; no data): 200, else 503."""
    worker = worker_health(gw.settings)
    ok = worker is not None and worker.get("prefix") == gw.settings.topic_prefix
    return JSONResponse({"ok": ok, "namespace": gw.settings.topic_prefix,
                         "worker": {"url": gw.settings.worker_url, "answers": ok,
                                    "roles": (worker or {}).get("roles", [])}}, status_code=200 if ok else 503)


__all__ = ["AUDIT_ROLES", "router"]
