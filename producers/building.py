"""Building commands from keyword arguments: the write envelope with its defaults, validation with a
clear ``ValidationError`` naming the field, and the receipt a delivered command returns.

Seed 004 "The write boundary is the first safety boundary": bad input is refused at the client,
before anything is published (the gate checks again on the ledger).
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pydantic

from memwarden.commands.model import Envelope, EpistemicStatus, Fact, Sensitivity, SourceKind, StoreKind
from memwarden.crypto import seal_fact_value
from memwarden.errors import ValidationError


@dataclass(frozen=True)
class Receipt:
    """What a delivered command returns: its ids, ledger position (topic, partition, offset) and principal."""

    command_id: str
    memory_id: str
    topic: str
    partition: int
    offset: int
    #: the principal whose command it is ("" when unknown: raw bytes)
    principal: str = ""


#: Characters that show nothing on their own: controls, format characters (zero-width space and joiners, the
#: byte-order mark, bidirectional marks), separators, variation selectors, the Hangul fillers and the blank
#: Braille pattern.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})
_INVISIBLE = frozenset({0x115F, 0x1160, 0x2800, 0x3164, 0xFFA0, *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)})


def invisible(text: str) -> bool:
    """Whether ``text`` shows nothing: every character blank or invisible (:data:`_INVISIBLE_CATEGORIES`,
    :data:`_INVISIBLE`). ``"\u200b\u200b"`` is; ``"🦄"`` and ``"a"`` are not."""
    return all(unicodedata.category(c) in _INVISIBLE_CATEGORIES or ord(c) in _INVISIBLE for c in text)


def check_text(text: Any, max_chars: int, field: str = "text") -> str:
    """Validate memory text: a UTF-8 string of at most ``max_chars`` characters that shows something and
    holds no NUL character.

    Raises ``ValidationError(field, ...)``: not a string; empty, blank or only invisible characters (a text
    of zero-width spaces was stored and then matched a recall of an emoji above the relevance floor:
    newcomer trial, twenty-fourth session); a NUL character (refused in every other field already); too
    long; a lone surrogate."""
    if not isinstance(text, str):
        raise ValidationError(field, f"must be a string, got {type(text).__name__}")
    if "\x00" in text:
        raise ValidationError(field, f"contains a NUL character (U+0000) at index {text.index(chr(0))}")
    if invisible(text):
        raise ValidationError(field, "must not be empty (it holds only blank or invisible characters)"
                              if text.strip() else "must not be empty")
    if len(text) > max_chars:
        raise ValidationError(field, f"has {len(text)} characters, limit {max_chars}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(field, f"not valid UTF-8 (lone surrogate at index {exc.start})") from None
    return text


def build(model: type[pydantic.BaseModel], data: dict[str, Any], prefix: str = "") -> Any:
    """``model.model_validate(data)``; raises ``ValidationError`` naming the first bad field
    (prefixed with ``prefix``)."""
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        msg = str(first["msg"])
        if not field:  # a model-level rule names its field as "field: reason"
            named = re.match(r"(?:Value error, )?([a-z_.]+): (.*)", msg)
            field, msg = (named.group(1), named.group(2)) if named else ("command", msg)
        raise ValidationError(prefix + field, msg) from None


def refused_read(data: Mapping[str, Any], principal: str, signed: bool) -> ValidationError:
    """The ``ValidationError`` of a read the read API refused (400 or 401 ``{"error", "code", "field"}``): the
    field it names with the reason alone (the answer's message already leads with the field); a read refused
    as unsigned by a client holding no signing key for ``principal`` names ``principal`` and says so."""
    if data.get("code") == "READ_UNSIGNED" and not signed:
        return ValidationError("principal", f"no signing key held for {principal}: reads are signed by their "
                                            "principal (register it here, or add its signer to the client)")
    field = str(data.get("field") or "request")
    return ValidationError(field, str(data.get("error", "bad request")).removeprefix(f"{field}: "))


def names(value: Any, field: str) -> tuple[Any, ...]:
    """A list of names; a bare string is refused rather than split into characters."""
    if isinstance(value, str | bytes):
        raise ValidationError(field, "must be a list of strings, not a single string")
    return tuple(value)


#: What a caller gives of a typed fact; the client seals the value itself (:func:`seal_fact`).
FACT_ARGUMENTS = frozenset({"entity", "attribute", "value", "cardinality"})


def build_fact(value: Mapping[str, Any] | None) -> Fact | None:
    """The typed fact of a memory write (value still in clear, sealed by :func:`seal_fact` once the
    write's data key exists), or ``None``. Raises ``ValidationError`` naming ``fact`` when it is not a mapping
    (``{"entity": ..., "attribute": ..., "value": ...}``; a string such as ``"diet=vegan"`` is not one), or the
    field of the fact that is wrong."""
    if value is None or (not value and isinstance(value, Mapping | str)):
        return None
    if not isinstance(value, Mapping):
        raise ValidationError("fact", f"must be a mapping such as {{'entity': 'user:alice', 'attribute': 'diet', "
                                      f"'value': 'vegan'}}, got {type(value).__name__}")
    sealed = sorted(k for k in value if k in Fact.model_fields and k not in FACT_ARGUMENTS)
    if sealed:
        raise ValidationError(f"fact.{sealed[0]}", "set by the client when it seals the value, not an argument")
    return build(Fact, dict(value), "fact.")  # type: ignore[no-any-return]


def seal_fact(fact: Fact | None, key: bytes, key_id: str) -> Fact | None:
    """``fact`` as it goes on the ledger: its value sealed under the write's data ``key`` (the one its
    content is encrypted with, id ``key_id``), a fresh nonce, the clear ``value`` empty. Entity and
    attribute stay in clear: they are slot names the gate routes its checks by."""
    if fact is None or fact.sealed:
        return fact
    nonce, sealed = seal_fact_value(fact.value, key, key_id)
    return build(Fact, {"entity": fact.entity, "attribute": fact.attribute, "value": "",  # type: ignore[no-any-return]
                        "cardinality": fact.cardinality, "value_nonce": nonce, "value_sealed": sealed}, "fact.")


#: Every envelope argument a write accepts, with its default.
ENVELOPE_DEFAULTS: dict[str, Any] = {
    "command_id": None, "scope": "account:default", "source_kind": SourceKind.USER_STATEMENT, "source_ref": None,
    "source_uri": None, "derived_from": (), "quoted_span": None, "store_kind": StoreKind.PROFILE,
    "observed_at": None, "effective_from": None, "effective_to": None, "expires_at": None,
    "epistemic_status": EpistemicStatus.QUOTED, "sensitivity": Sensitivity.INTERNAL, "purposes": (),
    "supersedes": None, "write_authority": None, "attributes": None,
}


def envelope(principal: str, subject: str, given: Mapping[str, Any], supersedes: str | None = None) -> Envelope:
    """The validated envelope of a command by ``principal`` about ``subject`` from the envelope
    arguments ``given`` (the rest default per :data:`ENVELOPE_DEFAULTS`; issue and observation
    times default to now, the command id to a fresh UUID). Raises ``ValidationError`` for an unknown
    argument or a bad value."""
    unknown = set(given) - set(ENVELOPE_DEFAULTS)
    if unknown:
        raise ValidationError(sorted(unknown)[0], "unknown argument")
    a = {**ENVELOPE_DEFAULTS, **given}
    if supersedes is not None:
        a["supersedes"] = supersedes
    now = datetime.now(UTC)
    return build(Envelope, {  # type: ignore[no-any-return]
        "command_id": a["command_id"] or str(uuid.uuid4()),
        "principal": principal, "subject": subject, "scope": a["scope"], "store_kind": a["store_kind"],
        "source": {"kind": a["source_kind"], "reference": a["source_ref"], "uri": a["source_uri"],
                   "derived_from": names(a["derived_from"], "derived_from"), "quoted_span": a["quoted_span"]},
        "observed_at": a["observed_at"] if a["observed_at"] is not None else now, "issued_at": now,
        "effective_from": a["effective_from"], "effective_to": a["effective_to"], "expires_at": a["expires_at"],
        "epistemic_status": a["epistemic_status"], "sensitivity": a["sensitivity"],
        "purposes": names(a["purposes"], "purposes"), "supersedes": a["supersedes"],
        "write_authority": dict(a["write_authority"]) if a["write_authority"] else None,
        "attributes": dict(a["attributes"] or {}),
    })


def governance_envelope(principal: str, subject: str, given: Mapping[str, Any]) -> Envelope:
    """:func:`envelope` with the governance defaults: scope ``governance``, source ``APPROVED_RULE``."""
    return envelope(principal, subject, {"scope": "governance", "source_kind": SourceKind.APPROVED_RULE, **given})


def undecided_message(missing: Sequence[str], timeout_s: float) -> str:
    """Why a wait for decisions gave up: how many of the commands are undecided after ``timeout_s`` seconds, the
    first of them, and the two causes (the gate is behind or stopped; or an id this namespace's ledger never
    carried: a typo, another namespace). Newcomer trial, twenty-fifth session: an unknown id read as an outage."""
    first = ", ".join(missing[:3]) + (" ..." if len(missing) > 3 else "")
    return (f"{len(missing)} command(s) not decided in {timeout_s:g} s ({first}): either the gate is behind or stopped"
            " (`memwarden stack status`, the worker's /ready), or no such command reached this namespace's ledger"
            " (an id mistyped, or published to another namespace: a decision lookup cannot tell an id it never saw"
            " from one not decided yet)")
