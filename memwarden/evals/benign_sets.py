"""Written benign sets: ordinary texts in languages the false-alarm corpora do not cover, and the share the
instruction detector quarantines or suspects (issue 12, field case 4).

The false-alarm set of :mod:`memwarden.evals.false_alarms` (every LoCoMo and GateMem turn) is English
only, so it says nothing of a user who talks to the agent in Korean or Arabic. A *benign set* is a JSONL
file of ordinary texts (everyday chat, a user's own preferences, errands, records) written blind by
someone who never saw the detector, one object a line with exactly the keys ``id``, ``text``, ``label``
(``"benign"``), ``kinds`` (``[]``), ``source_kind`` (a :class:`~memwarden.commands.model.SourceKind`) and
``language`` (an ISO 639-1 code). The packaged one, ``benign_chat_multilingual_report.jsonl`` (400 texts,
20 languages, none English), is a report set: nothing is tuned on it.

Two costs are counted, because a user pays both:

- ``flagged``: the detector finds instructions, so the gate quarantines the text (it never comes back
  in a read until a reviewer releases it);
- ``suspected``: among texts from :data:`~memwarden.commands.risk.SUSPICION_SOURCES` (tool results,
  imported records, model inferences), those the detector only suspects; the gate admits them tagged
  untrusted, out of default reads.

Pure apart from reading the file; :func:`benign_set_alarms` calls the detector (batched through its
``prime`` when it has one).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memwarden.commands.injection import InstructionDetector
from memwarden.commands.model import SourceKind
from memwarden.commands.risk import SUSPICION_SOURCES

__all__ = ["BenignSetError", "BenignText", "benign_set_alarms", "load_benign_set", "packaged_report_set"]

_KEYS = ("id", "text", "label", "kinds", "source_kind", "language")


class BenignSetError(ValueError):
    """A benign set that does not parse: the message names the file, the 1-based line and the field."""


@dataclass(frozen=True)
class BenignText:
    """One text of a benign set: its ``id``, ``text``, ``source_kind`` and ``language`` (ISO 639-1)."""

    id: str
    text: str
    source_kind: SourceKind
    language: str


def packaged_report_set() -> Path:
    """The packaged report set: 400 ordinary texts in 20 languages, none English (its ``.md`` beside it)."""
    return Path(__file__).resolve().parent / "data" / "benign_chat_multilingual_report.jsonl"


def load_benign_set(path: Path) -> list[BenignText]:
    """Read and validate a benign set, in file order.

    Raises :class:`BenignSetError` naming the line and field on: invalid JSON, a non-object, missing or
    extra keys, a label other than ``benign``, non-empty ``kinds``, an empty text, an unknown source kind,
    a language that is not a two-letter code, and a repeated id or text. Raises :class:`OSError` when
    the file cannot be read.
    """
    out: list[BenignText] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        where = f"{path.name} line {number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BenignSetError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(raw, dict) or tuple(raw) != _KEYS:
            raise BenignSetError(f"{where}: the keys must be exactly {', '.join(_KEYS)} in that order")
        item = _item(raw, where)
        for key in (f"id:{item.id}", f"text:{item.text}"):
            if key in seen:
                raise BenignSetError(f"{where}: field '{key.split(':')[0]}' repeats line {seen[key]}")
            seen[key] = number
        out.append(item)
    return out


def _item(raw: dict[str, Any], where: str) -> BenignText:
    def bad(name: str, why: str) -> BenignSetError:
        return BenignSetError(f"{where}: field '{name}' {why}")

    if raw["label"] != "benign":
        raise bad("label", f"must be 'benign', got {raw['label']!r}")
    if raw["kinds"] != []:
        raise bad("kinds", "must be empty on a benign text")
    for name in ("id", "text", "language"):
        if not isinstance(raw[name], str) or not raw[name].strip():
            raise bad(name, "must be a non-empty string")
    lang = raw["language"]
    if len(lang) != 2 or not lang.isascii() or not lang.islower():
        raise bad("language", f"must be an ISO 639-1 code such as 'ko', got {lang!r}")
    try:
        source = SourceKind(raw["source_kind"])
    except ValueError:
        raise bad("source_kind", f"is not a source kind: {raw['source_kind']!r}") from None
    return BenignText(raw["id"], raw["text"], source, lang)


def benign_set_alarms(detector: InstructionDetector, items: list[BenignText]) -> dict[str, Any]:
    """What the detector costs on a benign set.

    Returns ``{"items", "flagged", "rate", "suspicion_items", "suspected", "suspected_rate",
    "by_language": {lang: {"items", "flagged", "suspected"}}, "flagged_ids", "suspected_ids"}``:
    ``rate`` is flagged / items (every flag is a false alarm: the gate quarantines the text);
    ``suspected_rate`` is suspected / the texts from suspicion sources (tool results, imported records,
    model inferences), which the gate keeps out of default reads on a suspicion alone.
    """
    prime = getattr(detector, "prime", None)
    if prime is not None:
        prime(t.text for t in items)
    flagged: list[BenignText] = []
    suspected: list[BenignText] = []
    for t in items:
        found = detector.detect(t.text)
        if found.carries_instructions:
            flagged.append(t)
        elif found.suspect and t.source_kind in SUSPICION_SOURCES:
            suspected.append(t)
    n = len(items)
    pool = sum(t.source_kind in SUSPICION_SOURCES for t in items)
    per = Counter(t.language for t in items)
    per_flag = Counter(t.language for t in flagged)
    per_sus = Counter(t.language for t in suspected)
    return {
        "items": n,
        "flagged": len(flagged),
        "rate": round(len(flagged) / n, 5) if n else 0.0,
        "suspicion_items": pool,
        "suspected": len(suspected),
        "suspected_rate": round(len(suspected) / pool, 5) if pool else 0.0,
        "by_language": {lang: {"items": per[lang], "flagged": per_flag[lang], "suspected": per_sus[lang]}
                        for lang in sorted(per)},
        "flagged_ids": [t.id for t in flagged],
        "suspected_ids": [t.id for t in suspected],
    }
