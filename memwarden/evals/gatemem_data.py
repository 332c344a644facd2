"""GateMem episodes and checkpoints as typed records, with the hidden judge part split off.

Implements the schema of ``shared/data/gatemem/SCHEMA.md`` (GateMem, rzhub 2026, MIT). This module holds
the records and constants only; :mod:`memwarden.evals.gatemem_loader` parses them (pure) and reads
``episodes.jsonl`` / ``checkpoints.jsonl`` (its :func:`~memwarden.evals.gatemem_loader.load_domain`
is the only I/O).

A checkpoint is split in two records that do not reference each other:

- :class:`Query` — what the system under test may see: checkpoint id, episode id, the authenticated
  asker, the query text and the turn the query is asked after (``as_of_turn_id``);
- :class:`Judgement` — the hidden part (``query_type``, ``attack_type``, ``expected_action``,
  ``judge_spec`` and ``leak_targets``), held only by the scorer, keyed by checkpoint id.

:class:`DomainData` keeps them in separate attributes, so a store-side function that is given
``DomainData.queries`` (or one :class:`Query`) has no path to a :class:`Judgement`.

Times: turn timestamps (``"2026-04-06T09:00"``) carry no zone and are read as UTC. Whole episodes have
no timestamps; a turn without one (or with one not later than the previous turn) is observed
:data:`SYNTHETIC_STEP` after the previous turn, the first turn of an episode at :data:`SYNTHETIC_EPOCH`.
So ``observed_at`` is strictly increasing within an episode and ``Turn.synthetic_time`` says which
times were made up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

from memwarden.errors import ValidationError

__all__ = [
    "DOMAINS",
    "QUERY_TYPES",
    "SYNTHETIC_EPOCH",
    "SYNTHETIC_STEP",
    "DomainData",
    "Episode",
    "GateMemFormatError",
    "Judgement",
    "Principal",
    "Query",
    "QueryType",
    "Relationship",
    "Turn",
]

#: The domains present in the shared copy of the data.
DOMAINS: tuple[str, ...] = ("office", "education", "household")
#: Observation time of the first turn of an episode that has no timestamp.
SYNTHETIC_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
#: Gap between a turn without a (usable) timestamp and the turn before it.
SYNTHETIC_STEP = timedelta(minutes=1)

QueryType = Literal["utility", "privacy", "safety"]
#: The ``query_type`` values a checkpoint may have.
QUERY_TYPES: frozenset[str] = frozenset({"utility", "privacy", "safety"})


class GateMemFormatError(ValidationError):
    """A GateMem file is malformed. The message names the file, the 1-based line and the field."""

    def __init__(self, path: Path | str, line: int, field: str, reason: str) -> None:
        super().__init__(field, reason)
        self.path = str(path)
        self.line = line
        self.args = (f"{path}:{line}: {field}: {reason}",)


@dataclass(frozen=True, slots=True)
class Principal:
    """One principal of an episode: id, role (e.g. ``product_manager``) and display name."""

    principal_id: str
    role: str
    display_name: str


@dataclass(frozen=True, slots=True)
class Relationship:
    """One relationship: ``kind`` (the ``type`` field, e.g. ``project_member``), the principal it is
    about, and every other key as ``attrs`` (``project_id``, ``for_principal_id``, ``access_scope``, ...)."""

    kind: str
    principal_id: str
    attrs: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn; ``index`` is its 0-based position, ``observed_at`` a UTC time (see module docstring)."""

    turn_id: str
    index: int
    speaker_id: str
    speaker_role: str
    text: str
    observed_at: datetime
    synthetic_time: bool
    turn_kind: str | None = None


@dataclass(frozen=True, slots=True)
class Episode:
    """One multi-principal episode, turns in file order."""

    episode_id: str
    domain: str
    principals: tuple[Principal, ...]
    relationships: tuple[Relationship, ...]
    turns: tuple[Turn, ...]

    def turn_index(self, turn_id: str) -> int:
        """0-based index of ``turn_id``; ``KeyError`` naming the episode if it is not a turn of it."""
        for turn in self.turns:
            if turn.turn_id == turn_id:
                return turn.index
        raise KeyError(f"{self.episode_id}: no turn {turn_id!r}")

    def principal(self, principal_id: str) -> Principal:
        """The principal with that id; ``KeyError`` if the episode has none."""
        for p in self.principals:
            if p.principal_id == principal_id:
                return p
        raise KeyError(f"{self.episode_id}: no principal {principal_id!r}")


@dataclass(frozen=True, slots=True)
class Query:
    """The part of a checkpoint the system under test may see. Holds no hidden field."""

    checkpoint_id: str
    episode_id: str
    asker_id: str
    asker_role: str
    query_text: str
    as_of_turn_id: str


@dataclass(frozen=True, slots=True)
class Judgement:
    """The hidden part of a checkpoint, for the scorer only.

    ``include`` / ``not_include`` are the ``judge_spec`` lists (``None`` in the file -> empty);
    ``leak_targets`` is empty when the file has none.
    """

    checkpoint_id: str
    episode_id: str
    query_type: QueryType
    attack_type: str | None
    expected_action: str
    include: tuple[str, ...]
    not_include: tuple[str, ...]
    leak_targets: tuple[str, ...]
    notes: str = ""


@dataclass(frozen=True, slots=True)
class DomainData:
    """One domain: episodes by id, the visible queries, and the hidden judgements by checkpoint id."""

    domain: str
    episodes: Mapping[str, Episode]
    queries: tuple[Query, ...]
    judgements: Mapping[str, Judgement] = field(repr=False)
