"""Thread context in hybrid ranking: a memory whose predecessor matched the query is lifted (issue 12 item 6).

In a conversation the words of a question are often in one turn and the answer in the next ("What
did you adopt?" / "A beagle called Max."): the reply shares nothing with a later query about the dog,
the turn before it does. A ``RecordMemory`` may name the memory it ``follows`` in its thread (the
previous turn of the same session); after the engine has fused the hybrid query's prefetch stages,
each candidate's fused score becomes

    score(m) = fused(m) + FOLLOW_LIFT * fused(p)    when m follows p and p is among the fused candidates,

and a memory that follows a candidate enters the ranking even when it was not itself a candidate
(its own fused score is then 0). Chosen offline on three LoCoMo conversations and reported on the
other four (README, "LoCoMo retrieval"): the lift of the previous turn only, weight 0.6, followers may
enter.

Isolation is unchanged (SSGM Eq. 5): the fused candidates and the followers both come from searches
that carry the read filter, so a lift only ever comes from a memory the caller may read, and only a
memory the caller may read is lifted. The lift also needs the follower and its predecessor to share
a scope: ``follows`` is an unverified hint of the writer (the gate cannot order it against another
subject's partition), so it cannot pull a memory of another scope up the ranking. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["FOLLOW_LIFT", "Lifted", "Scored", "inherited_relevance", "lift_followers", "lifted_by", "lifts",
           "predecessors", "without_lifts"]

#: Weight of the predecessor's fused score added to its follower's (chosen on LoCoMo's dev split).
FOLLOW_LIFT = 0.6

#: One candidate: point id, fused score, payload (``memory_id``, ``scope``, ``follows``, ...).
Scored = tuple[str, float, Mapping[str, Any]]


def predecessors(fused: Sequence[Scored]) -> tuple[str, ...]:
    """The memory ids of the fused candidates, best first, without repeats: the ids whose followers
    may enter the ranking (a search for points whose ``follows`` is one of them)."""
    return tuple(dict.fromkeys(str(p["memory_id"]) for _, _, p in fused if p.get("memory_id")))


def lifted_by(payload: Mapping[str, Any], fused_scopes: Mapping[str, Any]) -> str | None:
    """The memory id whose fused score lifts the point with ``payload``: what it ``follows``, when
    that memory is among the fused candidates (``fused_scopes``: memory id -> scope) in the same scope
    and is not the point's own memory; else ``None``."""
    prev = payload.get("follows")
    if prev is None or prev == payload.get("memory_id") or prev not in fused_scopes:
        return None
    return str(prev) if fused_scopes[prev] == payload.get("scope") else None


def inherited_relevance(own: float, predecessor: float | None, weight: float = FOLLOW_LIFT) -> float:
    """The relevance (:mod:`.relevance`, [0, 1]) of a memory lifted by its predecessor: the larger of
    its own and ``weight`` times the predecessor's, so a reply keeps the floor its question clears
    when ``weight * predecessor`` does (a reply shares few words with the query by nature). A query
    that finds nothing relevant stays empty: a follower never gets more than ``weight`` times the
    best relevance among the fused candidates. ``predecessor`` ``None``: ``own``."""
    if predecessor is None:
        return own
    return round(max(own, weight * max(0.0, min(1.0, predecessor))), 6)


@dataclass(frozen=True)
class Lifted:
    """One ranked candidate: point id, final ``score``, payload, ``own`` fused score (``None`` for a
    follower that was not a candidate), and the predecessor that lifted it: its memory id
    (``by``), the command id of its best fused point (``by_command``) and the ``gain`` added; and the
    candidate of its episode whose score lifted it (:mod:`.episodes`): memory id ``episode_by`` and
    command id ``episode_by_command`` (``None``: none, or its own score)."""

    point_id: str
    score: float
    payload: Mapping[str, Any]
    own: float | None
    by: str | None = None
    by_command: str | None = None
    gain: float = 0.0
    episode_by: str | None = None
    episode_by_command: str | None = None


def lifts(fused: Sequence[Scored], followers: Sequence[Scored] = (), weight: float = FOLLOW_LIFT) -> list[Lifted]:
    """The candidates re-scored by their predecessors, best first by ``(-score, point id)``.

    ``fused``: the hybrid query's candidates with their fused scores (every point the engine fused,
    not only the top ``k``). ``followers``: points that follow one of them, found under the same read
    filter (their own score is ignored: a follower that is not in ``fused`` starts from 0, and one the
    lift does not reach is left out). A point whose payload ``follows`` names a memory in ``fused`` *of
    the same scope* gains ``weight`` times that memory's best fused score (a memory with several points
    counts its best point, whose scope and command id are the ones used); other points keep their
    score. Duplicated point ids count once (the fused entry wins). ``weight`` 0 returns ``fused`` sorted.
    Raises ``ValueError`` for a negative or non-finite ``weight``.
    """
    if not weight >= 0.0 or weight == float("inf"):
        raise ValueError(f"weight: must be a finite number >= 0, got {weight!r}")
    best: dict[str, tuple[float, Any, Any]] = {}
    for _, score, payload in fused:
        mid = payload.get("memory_id")
        if mid is not None and (mid not in best or score > best[mid][0]):
            best[mid] = (score, payload.get("scope"), payload.get("command_id"))
    scopes = {mid: scope for mid, (_, scope, _) in best.items()}

    def lifted(pid: str, own: float | None, payload: Mapping[str, Any]) -> Lifted | None:
        prev = lifted_by(payload, scopes) if weight else None
        if prev is None:
            return None if own is None else Lifted(pid, own, payload, own)
        gain = weight * best[prev][0]
        by_command = None if best[prev][2] is None else str(best[prev][2])
        return Lifted(pid, (own or 0.0) + gain, payload, own, prev, by_command, gain)

    out: dict[str, Lifted] = {}
    for pid, score, payload in fused:
        if pid not in out and (entry := lifted(pid, score, payload)) is not None:
            out[pid] = entry
    for pid, _, payload in followers:
        if pid not in out and (entry := lifted(pid, None, payload)) is not None:
            out[pid] = entry  # a follower the lift does not reach stays out
    return sorted(out.values(), key=lambda e: (-e.score, e.point_id))


def lift_followers(fused: Sequence[Scored], followers: Sequence[Scored] = (),
                   weight: float = FOLLOW_LIFT) -> list[Scored]:
    """:func:`lifts` as ``(point id, score, payload)`` triples (same order, same errors)."""
    return [(e.point_id, e.score, e.payload) for e in lifts(fused, followers, weight)]


def without_lifts(ranked: Sequence[Lifted], invalid: set[str]) -> list[Lifted]:
    """``ranked`` with the lifts of the predecessors in ``invalid`` (memory ids: not verified, or their
    text shredded) taken back: such a point keeps its own fused score, and a follower that was not a
    candidate itself leaves the ranking. Re-sorted by ``(-score, point id)``."""
    out = []
    for e in ranked:
        if e.by is None or e.by not in invalid:
            out.append(e)
        elif e.own is not None:
            out.append(Lifted(e.point_id, e.own, e.payload, e.own))
    return sorted(out, key=lambda e: (-e.score, e.point_id))
