"""The write routes: record, supersede and forget memories, forget by subject or selector, grant and
revoke access. Each publishes one command signed by the caller's key (from this server's key store,
marked ``envelope.attributes["gateway"] = "rest"``) and answers 202 with its ledger position, or the
gate's decision with ``?wait=true`` (:mod:`memwarden.api.answers`). What the gate would refuse for a
memory or grant the caller cannot touch (unknown, another principal's) is refused before anything is
published (:mod:`memwarden.commands.gateway_checks`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse

from memwarden.commands.gateway_checks import (
    change_refusal,
    forget_refusal,
    forget_subject_refusal,
    revoke_grant_refusal,
)
from memwarden.commands.gateway_status import refusal_status, taken
from memwarden.commands.reasons import Reason
from memwarden.stores.gateway_reads import grant_of, held_for_review, memory_of

from .answers import written
from .auth import Authenticated, Served
from .bodies import EnvelopeBody, ForgetBody, GrantBody, Name, RecordBody, SupersedeBody
from .errors import ApiError
from .gateway import Caller, Gateway

router = APIRouter(prefix="/v1")
Wait = Annotated[bool, Query(description="wait for the gate's decision (201/200, or 403/404/409/422 with codes)")]
WhyQuery = Annotated[str, Query(max_length=1000, description="why (kept on the ledger)")]
_ENVELOPE = ("scope", "store_kind", "source_kind", "source_ref", "source_uri", "quoted_span", "observed_at",
             "effective_from", "effective_to", "expires_at", "epistemic_status", "sensitivity", "purposes")
_WRITE_RESPONSES: dict[int | str, dict[str, Any]] = {
    202: {"description": "published; the decision follows at `decision_url`"},
    201: {"description": "?wait=true: accepted"}, 400: {"description": "bad input: nothing published"},
    401: {"description": "no, unknown, revoked or expired token"}, 403: {"description": "refused: no authority"},
    404: {"description": "unknown memory or grant"}, 409: {"description": "duplicate or conflict"},
    422: {"description": "?wait=true: quarantined for review, or the content was refused"},
}


def envelope_args(body: EnvelopeBody, who: Caller, gw: Gateway) -> dict[str, Any]:
    """The client's envelope arguments of ``body``, with the gateway's attributes. A ``command_id`` that
    another principal's command holds is refused before anything is published (409 ``COMMAND_ID_TAKEN``):
    the gate would decide the copy ``DUPLICATE`` and keep the other command's decision."""
    out: dict[str, Any] = {k: getattr(body, k) for k in _ENVELOPE}
    out["derived_from"] = [str(u) for u in body.derived_from]
    if body.command_id is not None:
        out["command_id"] = str(body.command_id)
        _fresh(gw, who, out["command_id"])
    out["attributes"] = who.attributes
    return out


def _fresh(gw: Gateway, who: Caller, command_id: str) -> None:
    """Refuse a command id whose stored decision is another principal's command's (see :func:`envelope_args`)."""
    found = gw.client.decision(command_id)
    refused = taken(found, who.principal) if found is not None else None
    if refused is not None:
        reason = refused["reasons"][0]
        raise ApiError(refusal_status([reason["code"]]), reason["code"], reason["message"], reason["field"])


def _refuse(reason: Reason | None) -> None:
    if reason is not None:
        raise ApiError(refusal_status([reason.code]), reason.code, reason.message, reason.field)


@router.post("/memories", status_code=202, responses=_WRITE_RESPONSES, tags=["memories"])
def record(body: RecordBody, who: Authenticated, gw: Served, wait: Wait = False) -> JSONResponse:
    """Record a new memory (``RecordMemory``) about ``subject`` (default: the token's principal)."""
    gw.same_principal(who, body.principal)
    receipt = gw.client.record(principal=who.principal, subject=body.subject or who.principal, text=body.text,
                               memory_id=str(body.memory_id) if body.memory_id else None,
                               fact=body.fact.model_dump() if body.fact else None, tags=body.tags,
                               follows=str(body.follows) if body.follows else None, **envelope_args(body, who, gw))
    return written(gw.client, receipt, wait, creates=True)


@router.post("/memories/{memory_id}/supersede", status_code=202, responses=_WRITE_RESPONSES, tags=["memories"])
def supersede(memory_id: UUID, body: SupersedeBody, who: Authenticated, gw: Served, wait: Wait = False) -> JSONResponse:
    """A new version of ``memory_id`` (``SupersedeMemory``): the prior version's interval closes."""
    gw.same_principal(who, body.principal)
    mid = str(memory_id)
    with gw.db() as conn:
        memory = memory_of(conn, mid)
    subject = body.subject or (memory.subject if memory is not None else who.principal)
    _refuse(change_refusal(mid, subject, who.record, memory, datetime.now(UTC)))
    receipt = gw.client.supersede(mid, principal=who.principal, subject=subject, text=body.text,
                                  evidence=body.evidence, fact=body.fact.model_dump() if body.fact else None,
                                  **envelope_args(body, who, gw), wait=False)
    return written(gw.client, receipt, wait, creates=True)


