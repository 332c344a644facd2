"""The port and its result types: :class:`InstructionDetector` classifies one text into a
:class:`Detection`, a sorted tuple of :class:`Finding` (kind, span, rule).

Seeds: SSGM Table 2 (memory poisoning, write filtering); seed 004 (instruction and data separation at
the write gate). The rules behind each kind are listed in :mod:`memwarden.commands.injection`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

__all__ = ["Detection", "Finding", "InstructionDetector", "InstructionKind"]


class InstructionKind(StrEnum):
    """What an instruction tries to make the agent do (SSGM Table 2, memory poisoning)."""

    DIRECTIVE = "DIRECTIVE"
    OVERRIDE = "OVERRIDE"
    MONEY_ROUTING = "MONEY_ROUTING"
    CREDENTIALS = "CREDENTIALS"
    TOOL_USE = "TOOL_USE"
    EXFILTRATION = "EXFILTRATION"
    HIDDEN = "HIDDEN"


@dataclass(frozen=True)
class Finding:
    """One instruction found: its ``kind``, the ``span`` ``(start, end)`` as code-point offsets into the
    ORIGINAL text (end exclusive), and the ``rule`` that fired (see :mod:`memwarden.commands.injection`)."""

    kind: InstructionKind
    span: tuple[int, int]
    rule: str


@dataclass(frozen=True)
class Detection:
    """All findings for one text, sorted by span then kind; empty when the text is plain data.

    ``suspect``: the detector is not sure enough to quarantine, but the text reads like instructions
    to an agent (a trained detector's score at or above its suspicion threshold, below its decision
    threshold). The gate keeps such content out of default reads when it comes from a source that is
    not a person's own statement (:data:`memwarden.commands.risk.SUSPICION_SOURCES`); the rules never set it.
    """

    findings: tuple[Finding, ...] = ()
    suspect: bool = False

    @property
    def carries_instructions(self) -> bool:
        """True when at least one finding was made: the text must not be stored as plain data."""
        return bool(self.findings)

    @property
    def kinds(self) -> frozenset[InstructionKind]:
        """The distinct kinds found."""
        return frozenset(f.kind for f in self.findings)


@runtime_checkable
class InstructionDetector(Protocol):
    """The port: classify one text. Must be pure (no I/O, no clock) and deterministic."""

    def detect(self, text: str) -> Detection:
        """Return the instructions found in ``text``; never raises on any ``str`` input."""
        ...
