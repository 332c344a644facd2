"""One root error class for bugs and infrastructure failures.

A refusal by a gate is *not* an exception: it is a decision event on the ledger (STYLE habit 4).
"""

from __future__ import annotations


class MemwardenError(Exception):
    """Root of every exception memwarden raises on purpose."""


class ValidationError(MemwardenError, ValueError):
    """A command or query field is missing or wrong. ``field`` names it (dotted path)."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return type(self), (self.field, self.reason)  # picklable: crosses process boundaries intact


class DecodeError(MemwardenError):
    """Bytes on a topic are not a message this project can decode; ``reason`` says why."""

    def __init__(self, code: str, reason: str, field: str | None = None) -> None:
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason
        self.field = field

    def __reduce__(self) -> tuple[type, tuple[str, str, str | None]]:
        return type(self), (self.code, self.reason, self.field)


class PrerequisiteMissing(MemwardenError):
    """A tool the local stack needs (Java, Maven, PostgreSQL, a free port) is missing."""


class StackUnavailable(MemwardenError):
    """A service of the stack (Kafka, PostgreSQL, the worker) does not answer in time."""
