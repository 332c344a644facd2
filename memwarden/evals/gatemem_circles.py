"""Rule R2 of :mod:`memwarden.evals.gatemem_mapping`: the circles of a GateMem episode, and finding
the tracks, threads and persons a turn names.

A circle is a scope ``<ns>/<circle>`` without its namespace: ``track:<id>`` (a project, program, case,
course, building or household id of the relationships), ``track:<id>/<word>`` (a named thread of a
track), ``person:<id>`` (a principal a person-directed relationship points at, and in households
every non-member), ``private:<id>`` and ``general``. :func:`circles_of` reads them from the episode's
entity data only (never its turns); the ``named_*`` functions read one turn text. Pure.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from memwarden.evals.gatemem_data import Episode, Turn
from memwarden.evals.gatemem_policy import DomainPolicy

__all__ = [
    "OPENING_CHARS",
    "PERSON_KEYS",
    "TRACK_KEYS",
    "Circles",
    "circles_of",
    "named_persons",
    "named_threads",
    "named_tracks",
]

#: Relationship attributes naming a track.
TRACK_KEYS = ("project_id", "program_id", "case_id", "course_id", "building_id", "household_id", "for_household_id")
#: Relationship attributes naming the person a relationship is directed at.
PERSON_KEYS = ("for_principal_id", "guest_id", "manages", "related_principal_id")
_ALIAS_DROP = frozenset({"project", "program", "course", "house"})
#: A turn is about a person when the person is named within its opening (the note's heading or subject).
OPENING_CHARS = 80


@dataclass(frozen=True, slots=True)
class Circles:
    """The circles of one episode and what the scope rules need to find them in a turn text."""

    tracks: Mapping[str, re.Pattern[str] | None]  # track id -> alias pattern
    persons: frozenset[str]
    names: Mapping[str, re.Pattern[str]]  # person id -> display-name pattern
    subject_tracks: Mapping[str, tuple[str, ...]]  # person id -> tracks it is the case subject of
    home: Mapping[str, str]  # principal -> circle of its unnamed statements
    outsiders: frozenset[str]
    exclude: frozenset[str]  # names never taken as protected values
    thread_heads: Mapping[str, re.Pattern[str]]  # track id -> "<Head> <Word>" pattern of its threads
    public_tracks: frozenset[str]  # tracks given by program_id (public programs)


def circles_of(episode: Episode, policy: DomainPolicy) -> Circles:
    """R2 for one episode: its tracks (with alias patterns), person circles, display-name patterns,
    case-subject tracks, each principal's home circle, household outsiders, the names never taken as
    protected values, the thread-head patterns and the public (program) tracks."""
    aliases, persons, subject_tracks = _scan_relationships(episode, policy)
    outsiders = _outsiders(episode, policy)
    persons |= outsiders
    return Circles(
        tracks={t: _alias_pattern(a) for t, a in aliases.items()},
        persons=frozenset(persons),
        names=_name_patterns(episode, persons),
        subject_tracks={k: tuple(dict.fromkeys(v)) for k, v in subject_tracks.items()},
        home=_homes(episode, aliases, subject_tracks, outsiders),
        outsiders=frozenset(outsiders),
        exclude=_excluded_names(episode, aliases),
        public_tracks=frozenset(r.attrs["program_id"] for r in episode.relationships if "program_id" in r.attrs),
        thread_heads=_thread_heads(aliases, policy),
    )


def _scan_relationships(
    episode: Episode, policy: DomainPolicy
) -> tuple[dict[str, str], set[str], dict[str, list[str]]]:
    """(track id -> alias, person circle ids, case subject -> its tracks) from the relationships."""
    aliases: dict[str, str] = {}
    persons: set[str] = set()
    subject_tracks: dict[str, list[str]] = {}
    for rel in episode.relationships:
        own = [rel.attrs[k] for k in TRACK_KEYS if k in rel.attrs]
        for track in own:
            aliases.setdefault(track, _alias(track))
        persons.update(rel.attrs[k] for k in PERSON_KEYS if k in rel.attrs)
        if rel.kind in policy.subject_kinds:
            subject_tracks.setdefault(rel.principal_id, []).extend(own)
    return aliases, persons, subject_tracks


def _outsiders(episode: Episode, policy: DomainPolicy) -> set[str]:
    """Principals (not agents) without an insider relationship, when the domain makes them persons."""
    if not policy.outsiders_are_persons:
        return set()
    insiders = {r.principal_id for r in episode.relationships if r.kind in policy.insider_kinds}
    return {p.principal_id for p in episode.principals if p.principal_id not in insiders and p.role != "agent"}


def _name_patterns(episode: Episode, persons: set[str]) -> dict[str, re.Pattern[str]]:
    """Person id -> pattern of its given name, or of its full display name when the given name is shared."""
    given = Counter(p.display_name.split()[0] for p in episode.principals if p.display_name)
    names: dict[str, re.Pattern[str]] = {}
    for p in episode.principals:
        if p.principal_id in persons and p.display_name:
            first = p.display_name.split()[0]
            names[p.principal_id] = re.compile(r"\b" + re.escape(p.display_name if given[first] > 1 else first) + r"\b")
    return names


def _homes(episode: Episode, aliases: Mapping[str, str], subject_tracks: Mapping[str, list[str]],
           outsiders: set[str]) -> dict[str, str]:
    """Principal -> home circle: the track, or the subject's track, or the person, of its first
    relationship; a household outsider's home is the household when the episode has a single track."""
    only_track = [f"track:{t}" for t in aliases] if len(aliases) == 1 else []
    home: dict[str, str] = {}
    for rel in episode.relationships:
        if rel.principal_id in home:
            continue
        targets = [rel.attrs[k] for k in PERSON_KEYS if k in rel.attrs]
        choices = [f"track:{rel.attrs[k]}" for k in TRACK_KEYS if k in rel.attrs]
        choices += [f"track:{t}" for p in targets for t in subject_tracks.get(p, [])]
        choices += [f"person:{p}" for p in targets]
        if rel.principal_id in outsiders:
            choices = only_track
        if choices:
            home[rel.principal_id] = choices[0]
    for p in episode.principals:
        if p.principal_id in outsiders and only_track:
            home.setdefault(p.principal_id, only_track[0])
    return home


