"""Deterministic rules mapping a GateMem episode to governance: principals, scopes, grants, records.

No LLM, no hidden checkpoint field, no per-episode annotation: the rules read the episode's entity data
(principals, roles, relationships) and its turns in order. The output is plain data
(:class:`EpisodePlan`) for a harness to publish as ``RegisterPrincipal`` / ``GrantAccess`` /
``RecordMemory`` commands and to check with ``memwarden.commands.access.may_read`` (ABAC contract of
issue 4; seed 004 "Shared memory needs principal-aware isolation"; SSGM Principle 3).

R1 Principals. Each episode principal is ``user:<ns>/<id>`` (``agent:<ns>/<id>`` for role ``agent``)
   with role attribute ``<ns>.<role>`` (so role grants never cross episodes); ``<ns>`` is ``gm-`` and
   10 hex digits of SHA-1(episode id). One service principal ``service:<ns>/memory-ingest`` writes
   and owns every record. The speaker of a turn is its provenance (``source.reference`` and
   attribute ``speaker``), not its owner: the contract lets an owner read its records without any
   grant, and the benchmark protects a speaker's own statement once their access ends (a contractor
   who said "my access is revoked" must not get incident status back).
R2 Circles = scopes ``<ns>/<circle>``: ``track:<id>`` per project / program / case / course / building /
   household id of the relationships; ``person:<id>`` per principal a person-directed relationship
   points at (``for_principal_id``, ``guest_id``, ``manages``, ``related_principal_id``) and, in
   households, per non-member; ``private:<id>`` for a principal's private notes; ``general`` for the
   rest. A circle holding only credentials gets the facet ``#credentials`` (R6). Record subjects are
   ``subject:<ns>/<circle>``, never principal ids, so the contract's "records about me" rule opens
   nothing by itself.
R3 Sensitivity from keyword markers (:mod:`memwarden.evals.gatemem_content`).
R4 Taint. A value (token, code, amount, exact name, private time or place ...) first stated in a
   CONFIDENTIAL or RESTRICTED record is protected: a later turn repeating it goes to that record's
   circle (unless that circle is ``general``) with at least that sensitivity, whoever speaks.
R5 A first-person private note goes to ``private:<speaker>`` as RESTRICTED.
R6 Scope of a turn: R4 taint > R5 > the first track named in the text (aliases from the ids, longest
   first) > the one person circle named in the opening of the text (display name; not the speaker;
   not when the speaker is a household outsider; a turn naming several persons is a shared summary and
   skips this rule) > the speaker's home circle (the track, or the subject's track, of its first
   relationship; a household outsider's home is the household) > ``general``. A turn whose markers are
   all credential markers goes to the ``#credentials`` facet of that circle, one whose only marker is a
   restricted room or site to the ``#places`` facet; a tainted turn keeps its origin's facet only if
   it would get the same one, else the circle itself.
R7 Grants from :mod:`memwarden.evals.gatemem_policy`: one READ grant per (principal, reason,
   ceiling) listing its scopes; a circle's grant covers both facets unless the access is
   ``track-credentials``. The ingest service holds WRITE on every scope.
R8 Records. One per turn: writer the ingest service, subject and scope per R2/R6, sensitivity per
   R3-R5, store kind EVENT, no purpose tag (``()`` = any purpose), attributes ``speaker``, ``turn_id``,
   ``turn_kind``, ``synthetic_time``, ``markers``; ``observed_at`` from the turn (synthetic times are
   monotone, see gatemem_data). The asker comes from authentication (the checkpoint's asker), never from
   the query text: impersonation inside a query changes nothing.

``EpisodePlan.stats`` holds the mapping statistics, to be reported apart from the store's score
(SCHEMA.md: the rule step dominates the result).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memwarden.commands.model import Right, Sensitivity, StoreKind
from memwarden.commands.readmodel.permission import Grant
from memwarden.evals.gatemem_content import _RESTRICTION_WORD, ContentFacts, analyse, facet_of
from memwarden.evals.gatemem_data import Episode, Relationship, Turn
from memwarden.evals.gatemem_policy import EMPTY_POLICY, POLICY, Access, DomainPolicy

__all__ = [
    "CREDENTIALS",
    "PLACES",
    "EpisodePlan",
    "PrincipalSpec",
    "RecordSpec",
    "ScopeSpec",
    "namespace_of",
    "plan_episode",
    "summarise_plans",
]

READ = Right.READ
WRITE = Right.WRITE
#: Facet suffix of a circle's credential-only records.
CREDENTIALS = "#credentials"
PLACES = "#places"
_FACETS = ("", CREDENTIALS, PLACES)
_LEVEL = {s: i for i, s in enumerate(
    (Sensitivity.PUBLIC, Sensitivity.INTERNAL, Sensitivity.CONFIDENTIAL, Sensitivity.RESTRICTED))}
_TRACK_KEYS = ("project_id", "program_id", "case_id", "course_id", "building_id", "household_id", "for_household_id")
_PERSON_KEYS = ("for_principal_id", "guest_id", "manages", "related_principal_id")
_ALIAS_DROP = frozenset({"project", "program", "course", "house"})


def _max(a: Sensitivity, b: Sensitivity) -> Sensitivity:
    return a if _LEVEL[a] >= _LEVEL[b] else b


def _min(a: Sensitivity, b: Sensitivity) -> Sensitivity:
    return a if _LEVEL[a] <= _LEVEL[b] else b


@dataclass(frozen=True, slots=True)
class PrincipalSpec:
    """A principal to register: qualified id, episode-local id, kind (user / agent / service), roles."""

    principal_id: str
    local_id: str
    kind: str
    roles: tuple[str, ...]
    display_name: str = ""


@dataclass(frozen=True, slots=True)
class ScopeSpec:
    """A scope: qualified name and kind (track / person / private / general)."""

    name: str
    kind: str


@dataclass(frozen=True, slots=True)
class RecordSpec:
    """One memory record per turn (R8). ``writer`` owns it; ``attributes['speaker']`` is the source."""

    record_id: str
    turn_id: str
    index: int
    writer: str
    subject: str
    scope: str
    store_kind: StoreKind
    sensitivity: Sensitivity
    purposes: tuple[str, ...]
    attributes: Mapping[str, str]
    text: str
    observed_at: datetime


@dataclass(frozen=True, slots=True)
class EpisodePlan:
    """What a harness publishes for one episode, plus the mapping statistics."""

    episode_id: str
    domain: str
    namespace: str
    writer: str
    principals: tuple[PrincipalSpec, ...]
    scopes: tuple[ScopeSpec, ...]
    grants: tuple[Grant, ...]
    records: tuple[RecordSpec, ...]
    stats: Mapping[str, Any] = field(default_factory=dict)

    def principal(self, local_id: str) -> PrincipalSpec:
        """The spec of an episode principal by its local id; ``KeyError`` if unknown."""
        for p in self.principals:
            if p.local_id == local_id:
                return p
        raise KeyError(f"{self.episode_id}: no principal {local_id!r}")

    def principal_id(self, local_id: str) -> str:
        """Qualified id of an episode principal; ``KeyError`` if unknown."""
        return self.principal(local_id).principal_id

    def roles_of(self, local_id: str) -> frozenset[str]:
        """Role attributes of an episode principal (namespaced, R1)."""
        return frozenset(self.principal(local_id).roles)

    def records_through(self, turn_id: str) -> tuple[RecordSpec, ...]:
        """Records of the turns up to and including ``turn_id`` (what the store holds as of it)."""
        for r in self.records:
            if r.turn_id == turn_id:
                return self.records[: r.index + 1]
        raise KeyError(f"{self.episode_id}: no turn {turn_id!r}")


def namespace_of(episode_id: str) -> str:
    """``gm-`` + the first 10 hex digits of SHA-1(episode id): a short, stable per-episode prefix."""
    return "gm-" + hashlib.sha1(episode_id.encode("utf-8")).hexdigest()[:10]


# --------------------------------------------------------------------------------------------------
# R2: circles
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Circles:
    tracks: Mapping[str, re.Pattern[str] | None]  # track id -> alias pattern
    persons: frozenset[str]
    names: Mapping[str, re.Pattern[str]]  # person id -> display-name pattern
    subject_tracks: Mapping[str, tuple[str, ...]]  # person id -> tracks it is the case subject of
    home: Mapping[str, str]  # principal -> circle of its unnamed statements
    outsiders: frozenset[str]
    exclude: frozenset[str]  # names never taken as protected values
    thread_heads: Mapping[str, re.Pattern[str]]  # track id -> "<Head> <Word>" pattern of its threads
    public_tracks: frozenset[str]  # tracks given by program_id (public programs)


def _alias(track_id: str) -> str:
    return " ".join(w for w in track_id.split("_") if w and w not in _ALIAS_DROP)


def _circles(episode: Episode, policy: DomainPolicy) -> _Circles:
    aliases: dict[str, str] = {}
    persons: set[str] = set()
    subject_tracks: dict[str, list[str]] = {}
    for rel in episode.relationships:
        own = [rel.attrs[k] for k in _TRACK_KEYS if k in rel.attrs]
        for track in own:
            aliases.setdefault(track, _alias(track))
        persons.update(rel.attrs[k] for k in _PERSON_KEYS if k in rel.attrs)
        if rel.kind in policy.subject_kinds:
            subject_tracks.setdefault(rel.principal_id, []).extend(own)
    insiders = {r.principal_id for r in episode.relationships if r.kind in policy.insider_kinds}
    outsiders: set[str] = set()
    if policy.outsiders_are_persons:
        outsiders = {p.principal_id for p in episode.principals if p.principal_id not in insiders and p.role != "agent"}
        persons |= outsiders
    given = Counter(p.display_name.split()[0] for p in episode.principals if p.display_name)
    names: dict[str, re.Pattern[str]] = {}
    for p in episode.principals:
        if p.principal_id in persons and p.display_name:
            first = p.display_name.split()[0]
            names[p.principal_id] = re.compile(r"\b" + re.escape(p.display_name if given[first] > 1 else first) + r"\b")
    only_track = [f"track:{t}" for t in aliases] if len(aliases) == 1 else []
    home: dict[str, str] = {}
    for rel in episode.relationships:
        if rel.principal_id in home:
            continue
        targets = [rel.attrs[k] for k in _PERSON_KEYS if k in rel.attrs]
        choices = [f"track:{rel.attrs[k]}" for k in _TRACK_KEYS if k in rel.attrs]
        choices += [f"track:{t}" for p in targets for t in subject_tracks.get(p, [])]
        choices += [f"person:{p}" for p in targets]
        if rel.principal_id in outsiders:
            choices = only_track
        if choices:
            home[rel.principal_id] = choices[0]
    for p in episode.principals:
        if p.principal_id in outsiders and only_track:
            home.setdefault(p.principal_id, only_track[0])
    exclude = {p.display_name for p in episode.principals if p.display_name}
    exclude |= {part for p in episode.principals for part in p.display_name.split()}
    exclude |= {a for a in aliases.values() if a}
    return _Circles(
        tracks={t: _alias_pattern(a) for t, a in aliases.items()},
        persons=frozenset(persons),
        names=names,
        subject_tracks={k: tuple(dict.fromkeys(v)) for k, v in subject_tracks.items()},
        home=home,
        outsiders=frozenset(outsiders),
        exclude=frozenset(x for x in exclude if x),
        public_tracks=frozenset(r.attrs["program_id"] for r in episode.relationships if "program_id" in r.attrs),
        thread_heads={
            t: re.compile(r"\b" + re.escape(a.split()[0].capitalize()) + r" ([A-Z][A-Za-z]+)\b")
            for t, a in aliases.items() if a and policy.threads
        },
    )


def _alias_pattern(alias: str) -> re.Pattern[str] | None:
    if not alias:
        return None
    return re.compile(r"\b" + re.escape(alias).replace(r"\ ", r"[\s_-]+") + r"\b", re.IGNORECASE)


def _named_tracks(text: str, circles: _Circles) -> list[str]:
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


#: A turn is about a person when the person is named within its opening (the note's heading or subject).
OPENING_CHARS = 80


def _named_threads(text: str, circles: _Circles) -> list[str]:
    """Thread circles ``track:<id>/<word>`` named in ``text``, by first mention."""
    hits = sorted(
        (m.start(), f"{track}/{m.group(1).lower()}")
        for track, rx in circles.thread_heads.items() for m in rx.finditer(text)
    )
    return list(dict.fromkeys(t for _, t in hits))


def _named_persons(turn: Turn, circles: _Circles) -> list[str]:
    """Person circles named in the turn (never the speaker), by first mention; empty unless the first
    mention is within the opening :data:`OPENING_CHARS` characters."""
    hits = sorted(
        (m.start(), p) for p, rx in circles.names.items() if p != turn.speaker_id and (m := rx.search(turn.text))
    )
    if not hits or hits[0][0] >= OPENING_CHARS:
        return []
    return [p for _, p in hits]


# --------------------------------------------------------------------------------------------------
# R4-R6: the scope of a turn
# --------------------------------------------------------------------------------------------------


def _scope_of_turn(
    turn: Turn, facts: ContentFacts, circles: _Circles, taint: Mapping[str, tuple[str, Sensitivity]]
) -> tuple[str, Sensitivity, str]:
    """(circle, sensitivity, rule that decided) for one turn."""
    level = facts.sensitivity
    hits = [taint[v] for v in taint if v in turn.text]
    if hits:
        origin, origin_level = max(hits, key=lambda h: _LEVEL[h[1]])
        level = _max(level, origin_level)
        if origin != "general":
            return origin, level, "taint"
    if facts.private:
        return f"private:{turn.speaker_id}", Sensitivity.RESTRICTED, "private"
    threads = _named_threads(turn.text, circles)
    if threads:
        return f"track:{threads[0]}", level, "named-thread"
    tracks = _named_tracks(turn.text, circles)
    if _RESTRICTION_WORD.search(turn.text):
        # "the private amount ..., separate from the public Elm Guides line": a public program named
        # only for contrast does not take a record about something private
        tracks = [t for t in tracks if t not in circles.public_tracks]
    if tracks:
        return f"track:{tracks[0]}", level, "named-track"
    persons = [] if turn.speaker_id in circles.outsiders else _named_persons(turn, circles)
    if len(persons) == 1:
        return f"person:{persons[0]}", level, "named-person"
    home = circles.home.get(turn.speaker_id)
    if home:
        return home, level, "home"
    return "general", level, "general"


def _records(episode: Episode, policy: DomainPolicy, circles: _Circles, ns: str, writer: str,
             qualified: Mapping[str, str]) -> tuple[list[RecordSpec], Counter[str], dict[tuple[str, str], int]]:
    """R3-R6 and R8 over the turns in order; also the thread participants (thread, principal) -> first
    time (ms) an insider's record in that thread named the principal."""
    taint: dict[str, tuple[str, Sensitivity]] = {}
    records: list[RecordSpec] = []
    stats: Counter[str] = Counter()
    participants: dict[tuple[str, str], int] = {}
    for turn in episode.turns:
        facts = analyse(turn.text, policy.extra_confidential, circles.exclude, policy.extra_values)
        circle, level, rule = _scope_of_turn(turn, facts, circles, taint)
        if rule == "named-thread" and turn.speaker_id not in circles.outsiders:
            named = _named_persons(turn, circles)
            if len(named) == 1 and named[0] in circles.outsiders:
                participants.setdefault((circle, named[0]), _ms(turn.observed_at))
        base, _, origin_facet = circle.partition("#")
        facet = facet_of(facts)
        if rule == "taint" and facet != (f"#{origin_facet}" if origin_facet else ""):
            facet = ""  # a repeated value keeps the facet of its origin, never a wider one
        circle = base + facet
        if _LEVEL[level] >= _LEVEL[Sensitivity.CONFIDENTIAL]:
            for value in facts.values:
                taint.setdefault(value, (circle, level))
        stats[f"rule.{rule}"] += 1
        stats[f"scope_kind.{base.split(':', 1)[0]}{facet}"] += 1
        stats[f"sensitivity.{level.value}"] += 1
        records.append(RecordSpec(
            record_id=f"{ns}/{turn.turn_id}",
            turn_id=turn.turn_id,
            index=turn.index,
            writer=writer,
            subject=f"subject:{ns}/{circle.split('#', 1)[0]}",
            scope=f"{ns}/{circle}",
            store_kind=StoreKind.EVENT,
            sensitivity=level,
            purposes=(),
            attributes={
                "speaker": qualified.get(turn.speaker_id, turn.speaker_id),
                "turn_id": turn.turn_id,
                "turn_kind": turn.turn_kind or "",
                "synthetic_time": "true" if turn.synthetic_time else "false",
                "markers": ",".join(facts.markers),
            },
            text=turn.text,
            observed_at=turn.observed_at,
        ))
    return records, stats, participants


