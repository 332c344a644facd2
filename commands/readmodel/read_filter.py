"""The Eq. 5 admissibility filter of SSGM, applied *inside* the vector search (never after ranking).

Seed 000 Eq. 5: a candidate is admissible when ``ACL(mu, u_id)`` holds and its freshness weight
``w(dt) >= theta_fresh``; seed 004 adds validity intervals, "known at" reads, expiry, and keeping
untrusted content out of default reads. Pure: builds the filter tree over the payload schema of
:mod:`memwarden.commands.readmodel.payload`; the SQL twin is
:func:`memwarden.commands.readmodel.sql.read_filter_sql`.
"""

from __future__ import annotations

from datetime import datetime

from memwarden.commands.readmodel.access_keys import reader_keys
from memwarden.commands.readmodel.filters import Condition, FieldIn, FieldRange, Filter
from memwarden.commands.readmodel.payload import ACL_FIELD, READABLE_STATUSES, TRUSTED
from memwarden.commands.readmodel.permission import Grant, ReadContext, read_permission_filter
from memwarden.commands.readmodel.query import DEFAULT_PURPOSE
from memwarden.epoch import to_ms


def read_filter(principal: str, at: datetime, now: datetime, *, purpose: str = DEFAULT_PURPOSE,
                roles: frozenset[str] = frozenset(), grants: tuple[Grant, ...] = (), known_at: datetime | None = None,
                freshness: bool = True, include_untrusted: bool = False, every_version: bool = False) -> Filter:
    """The Eq. 5 admissibility filter over the point payload.

    ``ACL`` (owner, subject or an applicable grant, for ``purpose``), valid at ``at`` (UTC), known to
    the ledger at ``known_at`` (a version decided later is invisible; a version closed later is still
    current as known then), not expired at ``now``, fresh at ``at`` (Eq. 3: last use or validity start
    within the store kind's horizon, kept per point as ``fresh_until_ms`` by
    :func:`memwarden.commands.readmodel.payload.fresh_until_ms`, so one integer range; skipped for
    ``known_at`` reads and when ``freshness`` is off),
    never forgotten or quarantined (they are not in the index at all), and not tagged ``untrusted``
    (content from web, email, documents or tool text, kept as quoted data) unless
    ``include_untrusted`` (seed 004: untrusted content must not steer the agent by default).

    Permission, purpose and trust are one condition on the points' access keys
    (:mod:`memwarden.commands.readmodel.access_keys`: ``acl`` holds one of the reader's keys), which the
    engine answers from its keyword index; the index holds only readable versions, so that condition
    also stands for the status. A reader whose grants would need more than ``MAX_READER_KEYS`` keys
    gets the same predicate as a tree (owner, subject, one sub-filter per grant, purpose, status, trust).
    ``every_version``: any version the reader may read now, whenever it was valid (superseded and closed
    versions too; no validity, ``known_at`` or freshness condition): how a forget by query finds a value that
    only an earlier version holds (newcomer trial, twenty-fifth session).

    Raises ``ValidationError`` for a bad principal, role or purpose (:class:`ReadContext`)."""
    t = to_ms(at)
    k = to_ms(known_at or now)
    ctx = ReadContext(principal, roles, purpose, to_ms(now), tuple(grants))
    keys = reader_keys(ctx, include_untrusted)
    must: list[Condition | Filter] = [FieldIn(ACL_FIELD, keys)] if keys is not None else [
        read_permission_filter(ctx), FieldIn("status", READABLE_STATUSES)]
    if keys is None and not include_untrusted:
        must.append(FieldIn("trust", (TRUSTED,)))
    if every_version:
        return Filter(must=(*must, FieldRange("decided_ms", lte=to_ms(now)), FieldRange("expires_ms", gt=to_ms(now))))
    must += [
        FieldRange("valid_from_ms", lte=t),
        FieldRange("decided_ms", lte=k),
        Filter(should=(FieldRange("valid_to_ms", gt=t),  # closed later than known_at: as the ledger knew it then
                       Filter(must=(FieldIn("status", ("superseded",)), FieldRange("closed_known_ms", gt=k))))),
        FieldRange("expires_ms", gt=to_ms(now)),
    ]
    if freshness and known_at is None:  # fresh_ref_ms >= fresh_since_ms(kind, t), kept per point
        must.append(FieldRange("fresh_until_ms", gt=t))
    return Filter(must=tuple(must))
