"""``Reason``: why a decision came out as it did, for machines (``code``) and people (``message``).

One type for every decision of the domain: the write gate (``GateDecided.reasons``), the action
boundary (:mod:`memwarden.commands.authorize`) and refusals of bad input (dead letters).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reason:
    """Machine-readable ``code``, human ``message``, the ``field`` concerned (dotted path) if any,
    and the policy rule it comes from (``rule_id``) if any."""

    code: str
    message: str
    field: str | None = None
    rule_id: str | None = None