def _ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


# --------------------------------------------------------------------------------------------------
# R7: grants
# --------------------------------------------------------------------------------------------------


def _reach(principal_id: str, role: str, relationships: tuple[Relationship, ...], circles: _Circles,
           policy: DomainPolicy, threads: frozenset[str], participant_of: Mapping[str, int]
           ) -> dict[str, tuple[Sensitivity, str]]:
    """Scope-circle (facet included) -> (ceiling, reason) that one principal may READ. A participant
    access is keyed ``(reason, valid_from_ms)`` in the reason string as ``participant@<ms>``."""
    out: dict[str, tuple[Sensitivity, str]] = {}

    def give(circle: str, ceiling: Sensitivity, why: str, facets: tuple[str, ...] = _FACETS) -> None:
        for facet in facets:
            name = circle + facet
            if name not in out or _LEVEL[out[name][0]] < _LEVEL[ceiling]:
                out[name] = (ceiling, why)

    def apply(access: Access, rel: Relationship | None, why: str) -> None:
        if access.when is not None and (rel is None or access.when not in rel.attrs.get("access_scope", "")):
            return
        if access.target in ("track", "track-credentials", "track-places") and rel is not None:
            facets = {"track": _FACETS, "track-credentials": (CREDENTIALS,), "track-places": (PLACES,)}[access.target]
            for key in _TRACK_KEYS:
                if key in rel.attrs:
                    give(f"track:{rel.attrs[key]}", access.ceiling, why, facets)
        elif access.target == "subject" and rel is not None:
            for key in _PERSON_KEYS:
                if key in rel.attrs:
                    give(f"person:{rel.attrs[key]}", access.ceiling, why)
                    for track in circles.subject_tracks.get(rel.attrs[key], ()):
                        give(f"track:{track}", access.ceiling, why)
        elif access.target == "self":
            give(f"person:{principal_id}", access.ceiling, why)
        elif access.target == "own-private":
            give(f"private:{principal_id}", access.ceiling, why)
        elif access.target == "all":
            for track in circles.tracks:
                give(f"track:{track}", access.ceiling, why)
            for person in circles.persons:
                give(f"person:{person}", access.ceiling, why)
            for thread in threads:
                give(thread, access.ceiling, why)
        elif access.target == "threads":
            for thread in threads:
                give(thread, access.ceiling, why)
        elif access.target == "participant":
            for thread, since in participant_of.items():
                give(thread, access.ceiling, f"participant@{since}")

    give("general", policy.general_ceiling, "everyone", ("",))
    for rel in relationships:
        if rel.principal_id == principal_id:
            for access in policy.relationships.get(rel.kind, ()):
                apply(access, rel, rel.kind)
    for access in policy.roles.get(role, ()):
        apply(access, None, f"role:{role}")
    for access in policy.default:
        apply(access, None, "default")
    cap = policy.role_caps.get(role)
    if cap is not None:
        out = {c: (_min(s, cap), why) for c, (s, why) in out.items()}
    # records are never PUBLIC (R3), so a PUBLIC ceiling opens nothing: drop it
    return {c: v for c, v in out.items() if v[0] != Sensitivity.PUBLIC}


