"""Parsing and loading GateMem files into the records of :mod:`memwarden.evals.gatemem_data`.

:func:`parse_episode` and :func:`parse_checkpoint` turn one decoded JSON line into an
:class:`~memwarden.evals.gatemem_data.Episode` or a (:class:`~memwarden.evals.gatemem_data.Query`,
:class:`~memwarden.evals.gatemem_data.Judgement`) pair; they are pure and raise
:class:`~memwarden.evals.gatemem_data.GateMemFormatError` naming file, line and field. The only I/O
is reading ``<root>/<domain>/episodes.jsonl`` and ``checkpoints.jsonl`` in :func:`load_domain`, which
also checks the cross-references (episode, asker and turn of each checkpoint).

**Dev / held-out split** (:func:`split_of`, :func:`select_split`): within each domain the episodes are
ordered by the SHA-256 hex digest of their ``episode_id``; ranks 0, 2, 4 ... are ``dev``, ranks 1, 3,
5 ... are ``heldout`` (so each domain is halved, dev taking the odd one). A checkpoint belongs to the
part of its episode. Mapping rules are analysed and changed on ``dev`` only; ``heldout`` is what a
change is reported on. The split reads episode ids only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memwarden.evals.gatemem_data import (
    QUERY_TYPES,
    SYNTHETIC_EPOCH,
    SYNTHETIC_STEP,
    DomainData,
    Episode,
    GateMemFormatError,
    Judgement,
    Principal,
    Query,
    Relationship,
    Turn,
)

__all__ = ["SPLITS", "available_domains", "load_domain", "load_domains", "parse_checkpoint", "parse_episode",
           "select_split", "split_of"]

#: The parts :func:`select_split` accepts: ``all`` keeps everything.
SPLITS: tuple[str, ...] = ("all", "dev", "heldout")


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
    principals = _principals(r, entities)
    known = {p.principal_id for p in principals}
    relationships = _relationships(r, entities, known)
    turns = _turns(r, obj, known)
    return Episode(episode_id, domain, tuple(principals), tuple(relationships), tuple(turns))


def _principals(r: _Reader, entities: Mapping[str, Any]) -> list[Principal]:
    """``entities.principals``; their ids must be unique."""
    principals: list[Principal] = []
    for i, p in enumerate(r.items(entities.get("principals"), "entities.principals")):
        name = f"entities.principals[{i}]"
        p = r.obj(p, name)
        principals.append(
            Principal(r.req(p, "principal_id", name), r.req(p, "role", name), r.text(p, "display_name", name) or "")
        )
    if len({p.principal_id for p in principals}) != len(principals):
        raise r.fail("entities.principals", "duplicate principal_id")
    return principals


def _relationships(r: _Reader, entities: Mapping[str, Any], known: set[str]) -> list[Relationship]:
    """``entities.relationships`` (optional: some episodes have none), other keys as string attrs.

    A relationship names the principal it is about as ``principal_id`` (an unknown one is an error),
    or names its members by role (``{"type": "assigned_clinician", "clinician_id": "dr_a",
    "patient_id": "pt_b"}``, ``{"type": "family_access", "family_id": "fam_c", "patient_id": ...}``):
    then it is about its first ``*_id`` member that is a principal of the episode (key order), else
    its first ``*_id`` value (a group), and every member stays in the attrs."""
    relationships: list[Relationship] = []
    for i, rel in enumerate(r.items(entities.get("relationships") or [], "entities.relationships")):
        name = f"entities.relationships[{i}]"
        rel = r.obj(rel, name)
        kind = r.req(rel, "type", name)
        if "principal_id" in rel:
            pid = r.req(rel, "principal_id", name)
            if pid not in known:
                raise r.fail(f"{name}.principal_id", f"unknown principal {pid!r}")
        else:
            members = [str(v) for k, v in rel.items() if k.endswith("_id") and isinstance(v, str) and v]
            if not members:
                raise r.fail(name, "names no member: neither principal_id nor any <role>_id")
            pid = next((m for m in members if m in known), members[0])
        attrs = {k: str(v) for k, v in rel.items() if k not in ("type", "principal_id") and v is not None}
        relationships.append(Relationship(kind, pid, attrs))
    return relationships


def _turns(r: _Reader, obj: Mapping[str, Any], known: set[str]) -> list[Turn]:
    """``turns`` in file order: unique ids, known speakers, strictly increasing ``observed_at``."""
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
        when, synthetic = _observed_at(r, t, name, previous)
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
    return turns


def _observed_at(r: _Reader, turn: Mapping[str, Any], name: str, previous: datetime | None) -> tuple[datetime, bool]:
    """(observed time, made up?) of a turn: its timestamp if later than ``previous``, else
    :data:`SYNTHETIC_STEP` after ``previous`` (:data:`SYNTHETIC_EPOCH` for the first turn)."""
    stamp = r.text(turn, "timestamp", name, optional=True)
    when = _parse_time(r, stamp, f"{name}.timestamp") if stamp else None
    synthetic = when is None or (previous is not None and when <= previous)
    if synthetic:
        when = SYNTHETIC_EPOCH if previous is None else previous + SYNTHETIC_STEP
    assert when is not None
    return when, synthetic


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
    if query_type not in QUERY_TYPES:
        raise r.fail("query_type", f"expected one of {sorted(QUERY_TYPES)}, got {query_type!r}")
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
        asked = episodes.get(query.episode_id)
        if asked is None:
            raise GateMemFormatError(checkpoints_path, number, "episode_id", f"unknown episode {query.episode_id!r}")
        if query.checkpoint_id in judgements:
            raise GateMemFormatError(checkpoints_path, number, "checkpoint_id", f"duplicate {query.checkpoint_id!r}")
        if query.asker_id not in {p.principal_id for p in asked.principals}:
            raise GateMemFormatError(checkpoints_path, number, "asker.principal_id", f"unknown {query.asker_id!r}")
        if query.as_of_turn_id not in {t.turn_id for t in asked.turns}:
            raise GateMemFormatError(checkpoints_path, number, "as_of_turn_id", f"unknown {query.as_of_turn_id!r}")
        queries.append(query)
        judgements[query.checkpoint_id] = judgement
    return DomainData(domain, episodes, tuple(queries), judgements)


def available_domains(root: Path) -> tuple[str, ...]:
    """The domain folders under ``root`` (those holding an ``episodes.jsonl``), sorted."""
    return tuple(sorted(p.parent.name for p in Path(root).glob("*/episodes.jsonl")))


def load_domains(root: Path, domains: Sequence[str] | None = None) -> list[DomainData]:
    """:func:`load_domain` for each domain name, in the given order (default: every domain folder
    under ``root``). Raises ``ValueError`` naming an unknown domain and the ones found."""
    found = available_domains(root)
    for d in domains or ():
        if d not in found:
            raise ValueError(f"domains: no domain {d!r} under {root} (found: {', '.join(found) or 'none'})")
    return [load_domain(root, d) for d in (domains or found)]


def split_of(episode_ids: Sequence[str]) -> dict[str, str]:
    """Episode id -> ``dev`` or ``heldout`` for the episodes of one domain (see the module docstring):
    ordered by SHA-256 of the id, even ranks dev, odd ranks held-out. Pure and deterministic."""
    ranked = sorted(dict.fromkeys(episode_ids), key=lambda e: hashlib.sha256(e.encode("utf-8")).hexdigest())
    return {e: ("dev" if i % 2 == 0 else "heldout") for i, e in enumerate(ranked)}


def select_split(data: DomainData, part: str) -> DomainData:
    """The episodes of ``data`` in ``part`` (one of :data:`SPLITS`) and their checkpoints only.
    Raises ``ValueError`` on an unknown part."""
    if part not in SPLITS:
        raise ValueError(f"split: expected one of {', '.join(SPLITS)}, got {part!r}")
    if part == "all":
        return data
    parts = split_of(list(data.episodes))
    episodes = {e: ep for e, ep in data.episodes.items() if parts[e] == part}
    queries = tuple(q for q in data.queries if q.episode_id in episodes)
    judgements = {q.checkpoint_id: data.judgements[q.checkpoint_id] for q in queries}
    return DomainData(data.domain, episodes, queries, judgements)