def _excluded_names(episode: Episode, aliases: Mapping[str, str]) -> frozenset[str]:
    """Display names, their parts and track aliases: never protected values."""
    exclude = {p.display_name for p in episode.principals if p.display_name}
    exclude |= {part for p in episode.principals for part in p.display_name.split()}
    exclude |= {a for a in aliases.values() if a}
    return frozenset(x for x in exclude if x)


def _thread_heads(aliases: Mapping[str, str], policy: DomainPolicy) -> dict[str, re.Pattern[str]]:
    """Track id -> pattern "<Head> <Word>" of its named threads (only in domains with threads)."""
    return {
        t: re.compile(r"\b" + re.escape(a.split()[0].capitalize()) + r" ([A-Z][A-Za-z]+)\b")
        for t, a in aliases.items() if a and policy.threads
    }


def _alias(track_id: str) -> str:
    return " ".join(w for w in track_id.split("_") if w and w not in _ALIAS_DROP)


def _alias_pattern(alias: str) -> re.Pattern[str] | None:
    if not alias:
        return None
    return re.compile(r"\b" + re.escape(alias).replace(r"\ ", r"[\s_-]+") + r"\b", re.IGNORECASE)


def named_tracks(text: str, circles: Circles) -> list[str]:
    """Tracks named in ``text``, by first mention; longer aliases first, so "Atlas Scholars" is not
    also read as "Atlas"; ids sharing one alias count once."""
    found: dict[str, tuple[int, str]] = {}
    rest = text
    for track, pattern in sorted(circles.tracks.items(), key=lambda kv: -len(kv[1].pattern if kv[1] else "")):
        if pattern is None:
            continue
        m = pattern.search(rest)
        if m:
            found.setdefault(pattern.pattern, (m.start(), track))
            rest = pattern.sub(lambda x: " " * len(x.group(0)), rest)
    return [track for _, track in sorted(found.values())]


def named_threads(text: str, circles: Circles) -> list[str]:
    """Thread circles ``track:<id>/<word>`` named in ``text``, by first mention."""
    hits = sorted(
        (m.start(), f"{track}/{m.group(1).lower()}")
        for track, rx in circles.thread_heads.items() for m in rx.finditer(text)
    )
    return list(dict.fromkeys(t for _, t in hits))


def named_persons(turn: Turn, circles: Circles) -> list[str]:
    """Person circles named in the turn (never the speaker), by first mention; empty unless the first
    mention is within the opening :data:`OPENING_CHARS` characters."""
    hits = sorted(
        (m.start(), p) for p, rx in circles.names.items() if p != turn.speaker_id and (m := rx.search(turn.text))
    )
    if not hits or hits[0][0] >= OPENING_CHARS:
        return []
    return [p for _, p in hits]