def _grants(episode: Episode, policy: DomainPolicy, circles: _Circles, ns: str, writer: str,
            qualified: Mapping[str, str], records: list[RecordSpec],
            participants: Mapping[tuple[str, str], int]) -> tuple[list[Grant], Counter[str]]:
    grants: list[Grant] = []
    stats: Counter[str] = Counter()
    circles_used = {r.scope.split("/", 1)[1].split("#", 1)[0] for r in records}
    threads = frozenset(c for c in circles_used if c.startswith("track:") and "/" in c)
    for p in episode.principals:
        mine = {thread: since for (thread, who), since in participants.items() if who == p.principal_id}
        reach = _reach(p.principal_id, p.role, episode.relationships, circles, policy, threads, mine)
        groups: dict[tuple[str, Sensitivity], list[str]] = {}
        for circle, (ceiling, why) in sorted(reach.items()):
            groups.setdefault((why, ceiling), []).append(f"{ns}/{circle}")
        for n, ((why, ceiling), scopes) in enumerate(sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1].value))):
            reason, _, since = why.partition("@")
            grants.append(Grant(
                grant_id=f"{ns}/grant/{p.principal_id}/{n}",
                grantee=qualified[p.principal_id],
                rights=frozenset({READ}),
                scopes=tuple(scopes),
                sensitivity_ceiling=ceiling,
                valid_from_ms=int(since or 0),
                granted_by=writer,
                relationship=reason,
            ))
            stats[reason] += 1
    return grants, stats


