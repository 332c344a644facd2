"""The payload schema of the derived index: what every point carries for the read filter, and how
the ledger's events change it. One home for the field names; pure, no I/O.

A point is one memory version (seed 004 "derived index": candidates only, rebuilt from the ledger).
Its payload holds the access attributes (:class:`RecordAttrs`: owner, subject, scope, store kind,
sensitivity, purposes), the lifecycle (status, validity interval, decision and closing times,
expiry), the freshness reference of SSGM Eq. 3 (``fresh_ref_ms``: last use, else validity start),
the trust class, and the access keys that admit it (``acl``: permission, purpose and trust as one
keyword match, :mod:`memwarden.commands.readmodel.access_keys`). Times are UTC epoch milliseconds;
:data:`OPEN_END_MS` stands for an open end. No content is ever in a payload.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

from memwarden.commands.model import Sensitivity, StoreKind
from memwarden.commands.readmodel import checks
from memwarden.commands.readmodel.filters import FieldIn, FieldRange, Filter
from memwarden.commands.readmodel.freshness import DEFAULT_FRESHNESS, horizon_s
from memwarden.epoch import to_ms, to_ms_or

#: The wildcard: in a grant's scopes, subjects or purposes "any"; among a record's purposes "no tags".
ANY = "*"
#: Sentinel "open end" for ``valid_to_ms`` / ``expires_ms`` / ``closed_known_ms`` (year 9999, ms).
OPEN_END_MS = 253_402_300_799_000
#: Tag of content from untrusted sources (web, email, documents, tool text) or carrying instructions.
UNTRUSTED_TAG = "untrusted"
#: The trust class of every other point (the one a default read returns).
TRUSTED = "trusted"
#: The payload field of a point's access keys (:mod:`memwarden.commands.readmodel.access_keys`) and the
#: field naming the key scheme they were made with (:data:`ACL_VERSION`).
ACL_FIELD = "acl"
ACL_VERSION_FIELD = "acl_version"
ACL_VERSION = 1
#: The statuses of the versions a read may return (current and superseded ones; never forgotten ones).
READABLE_STATUSES = ("active", "superseded")

#: Payload fields that carry a keyword index (exact match filters).
KEYWORD_FIELDS: tuple[str, ...] = (
    "memory_id", "command_id", "owner", "subject", "scope", "status", "store_kind", "sensitivity", "purposes",
    "trust", "follows", ACL_FIELD,
)
#: Payload fields that carry an integer index (epoch milliseconds, UTC).
INTEGER_FIELDS: tuple[str, ...] = (
    "valid_from_ms", "valid_to_ms", "expires_ms", "decided_ms", "closed_known_ms", "fresh_ref_ms", "fresh_until_ms",
    ACL_VERSION_FIELD,
)


@dataclass(frozen=True)
class RecordAttrs:
    """The access attributes a stored memory version carries (``owner`` = the writing principal).

    ``purposes`` empty (or containing ``"*"``) = readable for any purpose. Raises ``ValidationError``
    for empty names or unknown store kind / sensitivity (strings are accepted and normalised)."""

    owner: str
    subject: str
    scope: str
    store_kind: StoreKind
    sensitivity: Sensitivity
    purposes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        checks.name("owner", self.owner)
        checks.name("subject", self.subject)
        checks.name("scope", self.scope)
        object.__setattr__(self, "store_kind", checks.enum("store_kind", StoreKind, self.store_kind))
        object.__setattr__(self, "sensitivity", checks.enum("sensitivity", Sensitivity, self.sensitivity))
        object.__setattr__(self, "purposes", checks.names("purposes", self.purposes))


def attrs_payload(record: RecordAttrs) -> dict[str, Any]:
    """The permission-relevant payload of a record (``purposes == ["*"]`` when it has no tags)."""
    return {"owner": record.owner, "subject": record.subject, "scope": record.scope,
            "store_kind": record.store_kind.value, "sensitivity": record.sensitivity.value,
            "purposes": list(record.purposes) or [ANY]}


def access_key(*parts: str) -> str:
    """The access key of one tuple of names (:mod:`memwarden.commands.readmodel.access_keys`): the first
    128 bits of the SHA-256 of the canonical JSON of the key scheme :data:`ACL_VERSION` and the tuple, in
    hex (no separator can join two tuples; keys of another scheme never meet these)."""
    data = json.dumps([ACL_VERSION, *parts], separators=(",", ":"))
    return hashlib.sha256(data.encode()).hexdigest()[:32]


def point_keys(owner: str, subject: str, scope: str, store_kind: str, sensitivity: str,
               purposes: Sequence[str], trust: str) -> list[str]:
    """Every access key that admits a point with these payload values (``purposes`` as the payload
    holds them: ``["*"]`` for a record without tags), in a fixed order without repeats: for each purpose
    tag, the owner's and the subject's key and the eight grant patterns (scope, subject and store kind
    each as the point's value or ``"*"``) at the point's sensitivity. See
    :mod:`memwarden.commands.readmodel.access_keys` for the scheme and the reader's side."""
    out: list[str] = []
    for purpose in dict.fromkeys(purposes or (ANY,)):
        out += [access_key("owner", owner, purpose, trust), access_key("subject", subject, purpose, trust)]
        out += [access_key("grant", sc, su, kind, sensitivity, purpose, trust)
                for sc, su, kind in product((scope, ANY), (subject, ANY), (store_kind, ANY))]
    return list(dict.fromkeys(out))


def with_access_keys(payload: Mapping[str, Any]) -> dict[str, Any]:
    """``payload`` with its access keys (``acl``) and their scheme (``acl_version``), computed from its
    owner, subject, scope, store kind, sensitivity, purposes and trust; no key at all unless its status
    is one a read may see (:data:`READABLE_STATUSES`: the index holds no other, and a payload update to
    another status must clear ``acl`` too). Raises ``KeyError`` when one of those fields is missing."""
    keys = point_keys(payload["owner"], payload["subject"], payload["scope"], payload["store_kind"],
                      payload["sensitivity"], payload["purposes"], payload["trust"]) \
        if payload["status"] in READABLE_STATUSES else []
    return {**payload, ACL_FIELD: keys, ACL_VERSION_FIELD: ACL_VERSION}


def fresh_until_ms(store_kind: StoreKind | str, fresh_ref_ms: int) -> int:
    """The exclusive end of a point's freshness window (SSGM Eq. 3 and Eq. 5 with the documented
    per-kind parameters :data:`DEFAULT_FRESHNESS` and ``theta_fresh``): the point is fresh at ``t``
    (epoch ms) iff ``t < fresh_until_ms``, which is exactly
    ``fresh_ref_ms >= fresh_since_ms(store_kind, t)`` of
    :func:`memwarden.commands.readmodel.freshness.fresh_since_ms`. :data:`OPEN_END_MS` for a kind that
    does not decay (PROCEDURE). Kept in the payload by the projector so that the read filter holds one
    integer range instead of one ``(store kind, range)`` clause per kind (the engine evaluates that
    per point: 2-3 ms of every recall at 100k points). Raises ``ValidationError`` for an unknown kind."""
    kind = checks.enum("store_kind", StoreKind, store_kind)
    checks.epoch_ms("fresh_ref_ms", fresh_ref_ms)
    h = horizon_s(DEFAULT_FRESHNESS[kind])
    return OPEN_END_MS if math.isinf(h) else min(OPEN_END_MS, fresh_ref_ms + math.floor(h * 1000.0) + 1)


def valid_from_of(envelope: Mapping[str, Any]) -> Any:
    """Start of a version's validity interval: ``effective_from``, else ``observed_at`` (an envelope dict)."""
    return envelope["effective_from"] or envelope["observed_at"]


def point_payload(record: Mapping[str, Any], last_used_ms: int | None = None) -> dict[str, Any]:
    """The payload of the point of a ``MemoryRecorded`` event record (Avro dict): ids, access
    attributes, status ``active``, validity interval, expiry, decision time, freshness reference
    (the later of the validity start and the memory's last use, ``last_used_ms``) and the end of the
    freshness window it gives (:func:`fresh_until_ms`), trust class, ``follows`` (the memory it follows
    in its thread, when the record names one: ranking context) and the access keys of all of them
    (:func:`with_access_keys`)."""
    env = record["envelope"]
    valid_from = to_ms(valid_from_of(env))
    fresh_ref = max(valid_from, last_used_ms or valid_from)  # last use, else validity start
    return with_access_keys({
        "memory_id": record["memory_id"],
        "command_id": record["command_id"],
        "version": record["version"],
        **attrs_payload(RecordAttrs(env["principal"], env["subject"], env["scope"], env["store_kind"],
                                    env["sensitivity"], tuple(env["purposes"]))),
        "status": "active",
        "valid_from_ms": valid_from,
        "valid_to_ms": to_ms_or(env["effective_to"], OPEN_END_MS),
        "expires_ms": to_ms_or(env["expires_at"], OPEN_END_MS),
        "decided_ms": to_ms(record["decided_at"]),
        "closed_known_ms": OPEN_END_MS,  # when the ledger closed this version (known_at reads)
        "fresh_ref_ms": fresh_ref,
        "fresh_until_ms": fresh_until_ms(env["store_kind"], fresh_ref),
        "trust": UNTRUSTED_TAG if UNTRUSTED_TAG in (record.get("tags") or ()) else TRUSTED,
        **({"follows": record["follows"]} if record.get("follows") else {}),
    })


def closed_by(record: Mapping[str, Any]) -> tuple[str, ...]:
    """The memory ids a ``MemoryRecorded`` closes: the one it supersedes, then contradicted ones (Eq. 6)."""
    target = record["envelope"]["supersedes"]
    return ((target,) if target is not None else ()) + tuple(record.get("closes") or ())


def supersession_updates(record: Mapping[str, Any]) -> list[tuple[Filter, dict[str, Any]]]:
    """Payload updates that close the versions a ``MemoryRecorded`` supersedes, as (selector,
    payload) pairs to apply in order: ``valid_to_ms`` only shrinks to the new version's validity
    start, and the live versions become ``superseded`` with the ledger's closing time (``known_at``
    reads see them as current before it). Empty when the record closes nothing."""
    closed = closed_by(record)
    if not closed:
        return []
    valid_from = to_ms(valid_from_of(record["envelope"]))
    live = Filter(must=(FieldIn("memory_id", closed), FieldIn("status", ("active",))),
                  must_not=(FieldIn("command_id", (record["command_id"],)),))
    return [(Filter(must=(live, FieldRange("valid_to_ms", gt=valid_from))), {"valid_to_ms": valid_from}),
            (live, {"status": "superseded", "closed_known_ms": to_ms(record["decided_at"])})]


def use_update(memory_ids: str | Sequence[str], used_ms: int) -> list[tuple[Filter, dict[str, Any]]]:
    """The payload updates of a use at ``used_ms`` of each of ``memory_ids`` (``MemoryUsed``, Eq. 3's
    "last valid use"), one per store kind: the freshness reference of every version of those memories
    moves forward to ``used_ms``, never back, and its freshness window end (:func:`fresh_until_ms`,
    which depends on the version's store kind) with it; so uses commute with each other and with
    versions projected later, which start from the last use (:func:`point_payload`). Memories used at
    the same time share the updates (one write per kind, not per memory)."""
    ids = (memory_ids,) if isinstance(memory_ids, str) else tuple(dict.fromkeys(memory_ids))
    return [(Filter(must=(FieldIn("memory_id", ids), FieldIn("store_kind", (kind.value,)),
                          FieldRange("fresh_ref_ms", lt=used_ms))),
             {"fresh_ref_ms": used_ms, "fresh_until_ms": fresh_until_ms(kind, used_ms)})
            for kind in StoreKind] if ids else []


def memory_selector(memory_id: str) -> Filter:
    """Every point of every version of ``memory_id`` (a forget deletes them)."""
    return Filter(must=(FieldIn("memory_id", (memory_id,)),))