@router.delete("/memories/{memory_id}", status_code=202, responses=_WRITE_RESPONSES, tags=["memories"])
def forget(memory_id: UUID, who: Authenticated, gw: Served, wait: Wait = False, reason: WhyQuery = "") -> JSONResponse:
    """Forget every version of ``memory_id`` and everything derived from it (``ForgetMemory``; the data
    keys are shredded). Accepted: 200 with ``?wait=true``."""
    mid = str(memory_id)
    with gw.db() as conn:
        memory = memory_of(conn, mid)
        held = held_for_review(conn, mid) if memory is None else None
    _refuse(forget_refusal(mid, who.record, memory, held, datetime.now(UTC)))
    subject = memory.subject if memory is not None else held.subject if held is not None else who.principal
    receipt = gw.client.forget(mid, principal=who.principal, subject=subject, reason=reason,
                               attributes=who.attributes, wait=False)
    return written(gw.client, receipt, wait, creates=False)


@router.post("/forget", status_code=202, responses=_WRITE_RESPONSES, tags=["forgetting"])
def forget_many(body: ForgetBody, who: Authenticated, gw: Served, wait: Wait = False) -> JSONResponse:
    """Forget by subject (``subject`` alone: ``ForgetSubject``) or by selector (``ForgetMatching``);
    ``dry_run`` lists what would go. The decision's ``memory_ids`` name what was (or would be) forgotten."""
    gw.same_principal(who, body.principal)
    if body.subject is None and not body.criteria():
        raise ApiError(400, "EMPTY_SELECTOR", "name what to forget: subject, or selector criteria; a forget never"
                       " means everything", "selector")
    if body.subject is not None and not body.criteria():
        _refuse(forget_subject_refusal(body.subject, who.record, datetime.now(UTC)))
        receipt = gw.client.forget_subject(body.subject, principal=who.principal, reason=body.reason,
                                           dry_run=body.dry_run, attributes=who.attributes, wait=False)
    else:
        receipt = gw.client.forget_matching(
            principal=who.principal, subjects=[*([body.subject] if body.subject else []), *body.subjects],
            scopes=body.scopes, source_references=body.source_references, writers=body.writers,
            key_ids=body.key_ids, tags=body.tags, memory_ids=[str(m) for m in body.memory_ids],
            observed_from=body.observed_from, observed_to=body.observed_to, admitted_from=body.admitted_from,
            admitted_to=body.admitted_to, query=body.query, purposes=body.purposes, reason=body.reason,
            dry_run=body.dry_run, cascade=body.cascade, attributes=who.attributes, wait=False)
    return written(gw.client, receipt, wait, creates=False)


@router.post("/grants", status_code=202, responses=_WRITE_RESPONSES, tags=["grants"])
def grant(body: GrantBody, who: Authenticated, gw: Served, wait: Wait = False) -> JSONResponse:
    """Grant ``grantee`` (a principal or ``role:<name>``) ``rights`` on memories in ``scopes`` (``GrantAccess``)."""
    gw.same_principal(who, body.principal)
    receipt = gw.client.grant_access(
        body.grantee, by=who.principal, rights=[r.value for r in body.rights], scopes=body.scopes,
        subjects=body.subjects, purposes=body.purposes, store_kinds=[k.value for k in body.store_kinds],
        sensitivity_ceiling=body.sensitivity_ceiling, valid_from=body.valid_from, valid_to=body.valid_to,
        relationship=body.relationship, grant_id=body.grant_id, attributes=who.attributes, wait=False)
    return written(gw.client, receipt, wait, creates=True, id_name="grant_id")


@router.delete("/grants/{grant_id}", status_code=202, responses=_WRITE_RESPONSES, tags=["grants"])
def revoke(grant_id: Annotated[Name, Path(description="the grant's id")], who: Authenticated, gw: Served,
           wait: Wait = False, reason: WhyQuery = "") -> JSONResponse:
    """Revoke grant ``grant_id`` (``RevokeAccess``; its grantor or an admin): it holds from the next read."""
    with gw.db() as conn:
        found = grant_of(conn, grant_id)
    _refuse(revoke_grant_refusal(grant_id, who.record, found, datetime.now(UTC)))
    assert found is not None
    receipt = gw.client.revoke_access(grant_id, by=who.principal, grantee=found.grantee, reason=reason,
                                      attributes=who.attributes, wait=False)
    return written(gw.client, receipt, wait, creates=False, id_name="grant_id")


__all__ = ["envelope_args", "router"]
