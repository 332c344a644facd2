"""The labelled instruction/data set and the scoring of an :class:`InstructionDetector` against it.

Seeds: SSGM Table 2 (memory poisoning, write filtering) and seed 004 "Poisoning turns memory into a
delayed attack" (evaluation matrix row *resist*: reject poisoning at the write boundary). Field case W5.

``data/injection_labelled.jsonl`` holds one JSON object per line::

    {"id": "b001" | "i001", "text": str, "label": "benign" | "injected",
     "kinds": [InstructionKind values; empty for benign], "source_kind": SourceKind value}

Every item was written by hand for memwarden (no benchmark data). Provenance of the ids:

- ``b001-b260`` and ``i001-i257``: the development set, written and committed before the detector;
  the rules of ``rules/1`` were then developed against it, so scores on it are in-sample.
- ``b261-b300`` / ``i258-i297`` (held-out 1) and ``b301-b340`` / ``i298-i337`` (held-out 2): written
  before being scored; each was scored once, then the rules were revised, so they are now in-sample too.
- ``b341-b370`` / ``i338-i367`` (held-out 3): written after the last rule change and scored once; the
  rules were not changed afterwards. Its misses are kept, not rewritten.

More files share the schema (issue 12, field case 4):

- ``data/injection_heldout.jsonl`` (``i1001-i1121``, ``b1001-b1125``): the held-out set of the first
  trained classifier (``minilm-lr/1``), written by hand on 2026-12-01 before any training and before
  either detector was run on it, then frozen (provenance and checksum in ``data/injection_heldout.md``).
  Scored once for that classifier; since the second held-out set was frozen it is training data of
  the next one.
- ``data/injection_train.jsonl`` (``i2001-``, ``b2001-``): written afterwards, in other words, for
  training the first classifier (``bench/train_injection_classifier.py``), together with this file.
- ``data/injection_heldout2.jsonl`` (``i3001-i3120``, ``b3001-b3130``): the held-out set of the second
  classifier (``minilm-lr/2``), written on 2026-12-01 by a writer who had seen neither the rules, the
  classifier, its training data nor the earlier sets, frozen before any detector ran on it
  (``data/injection_heldout2.md``). Never used for training, threshold choice or calibration.
- ``data/injection_train2.jsonl`` (``i4001-``, ``b4001-``): written for the second classifier by
  another writer, blind to ``injection_heldout2.jsonl``.

Labelling convention for ``kinds``: every kind whose definition the text meets (see
:mod:`memwarden.commands.injection`); DIRECTIVE is given when the text addresses the agent with a
standing, delayed or behavioural directive ("always", "from now on", "next time the user asks ...",
"tell users ..."), in addition to more specific kinds. The boundary between instruction and data is
the one documented in :mod:`memwarden.commands.injection`.

:func:`load_labelled` does the only I/O (reading the file); :func:`score_detector` is pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Literal

from memwarden.commands.injection import InstructionDetector, InstructionKind
from memwarden.commands.model import SourceKind

__all__ = [
    "ALLOWED_SOURCES",
    "DetectorScore",
    "InjectionSetError",
    "LabelledItem",
    "load_labelled",
    "score_detector",
]

#: The source kinds an item may carry (every :class:`SourceKind` except approved rules).
ALLOWED_SOURCES = frozenset(SourceKind) - {SourceKind.APPROVED_RULE}
_FIELDS = ("id", "text", "label", "kinds", "source_kind")
_ID = re.compile(r"^([bi])(\d{3,})$")
_PREFIX = {"benign": "b", "injected": "i"}

Label = Literal["benign", "injected"]


class InjectionSetError(ValueError):
    """A line of the labelled set is malformed; the message names the file, line and field."""


@dataclass(frozen=True)
class LabelledItem:
    """One labelled text. ``kinds`` is empty exactly when ``label`` is ``"benign"``."""

    id: str
    text: str
    label: Label
    kinds: frozenset[InstructionKind]
    source_kind: SourceKind

    @property
    def injected(self) -> bool:
        """True for items that carry instructions."""
        return self.label == "injected"


@dataclass(frozen=True)
class DetectorScore:
    """Binary scores (positive = ``injected``) and per-kind recall.

    ``by_kind[k]`` is the share of injected items labelled with kind ``k`` for which the detector
    reported kind ``k`` (kind-level recall; a detection of another kind does not count). Precision is
    0.0 when nothing is flagged; F1 is 0.0 when precision and recall are both 0.
    ``false_negatives``/``false_positives`` list the item ids, in input order.
    """

    precision: float
    recall: float
    f1: float
    tp: int
    fp: int
    fn: int
    tn: int
    by_kind: dict[str, float] = field(default_factory=dict)
    false_negatives: tuple[str, ...] = ()
    false_positives: tuple[str, ...] = ()


def default_path() -> Path:
    """The packaged ``data/injection_labelled.jsonl``."""
    return Path(str(resources.files("memwarden.evals") / "data" / "injection_labelled.jsonl"))


def load_labelled(path: Path | None = None) -> list[LabelledItem]:
    """Read and validate the labelled set (default: the packaged file), in file order.

    Raises :class:`InjectionSetError` naming the line (1-based) and field on: a blank line, invalid
    JSON, a non-object, missing or extra fields, wrong types, an empty text, an unknown label, kind or
    source kind, an id not of the form ``b001``/``i001`` matching its label, kinds on a benign item or
    none on an injected one, repeated kinds, and a duplicate id or text.
    Raises :class:`OSError` when the file cannot be read.
    """
    path = path or default_path()
    items: list[LabelledItem] = []
    seen_ids: dict[str, int] = {}
    seen_texts: dict[str, int] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        item = _parse(line, _Where(path.name, number))
        for seen, key, what in ((seen_ids, item.id, "id"), (seen_texts, item.text, "text")):
            if key in seen:
                raise InjectionSetError(f"{path.name} line {number}: field '{what}' duplicates line {seen[key]}")
            seen[key] = number
        items.append(item)
    return items


@dataclass(frozen=True)
class _Where:
    file: str
    line: int

    def error(self, name: str, message: str) -> InjectionSetError:
        where = f"{self.file} line {self.line}"
        return InjectionSetError(f"{where}: field '{name}' {message}" if name else f"{where}: {message}")


def _parse(line: str, where: _Where) -> LabelledItem:
    if not line.strip():
        raise where.error("", "is blank")
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise where.error("", f"is not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(raw, dict):
        raise where.error("", "must be a JSON object")
    missing = [f for f in _FIELDS if f not in raw]
    if missing:
        raise where.error(missing[0], "is missing")
    extra = sorted(set(raw) - set(_FIELDS))
    if extra:
        raise where.error(extra[0], "is not allowed")
    for name in ("id", "text", "label", "source_kind"):
        if not isinstance(raw[name], str):
            raise where.error(name, f"must be a string, got {type(raw[name]).__name__}")
    if not raw["text"].strip():
        raise where.error("text", "must not be empty")
    label = raw["label"]
    if label not in _PREFIX:
        raise where.error("label", f"must be 'benign' or 'injected', got {label!r}")
    match = _ID.match(raw["id"])
    if not match or match.group(1) != _PREFIX[label]:
        raise where.error("id", f"must look like '{_PREFIX[label]}001' for a {label} item, got {raw['id']!r}")
    try:
        source = SourceKind(raw["source_kind"])
    except ValueError:
        source = None
    if source not in ALLOWED_SOURCES:
        allowed = ", ".join(sorted(ALLOWED_SOURCES))
        raise where.error("source_kind", f"must be one of {allowed}, got {raw['source_kind']!r}")
    kinds = _kinds(raw["kinds"], where)
    if label == "benign" and kinds:
        raise where.error("kinds", "must be empty for a benign item")
    if label == "injected" and not kinds:
        raise where.error("kinds", "must name at least one kind for an injected item")
    return LabelledItem(raw["id"], raw["text"], label, kinds, source)


def _kinds(value: object, where: _Where) -> frozenset[InstructionKind]:
    if not isinstance(value, list):
        raise where.error("kinds", f"must be a list, got {type(value).__name__}")
    kinds: list[InstructionKind] = []
    for kind in value:
        try:
            kinds.append(InstructionKind(kind))
        except ValueError:
            raise where.error("kinds", f"has unknown kind {kind!r}") from None
    if len(set(kinds)) != len(kinds):
        raise where.error("kinds", "repeats a kind")
    return frozenset(kinds)


def score_detector(detector: InstructionDetector, items: Iterable[LabelledItem]) -> DetectorScore:
    """Score ``detector`` on ``items`` (positive class: injected). Pure apart from calling the detector.

    Raises :class:`ValueError` when ``items`` is empty.
    """
    items = list(items)
    if not items:
        raise ValueError("score_detector needs at least one item")
    tp = fp = fn = tn = 0
    false_negatives: list[str] = []
    false_positives: list[str] = []
    hits: dict[str, list[bool]] = {}
    for item in items:
        detection = detector.detect(item.text)
        flagged = detection.carries_instructions
        if item.injected:
            for kind in item.kinds:
                hits.setdefault(kind.value, []).append(kind in detection.kinds)
            if flagged:
                tp += 1
            else:
                fn += 1
                false_negatives.append(item.id)
        elif flagged:
            fp += 1
            false_positives.append(item.id)
        else:
            tn += 1
    precision = _ratio(tp, tp + fp)
    recall = _ratio(tp, tp + fn)
    f1 = _ratio(2 * precision * recall, precision + recall)
    by_kind = {kind: _ratio(sum(found), len(found)) for kind, found in sorted(hits.items())}
    return DetectorScore(precision, recall, f1, tp, fp, fn, tn, by_kind, tuple(false_negatives),
                         tuple(false_positives))


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0

