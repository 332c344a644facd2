"""The filter tree of the read model and its one evaluator.

A tiny AST (:class:`FieldIn`, :class:`FieldRange`, nested :class:`Filter`) that every read path
builds (SSGM Eq. 5: isolation *inside* candidate generation) and that each ``VectorIndex`` adapter
translates into its engine's filter. :func:`evaluate` is the reference semantics both engines
implement; tests and property checks use it as the oracle. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memwarden.errors import ValidationError


@dataclass(frozen=True)
class FieldIn:
    """``payload[key]`` equals one of ``values`` (for list payloads: any element does)."""

    key: str
    values: tuple[str | int, ...]


@dataclass(frozen=True)
class FieldRange:
    """Integer range condition on ``payload[key]``; ``None`` bounds are open."""

    key: str
    gt: int | None = None
    gte: int | None = None
    lt: int | None = None
    lte: int | None = None


Condition = FieldIn | FieldRange


@dataclass(frozen=True)
class Filter:
    """``must`` all hold, no ``must_not`` holds, and (when ``should`` is non-empty) at least one
    ``should`` holds. Any entry may itself be a nested ``Filter``, so an ABAC permission is
    ``Filter(should=(grant_1, grant_2, ...))`` with one conjunctive sub-filter per grant. An empty
    ``should`` imposes nothing; to match nothing use ``FieldIn(key, ())`` in ``must``."""

    must: tuple[Condition | Filter, ...] = ()
    must_not: tuple[Condition | Filter, ...] = ()
    should: tuple[Condition | Filter, ...] = ()


def filter_is_empty(where: Filter | None) -> bool:
    """True when ``where`` imposes nothing at the top level (``None`` or no entries at all)."""
    return where is None or not (where.must or where.must_not or where.should)


def _same(v: Any, w: Any) -> bool:
    """Engine equality: str with str, int with int (bools and floats never match a keyword)."""
    if isinstance(v, str) and isinstance(w, str):
        return v == w
    return (isinstance(v, int) and isinstance(w, int) and not isinstance(v, bool) and not isinstance(w, bool)
            and v == w)


def _in_range(r: FieldRange, v: Any) -> bool:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return False
    return ((r.gt is None or v > r.gt) and (r.gte is None or v >= r.gte)
            and (r.lt is None or v < r.lt) and (r.lte is None or v <= r.lte))


def holds(entry: Condition | Filter, payload: Mapping[str, Any]) -> bool:
    """One filter entry on one payload: a nested :class:`Filter` per :func:`evaluate`; a condition
    on a missing or null key never holds; a list payload holds when any element does.
    Raises ``ValidationError`` for an entry that is not a condition or Filter."""
    if isinstance(entry, Filter):
        return evaluate(entry, payload)
    if not isinstance(entry, FieldIn | FieldRange):
        raise ValidationError("filter", f"unsupported entry {type(entry).__name__}")
    raw = payload.get(entry.key)
    if raw is None:
        return False
    values = list(raw) if isinstance(raw, list | tuple) else [raw]
    if isinstance(entry, FieldIn):
        return any(_same(v, w) for v in values for w in entry.values)
    return any(_in_range(entry, v) for v in values)


def evaluate(where: Filter | None, payload: Mapping[str, Any]) -> bool:
    """Reference evaluation of the filter tree on one payload, with the engines' semantics: every
    ``must`` holds, no ``must_not`` holds, and at least one ``should`` holds when ``should`` is
    non-empty. ``None`` and ``Filter()`` match every payload. ``FieldIn`` compares str with str and
    int with int only (a bool or float never equals a keyword or an integer); ``FieldRange`` matches
    numbers only; a missing or null key matches no condition (so it satisfies every ``must_not``).
    Raises ``ValidationError`` for an entry that is not a condition or Filter."""
    if where is None:
        return True
    return (all(holds(e, payload) for e in where.must)
            and not any(holds(e, payload) for e in where.must_not)
            and (not where.should or any(holds(e, payload) for e in where.should)))
