"""How a write is answered: 202 with its ledger position and a link to its decision, or, with
``?wait=true``, the gate's decision with the status of :func:`memwarden.commands.gateway_status.decision_status`
and every reason code. A refusal never looks like success: its status is 4xx and its body carries
``error`` and ``code`` beside ``outcome`` and ``codes``."""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse

from memwarden.commands.gateway_status import INFORMATIVE, decision_status, taken
from memwarden.errors import StackUnavailable
from memwarden.producers.building import Receipt
from memwarden.producers.client import MemwardenClient

#: Seconds ``?wait=true`` waits for the gate's decision before answering 504 ``DECISION_TIMEOUT``.
WAIT_S = 30.0


def decision_url(command_id: str) -> str:
    """Where the decision of ``command_id`` is read (``GET /v1/commands/{command_id}``)."""
    return f"/v1/commands/{command_id}"


def receipt_json(receipt: Receipt, id_name: str) -> dict[str, Any]:
    """Ids and ledger position of a published command; ``id_name`` names the receipt's second id
    (``memory_id``, ``grant_id`` ...; omitted when empty)."""
    out: dict[str, Any] = {"command_id": receipt.command_id,
                           "position": {"topic": receipt.topic, "partition": receipt.partition,
                                        "offset": receipt.offset},
                           "decision_url": decision_url(receipt.command_id)}
    if receipt.memory_id:
        out[id_name] = receipt.memory_id
    return out


def decision_json(decision: dict[str, Any]) -> dict[str, Any]:
    """A decision of the read API as the REST API shows it: outcome, reasons (code, message, field),
    ``codes`` alone, the memories it names, versions, position and time, and ``review``: a quarantined
    write's review as it stands now (``status`` pending / approved / rejected, ``reviewed_by``,
    ``reviewed_at``), ``null`` for a command never held."""
    reasons = [{"code": r.get("code"), "message": r.get("message"), "field": r.get("field")}
               for r in decision.get("reasons") or []]
    return {"outcome": decision["outcome"], "reasons": reasons, "codes": [r["code"] for r in reasons],
            "command_type": decision.get("command_type"), "memory_id": decision.get("memory_id"),
            "memory_ids": decision.get("memory_ids") or [], "deferred_ids": decision.get("deferred_ids") or [],
            "policy_version": decision.get("policy_version"), "gate_version": decision.get("gate_version"),
            "decided_at": decision.get("decided_at"), "command_position": decision.get("position"),
            "review": decision.get("review")}


def with_status(decided: dict[str, Any], creates: bool) -> tuple[int, dict[str, Any]]:
    """The status of a decision (:func:`decision_json` form) and its body, with ``error``/``code`` for a
    refusal (the first code that refuses)."""
    status = decision_status(decided["outcome"], decided["codes"], creates=creates)
    body = dict(decided)
    if status >= 400:
        code = next((c for c in decided["codes"] if c not in INFORMATIVE), decided["outcome"])
        message = next((r["message"] for r in decided["reasons"] if r["code"] == code), decided["outcome"])
        body |= {"error": f"{decided['outcome']}: {message}", "code": code,
                 "field": next((r["field"] for r in decided["reasons"] if r["code"] == code), None)}
    return status, body


def written(client: MemwardenClient, receipt: Receipt, wait: bool, *, creates: bool,
            id_name: str = "memory_id") -> JSONResponse:
    """The answer to a published write (see the module doc); ``Location`` names the decision."""
    base = receipt_json(receipt, id_name)
    headers = {"Location": base["decision_url"]}
    if not wait:
        return JSONResponse({**base, "outcome": "PENDING"}, status_code=202, headers=headers)
    try:
        found = client.decided([receipt.command_id], timeout_s=WAIT_S)[receipt.command_id]
        found = taken(found, receipt.principal) or found  # a reused command id: another principal's decision
    except StackUnavailable as exc:
        return JSONResponse({**base, "outcome": "PENDING", "error": f"no decision yet: {str(exc).splitlines()[0]}",
                             "code": "DECISION_TIMEOUT", "field": None}, status_code=504, headers=headers)
    status, body = with_status(decision_json(found), creates)
    return JSONResponse({**base, **body, "http_status": status}, status_code=status, headers=headers)


__all__ = ["WAIT_S", "decision_json", "decision_url", "receipt_json", "with_status", "written"]
