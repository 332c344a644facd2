"""The read filter as SQL over ``memory_versions``: the twin of the filter tree, used to verify
candidates against the profile state before they are returned (SSGM Eq. 5; seed 004 "candidates
only, verified before use"). Pure string building; the store executes it.

Columns (``memory_versions``): ``principal`` (the owner), ``subject``, ``scope``, ``store_kind``,
``sensitivity``, ``purposes text[]`` (empty = any purpose), ``status``, ``valid_from``, ``valid_to``,
``decided_at``, ``closed_at``, ``expires_at``, ``tags text[]``, ``content_sealed`` (the sealed text).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from memwarden.commands.readmodel.filters import FieldIn
from memwarden.commands.readmodel.payload import ANY, UNTRUSTED_TAG
from memwarden.commands.readmodel.permission import ReadContext, applicable_grants, grant_filter
from memwarden.errors import ValidationError

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _columns(alias: str | None) -> Callable[[str], str]:
    if alias is not None and not _IDENT.match(alias):
        raise ValidationError("alias", f"not a plain SQL identifier: {alias!r}")
    return (lambda c: f"{alias}.{c}") if alias else (lambda c: c)


def read_permission_sql(ctx: ReadContext, alias: str | None = None,
                        param_prefix: str = "acl_") -> tuple[str, dict[str, Any]]:
    """The read permission as a parenthesised SQL boolean over ``memory_versions`` columns
    (``principal`` = owner, ``subject``, ``scope``, ``store_kind``, ``sensitivity``, ``purposes
    text[]``, empty array = any purpose) with named psycopg parameters (``%(acl_...)s``).

    ``alias`` qualifies the columns (``"mv"`` -> ``mv.scope``); ``param_prefix`` keeps the parameter
    names apart from the caller's. Returns ``(sql, params)``; use as ``WHERE ... AND <sql>``.
    Raises ``ValidationError`` when ``alias`` or ``param_prefix`` is not a plain identifier."""
    col = _columns(alias)
    if not _IDENT.match(param_prefix):
        raise ValidationError("param_prefix", f"not a plain identifier: {param_prefix!r}")
    p = param_prefix
    params: dict[str, Any] = {f"{p}principal": ctx.principal, f"{p}purpose": ctx.purpose, f"{p}any": ANY}
    ways = [f"{col('principal')} = %({p}principal)s", f"{col('subject')} = %({p}principal)s"]
    for i, sub in enumerate(dict.fromkeys(grant_filter(g) for g in applicable_grants(ctx))):
        terms = []
        for cond in sub.must:
            assert isinstance(cond, FieldIn)
            name = f"{p}g{i}_{cond.key}"
            params[name] = list(cond.values)
            terms.append(f"{col(cond.key)} = ANY(%({name})s::text[])")
        ways.append("(" + " AND ".join(terms) + ")")
    purposes = col("purposes")
    purpose_sql = (f"(cardinality({purposes}) = 0 OR %({p}purpose)s = ANY({purposes})"
                   f" OR %({p}any)s = ANY({purposes}))")
    return f"({purpose_sql} AND ({' OR '.join(ways)}))", params


def read_filter_sql(ctx: ReadContext, at: datetime, now: datetime, known: datetime, include_untrusted: bool,
                    alias: str | None = None, every_version: bool = False) -> tuple[str, dict[str, Any]]:
    """Every condition of :func:`memwarden.commands.readmodel.read_filter.read_filter` that the profile
    state can check, as one SQL boolean with named parameters: the permission, status active or
    superseded with content present (never forgotten), valid at ``at``, decided by ``known``, not
    closed as of ``known``, not expired at ``now``, and not tagged untrusted unless
    ``include_untrusted``. Freshness is checked in the index only (its reference moves with uses).
    ``every_version``: no validity or close condition, decided by ``now`` (the filter's ``every_version``).
    Returns ``(sql, params)``; raises ``ValidationError`` for a bad ``alias``."""
    col = _columns(alias)
    acl, params = read_permission_sql(ctx, alias)
    valid = ("" if every_version else
             f" AND {col('valid_from')} <= %(rf_at)s"
             f" AND ({col('valid_to')} IS NULL OR {col('valid_to')} > %(rf_at)s OR {col('closed_at')} > %(rf_known)s)")
    known = now if every_version else known
    sql = (f"{acl} AND {col('status')} IN ('active', 'superseded') AND {col('content_sealed')} IS NOT NULL"
           f" AND {col('decided_at')} <= %(rf_known)s{valid}"
           f" AND ({col('expires_at')} IS NULL OR {col('expires_at')} > %(rf_now)s)"
           f" AND (%(rf_untrusted)s OR NOT (%(rf_tag)s = ANY({col('tags')})))")
    return sql, {**params, "rf_at": at, "rf_known": known, "rf_now": now, "rf_untrusted": include_untrusted,
                 "rf_tag": UNTRUSTED_TAG}
