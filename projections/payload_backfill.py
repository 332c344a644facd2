"""Backfill of payload fields that a newer projector keeps, into points an older one wrote.

``fresh_until_ms`` (:func:`memwarden.commands.readmodel.payload.fresh_until_ms`, the end of a
point's SSGM Eq. 3 freshness window) is what the read filter's freshness condition reads. A point
written before the field existed matches no read (a missing key satisfies no range: the filter fails
closed), so an index must be backfilled before it serves recalls: :func:`backfill_fresh_until` does it
in place, from each point's own ``store_kind`` and ``fresh_ref_ms``, giving exactly the payload a
replay would build. Called where every process opens the index (``Container.index``); a no-op (one
exact count) once every point has the field.

Safe beside a live projector (a Qdrant server shared by several workers): the backfill never writes a
whole point, it only *merges* the one key, with a compare-and-set filter (same store kind, same
``fresh_ref_ms`` as scanned, field still absent). A point deleted by a forget meanwhile is not
recreated, a supersession's status is untouched, and a point whose reference a use moved meanwhile is
left alone (the use wrote its own ``fresh_until_ms``). Stop projectors of the older version before
starting newer ones: points an older projector writes afterwards lack the field until the next open.

``acl`` (the access keys of :mod:`memwarden.commands.readmodel.access_keys`, with ``acl_version``
naming their scheme) is backfilled the same way by :func:`backfill_access_keys`: a point without keys
of the current scheme matches no read until then (the keys of another scheme never meet a reader's).
The keys are computed from the point's own access attributes, trust and status, so they are exactly
those a replay would write; the merge is a compare-and-set on the point's command id and the scheme
still missing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from memwarden.commands.readmodel.filters import FieldIn, FieldRange, Filter
from memwarden.commands.readmodel.payload import (
    ACL_FIELD,
    ACL_VERSION,
    ACL_VERSION_FIELD,
    fresh_until_ms,
    with_access_keys,
)
from memwarden.errors import ValidationError
from memwarden.projections.vector_index import VectorIndex

_log = logging.getLogger(__name__)
FIELD = "fresh_until_ms"
#: Below every epoch-ms value a point can hold (references before 1970 are negative).
_FLOOR = -(2**53)
_HAS_FIELD = FieldRange(FIELD, gte=_FLOOR)
_LACKING = Filter(must_not=(_HAS_FIELD,))
_HAS_KEYS = FieldRange(ACL_VERSION_FIELD, gte=ACL_VERSION, lte=ACL_VERSION)
_LACKING_KEYS = Filter(must_not=(_HAS_KEYS,))


def lacking_fresh_until(index: VectorIndex) -> int:
    """How many points of ``index`` have no ``fresh_until_ms`` (one exact count). Raises
    ``IndexUnavailable``."""
    return index.count(_LACKING)


def backfill_fresh_until(index: VectorIndex, batch: int = 1000) -> int:
    """Give every point of ``index`` that lacks it its ``fresh_until_ms`` (every other key, the vectors
    and points written meanwhile untouched: see the module notes); returns how many points lacked it
    when scanned (a point a use or a forget changed meanwhile is skipped by the compare-and-set).
    One update per distinct (store kind, reference) pair. A point whose ``store_kind`` or
    ``fresh_ref_ms`` is missing or malformed is left as it is (it stays out of every read) and logged.
    Reads ``batch`` points at a time. Raises ``IndexUnavailable`` when the index fails."""
    if lacking_fresh_until(index) == 0:
        return 0
    ends: dict[tuple[str, int], int] = {}  # (store kind, reference) -> the window's end
    written = skipped = 0
    for point in index.scan(_LACKING, batch):
        kind, ref = point.payload.get("store_kind"), point.payload.get("fresh_ref_ms")
        try:
            end = fresh_until_ms(kind if isinstance(kind, str) else "", ref)  # type: ignore[arg-type]
        except ValidationError:
            skipped += 1
            continue
        ends[(str(kind), int(ref))] = end  # type: ignore[arg-type]
        written += 1
    for (kind, ref), end in sorted(ends.items()):
        same = Filter(must=(FieldIn("store_kind", (kind,)), FieldRange("fresh_ref_ms", gte=ref, lte=ref)),
                      must_not=(_HAS_FIELD,))
        index.set_payload(same, {FIELD: end})
    if written or skipped:
        _log.warning("backfilled %s on %d index points (%d malformed points left out of reads)", FIELD, written,
                     skipped)
    return written


def lacking_access_keys(index: VectorIndex) -> int:
    """How many points of ``index`` have no access keys of the current scheme (one exact count).
    Raises ``IndexUnavailable``."""
    return index.count(_LACKING_KEYS)


def backfill_access_keys(index: VectorIndex, batch: int = 1000) -> int:
    """Give every point of ``index`` without access keys of the current scheme its keys (``acl``,
    ``acl_version``; every other key, the vectors and points written meanwhile untouched); returns how
    many points it wrote. One update per distinct key list, selecting the points by command id and
    the scheme still missing. A point missing an access attribute is left as it is (it stays out of
    every read) and logged. Reads ``batch`` points at a time. Raises ``IndexUnavailable``."""
    if lacking_access_keys(index) == 0:
        return 0
    by_keys: dict[tuple[str, ...], list[str]] = {}
    skipped = 0
    for point in index.scan(_LACKING_KEYS, batch):
        try:
            keys = tuple(with_access_keys(point.payload)[ACL_FIELD])
        except (KeyError, TypeError):
            skipped += 1
            continue
        by_keys.setdefault(keys, []).append(str(point.payload.get("command_id")))
    written = 0
    for keys, commands in by_keys.items():
        for chunk in _chunks(commands, batch):
            index.set_payload(Filter(must=(FieldIn("command_id", tuple(chunk)),), must_not=(_HAS_KEYS,)),
                              {ACL_FIELD: list(keys), ACL_VERSION_FIELD: ACL_VERSION})
            written += len(chunk)
    if written or skipped:
        _log.warning("backfilled %s on %d index points (%d malformed points left out of reads)", ACL_FIELD, written,
                     skipped)
    return written


def _chunks(items: Sequence[str], size: int) -> list[Sequence[str]]:
    return [items[i:i + size] for i in range(0, len(items), size)]
