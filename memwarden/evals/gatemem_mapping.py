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
R6 Scope of a turn: R4 taint (a value repeated whole, not inside a longer word or number; in households
   a private note comes first and stays private) > R5 > the first track named in the text (aliases from
   the ids, longest first) > the one person circle named in the opening of the text (display name; not the speaker;
   not when the speaker is a household outsider; a turn naming several persons is a shared summary and
   skips this rule) > the speaker's home circle (the track, or the subject's track, of its first
   relationship; a household outsider's home is the household) > ``general``. A turn whose markers are
   all credential markers goes to the ``#credentials`` facet of that circle, one whose only marker is a
   restricted room or site to the ``#places`` facet; a tainted turn keeps its origin's facet only if
   it would get the same one, else the circle itself.
R7 Grants from :mod:`memwarden.evals.gatemem_policy`: one READ grant per (principal, reason,
   ceiling) listing its scopes; a circle's grant covers both facets unless the access is
   ``track-credentials``. Each also carries ``FORGET`` (a principal may forget what it may read). The
   ingest service holds WRITE on every scope.
R8 Records. One per turn: writer the ingest service, subject and scope per R2/R6, sensitivity per
   R3-R5, store kind EVENT, no purpose tag (``()`` = any purpose), attributes ``speaker``, ``turn_id``,
   ``turn_kind``, ``synthetic_time``, ``markers``; ``observed_at`` from the turn (synthetic times are
   monotone, see gatemem_data). The asker comes from authentication (the checkpoint's asker), never from
   the query text: impersonation inside a query changes nothing.

R9-R12 Active forgetting (:mod:`memwarden.evals.gatemem_forgetting`, where each rule is spelled out):
   R9 finds the deletion statements of a turn (delete / remove from memory / do not retain / treated as
   deleted ..., a retired value the turn asks not to revive or bring back; not a deferred "once ..."
   or "prepare to remove", not a question); R10 reads the values
   they name (quoted strings and both sides of a quoted mapping, tokens and codes, labels such as
   ``bridge-17``, amounts, clock times, numbered places, 4-8 digit numbers, named customers / partners,
   unquoted phrases after "phrase" / "wording" / "label" / "note" / "location" / "point" ..., the object
   of an imperative delete / remove), never a value introduced as current or a safe / broad wording;
   R11 turns each deletion turn naming a value not deleted before into a :class:`ForgetSpec`: the
   speaker requests, the episode's ingest service (owner of every record) carries the request out
   through the gate (``ForgetMatching`` by query, within the requester's standing: what it may read,
   its own person and private circles, the tracks its relationships name) at the turn's position;
   R12 records the deletion turn and every later turn with each deleted value replaced by
   ``[deleted]``, scope and sensitivity still decided on the turn as spoken, and re-records a redacted
   copy of every memory a forget removed.

``EpisodePlan.stats`` holds the mapping statistics, to be reported apart from the store's score
(SCHEMA.md: the rule step dominates the result).

Module layout: the plan's data types are in :mod:`memwarden.evals.gatemem_plan`, R2 in
:mod:`memwarden.evals.gatemem_circles`, R3-R5 in :mod:`memwarden.evals.gatemem_content`, R4-R6 and R8
in :mod:`memwarden.evals.gatemem_records`, R7 in :mod:`memwarden.evals.gatemem_grants` (tables in
:mod:`memwarden.evals.gatemem_policy`), R9-R12 in :mod:`memwarden.evals.gatemem_forgetting`; this module
applies them in order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from memwarden.commands.model import Right, Sensitivity
from memwarden.commands.readmodel.permission import Grant
from memwarden.evals.gatemem_circles import circles_of
from memwarden.evals.gatemem_data import Episode
from memwarden.evals.gatemem_forgetting import forgets_of, redact, with_standing
from memwarden.evals.gatemem_grants import grants_of
from memwarden.evals.gatemem_labels import AccessLabels, labelled_grants, labelled_standing, relabel_records
from memwarden.evals.gatemem_plan import EpisodePlan, PrincipalSpec, RecordSpec, ScopeSpec, namespace_of
from memwarden.evals.gatemem_policy import EMPTY_POLICY, POLICY, DomainPolicy
from memwarden.evals.gatemem_records import records_of

__all__ = ["FORGET_STATS", "plan_episode", "summarise_plans"]

#: The forgetting counts of ``stats["forgetting"]`` (R9-R12), in report order.
FORGET_STATS = ("deletion_turns", "deferred_turns", "turns_without_value", "forgets", "values", "values_repeated",
                "redacted_records", "redactions", "without_standing")


def plan_episode(episode: Episode, policy: DomainPolicy | None = None,
                 labels: AccessLabels | None = None) -> EpisodePlan:
    """Apply R1-R12 to one episode. Deterministic and pure: the same episode yields the same plan.

    ``policy`` defaults to the domain's table in :data:`memwarden.evals.gatemem_policy.POLICY` (a domain
    without a table grants nothing). Raises nothing on a well-formed :class:`Episode`.
    The plan holds the episode principals plus the ingest service (R1), every scope a record or grant
    names, the READ grants (R7) followed by the service's WRITE grant, one record per turn (R8), and
    ``stats``: ``turns``, ``records`` (counts per rule / scope kind / sensitivity),
    ``grants_by_relationship``, ``scopes``, ``principals`` and ``forgetting`` (R9-R12: deletion turns,
    deferred ones, those naming no value, forgets, values, repeated values, redacted records and
    redactions); ``forgets`` lists the forgets in turn order (R11) and the records' texts are redacted (R12).

    ``labels`` (opt-in, :mod:`memwarden.evals.gatemem_labels`): an annotation layer decides each record's
    scope and the READ grants instead of R2/R6/R7 (records, sensitivity and R9-R12 as above; a forget's
    standing is the rules' standing carried to the labelled scopes, plus what the labels let the requester
    read); raises ``AccessLabelError`` when the labels do not fit the episode.
    """
    policy = policy or POLICY.get(episode.domain, EMPTY_POLICY)
    ns = namespace_of(episode.episode_id)
    writer = f"service:{ns}/memory-ingest"
    principals = _principals(episode, ns, writer)
    qualified = {p.local_id: p.principal_id for p in principals}
    circles = circles_of(episode, policy)
    records, record_stats, participants = records_of(episode, policy, circles, ns, writer, qualified)
    grants, grant_stats = grants_of(episode, policy, circles, ns, writer, qualified, records, participants)
    forgets, redactions, forget_stats = forgets_of(episode, circles.exclude, qualified)
    records = _redacted(records, redactions, forget_stats)
    times_ms = {r.turn_id: int(r.observed_at.timestamp() * 1000) for r in records}
    scope_names = sorted({r.scope for r in records} | {s for g in grants for s in g.scopes})
    forgets = with_standing(forgets, episode, circles, grants, scope_names, writer, times_ms)
    if labels is not None:
        relabelled = relabel_records(records, labels, episode, ns)
        grants = labelled_grants(labels, episode, ns, writer, qualified, times_ms)
        grant_stats = Counter({"access-label": len(grants)})
        forgets = labelled_standing(forgets, records, relabelled, grants, times_ms)
        records = relabelled
        scope_names = sorted({r.scope for r in records} | {s for g in grants for s in g.scopes})
    forget_stats["without_standing"] = sum(1 for f in forgets if not f.scopes)
    scopes = tuple(ScopeSpec(s, s.split("/", 1)[1].split(":", 1)[0]) for s in scope_names)
    grants.append(_ingest_grant(ns, writer, scope_names))
    stats = {
        "turns": len(records),
        "records": dict(sorted(record_stats.items())),
        "grants_by_relationship": dict(sorted(grant_stats.items())),
        "scopes": len(scopes),
        "principals": len(principals),
        "forgetting": {k: forget_stats[k] for k in FORGET_STATS},
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
        forgets=tuple(forgets),
    )


def _redacted(records: list[RecordSpec], redactions: Mapping[str, tuple[str, ...]],
              stats: Counter[str]) -> list[RecordSpec]:
    """R12: each record whose turn holds deleted values, with them replaced (counts into ``stats``)."""
    out: list[RecordSpec] = []
    for r in records:
        values = redactions.get(r.turn_id)
        if values:
            text, n = redact(r.text, values)
            stats["redacted_records"] += int(n > 0)
            stats["redactions"] += n
            r = replace(r, text=text)
        out.append(r)
    return out


def _principals(episode: Episode, ns: str, writer: str) -> list[PrincipalSpec]:
    """R1: the episode principals (``agent:`` for role ``agent``, else ``user:``) and the ingest service."""
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
    return principals


def _ingest_grant(ns: str, writer: str, scope_names: list[str]) -> Grant:
    """R7: the ingest service's WRITE grant on every scope of the episode."""
    return Grant(
        grant_id=f"{ns}/grant/memory-ingest",
        grantee=writer,
        rights=frozenset({Right.WRITE}),
        scopes=tuple(scope_names),
        sensitivity_ceiling=Sensitivity.RESTRICTED,
        granted_by=writer,
        relationship="ingest",
    )


def summarise_plans(plans: Iterable[EpisodePlan]) -> dict[str, Any]:
    """Mapping statistics per domain, to report apart from the store's score: episodes, turns, records
    per deciding rule / scope kind / sensitivity, principals, scopes, grants per relationship kind, and
    the forgetting rules' counts (R9-R12)."""
    out: dict[str, dict[str, Any]] = {}
    for plan in plans:
        d = out.setdefault(plan.domain, {"episodes": 0, "turns": 0, "principals": 0, "scopes": 0,
                                         "records": Counter(), "grants_by_relationship": Counter(),
                                         "forgetting": Counter()})
        d["episodes"] += 1
        d["turns"] += plan.stats["turns"]
        d["principals"] += plan.stats["principals"]
        d["scopes"] += plan.stats["scopes"]
        d["records"].update(plan.stats["records"])
        d["grants_by_relationship"].update(plan.stats["grants_by_relationship"])
        d["forgetting"].update(plan.stats.get("forgetting", {}))
    for d in out.values():
        d["forgetting"] = {k: d["forgetting"][k] for k in FORGET_STATS}
        d["records"] = dict(sorted(d["records"].items()))
        d["grants_by_relationship"] = dict(d["grants_by_relationship"].most_common())
    return out
