"""One root error class for bugs and infrastructure failures.

A refusal by a gate is *not* an exception inside memwarden: it is a decision event on the ledger
(STYLE habit 4). The client turns it into :class:`Refused` for its caller when it waited for the
decision, so a refusal never looks like success.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


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


class Refused(MemwardenError):
    """The gate refused a command the caller waited for (``REJECTED``; a supersede also when
    ``QUARANTINED``): ``outcome``, the reason ``codes`` in order, the whole ``reasons`` (dicts with
    ``code``, ``message``, ``field``) and the ``command_id`` (its decision stays on the ledger)."""

    def __init__(self, outcome: str, codes: tuple[str, ...], reasons: tuple[dict[str, Any], ...],
                 command_id: str) -> None:
        detail = "; ".join(f"{r.get('code')}: {r.get('message', '')}" for r in reasons) or "no reason given"
        super().__init__(f"command {command_id} {outcome}: {detail}")
        self.outcome = outcome
        self.codes = tuple(codes)
        self.reasons = tuple(reasons)
        self.command_id = command_id

    @classmethod
    def of(cls, decision: Mapping[str, Any], command_id: str) -> Refused:
        """The refusal a decision as the read API answers it (``outcome``, ``reasons`` with ``code``,
        ``message``, ``field``) stands for, for command ``command_id``."""
        reasons = tuple(dict(r) for r in decision.get("reasons") or ())
        return cls(decision["outcome"], tuple(str(r.get("code")) for r in reasons), reasons, command_id)

    def __reduce__(self) -> tuple[type, tuple[str, tuple[str, ...], tuple[dict[str, Any], ...], str]]:
        return type(self), (self.outcome, self.codes, self.reasons, self.command_id)
