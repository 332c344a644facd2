"""Rule R7 of :mod:`memwarden.evals.gatemem_mapping`: the READ grants of a GateMem episode.

For each principal, :func:`reach` applies the :class:`~memwarden.evals.gatemem_policy.Access` entries
of the domain policy (per relationship kind, per role, by default) to the episode's circles and
keeps, per circle (facet included), the highest ceiling and the reason that gave it; a role cap then
lowers every ceiling and PUBLIC ceilings are dropped. :func:`grants_of` groups a principal's reach
into one READ grant per (reason, ceiling). Each grant also carries ``FORGET``: a principal may forget
the records it may read (a deletion request written in a turn is carried out by the ingest service
within the requester's standing, rule R11). Pure and deterministic.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from memwarden.commands.model import Right, Sensitivity
from memwarden.commands.readmodel.permission import Grant
from memwarden.evals.gatemem_circles import PERSON_KEYS, TRACK_KEYS, Circles
from memwarden.evals.gatemem_data import Episode, Relationship
from memwarden.evals.gatemem_plan import CREDENTIALS, FACETS, LEVEL, PLACES, RecordSpec, lower
from memwarden.evals.gatemem_policy import Access, DomainPolicy

__all__ = ["Reach", "grants_of", "reach"]

#: Circle (facet included) -> (ceiling, reason); a participant reason reads ``participant@<valid_from_ms>``.
Reach = dict[str, tuple[Sensitivity, str]]
#: One circle an access opens: (circle, facets, reason or ``None`` for the access's own reason).
_Opened = tuple[str, tuple[str, ...], str | None]
_TRACK_FACETS: Mapping[str, tuple[str, ...]] = {
    "track": FACETS, "track-credentials": (CREDENTIALS,), "track-places": (PLACES,),
}


@dataclass(frozen=True, slots=True)
class _Grantee:
    """The principal whose reach is computed, with the episode circles its accesses can name."""

    principal_id: str
    circles: Circles
    threads: frozenset[str]
    participant_of: Mapping[str, int]  # thread -> time (ms) from which the principal participates


def reach(principal_id: str, role: str, relationships: tuple[Relationship, ...], circles: Circles,
          policy: DomainPolicy, threads: frozenset[str], participant_of: Mapping[str, int]) -> Reach:
    """Scope-circle (facet included) -> (ceiling, reason) that one principal may READ. A participant
    access is keyed ``(reason, valid_from_ms)`` in the reason string as ``participant@<ms>``.

    ``general`` at the policy's general ceiling, then the accesses of the principal's relationships
    (reason: the relationship kind), of its role (``role:<role>``) and the defaults (``default``);
    a circle keeps the first reason among those giving it the highest ceiling.
    """
    out: Reach = {}
    _give(out, "general", policy.general_ceiling, "everyone", ("",))
    who = _Grantee(principal_id, circles, threads, participant_of)
    for access, rel, why in _accesses(principal_id, role, relationships, policy):
        if not _applies(access, rel):
            continue
        for circle, facets, reason in _opened(access, rel, who):
            _give(out, circle, access.ceiling, why if reason is None else reason, facets)
    cap = policy.role_caps.get(role)
    if cap is not None:
        out = {c: (lower(s, cap), why) for c, (s, why) in out.items()}
    # records are never PUBLIC (R3), so a PUBLIC ceiling opens nothing: drop it
    return {c: v for c, v in out.items() if v[0] != Sensitivity.PUBLIC}


def _give(out: Reach, circle: str, ceiling: Sensitivity, why: str, facets: tuple[str, ...] = FACETS) -> None:
    """Open the facets of ``circle`` up to ``ceiling`` unless an earlier access opened them as high."""
    for facet in facets:
        name = circle + facet
        if name not in out or LEVEL[out[name][0]] < LEVEL[ceiling]:
            out[name] = (ceiling, why)


def _accesses(principal_id: str, role: str, relationships: tuple[Relationship, ...],
              policy: DomainPolicy) -> Iterator[tuple[Access, Relationship | None, str]]:
    """(access, relationship it comes from, reason) in policy order: relationships, role, defaults."""
    for rel in relationships:
        if rel.principal_id == principal_id:
            for access in policy.relationships.get(rel.kind, ()):
                yield access, rel, rel.kind
    for access in policy.roles.get(role, ()):
        yield access, None, f"role:{role}"
    for access in policy.default:
        yield access, None, "default"


def _applies(access: Access, rel: Relationship | None) -> bool:
    """An access with a ``when`` word applies only through a relationship whose ``access_scope`` has it."""
    return access.when is None or (rel is not None and access.when in rel.attrs.get("access_scope", ""))


def _opened(access: Access, rel: Relationship | None, who: _Grantee) -> list[_Opened]:
    """The circles one access opens, in the order they are given (see ``Access`` for the targets)."""
    target = access.target
    if target in _TRACK_FACETS:
        return [] if rel is None else [(f"track:{rel.attrs[k]}", _TRACK_FACETS[target], None)
                                       for k in TRACK_KEYS if k in rel.attrs]
    if target == "subject":
        return [] if rel is None else _subject_circles(rel, who.circles)
    if target == "self":
        return [(f"person:{who.principal_id}", FACETS, None)]
    if target == "own-private":
        return [(f"private:{who.principal_id}", FACETS, None)]
    if target == "all":
        return [*((f"track:{t}", FACETS, None) for t in who.circles.tracks),
                *((f"person:{p}", FACETS, None) for p in who.circles.persons),
                *((t, FACETS, None) for t in who.threads)]
    if target == "threads":
        return [(t, FACETS, None) for t in who.threads]
    if target == "scope-threads":
        return [] if rel is None else [(t, ("",), None) for t in _scope_threads(rel, who.threads)]  # no facet
    if target == "participant":
        return [(t, FACETS, f"participant@{since}") for t, since in who.participant_of.items()]
    return []


def _scope_threads(rel: Relationship, threads: frozenset[str]) -> list[str]:
    """The threads of the relationship's track whose word its ``access_scope`` names
    (``birch_booth_and_birch_bins_logistics_only`` -> ``track:birch_house/booth``, ``.../bins``)."""
    words = set(rel.attrs.get("access_scope", "").lower().split("_"))
    tracks = {f"track:{rel.attrs[k]}/" for k in TRACK_KEYS if k in rel.attrs}
    return sorted(t for t in threads
                  if any(t.startswith(prefix) for prefix in tracks) and t.rsplit("/", 1)[1].lower() in words)


def _subject_circles(rel: Relationship, circles: Circles) -> list[_Opened]:
    """Each person the relationship points at, followed by the tracks that person is the case subject of."""
    out: list[_Opened] = []
    for key in PERSON_KEYS:
        if key in rel.attrs:
            out.append((f"person:{rel.attrs[key]}", FACETS, None))
            out.extend((f"track:{track}", FACETS, None) for track in circles.subject_tracks.get(rel.attrs[key], ()))
    return out


def grants_of(episode: Episode, policy: DomainPolicy, circles: Circles, ns: str, writer: str,
              qualified: Mapping[str, str], records: list[RecordSpec],
              participants: Mapping[tuple[str, str], int]) -> tuple[list[Grant], Counter[str]]:
    """R7: (one READ + FORGET grant per principal, reason and ceiling listing its scopes ``<ns>/<circle>``,
    grant count per reason). Threads are the ``track:<id>/<word>`` circles some record is in;
    ``participants`` maps (thread, principal) to the time (ms) the participant grant starts."""
    grants: list[Grant] = []
    stats: Counter[str] = Counter()
    circles_used = {r.scope.split("/", 1)[1].split("#", 1)[0] for r in records}
    threads = frozenset(c for c in circles_used if c.startswith("track:") and "/" in c)
    for p in episode.principals:
        mine = {thread: since for (thread, who), since in participants.items() if who == p.principal_id}
        opened = reach(p.principal_id, p.role, episode.relationships, circles, policy, threads, mine)
        for reason, grant in _grouped(opened, ns, qualified[p.principal_id], f"{ns}/grant/{p.principal_id}", writer):
            grants.append(grant)
            stats[reason] += 1
    return grants, stats


def _grouped(opened: Reach, ns: str, grantee: str, prefix: str, writer: str) -> Iterator[tuple[str, Grant]]:
    """(reason, READ + FORGET grant ``<prefix>/<n>``) per (reason, ceiling) of a reach, in (reason, ceiling)
    order."""
    groups: dict[tuple[str, Sensitivity], list[str]] = {}
    for circle, (ceiling, why) in sorted(opened.items()):
        groups.setdefault((why, ceiling), []).append(f"{ns}/{circle}")
    for n, ((why, ceiling), scopes) in enumerate(sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1].value))):
        reason, _, since = why.partition("@")
        yield reason, Grant(
            grant_id=f"{prefix}/{n}",
            grantee=grantee,
            rights=frozenset({Right.READ, Right.FORGET}),
            scopes=tuple(scopes),
            sensitivity_ceiling=ceiling,
            valid_from_ms=int(since or 0),
            granted_by=writer,
            relationship=reason,
        )
