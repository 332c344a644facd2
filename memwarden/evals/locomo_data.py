"""LoCoMo conversations as typed records, evidence normalisation and LLM-free recall scoring.

Implements the schema and the scoring recipes 1 (turn-level evidence recall@k) and 2 (session-level
recall@k) of ``shared/data/locomo/SCHEMA.md``. The only I/O is reading one JSON file in
:func:`load_conversations`; everything else is pure.

Timestamps: a session's ``session_<n>_date_time`` (e.g. ``"1:56 pm on 8 May, 2023"``) carries no
time zone. It is read as UTC, literally (``12 am`` is the midnight hour, ``12 pm`` noon). A turn is
observed ``index`` seconds after its session's start, so turns keep their order within a session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = [
    "CATEGORY_NAMES",
    "Conversation",
    "Question",
    "RecallTable",
    "Turn",
    "load_conversations",
    "memory_text",
    "normalise_evidence",
    "parse_session_datetime",
    "session_of",
    "session_recall",
    "turn_recall",
]

#: LoCoMo category number -> name, in the official scorer's order [4, 1, 2, 3, 5] (SCHEMA.md).
#: Third-party harnesses map the numbers differently: report the number alongside the name.
CATEGORY_NAMES: dict[int, str] = {
    4: "single-hop",
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    5: "adversarial",
}


@dataclass(frozen=True, slots=True)
class Turn:
    """One chat turn. ``index`` is its 0-based position in the session's list; ``session`` is ``n``
    of the ``session_<n>`` key; ``caption`` is the ``blip_caption`` of a shared image, if any."""

    conversation_id: str
    dia_id: str
    session: int
    index: int
    speaker: str
    text: str
    caption: str | None
    observed_at: datetime


@dataclass(frozen=True, slots=True)
class Question:
    """One QA item. ``evidence`` holds normalised ids that exist in the conversation (possibly
    empty); ``raw_evidence`` the strings as found in the file; ``answer`` is ``answer`` or, for
    adversarial items without one, ``adversarial_answer``, as text (``None`` if neither exists)."""

    conversation_id: str
    question: str
    category: int
    evidence: tuple[str, ...]
    raw_evidence: tuple[str, ...]
    answer: str | None = None


@dataclass(frozen=True, slots=True)
class Conversation:
    """One LoCoMo sample: ``speakers`` is ``(speaker_a, speaker_b)``; turns in session order."""

    conversation_id: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


_MONTH_NAMES: tuple[str, ...] = ("january", "february", "march", "april", "may", "june", "july", "august")
_MONTH_NAMES += ("september", "october", "november", "december")
#: Full English month names and their 3-letter abbreviations -> month number.
_MONTHS = {alias: n for n, name in enumerate(_MONTH_NAMES, start=1) for alias in (name, name[:3])}
_DATE_RE = re.compile(
    r"\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})\s*", re.IGNORECASE
)
_SESSION_KEY_RE = re.compile(r"session_(\d+)")
_EVIDENCE_RE = re.compile(r"D:?(\d+):(\d+)", re.IGNORECASE)
_DIA_ID_RE = re.compile(r"D(\d+):(\d+)")


def parse_session_datetime(text: str) -> datetime:
    """Parse ``"<h>:<mm> am|pm on <day> <Month>, <year>"`` into a tz-aware UTC datetime.

    The stated wall time is taken as UTC (the data names no zone); ``12 am`` -> 00h, ``12 pm`` -> 12h.
    Raises ``ValueError`` on any other shape, an hour outside 1..12 or an impossible date.
    """
    match = _DATE_RE.fullmatch(text)
    if match is None:
        raise ValueError(f"unrecognised session date {text!r}; expected e.g. '1:56 pm on 8 May, 2023'")
    hour, minute, half, day, month_name, year = match.groups()
    month = _MONTHS.get(month_name.lower())
    h = int(hour)
    if month is None or not 1 <= h <= 12:
        raise ValueError(f"unrecognised session date {text!r}")
    h = h % 12 + (12 if half.lower() == "p" else 0)
    return datetime(int(year), month, int(day), h, int(minute), tzinfo=UTC)


def normalise_evidence(raw: Sequence[str], valid_ids: set[str]) -> tuple[str, ...]:
    """Clean gold evidence ids (SCHEMA.md "Gold-evidence noise").

    Splits every string on ``;`` and whitespace, rewrites ``D:11:26`` -> ``D11:26`` and strips
    leading zeros (``D30:05`` -> ``D30:5``), drops ids not in ``valid_ids`` (e.g. ``D`` or a turn past
    the end of a session), and removes duplicates keeping first-seen order.
    """
    out: dict[str, None] = {}
    for item in raw:
        for token in re.split(r"[;\s]+", str(item)):
            match = _EVIDENCE_RE.fullmatch(token)
            candidate = f"D{int(match[1])}:{int(match[2])}" if match else token
            if candidate in valid_ids:
                out.setdefault(candidate, None)
    return tuple(out)


def memory_text(turn: Turn) -> str:
    """The text a turn is stored as: ``"<speaker>: <text>"``, plus ``" [shares an image: <caption>]"``
    when the turn carries an image caption. The speaker stays in the text to keep attribution."""
    text = f"{turn.speaker}: {turn.text}"
    return f"{text} [shares an image: {turn.caption}]" if turn.caption else text


def _parse_sample(sample: dict[str, Any]) -> Conversation:
    conv_id = str(sample["sample_id"])
    conv = sample["conversation"]
    sessions = sorted(
        (int(m[1]), value)
        for key, value in conv.items()
        if (m := _SESSION_KEY_RE.fullmatch(key)) and isinstance(value, list)
    )
    turns: list[Turn] = []
    for number, raw_turns in sessions:
        date_key = f"session_{number}_date_time"
        if date_key not in conv:
            raise ValueError(f"{conv_id}: session_{number} has no {date_key}")
        start = parse_session_datetime(str(conv[date_key]))
        for index, raw in enumerate(raw_turns):
            caption = str(raw.get("blip_caption") or "").strip() or None
            turns.append(
                Turn(
                    conversation_id=conv_id,
                    dia_id=str(raw["dia_id"]),
                    session=number,
                    index=index,
                    speaker=str(raw["speaker"]),
                    text=str(raw["text"]),
                    caption=caption,
                    observed_at=start + timedelta(seconds=index),
                )
            )
    valid_ids = {t.dia_id for t in turns}
    questions = []
    for qa in sample.get("qa", []):
        raw_evidence = tuple(str(e) for e in qa.get("evidence", []))
        answer = qa.get("answer", qa.get("adversarial_answer"))
        questions.append(
            Question(
                conversation_id=conv_id,
                question=str(qa["question"]),
                category=int(qa["category"]),
                evidence=normalise_evidence(raw_evidence, valid_ids),
                raw_evidence=raw_evidence,
                answer=None if answer is None else str(answer),
            )
        )
    speakers = (str(conv["speaker_a"]), str(conv["speaker_b"]))
    return Conversation(conv_id, speakers, tuple(turns), tuple(questions))


def load_conversations(path: Path, ids: Sequence[str] | None = None) -> list[Conversation]:
    """Read a LoCoMo JSON file (a list of samples) into :class:`Conversation` records.

    ``ids`` selects samples by ``sample_id`` and sets the output order; ``None`` keeps all, in file
    order. Raises ``FileNotFoundError`` (naming the path) when the file is missing, and ``ValueError``
    naming the unknown ids and listing the available ones, or when the file is not a LoCoMo list.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"LoCoMo file not found: {path}")
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of LoCoMo samples, got {type(data).__name__}")
    by_id = {str(sample["sample_id"]): sample for sample in data}
    if ids is None:
        return [_parse_sample(sample) for sample in data]
    wanted = list(dict.fromkeys(ids))
    unknown = [i for i in wanted if i not in by_id]
    if unknown:
        raise ValueError(f"unknown conversation ids {unknown}; available: {sorted(by_id)}")
    return [_parse_sample(by_id[i]) for i in wanted]


