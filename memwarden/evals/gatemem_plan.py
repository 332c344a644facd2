"""The output of the GateMem mapping as plain data, and the vocabulary its rules share.

:class:`EpisodePlan` (with :class:`PrincipalSpec`, :class:`ScopeSpec`, :class:`RecordSpec` and
:class:`ForgetSpec`) is what :func:`memwarden.evals.gatemem_mapping.plan_episode` returns for a harness
to publish; the facet suffixes (:data:`CREDENTIALS`, :data:`PLACES`), the sensitivity order and
:func:`namespace_of` are used by the record rules (:mod:`memwarden.evals.gatemem_records`) and the grant rules
(:mod:`memwarden.evals.gatemem_grants`). No I/O, no logic beyond look-ups.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memwarden.commands.model import Sensitivity, StoreKind
from memwarden.commands.readmodel.permission import Grant

__all__ = [
    "CREDENTIALS",
    "FACETS",
    "LEVEL",
    "PLACES",
    "EpisodePlan",
    "ForgetSpec",
    "PrincipalSpec",
    "RecordSpec",
    "ScopeSpec",
    "higher",
    "lower",
    "namespace_of",
]

#: Facet suffix of a circle's credential-only records.
CREDENTIALS = "#credentials"
#: Facet suffix of a circle's records whose only marker is a restricted room or site.
PLACES = "#places"
#: Every facet of a circle: the circle itself, its credentials and its places.
FACETS: tuple[str, ...] = ("", CREDENTIALS, PLACES)
#: Sensitivity -> rank, PUBLIC (0) < INTERNAL < CONFIDENTIAL < RESTRICTED (3).
LEVEL: Mapping[Sensitivity, int] = {s: i for i, s in enumerate(
    (Sensitivity.PUBLIC, Sensitivity.INTERNAL, Sensitivity.CONFIDENTIAL, Sensitivity.RESTRICTED))}


def higher(a: Sensitivity, b: Sensitivity) -> Sensitivity:
    """The more sensitive of two levels (``a`` on a tie)."""
    return a if LEVEL[a] >= LEVEL[b] else b


def lower(a: Sensitivity, b: Sensitivity) -> Sensitivity:
    """The less sensitive of two levels (``a`` on a tie)."""
    return a if LEVEL[a] <= LEVEL[b] else b


def namespace_of(episode_id: str) -> str:
    """``gm-`` + the first 10 hex digits of SHA-1(episode id): a short, stable per-episode prefix."""
    return "gm-" + hashlib.sha1(episode_id.encode("utf-8")).hexdigest()[:10]


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
class ForgetSpec:
    """One forget (R11): at turn ``turn_id`` (0-based ``index``), principal ``requester`` (qualified id;
    ``speaker`` is its episode-local id) asks that each of ``values`` (new in the episode) be forgotten;
    ``known`` lists the values of the turn an earlier forget already covered. ``executor`` (the
    episode's ingest service, owner of every record) carries the request out through the gate, by
    query, restricted to ``scopes``: the requester's standing (R11). No scope: no standing, nothing
    is forgotten."""

    turn_id: str
    index: int
    requester: str
    speaker: str
    values: tuple[str, ...]
    known: tuple[str, ...] = ()
    executor: str = ""
    scopes: tuple[str, ...] = ()


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
    forgets: tuple[ForgetSpec, ...] = ()

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
