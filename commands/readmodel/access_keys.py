"""Access keys: the read permission, the purpose limitation and the trust class of SSGM Eq. 5 as one
keyword match inside the vector search (issue 11, recall at scale).

:func:`memwarden.commands.readmodel.permission.read_permission_filter` states the permission as a
``should`` of one conjunctive sub-filter per grant, next to a purpose condition, a trust condition
and a status condition. An engine evaluates such a tree point by point among the candidates its
payload indexes give it: on 100k points that was most of a recall's index time (about 8 of 14 ms for
the two index calls of a hybrid recall, measured on Edge 0.9), although it admits only ~1 % of the
points. Here the same predicate becomes set intersection on one keyword field: every point carries
the *keys* that can admit it (``payload.point_keys``, stored as the payload field ``acl``), every
read asks for the keys it holds (:func:`reader_keys`), and a point is admitted when the two sets
meet, which a keyword index answers from its postings alone.

A key is the digest of one tuple (SHA-256 of its canonical JSON, 128 bits: no separator can be
smuggled into a scope or subject name to make two tuples meet):

* ``("owner", p, purpose, trust)`` and ``("subject", p, purpose, trust)``: a principal reads what it
  owns and what is about it;
* ``("grant", scope, subject, store_kind, sensitivity, purpose, trust)`` where each of scope, subject
  and store kind is the point's own value or ``"*"`` (eight patterns a point, one per subset of the
  three): a grant covers the point when its scopes, subjects and store kinds hold the point's values
  or are "any", and the point's sensitivity is at or below its ceiling, so a grant's keys are the
  product of its scopes (or ``"*"``), subjects (or ``"*"``), store kinds (or ``"*"``) and the levels
  up to its ceiling;
* ``purpose`` is each of the point's purpose tags (``"*"`` when it has none); a read asks for its
  purpose and for ``"*"``; ``trust`` is the point's trust class; a default read asks for
  ``"trusted"`` only, an ``include_untrusted`` read for both.

So ``point_keys(...) & reader_keys(ctx)`` is non-empty exactly when the permission, the purpose and
the trust conditions of :func:`memwarden.commands.readmodel.read_filter.read_filter` hold
(``tests/unit/test_access.py`` checks it against the oracle :func:`permission.may_read` and the
filter tree, with hypothesis). The index holds only points of readable versions (``active`` or ``superseded``:
forgotten and quarantined versions are never in it), so the keys also stand for the status
condition; a future status that must not be read has to clear ``acl``. A grant whose product
exceeds :data:`MAX_READER_KEYS` keys makes :func:`reader_keys` return ``None``: the caller keeps the
filter tree. ``acl_version`` (``payload.ACL_VERSION``) names the key scheme a point's keys were made
with, so that points of another scheme are backfilled before they are read. The point side
(``point_keys``, ``access_key``, ``with_access_keys``) lives with the payload schema in
:mod:`memwarden.commands.readmodel.payload`. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import product

from memwarden.commands.readmodel.payload import ANY, TRUSTED, UNTRUSTED_TAG, access_key
from memwarden.commands.readmodel.permission import ReadContext, allowed_levels, applicable_grants

__all__ = ["MAX_READER_KEYS", "reader_keys"]

#: A read holding more keys than this keeps the filter tree (the keys are a faster form of it).
MAX_READER_KEYS = 4096


def _any_or(values: Iterable[str]) -> tuple[str, ...]:
    given = tuple(dict.fromkeys(values))
    return (ANY,) if not given or ANY in given else given


def reader_keys(ctx: ReadContext, include_untrusted: bool = False) -> tuple[str, ...] | None:
    """The keys a read of ``ctx`` holds (owner and subject, then each applicable grant's, for the
    read's purpose and ``"*"``, for ``"trusted"`` and, with ``include_untrusted``, ``"untrusted"``),
    without repeats; ``None`` when they would exceed :data:`MAX_READER_KEYS` (use the filter tree)."""
    purposes = (ANY, ctx.purpose)
    trusts = (TRUSTED, UNTRUSTED_TAG) if include_untrusted else (TRUSTED,)
    tuples: dict[tuple[str, ...], None] = {}
    for purpose, trust in product(purposes, trusts):
        tuples[("owner", ctx.principal, purpose, trust)] = None
        tuples[("subject", ctx.principal, purpose, trust)] = None
    for g in applicable_grants(ctx):
        scopes, subjects = _any_or(g.scopes), _any_or(g.subjects)
        kinds = tuple(dict.fromkeys(k.value for k in g.store_kinds)) or (ANY,)
        levels = allowed_levels(g.sensitivity_ceiling)
        if len(tuples) + len(scopes) * len(subjects) * len(kinds) * len(levels) * len(purposes) * len(trusts) \
                > MAX_READER_KEYS:
            return None
        for parts in product(scopes, subjects, kinds, levels, purposes, trusts):
            tuples[("grant", *parts)] = None
    return tuple(access_key(*t) for t in tuples)
