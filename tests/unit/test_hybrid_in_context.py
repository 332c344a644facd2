"""``hybrid_in_context`` over a fake index whose searches apply the filter with the reference evaluator:
followers come only through the read filter, the command-id leg admits only fused points, and a fused
candidate the search's limit left without a cosine gets one (issue 12 item 6; review findings)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memwarden.commands.readmodel.filters import FieldIn, Filter, evaluate
from memwarden.projections.recall import hybrid_in_context
from memwarden.projections.vector_index import Hit, SparseVector

MINE = Filter(must=(FieldIn("owner", ("me",)),))


def payload(memory: str, follows: str | None = None, owner: str = "me", scope: str = "s") -> dict[str, Any]:
    out = {"memory_id": memory, "command_id": f"c-{memory}", "owner": owner, "scope": scope}
    return out | ({"follows": follows} if follows else {})


class FakeIndex:
    """``query`` returns the preset fused candidates; ``search`` scores every stored point that
    ``evaluate`` admits by its preset cosine, best first, cut at ``limit``."""

    def __init__(self, fused: Sequence[tuple[str, float, Mapping[str, Any]]], cosine: Mapping[str, float],
                 points: Mapping[str, Mapping[str, Any]]) -> None:
        self.fused, self.cosine, self.points = fused, cosine, points
        self.searches: list[Filter] = []

    def query(self, *args: Any, **kw: Any) -> list[Hit]:
        return [Hit(pid, score, p) for pid, score, p in self.fused]

    def search(self, vector: Any, where: Filter, limit: int) -> list[Hit]:
        self.searches.append(where)
        found = [Hit(pid, self.cosine[pid], p) for pid, p in self.points.items() if evaluate(where, p)]
        return sorted(found, key=lambda h: (-h.score, h.point_id))[:limit]


def test_followers_pass_the_read_filter_and_only_fused_points_get_cosines_by_command_id() -> None:
    q, theirs, mine = payload("q"), payload("t", follows="q", owner="them"), payload("a", follows="q")
    twin = payload("q") | {"owner": "them"}  # a point sharing q's command id that the caller may not read
    points = {"p-q": q, "p-t": theirs, "p-a": mine, "p-twin": twin}
    index = FakeIndex([("p-q", 1.0, q)], {"p-q": 0.5, "p-t": 0.9, "p-a": 0.2, "p-twin": 0.99}, points)
    found = hybrid_in_context(index, [0.0], SparseVector(), MINE, 10)  # type: ignore[arg-type]
    assert [h.point_id for h in found.hits(10)] == ["p-q", "p-a"]  # never the stranger's follower
    assert found.cosines == {"c-q": 0.5, "c-a": 0.2}  # not the unreadable twin's 0.99
    assert found.memory_cosines == {"q": 0.5}


def test_a_fused_candidate_crowded_out_by_followers_still_gets_its_cosine() -> None:
    q = payload("q")
    followers = {f"p-f{i}": payload(f"f{i}", follows="q") for i in range(10)}
    index = FakeIndex([("p-q", 1.0, q)], {"p-q": 0.1, **{pid: 0.9 for pid in followers}}, {"p-q": q, **followers})
    found = hybrid_in_context(index, [0.0], SparseVector(), MINE, 10)  # type: ignore[arg-type]
    assert found.cosines["c-q"] == 0.1 and len(index.searches) == 2


def test_no_candidate_no_search_and_weight_zero_is_the_plain_ranking() -> None:
    assert hybrid_in_context(FakeIndex([], {}, {}), [0.0], SparseVector(), MINE, 10).ranked == []  # type: ignore[arg-type]
    q, a = payload("q"), payload("a", follows="q")
    index = FakeIndex([("p-a", 0.2, a), ("p-q", 1.0, q)], {"p-q": 0.5, "p-a": 0.2}, {"p-q": q, "p-a": a})
    plain = hybrid_in_context(index, [0.0], SparseVector(), MINE, 10, weight=0.0, episode=0.0)  # type: ignore[arg-type]
    assert [(h.point_id, h.score) for h in plain.hits(10)] == [("p-q", 1.0), ("p-a", 0.2)]
