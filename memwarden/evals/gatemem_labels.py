"""An access-label layer for GateMem: who may read each turn, written by annotators (opt-in, not the rules).

GateMem states its access rules in natural language inside the turns, and SCHEMA.md names two ways to
give a store the write-time policy without an LLM at run time: rules (R1-R12 of
:mod:`memwarden.evals.gatemem_mapping`, the default) or a hand-made annotation layer, to be reported apart
because "that step dominates the result". This module is the second way, as an application that knows
its audiences would supply it: a label per turn naming the principals who may later have that turn's
text returned to them, and the turns at which a principal's access ends.

**Format** (``memwarden/evals/labels/gatemem_access_labels.jsonl``, one JSON object per episode)::

    {"episode_id": str,
     "groups": {"<name>": ["<principal_id>", ...], ...},      # reader sets, episode-local principal ids
     "turns": {"t001": "<group name>", ...},                   # every turn of the episode
     "access_ends": [{"principal_id": str, "turn_id": str, "reason": str}, ...]}

The labels were written from the episode files alone (principals, relationships, turns), by annotators
who never saw a checkpoint; they are an input like the rules' tables, never derived from hidden fields.

**Mapping with labels** (:func:`relabel`, applied by ``plan_episode(..., labels=...)``): everything of the
rules' plan stays (principals, records, sensitivity, forgetting R9-R12) except where a record lives and
who reads it. Each turn's record goes to the scope ``<ns>/labels:<key>`` of its reader set (``key``: the
first 10 hex digits of SHA-1 over the sorted reader ids; the empty set is ``labels:nobody``), with the
subject ``subject:<ns>/labels:<key>``; each principal gets one READ + FORGET grant over the scopes of every
reader set holding it, ceiling RESTRICTED (the label already decided), valid until the time of the turn
at which its access ends (exclusive), if any. A forget's standing (R11) is what it was under the rules,
carried to the labelled scopes of the records it covered, plus every labelled scope the requester may read
at its turn (:func:`labelled_standing`): labels change who reads, not who may ask for an erasure.

Raises :class:`AccessLabelError` (a ``ValueError`` naming the episode and field) on a malformed file:
a turn without a label, a label naming no group, a group or access end naming an unknown principal.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from memwarden.commands.model import Right, Sensitivity
from memwarden.commands.readmodel.permission import Grant
from memwarden.evals.gatemem_data import Episode
from memwarden.evals.gatemem_plan import ForgetSpec, RecordSpec

__all__ = ["DEFAULT_LABELS", "AccessLabelError", "AccessLabels", "label_scope", "labelled_grants",
           "labelled_standing", "labels_for", "load_labels", "relabel_records"]

#: The label file written for the three domains of ``../shared/data/gatemem`` (70 episodes).
DEFAULT_LABELS = Path(__file__).parent / "labels" / "gatemem_access_labels.jsonl"
#: Scope kind of a labelled record (``<ns>/labels:<key>``).
KIND = "labels"


class AccessLabelError(ValueError):
    """A malformed access-label file: the message names the episode and the field."""


@dataclass(frozen=True, slots=True)
class AccessLabels:
    """One episode's labels: ``readers`` turn id -> episode-local principal ids that may read it;
    ``access_ends`` principal id -> the turn id from which it reads nothing."""

    episode_id: str
    readers: Mapping[str, frozenset[str]]
    access_ends: Mapping[str, str]


def load_labels(path: Path) -> dict[str, AccessLabels]:
    """Episode id -> :class:`AccessLabels` from a JSON-lines file (format in the module docstring).
    Raises ``OSError`` if unreadable, :class:`AccessLabelError` on a malformed line."""
    out: dict[str, AccessLabels] = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            episode_id = str(raw["episode_id"])
            groups = {str(g): frozenset(str(p) for p in members) for g, members in raw["groups"].items()}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise AccessLabelError(f"{path}:{n}: not an access-label object ({exc})") from exc
        readers: dict[str, frozenset[str]] = {}
        for turn_id, group in raw.get("turns", {}).items():
            if group not in groups:
                raise AccessLabelError(f"{episode_id}: turns.{turn_id} names no group ({group!r})")
            readers[str(turn_id)] = groups[group]
        ends = {str(e["principal_id"]): str(e["turn_id"]) for e in raw.get("access_ends", [])}
        out[episode_id] = AccessLabels(episode_id, readers, ends)
    return out


def labels_for(by_episode: Mapping[str, AccessLabels] | None, episode_id: str) -> AccessLabels | None:
    """The labels of ``episode_id``, or ``None`` when ``by_episode`` is ``None`` (the rules decide); raises
    :class:`AccessLabelError` when a label file lacks the episode."""
    if by_episode is None:
        return None
    if episode_id not in by_episode:
        raise AccessLabelError(f"{episode_id}: no access labels for this episode")
    return by_episode[episode_id]


def label_scope(ns: str, readers: frozenset[str]) -> str:
    """``<ns>/labels:<key>``: one scope per reader set (``labels:nobody`` for the empty set)."""
    if not readers:
        return f"{ns}/{KIND}:nobody"
    key = hashlib.sha1(",".join(sorted(readers)).encode()).hexdigest()[:10]
    return f"{ns}/{KIND}:{key}"


def _check(labels: AccessLabels, episode: Episode) -> None:
    known = {p.principal_id for p in episode.principals}
    turns = {t.turn_id for t in episode.turns}
    missing = sorted(turns - set(labels.readers))
    if missing:
        raise AccessLabelError(f"{episode.episode_id}: turns without a label, e.g. {missing[:3]}")
    for turn_id, readers in labels.readers.items():
        unknown = sorted(readers - known)
        if unknown:
            raise AccessLabelError(f"{episode.episode_id}: turns.{turn_id} names unknown principals {unknown}")
    for pid, turn_id in labels.access_ends.items():
        if pid not in known or turn_id not in turns:
            raise AccessLabelError(f"{episode.episode_id}: access_ends names {pid!r} at {turn_id!r}, "
                                   "not in the episode")


def relabel_records(records: list[RecordSpec], labels: AccessLabels, episode: Episode, ns: str) -> list[RecordSpec]:
    """Each record moved to the scope (and subject) of its turn's reader set; nothing else changes.
    Raises :class:`AccessLabelError` when the labels do not fit ``episode``."""
    _check(labels, episode)
    out: list[RecordSpec] = []
    for r in records:
        scope = label_scope(ns, labels.readers[r.turn_id])
        out.append(replace(r, scope=scope, subject=f"subject:{scope}"))
    return out


def labelled_grants(labels: AccessLabels, episode: Episode, ns: str, writer: str, qualified: Mapping[str, str],
                    times_ms: Mapping[str, int]) -> list[Grant]:
    """One READ + FORGET grant per principal over the scopes of every reader set holding it (ceiling
    RESTRICTED), ending (exclusive) at ``times_ms`` of its access-end turn; principals no label names
    get none. ``qualified``: episode-local id -> principal id; ``times_ms``: turn id -> epoch ms."""
    scopes: dict[str, set[str]] = {}
    for readers in labels.readers.values():
        for pid in readers:
            scopes.setdefault(pid, set()).add(label_scope(ns, readers))
    grants: list[Grant] = []
    for pid in sorted(scopes):
        end = labels.access_ends.get(pid)
        grants.append(Grant(
            grant_id=f"{ns}/grant/labels/{pid}",
            grantee=qualified[pid],
            rights=frozenset({Right.READ, Right.FORGET}),
            scopes=tuple(sorted(scopes[pid])),
            sensitivity_ceiling=Sensitivity.RESTRICTED,
            valid_to_ms=times_ms[end] if end is not None else None,
            granted_by=writer,
            relationship="access-label",
        ))
    return grants


def labelled_standing(forgets: Iterable[ForgetSpec], rules_records: Sequence[RecordSpec],
                      labelled_records: Sequence[RecordSpec], grants: Sequence[Grant],
                      times_ms: Mapping[str, int]) -> list[ForgetSpec]:
    """Each forget's standing on the labelled scopes: the labelled scope of every record whose rules scope
    was in its standing (``rules_records`` and ``labelled_records`` in the same turn order), plus every
    scope a READ grant of the requester lists at the forget's turn (``times_ms``: turn id -> epoch ms)."""
    carried: dict[str, set[str]] = {}
    for old, new in zip(rules_records, labelled_records, strict=True):
        carried.setdefault(old.scope, set()).add(new.scope)
    out: list[ForgetSpec] = []
    for f in forgets:
        at = times_ms[f.turn_id]
        scopes = {s for old in f.scopes for s in carried.get(old, ())}
        scopes |= {s for g in grants if g.grantee == f.requester and Right.READ in g.rights
                   and (g.valid_to_ms is None or at < g.valid_to_ms) for s in g.scopes}
        out.append(replace(f, scopes=tuple(sorted(scopes))))
    return out