# --------------------------------------------------------------------------------------------------
# the plan
# --------------------------------------------------------------------------------------------------


def plan_episode(episode: Episode, policy: DomainPolicy | None = None) -> EpisodePlan:
    """Apply R1-R8 to one episode. Deterministic and pure: the same episode yields the same plan.

    ``policy`` defaults to the domain's table in :data:`memwarden.evals.gatemem_policy.POLICY` (a domain
    without a table grants nothing). Raises nothing on a well-formed :class:`Episode`.
    """
    policy = policy or POLICY.get(episode.domain, EMPTY_POLICY)
    ns = namespace_of(episode.episode_id)
    writer = f"service:{ns}/memory-ingest"
    principals = [
        PrincipalSpec(
            principal_id=f"{'agent' if p.role == 'agent' else 'user'}:{ns}/{p.principal_id}",
            local_id=p.principal_id,
            kind="agent" if p.role == "agent" else "user",
            roles=(f"{ns}.{p.role}",),
            display_name=p.display_name,
        )
        for p in episode.principals
    ]
    principals.append(PrincipalSpec(writer, "memory-ingest", "service", ()))
    qualified = {p.local_id: p.principal_id for p in principals}
    circles = _circles(episode, policy)
    records, record_stats, participants = _records(episode, policy, circles, ns, writer, qualified)
    grants, grant_stats = _grants(episode, policy, circles, ns, writer, qualified, records, participants)
    scope_names = sorted({r.scope for r in records} | {s for g in grants for s in g.scopes})
    scopes = tuple(ScopeSpec(s, s.split("/", 1)[1].split(":", 1)[0]) for s in scope_names)
    grants.append(Grant(
        grant_id=f"{ns}/grant/memory-ingest",
        grantee=writer,
        rights=frozenset({WRITE}),
        scopes=tuple(scope_names),
        sensitivity_ceiling=Sensitivity.RESTRICTED,
        granted_by=writer,
        relationship="ingest",
    ))
    stats = {
        "turns": len(records),
        "records": dict(sorted(record_stats.items())),
        "grants_by_relationship": dict(sorted(grant_stats.items())),
        "scopes": len(scopes),
        "principals": len(principals),
    }
    return EpisodePlan(
        episode_id=episode.episode_id,
        domain=episode.domain,
        namespace=ns,
        writer=writer,
        principals=tuple(principals),
        scopes=scopes,
        grants=tuple(grants),
        records=tuple(records),
        stats=stats,
    )


def summarise_plans(plans: Iterable[EpisodePlan]) -> dict[str, Any]:
    """Mapping statistics per domain, to report apart from the store's score: episodes, turns, records
    per deciding rule / scope kind / sensitivity, principals, scopes, and grants per relationship kind."""
    out: dict[str, dict[str, Any]] = {}
    for plan in plans:
        d = out.setdefault(plan.domain, {"episodes": 0, "turns": 0, "principals": 0, "scopes": 0,
                                         "records": Counter(), "grants_by_relationship": Counter()})
        d["episodes"] += 1
        d["turns"] += plan.stats["turns"]
        d["principals"] += plan.stats["principals"]
        d["scopes"] += plan.stats["scopes"]
        d["records"].update(plan.stats["records"])
        d["grants_by_relationship"].update(plan.stats["grants_by_relationship"])
    for d in out.values():
        d["records"] = dict(sorted(d["records"].items()))
        d["grants_by_relationship"] = dict(d["grants_by_relationship"].most_common())
    return out
