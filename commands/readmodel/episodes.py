"""Episode context in hybrid ranking: a candidate of the same episode as a strong match is lifted (issue 12 item 6).

The evidence a question needs tends to sit in one stretch of conversation: the turns around the one that
matches best hold the rest of the story (the second half of a multi-hop answer, the reply that names the
date). After the thread-context lift (:mod:`.thread_context`) and the recency re-scoring of current-value
questions (:mod:`.recency`), each candidate's score becomes

    score(m) = (score(m) + EPISODE_LIFT * max(0, max{score(n) : n in episode(m)})) / (1 + EPISODE_LIFT)

where ``episode(m)`` is every candidate of the same scope whose validity start (``valid_from_ms``: when it
was observed) lies within ``EPISODE_WINDOW_MS`` of m's, m included: the best-matching stretch of a
conversation rises together. The division changes no order; it keeps the scores on the scale of the
fused ones (a candidate that is the best of its episode keeps its score). Chosen offline on three LoCoMo
conversations (conv-26, conv-30, conv-41: weight 0.4 of 0.05-1.0, every candidate rather than the top 20 or
40) and reported once on the other four: held-out recall@10 0.715 -> 0.735 (README, "LoCoMo retrieval").

Isolation is unchanged (SSGM Eq. 5): only candidates, which the read filter admitted inside the search,
lift or are lifted, and only within one scope; the read path verifies the candidate that lifted a returned
memory in Postgres as it verifies a thread predecessor (``exclude``). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from .thread_context import Lifted

__all__ = ["EPISODE_LIFT", "EPISODE_WINDOW_MS", "episode_lift"]

#: Weight of the episode's best score added to each of its candidates (chosen on LoCoMo's dev split).
EPISODE_LIFT = 0.4
#: Two candidates of one scope observed at most this far apart (ms) share an episode: one hour.
EPISODE_WINDOW_MS = 3_600_000


def episode_lift(ranked: Sequence[Lifted], weight: float = EPISODE_LIFT, window_ms: int = EPISODE_WINDOW_MS,
                 exclude: Collection[str] = ()) -> list[Lifted]:
    """``ranked`` with each candidate lifted by the best score of its episode (the module docstring: the sum
    divided by ``1 + weight``), best first by ``(-score, point id)``.

    A candidate without ``valid_from_ms`` or ``scope`` is its own episode. ``exclude``: memory ids that
    lift nothing (not verified, or shredded), though they are still lifted themselves. Each entry records
    the candidate that lifted it (``episode_by`` / ``episode_by_command``; ``None`` when its own score was
    the best). ``weight`` 0 returns ``ranked`` unchanged. Raises ``ValueError`` for a negative or non-finite
    ``weight`` or a negative ``window_ms``.
    """
    if not weight >= 0.0 or weight == float("inf"):
        raise ValueError(f"weight: must be a finite number >= 0, got {weight!r}")
    if window_ms < 0:
        raise ValueError(f"window_ms: must be >= 0, got {window_ms!r}")
    if weight == 0 or not ranked:
        return list(ranked)

    def place(e: Lifted) -> tuple[object, int] | None:
        when, scope = e.payload.get("valid_from_ms"), e.payload.get("scope")
        return None if when is None or scope is None else (scope, int(when))

    # the candidates that may lift, best first (a stable sort: among equal scores the earlier in ``ranked``):
    # a candidate's lift is the first of them, scoring above it, that shares its episode
    lifters = [(n, at) for n in sorted(ranked, key=lambda n: -n.score)
               if (at := place(n)) is not None and str(n.payload.get("memory_id")) not in exclude]
    out = []
    for e in ranked:
        best, here = e, place(e)
        if here is not None:
            for n, (scope, when) in lifters:
                if n.score <= e.score:
                    break
                if scope == here[0] and abs(when - here[1]) <= window_ms:
                    best = n
                    break
        lifted_by = best is not e
        out.append(replace(e, score=(e.score + weight * max(0.0, best.score)) / (1.0 + weight),
                           episode_by=str(best.payload.get("memory_id")) if lifted_by else None,
                           episode_by_command=str(best.payload.get("command_id")) if lifted_by else None))
    return sorted(out, key=lambda e: (-e.score, e.point_id))
