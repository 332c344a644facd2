"""The false-alarm set of the instruction detector: every LoCoMo turn and every GateMem turn
(issue 12, field case 4), and the detector's false-alarm rate on it.

Every turn of these conversations is ordinary, benign chat or workplace notes written by people
who were not thinking of the detector, so any flag is a false alarm. LoCoMo turns are read as the
LoCoMo eval stores them (``"<speaker>: <text>"`` plus an image caption,
:func:`memwarden.evals.locomo_data.memory_text`); GateMem turns are the raw ``text`` of every turn of
every ``<domain>/episodes.jsonl``.

**Halves.** Each conversation (LoCoMo sample, GateMem episode) belongs wholly to one half, by its
position in file order: the *calibration* half (LoCoMo samples 1, 3, 5, 7 and the odd-numbered episodes
of each GateMem domain, counting from 1) may be used to train or calibrate a detector
(``bench/train_injection_classifier.py`` uses it as benign training data); the *report* half (the
rest) never is. :func:`false_alarm_rate` reports both halves and the whole set.

Pure apart from reading the files; :func:`false_alarm_rate` calls the detector (batched through its
``prime`` when it has one).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memwarden.commands.injection import InstructionDetector

__all__ = ["BenignTurn", "benign_turns", "false_alarm_rate"]

Half = Literal["calibration", "report"]
#: Texts handed to a batching detector at once (the gate's batch size).
CHUNK = 256


@dataclass(frozen=True)
class BenignTurn:
    """One turn: ``corpus`` (``locomo`` or ``gatemem/<domain>``), ``unit`` (conversation or episode
    id), ``turn`` (dialogue or turn id), its ``text`` and its ``half``."""

    corpus: str
    unit: str
    turn: str
    text: str
    half: Half


def _half(position: int) -> Half:
    return "calibration" if position % 2 == 0 else "report"


def benign_turns(locomo: Path | None, gatemem: Path | None) -> list[BenignTurn]:
    """Every turn of the LoCoMo file ``locomo`` and of every ``<domain>/episodes.jsonl`` under
    ``gatemem`` (either may be ``None``); raises ``OSError`` or ``ValueError`` on unreadable data."""
    out: list[BenignTurn] = []
    if locomo is not None:
        from memwarden.evals.locomo_data import load_conversations, memory_text

        for pos, conv in enumerate(load_conversations(locomo)):
            out += [BenignTurn("locomo", conv.conversation_id, t.dia_id, memory_text(t), _half(pos))
                    for t in conv.turns]
    if gatemem is not None:
        for episodes in sorted(gatemem.glob("*/episodes.jsonl")):
            domain = episodes.parent.name
            lines = [ln for ln in episodes.read_text(encoding="utf-8").splitlines() if ln.strip()]
            for pos, line in enumerate(lines):
                ep: dict[str, Any] = json.loads(line)
                out += [BenignTurn(f"gatemem/{domain}", ep["episode_id"], t["turn_id"], t["text"], _half(pos))
                        for t in ep["turns"] if t.get("text", "").strip()]
    return out


def false_alarm_rate(detector: InstructionDetector, turns: Sequence[BenignTurn]) -> dict[str, Any]:
    """The share of ``turns`` the detector flags: over all turns, per half and per corpus, with up to
    20 flagged examples (corpus, unit, turn, rules) of the report half."""
    flagged: list[tuple[BenignTurn, tuple[str, ...]]] = []
    prime = getattr(detector, "prime", None)
    for start in range(0, len(turns), CHUNK):
        chunk = turns[start:start + CHUNK]
        if prime is not None:
            prime(t.text for t in chunk)
        for t in chunk:
            found = detector.detect(t.text)
            if found.carries_instructions:
                flagged.append((t, tuple(sorted({f.rule for f in found.findings}))))

    def rate(selected: Iterable[BenignTurn]) -> dict[str, Any]:
        ids = {id(t) for t in selected}
        n = len(ids)
        hits = sum(id(t) in ids for t, _ in flagged)
        return {"turns": n, "flagged": hits, "rate": round(hits / n, 5) if n else 0.0}

    corpora = sorted({t.corpus for t in turns})
    return {
        "all": rate(turns),
        "report_half": rate(t for t in turns if t.half == "report"),
        "calibration_half": rate(t for t in turns if t.half == "calibration"),
        "by_corpus": {c: rate(t for t in turns if t.corpus == c) for c in corpora},
        "examples": [{"corpus": t.corpus, "unit": t.unit, "turn": t.turn, "half": t.half, "rules": list(rules)}
                     for t, rules in flagged if t.half == "report"][:20],
    }