def session_of(dia_id: str) -> int:
    """Session number of a well-formed ``D<session>:<turn>`` id (``"D7:12"`` -> 7); else ``ValueError``."""
    match = _DIA_ID_RE.fullmatch(dia_id)
    if match is None:
        raise ValueError(f"not a dialogue id: {dia_id!r} (expected 'D<session>:<turn>')")
    return int(match[1])


def _recall(gold: set[Any], retrieved: Sequence[Any], k: int) -> float:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if not gold:
        raise ValueError("gold evidence is empty; skip such questions (SCHEMA.md recipe 1)")
    return len(gold & set(retrieved[:k])) / len(gold)


def turn_recall(gold: Sequence[str], retrieved: Sequence[str], k: int) -> float:
    """Recipe 1: ``|set(gold) & set(retrieved[:k])| / |set(gold)|``, in [0, 1].

    ``retrieved`` is ranked best first. Raises ``ValueError`` for empty ``gold`` or ``k < 1``.
    """
    return _recall(set(gold), retrieved, k)


def session_recall(gold: Sequence[str], retrieved: Sequence[str], k: int) -> float:
    """Recipe 2: share of gold sessions that hold at least one of the top-``k`` retrieved turns.

    ``|sessions(gold) & sessions(retrieved[:k])| / |sessions(gold)|``. Raises ``ValueError`` for empty
    ``gold``, ``k < 1`` or a malformed id (see :func:`session_of`).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return _recall({session_of(g) for g in gold}, [session_of(r) for r in retrieved[:k]], k)


Metric = Callable[[Sequence[str], Sequence[str], int], float]


class RecallTable:
    """Mean of a recall metric per (k, category) over questions.

    ``add`` skips (and counts in ``skipped``) questions with no gold evidence. ``result()`` returns
    ``{k: {"1": mean, ..., "5": mean, "all": mean}}``: category keys as strings in numeric order,
    categories never added omitted, ``"all"`` the mean over every counted question (not the mean of
    category means), values rounded to 4 places. With nothing counted, each ``k`` maps to ``{}``.
    """

    def __init__(self, ks: Sequence[int] = (5, 10), metric: Metric = turn_recall) -> None:
        if not ks or any(k < 1 for k in ks):
            raise ValueError(f"ks must be non-empty and >= 1, got {list(ks)}")
        self.ks: tuple[int, ...] = tuple(dict.fromkeys(ks))
        self.metric = metric
        self.skipped = 0
        self._sums: dict[tuple[int, int], float] = {}
        self._counts: dict[int, int] = {}

    def add(self, category: int, gold: Sequence[str], retrieved: Sequence[str]) -> None:
        """Score one question's ranked ``retrieved`` ids against ``gold`` at every k."""
        if not gold:
            self.skipped += 1
            return
        for k in self.ks:
            key = (k, category)
            self._sums[key] = self._sums.get(key, 0.0) + self.metric(gold, retrieved, k)
        self._counts[category] = self._counts.get(category, 0) + 1

    def add_question(self, question: Question, retrieved: Sequence[str]) -> None:
        """Shorthand for ``add(question.category, question.evidence, retrieved)``."""
        self.add(question.category, question.evidence, retrieved)

    def counts(self) -> dict[str, int]:
        """Questions counted per category (string keys, numeric order) and ``"all"``."""
        if not self._counts:
            return {}
        out = {str(c): self._counts[c] for c in sorted(self._counts)}
        out["all"] = sum(self._counts.values())
        return out

    def result(self) -> dict[int, dict[str, float]]:
        """``{k: {"<category>": mean, ..., "all": mean}}`` rounded to 4 places."""
        table: dict[int, dict[str, float]] = {}
        total = sum(self._counts.values())
        for k in self.ks:
            row = {str(c): round(self._sums[(k, c)] / n, 4) for c, n in sorted(self._counts.items())}
            if total:
                row["all"] = round(sum(self._sums[(k, c)] for c in self._counts) / total, 4)
            table[k] = row
        return table
