"""Backfill of a payload field that a newer projector keeps, into points an older one wrote.

``fresh_until_ms`` (:func:`memwarden.commands.readmodel.payload.fresh_until_ms`, the end of a
point's SSGM Eq. 3 freshness window) is what the read filter's freshness condition reads. A point
written before the field existed matches no read (a missing key satisfies no range: the filter fails
closed), so an index must be backfilled before it serves recalls: :func:`backfill_fresh_until` does it
in place, from each point's own ``store_kind`` and ``fresh_ref_ms``, giving exactly the payload a
replay would build. Called where every process opens the index (``Container.index``); a no-op (two
exact counts) once every point has the field.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from memwarden.commands.readmodel.filters import FieldRange, Filter
from memwarden.commands.readmodel.payload import fresh_until_ms
from memwarden.errors import ValidationError
from memwarden.projections.vector_index import IndexPoint, VectorIndex

_log = logging.getLogger(__name__)
FIELD = "fresh_until_ms"


def lacking_fresh_until(index: VectorIndex) -> int:
    """How many points of ``index`` have no ``fresh_until_ms`` (two exact counts). Raises
    ``IndexUnavailable``."""
    return index.count() - index.count(Filter(must=(FieldRange(FIELD, gte=0),)))


def backfill_fresh_until(index: VectorIndex, batch: int = 1000) -> int:
    """Give every point of ``index`` that lacks it its ``fresh_until_ms`` (vectors and every other
    payload key unchanged; points rewritten in batches of ``batch``); returns how many were written.
    A point whose ``store_kind`` or ``fresh_ref_ms`` is missing or malformed is left as it is (it
    stays out of every read) and logged. Raises ``IndexUnavailable`` when the index fails."""
    if lacking_fresh_until(index) == 0:
        return 0
    pending: list[IndexPoint] = []
    written = skipped = 0
    for point in index.scan(None, batch):
        if FIELD in point.payload:
            continue
        try:
            end = fresh_until_ms(point.payload.get("store_kind", ""), point.payload.get("fresh_ref_ms"))
        except ValidationError:
            skipped += 1
            continue
        pending.append(replace(point, payload={**point.payload, FIELD: end}))
        if len(pending) >= batch:
            index.upsert(pending)
            written += len(pending)
            pending = []
    index.upsert(pending)
    written += len(pending)
    _log.warning("backfilled %s on %d index points (%d malformed points left out of reads)", FIELD, written, skipped)
    return written
