"""Episode context: a candidate is lifted by the best score of its episode (same scope, observed within the
window), an excluded memory lifts nothing, and nothing crosses a scope (memwarden.commands.readmodel.episodes)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memwarden.commands.readmodel.episodes import EPISODE_LIFT, EPISODE_WINDOW_MS, episode_lift
from memwarden.commands.readmodel.thread_context import Lifted

HOUR = 3_600_000


def _c(pid: str, score: float, at: int | None, scope: str | None = "s") -> Lifted:
    payload = {"memory_id": f"m-{pid}", "command_id": f"c-{pid}", "scope": scope}
    if at is not None:
        payload["valid_from_ms"] = at
    return Lifted(pid, score, payload, score)


def _scores(out: list[Lifted]) -> dict[str, float]:
    return {e.point_id: round(e.score, 6) for e in out}


def test_the_best_match_lifts_its_episode_past_a_lone_better_candidate() -> None:
    # a: the best match; b: its neighbour in the same session; x: a better lone match from another day
    ranked = [_c("a", 1.0, 0), _c("x", 0.7, 30 * HOUR), _c("b", 0.5, HOUR // 2)]
    out = episode_lift(ranked, 0.4)
    assert _scores(out) == {"a": 1.0, "b": round(0.9 / 1.4, 6), "x": 0.7}  # (score + 0.4 x best) / 1.4
    assert [e.point_id for e in out] == ["a", "x", "b"]
    b = next(e for e in out if e.point_id == "b")
    assert (b.episode_by, b.episode_by_command) == ("m-a", "c-a")
    assert next(e for e in out if e.point_id == "a").episode_by is None  # its own score was the best
    assert [e.point_id for e in episode_lift(ranked, 0.7)] == ["a", "b", "x"]  # 1.7, 1.2, 1.19 (/ 1.7)


def test_the_window_bounds_an_episode_and_a_scope_is_never_crossed() -> None:
    ranked = [_c("a", 1.0, 0), _c("late", 0.1, EPISODE_WINDOW_MS + 1), _c("edge", 0.1, EPISODE_WINDOW_MS),
              _c("other", 0.1, 0, scope="t"), _c("timeless", 0.1, None), _c("unscoped", 0.1, 0, scope=None)]
    got = _scores(episode_lift(ranked, 0.5))
    assert got["a"] == pytest.approx(1.0) and got["edge"] == pytest.approx(0.6 / 1.5)
    assert got["late"] == got["other"] == got["timeless"] == got["unscoped"] == pytest.approx(0.1)  # their own


def test_an_excluded_memory_lifts_nothing_but_is_still_ranked() -> None:
    ranked = [_c("a", 1.0, 0), _c("b", 0.5, 1), _c("c", 0.2, 2)]
    out = episode_lift(ranked, 0.4, exclude={"m-a"})
    assert _scores(out) == {"a": 1.0, "b": 0.5, "c": round(0.4 / 1.4, 6)}  # b and c lifted by b, not by a
    assert {e.point_id: e.episode_by for e in out} == {"a": None, "b": None, "c": "m-b"}


def test_weight_zero_and_empty_change_nothing_and_bad_arguments_are_refused() -> None:
    ranked = [_c("b", 0.5, 0), _c("a", 1.0, 0)]
    assert episode_lift(ranked, 0.0) == ranked
    assert episode_lift([], EPISODE_LIFT) == []
    negative = _scores(episode_lift([_c("n", -0.3, 0), _c("m", -0.5, 0)], 0.4))  # no gain, only the scale
    assert negative == {"n": round(-0.3 / 1.4, 6), "m": round(-0.5 / 1.4, 6)}
    for bad in (-0.1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="weight"):
            episode_lift(ranked, bad)
    with pytest.raises(ValueError, match="window_ms"):
        episode_lift(ranked, 0.4, window_ms=-1)


def test_the_read_path_takes_an_unverified_candidates_episode_lift_back() -> None:
    from memwarden.projections.recall import InContext

    found = InContext([_c("q", 1.0, 0), _c("a", 0.3, 1)])
    assert _scores(found.top(2)) == {"q": 1.0, "a": pytest.approx((0.3 + EPISODE_LIFT) / (1 + EPISODE_LIFT))}
    assert next(e for e in found.top(2) if e.point_id == "a").episode_by_command == "c-q"  # verified with the hits
    assert _scores(found.top(2, frozenset({"m-q"}))) == {"q": 1.0, "a": pytest.approx(0.3)}  # its own: not lifted


def _reference(ranked: list[Lifted], weight: float, window_ms: int,
               exclude: set[str]) -> list[tuple[str, float, str | None]]:
    """The module docstring's rule, literally: the best-scoring candidate of the episode, the earliest on ties."""
    out = []
    for e in ranked:
        best = e
        for n in ranked:
            if (n.score > best.score and e.payload.get("valid_from_ms") is not None and e.payload.get("scope")
                    and n.payload.get("scope") == e.payload["scope"] and n.payload.get("valid_from_ms") is not None
                    and abs(n.payload["valid_from_ms"] - e.payload["valid_from_ms"]) <= window_ms
                    and n.payload["memory_id"] not in exclude):
                best = n
        by = None if best is e else best.payload["memory_id"]
        out.append((e.point_id, round((e.score + weight * max(0.0, best.score)) / (1 + weight), 9), by))
    return sorted(out, key=lambda t: (-t[1], t[0]))


@given(st.lists(st.tuples(st.sampled_from([-0.5, 0.0, 0.2, 0.5, 0.9, 1.0]), st.integers(0, 5 * HOUR),
                          st.sampled_from(["s", "t", None])), min_size=1, max_size=25),
       st.sampled_from([0.2, 0.4, 1.0]), st.sets(st.integers(0, 24)))
def test_the_lift_is_the_best_scoring_candidate_of_the_episode(items: list[tuple[float, int, str | None]],
                                                              weight: float, dropped: set[int]) -> None:
    ranked = [_c(f"p{i:02d}", score, at, scope) for i, (score, at, scope) in enumerate(items)]
    exclude = {f"m-p{i:02d}" for i in dropped}
    got = [(e.point_id, round(e.score, 9), e.episode_by) for e in episode_lift(ranked, weight, HOUR, exclude)]
    assert got == _reference(ranked, weight, HOUR, exclude)
