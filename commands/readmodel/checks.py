"""Argument checks shared by the read-model types: each raises ``ValidationError`` naming the field."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from memwarden.errors import ValidationError

E = TypeVar("E")


def name(field: str, value: Any) -> str:
    """``value`` when it is a non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field, f"must be a non-empty string, got {value!r}")
    return value


def names(field: str, value: Any, *, nonempty: bool = False) -> tuple[str, ...]:
    """``value`` as a tuple of non-empty strings (a bare string is refused, not split)."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValidationError(field, f"must be a sequence of names, not {type(value).__name__}")
    out = tuple(name(f"{field}[{i}]", v) for i, v in enumerate(value))
    if nonempty and not out:
        raise ValidationError(field, "must not be empty")
    return out


def enum(field: str, cls: type[E], value: Any) -> E:
    """``cls(value)`` (an enum member from its value)."""
    try:
        return cls(value)  # type: ignore[call-arg]
    except ValueError:
        raise ValidationError(field, f"unknown {cls.__name__} {value!r}") from None


def epoch_ms(field: str, value: Any, *, optional: bool = False) -> int | None:
    """``value`` when it is integer epoch milliseconds (``None`` too when ``optional``)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(field, f"must be integer epoch milliseconds, got {value!r}")
    return value
