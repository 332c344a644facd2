"""Epoch milliseconds: the one conversion between aware datetimes and the integer UTC milliseconds
that payloads, grants, keys and the freshness rules use. Pure, no clock except :func:`now_ms`."""

from __future__ import annotations

from datetime import UTC, datetime

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_ms(value: datetime) -> int:
    """UTC epoch milliseconds of an aware datetime, in exact integer arithmetic (sub-millisecond
    digits dropped), the same value Avro ``timestamp-millis`` stores (fastavro's conversion)."""
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def to_ms_or(value: datetime | None, default: int) -> int:
    """:func:`to_ms` of ``value``, or ``default`` for ``None`` (an open interval end, say)."""
    return default if value is None else to_ms(value)


def from_ms(ms: int) -> datetime:
    """The aware UTC datetime of epoch milliseconds ``ms``."""
    return datetime.fromtimestamp(ms / 1000, UTC)


def from_ms_or_none(ms: int | None) -> datetime | None:
    """:func:`from_ms`, passing ``None`` through."""
    return None if ms is None else from_ms(ms)


def truncate_ms(value: datetime) -> datetime:
    """``value`` without its sub-millisecond digits: what survives a round trip through the ledger."""
    return value.replace(microsecond=value.microsecond - value.microsecond % 1000)


def now_ms() -> int:
    """The wall clock in UTC epoch milliseconds."""
    return to_ms(datetime.now(UTC))
