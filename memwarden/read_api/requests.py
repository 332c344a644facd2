"""Parsing read requests: a JSON body in, a validated request out, or ``ValidationError`` naming the
field (the HTTP layer turns it into a 400 ``{"error", "code", "field"}``, :func:`error_code`). A recall
or history body takes its own keys and the signature's (``auth``, ``signed_at_ms``, ``nonce``) and no
other (``UNKNOWN_FIELD``, as the REST API refuses an unknown field), and its flags are JSON booleans."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memwarden.commands.readmodel.query import DEFAULT_PURPOSE, RecallMode, check_query
from memwarden.errors import ValidationError

#: Most command ids one decisions lookup may name.
MAX_LOOKUP_IDS = 5_000
#: The keys of a signed request that authentication reads (:func:`memwarden.commands.read_auth.sign_request`).
SIGNATURE_KEYS = frozenset({"auth", "signed_at_ms", "nonce"})
#: The keys a recall body may carry (its own and the signature's).
RECALL_KEYS = frozenset({"principal", "query", "k", "as_of", "known_at", "purpose", "freshness", "include_untrusted",
                         "mode", "min_score", "recency", "repeats", "decompose", "every_version"}) | SIGNATURE_KEYS
#: The keys a history body may carry.
HISTORY_KEYS = frozenset({"principal", "memory_id", "purpose", "include_untrusted"}) | SIGNATURE_KEYS
#: The keys a held-write body may carry (a reviewer reading a write held for review).
HELD_KEYS = frozenset({"principal", "command_id"}) | SIGNATURE_KEYS


class MissingField(ValidationError):
    """A required key is absent from the body (``MISSING_FIELD``)."""

    code = "MISSING_FIELD"


class UnknownField(ValidationError):
    """The body carries a key the request does not take (``UNKNOWN_FIELD``)."""

    code = "UNKNOWN_FIELD"


def error_code(exc: ValidationError) -> str:
    """The REST API's code of a refused read body: ``MISSING_FIELD``, ``UNKNOWN_FIELD``, else
    ``INVALID_FIELD`` (a value of the wrong type or out of range, a body that is not an object)."""
    return str(getattr(exc, "code", "INVALID_FIELD"))


@dataclass(frozen=True)
class RecallRequest:
    """A validated recall: who, what, how many, when (``as_of``, ``known_at``), why (``purpose``),
    the switches (``freshness``, ``include_untrusted``, ``mode``), the relevance floor (``min_score``,
    0 = none) and the weight of recency (``recency``, ``None`` = decided from the query)."""

    principal: str
    query: str
    k: int
    as_of: datetime | None
    known_at: datetime | None
    purpose: str
    freshness: bool
    include_untrusted: bool
    mode: RecallMode
    min_score: float = 0.0
    recency: float | None = None
    repeats: bool = True
    decompose: bool = True
    every_version: bool = False


def _object(body: Any) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise ValidationError("body", "must be a JSON object")
    return body


def _keys(body: Mapping[str, Any], allowed: frozenset[str], required: tuple[str, ...]) -> None:
    """Refuse the first unknown key (sorted, so the answer is stable), then the first required key absent."""
    unknown = sorted(str(key) for key in body if key not in allowed)
    if unknown:
        raise UnknownField(unknown[0], "unknown field")
    for key in required:
        if key not in body:
            raise MissingField(key, "required")


def _flag(body: Mapping[str, Any], key: str, default: bool) -> bool:
    """A boolean key (absent or ``null``: ``default``); anything but a JSON boolean names the key."""
    value = body.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ValidationError(key, "must be a boolean (true or false)")
    return value


def _time(body: Mapping[str, Any], key: str) -> datetime | None:
    value = body.get(key)
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise ValidationError(key, "must be an ISO-8601 time with a UTC offset") from None


def recall_request(body: Any) -> RecallRequest:
    """The recall a JSON body asks for (keys ``principal``, ``query``, ``k`` (default 10), ``as_of``,
    ``known_at``, ``purpose``, ``freshness``, ``include_untrusted``, ``mode``, ``min_score`` (default 0),
    ``recency`` (default null: decided from the query), ``repeats`` (default true: near-repeats after
    the others), ``decompose`` (default true: an enumerating question recalled per part), ``every_version``
    (default false: every version the reader may read now, whenever valid; not with ``as_of`` or ``known_at``,
    field ``every_version``); ``auth``,
    ``signed_at_ms`` and ``nonce`` are read by authentication). Raises ``ValidationError`` naming the field
    (:class:`UnknownField` for a key not among these, :class:`MissingField` without ``principal`` or
    ``query``; a flag that is not a JSON boolean is invalid)."""
    body = _object(body)
    _keys(body, RECALL_KEYS, ("principal", "query"))
    flags = {key: _flag(body, key, default) for key, default in (("freshness", True), ("include_untrusted", False),
                                                                 ("repeats", True), ("decompose", True),
                                                                 ("every_version", False))}
    as_of, known_at = _time(body, "as_of"), _time(body, "known_at")
    purpose = body.get("purpose") or DEFAULT_PURPOSE
    mode: RecallMode = body.get("mode") or "hybrid"  # check_query refuses any other value
    k = body.get("k", 10)
    min_score = body.get("min_score", 0.0)
    min_score = 0.0 if min_score is None else min_score
    recency = body.get("recency")
    check_query(body.get("principal"), body.get("query"), k, as_of, known_at, purpose, mode, min_score, recency)
    if flags["every_version"] and (as_of is not None or known_at is not None):
        raise ValidationError("every_version", "a read of every version takes no as_of or known_at")
    return RecallRequest(body["principal"], body["query"], k, as_of, known_at, purpose, flags["freshness"],
                         flags["include_untrusted"], mode, float(min_score),
                         None if recency is None else float(recency), flags["repeats"], flags["decompose"],
                         flags["every_version"])


@dataclass(frozen=True)
class HistoryRequest:
    """A validated history lookup: who reads, which memory, for which purpose, untrusted text or not."""

    principal: str
    memory_id: str
    purpose: str
    include_untrusted: bool


def history_request(body: Any) -> HistoryRequest:
    """The history lookup a JSON body asks for (``principal``, ``memory_id`` (a UUID), ``purpose``,
    ``include_untrusted``; ``auth``, ``signed_at_ms`` and ``nonce`` are read by authentication). Raises
    ``ValidationError`` naming the field (:class:`UnknownField`, :class:`MissingField` without
    ``principal`` or ``memory_id``)."""
    body = _object(body)
    _keys(body, HISTORY_KEYS, ("principal", "memory_id"))
    include_untrusted = _flag(body, "include_untrusted", False)
    principal, purpose = body.get("principal"), body.get("purpose") or DEFAULT_PURPOSE
    if not isinstance(principal, str) or not principal.strip():
        raise ValidationError("principal", "must be a non-empty string")
    if not isinstance(purpose, str) or not purpose.strip() or purpose == "*":
        raise ValidationError("purpose", "must name one purpose")
    try:
        memory_id = str(uuid.UUID(str(body.get("memory_id"))))
    except ValueError:
        raise ValidationError("memory_id", "must be a UUID") from None
    return HistoryRequest(principal, memory_id, purpose, include_untrusted)


@dataclass(frozen=True)
class HeldRequest:
    """A validated read of a write held for review: who reads (a reviewer) and which held command."""

    principal: str
    command_id: str


def held_request(body: Any) -> HeldRequest:
    """The held write a JSON body asks for (``principal``, ``command_id`` (a UUID); ``auth``, ``signed_at_ms`` and
    ``nonce`` are read by authentication). Raises ``ValidationError`` naming the field."""
    body = _object(body)
    _keys(body, HELD_KEYS, ("principal", "command_id"))
    principal = body.get("principal")
    if not isinstance(principal, str) or not principal.strip():
        raise ValidationError("principal", "must be a non-empty string")
    try:
        command_id = str(uuid.UUID(str(body.get("command_id"))))
    except ValueError:
        raise ValidationError("command_id", "must be a UUID (`memwarden review list` shows the held ones)") from None
    return HeldRequest(principal, command_id)


def decision_ids(body: Any) -> list[str]:
    """The command ids of a decisions lookup (``{"command_ids": [...]}``, UUIDs, at most
    :data:`MAX_LOOKUP_IDS`). Raises ``ValidationError`` naming the field."""
    ids = _object(body).get("command_ids")
    if not isinstance(ids, list):
        raise ValidationError("command_ids", "must be a list of command ids")
    if len(ids) > MAX_LOOKUP_IDS:
        raise ValidationError("command_ids", f"at most {MAX_LOOKUP_IDS} ids per lookup")
    out = []
    for i, cid in enumerate(ids):
        try:
            out.append(str(uuid.UUID(str(cid))))
        except ValueError:
            raise ValidationError(f"command_ids[{i}]", "must be a UUID") from None
    return out
