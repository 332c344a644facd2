"""GateMem episodes and checkpoints as typed records, with the hidden judge part split off.

Implements the schema of ``shared/data/gatemem/SCHEMA.md`` (GateMem, rzhub 2026, MIT). The only I/O is
reading ``episodes.jsonl`` / ``checkpoints.jsonl`` in :func:`load_domain`; parsing is pure.

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

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from memwarden.errors import ValidationError

__all__ = [
    "DOMAINS",
    "SYNTHETIC_EPOCH",
    "SYNTHETIC_STEP",
    "DomainData",
    "Episode",
    "GateMemFormatError",
    "Judgement",
    "Principal",
    "Query",
    "Relationship",
    "Turn",
    "load_domain",
    "load_domains",
    "parse_checkpoint",
    "parse_episode",
]

#: The domains present in the shared copy of the data.
DOMAINS: tuple[str, ...] = ("office", "education", "household")
#: Observation time of the first turn of an episode that has no timestamp.
SYNTHETIC_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
#: Gap between a turn without a (usable) timestamp and the turn before it.
SYNTHETIC_STEP = timedelta(minutes=1)

QueryType = Literal["utility", "privacy", "safety"]
_QUERY_TYPES: frozenset[str] = frozenset({"utility", "privacy", "safety"})


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


class _Reader:
    """Field access that raises :class:`GateMemFormatError` naming file, line and dotted field."""

    def __init__(self, path: Path | str, line: int) -> None:
        self.path = path
        self.line = line

    def fail(self, name: str, reason: str) -> GateMemFormatError:
        return GateMemFormatError(self.path, self.line, name, reason)

    def obj(self, value: Any, name: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(name, f"expected an object, got {type(value).__name__}")
        return value

    def items(self, value: Any, name: str) -> Sequence[Any]:
        if not isinstance(value, list):
            raise self.fail(name, f"expected a list, got {type(value).__name__}")
        return value

    def text(self, parent: Mapping[str, Any], key: str, name: str, *, optional: bool = False) -> str | None:
        if key not in parent or parent[key] is None:
            if optional:
                return None
            raise self.fail(f"{name}.{key}" if name else key, "missing")
        value = parent[key]
        if not isinstance(value, str) or (not optional and not value.strip()):
            raise self.fail(f"{name}.{key}" if name else key, f"expected a non-empty string, got {value!r}")
        return value

    def req(self, parent: Mapping[str, Any], key: str, name: str) -> str:
        value = self.text(parent, key, name)
        assert value is not None
        return value

    def strings(self, parent: Mapping[str, Any], key: str, name: str) -> tuple[str, ...]:
        value = parent.get(key)
        if value is None:
            return ()
        where = f"{name}.{key}" if name else key
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(where, f"expected a list of strings, got {value!r}")
        return tuple(value)


def _parse_time(r: _Reader, raw: str, name: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        raise r.fail(name, f"not an ISO date-time: {raw!r}") from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def parse_episode(raw: Any, path: Path | str = "<episode>", line: int = 1) -> Episode:
    """Parse one ``episodes.jsonl`` object. Raises :class:`GateMemFormatError` on a missing or
    mistyped field, a duplicate turn id, or a speaker / relationship principal not among the principals."""
    r = _Reader(path, line)
    obj = r.obj(raw, "episode")
    episode_id = r.req(obj, "episode_id", "")
    domain = r.req(obj, "domain", "")
    entities = r.obj(obj.get("entities"), "entities")
    principals: list[Principal] = []
    for i, p in enumerate(r.items(entities.get("principals"), "entities.principals")):
        name = f"entities.principals[{i}]"
        p = r.obj(p, name)
        principals.append(
            Principal(r.req(p, "principal_id", name), r.req(p, "role", name), r.text(p, "display_name", name) or "")
        )
    known = {p.principal_id for p in principals}
    if len(known) != len(principals):
        raise r.fail("entities.principals", "duplicate principal_id")
    relationships: list[Relationship] = []
    for i, rel in enumerate(r.items(entities.get("relationships", []), "entities.relationships")):
        name = f"entities.relationships[{i}]"
        rel = r.obj(rel, name)
        kind, pid = r.req(rel, "type", name), r.req(rel, "principal_id", name)
        if pid not in known:
            raise r.fail(f"{name}.principal_id", f"unknown principal {pid!r}")
        attrs = {k: str(v) for k, v in rel.items() if k not in ("type", "principal_id") and v is not None}
        relationships.append(Relationship(kind, pid, attrs))
    turns: list[Turn] = []
    seen: set[str] = set()
    previous: datetime | None = None
    for i, t in enumerate(r.items(obj.get("turns"), "turns")):
        name = f"turns[{i}]"
        t = r.obj(t, name)
        turn_id = r.req(t, "turn_id", name)
        if turn_id in seen:
            raise r.fail(f"{name}.turn_id", f"duplicate turn id {turn_id!r}")
        seen.add(turn_id)
        speaker = r.obj(t.get("speaker"), f"{name}.speaker")
        speaker_id = r.req(speaker, "principal_id", f"{name}.speaker")
        if speaker_id not in known:
            raise r.fail(f"{name}.speaker.principal_id", f"unknown principal {speaker_id!r}")
        stamp = r.text(t, "timestamp", name, optional=True)
        when = _parse_time(r, stamp, f"{name}.timestamp") if stamp else None
        synthetic = when is None or (previous is not None and when <= previous)
        if synthetic:
            when = SYNTHETIC_EPOCH if previous is None else previous + SYNTHETIC_STEP
        assert when is not None
        previous = when
        turns.append(
            Turn(
                turn_id=turn_id,
                index=i,
                speaker_id=speaker_id,
                speaker_role=r.text(speaker, "role", f"{name}.speaker", optional=True) or "",
                text=r.req(t, "text", name),
                observed_at=when,
                synthetic_time=synthetic,
                turn_kind=r.text(t, "turn_kind", name, optional=True),
            )
        )
    return Episode(episode_id, domain, tuple(principals), tuple(relationships), tuple(turns))


def parse_checkpoint(raw: Any, path: Path | str = "<checkpoint>", line: int = 1) -> tuple[Query, Judgement]:
    """Parse one ``checkpoints.jsonl`` object into its visible :class:`Query` and hidden
    :class:`Judgement`. Raises :class:`GateMemFormatError` on a missing or mistyped field or an
    unknown ``query_type``."""
    r = _Reader(path, line)
    obj = r.obj(raw, "checkpoint")
    checkpoint_id = r.req(obj, "checkpoint_id", "")
    episode_id = r.req(obj, "episode_id", "")
    asker = r.obj(obj.get("asker"), "asker")
    query = Query(
        checkpoint_id=checkpoint_id,
        episode_id=episode_id,
        asker_id=r.req(asker, "principal_id", "asker"),
        asker_role=r.text(asker, "role", "asker", optional=True) or "",
        query_text=r.req(obj, "query_text", ""),
        as_of_turn_id=r.req(obj, "as_of_turn_id", ""),
    )
    query_type = r.req(obj, "query_type", "")
    if query_type not in _QUERY_TYPES:
        raise r.fail("query_type", f"expected one of {sorted(_QUERY_TYPES)}, got {query_type!r}")
    spec = r.obj(obj.get("judge_spec", {}), "judge_spec")
    judgement = Judgement(
        checkpoint_id=checkpoint_id,
        episode_id=episode_id,
        query_type=query_type,  # type: ignore[arg-type]
        attack_type=r.text(obj, "attack_type", "", optional=True),
        expected_action=r.req(obj, "expected_action", ""),
        include=r.strings(spec, "include", "judge_spec"),
        not_include=r.strings(spec, "not_include", "judge_spec"),
        leak_targets=r.strings(obj, "leak_targets", ""),
        notes=r.text(spec, "notes", "judge_spec", optional=True) or "",
    )
    return query, judgement


def _jsonl(path: Path) -> list[tuple[int, Any]]:
    if not path.is_file():
        raise FileNotFoundError(f"GateMem file not found: {path}")
    rows: list[tuple[int, Any]] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                rows.append((number, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise GateMemFormatError(path, number, "<json>", exc.msg) from None
    return rows


def load_domain(root: Path, domain: str) -> DomainData:
    """Read ``<root>/<domain>/episodes.jsonl`` and ``checkpoints.jsonl``.

    Raises ``FileNotFoundError`` naming a missing file and :class:`GateMemFormatError` on a malformed
    line, a duplicate episode or checkpoint id, a checkpoint whose episode, asker or ``as_of_turn_id``
    does not exist, or an episode whose ``domain`` field differs from the folder name.
    """
    folder = Path(root) / domain
    episodes: dict[str, Episode] = {}
    episodes_path = folder / "episodes.jsonl"
    for number, raw in _jsonl(episodes_path):
        episode = parse_episode(raw, episodes_path, number)
        if episode.domain != domain:
            raise GateMemFormatError(episodes_path, number, "domain", f"expected {domain!r}, got {episode.domain!r}")
        if episode.episode_id in episodes:
            raise GateMemFormatError(episodes_path, number, "episode_id", f"duplicate {episode.episode_id!r}")
        episodes[episode.episode_id] = episode
    queries: list[Query] = []
    judgements: dict[str, Judgement] = {}
    checkpoints_path = folder / "checkpoints.jsonl"
    for number, raw in _jsonl(checkpoints_path):
        query, judgement = parse_checkpoint(raw, checkpoints_path, number)
        episode = episodes.get(query.episode_id)
        if episode is None:
            raise GateMemFormatError(checkpoints_path, number, "episode_id", f"unknown episode {query.episode_id!r}")
        if query.checkpoint_id in judgements:
            raise GateMemFormatError(checkpoints_path, number, "checkpoint_id", f"duplicate {query.checkpoint_id!r}")
        if query.asker_id not in {p.principal_id for p in episode.principals}:
            raise GateMemFormatError(checkpoints_path, number, "asker.principal_id", f"unknown {query.asker_id!r}")
        if query.as_of_turn_id not in {t.turn_id for t in episode.turns}:
            raise GateMemFormatError(checkpoints_path, number, "as_of_turn_id", f"unknown {query.as_of_turn_id!r}")
        queries.append(query)
        judgements[query.checkpoint_id] = judgement
    return DomainData(domain, episodes, tuple(queries), judgements)


def load_domains(root: Path, domains: Sequence[str] = DOMAINS) -> list[DomainData]:
    """:func:`load_domain` for each domain name, in the given order."""
    return [load_domain(root, d) for d in domains]
