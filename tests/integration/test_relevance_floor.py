"""Field case Q1 (issue 12): a relevance floor. A recall for a nonsense token over a few unrelated
memories returns nothing under the recommended ``min_score`` and says so (``below_floor``,
``nothing_relevant``); a real query keeps its hit; ``min_score=0`` is the recall of before (same
memories, same order), now with each memory's ``relevance`` in [0, 1]. Real stack, real worker."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memwarden.commands.readmodel.query import RECALL_MODES, RecallMode
from memwarden.commands.readmodel.relevance import RECOMMENDED_MIN_SCORE
from memwarden.ops.progress import wait_caught_up
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings

pytestmark = pytest.mark.integration

TEXTS = (
    "Dana waters the tomato plants every Sunday morning",
    "The quarterly budget review moved to Thursday afternoon",
    "Lee is learning to play the cello with a teacher from Lyon",
    "週末は京都で紅葉を見ました",
)


@pytest.fixture(scope="module")
def owner(namespace: Settings, worker: WorkerProcess, client: MemwardenClient, principal: Callable[..., str]) -> str:
    who = str(principal())
    receipts = [client.record(principal=who, subject=who, text=t) for t in TEXTS]
    outcomes = client.decisions([r.command_id for r in receipts])
    assert set(outcomes.values()) == {"ACCEPTED"}, outcomes
    wait_caught_up(namespace, alive=worker.alive)
    return who


@pytest.mark.parametrize("mode", ["hybrid", "dense"])
def test_a_nonsense_token_passes_no_floor_and_the_recall_says_so(
        client: MemwardenClient, owner: str, mode: RecallMode) -> None:
    everything = client.recall(owner, "zxqv-unknown-token", k=10, mode=mode)
    assert len(everything) == len(TEXTS)  # without a floor: k results, as before
    assert all(m.relevance < RECOMMENDED_MIN_SCORE for m in everything), [(m.text, m.relevance) for m in everything]
    floored = client.recall(owner, "zxqv-unknown-token", k=10, mode=mode, min_score=RECOMMENDED_MIN_SCORE)
    assert list(floored) == []
    assert floored.below_floor == len(TEXTS)
    assert floored.nothing_relevant
    assert floored.min_score == RECOMMENDED_MIN_SCORE


def test_a_lexical_nonsense_recall_finds_nothing_at_all(client: MemwardenClient, owner: str) -> None:
    floored = client.recall(owner, "zxqv-unknown-token", k=10, mode="lexical", min_score=RECOMMENDED_MIN_SCORE)
    assert list(floored) == [] and floored.below_floor == 0 and not floored.nothing_relevant


@pytest.mark.parametrize("mode", RECALL_MODES)
def test_a_real_query_keeps_its_hit_above_the_floor(client: MemwardenClient, owner: str, mode: RecallMode) -> None:
    found = client.recall(owner, "when does Dana water the tomatoes?", k=10, mode=mode,
                          min_score=RECOMMENDED_MIN_SCORE)
    assert found and found[0].text == TEXTS[0]
    assert found[0].relevance >= RECOMMENDED_MIN_SCORE
    assert not found.nothing_relevant


def test_a_cjk_memory_found_only_lexically_counts(client: MemwardenClient, owner: str) -> None:
    found = client.recall(owner, "紅葉", k=10, mode="lexical", min_score=RECOMMENDED_MIN_SCORE)
    assert [m.text for m in found] == [TEXTS[3]]
    assert found[0].relevance == 1.0  # every query term (紅, 紅葉, 葉) is in the memory


@pytest.mark.parametrize("mode", RECALL_MODES)
def test_min_score_zero_is_todays_recall(client: MemwardenClient, owner: str, mode: RecallMode) -> None:
    for query in ("zxqv-unknown-token", "cello lessons", "budget"):
        default = client.recall(owner, query, k=10, mode=mode)
        zero = client.recall(owner, query, k=10, mode=mode, min_score=0)
        assert [(m.memory_id, m.score) for m in zero] == [(m.memory_id, m.score) for m in default]
        assert [m.score for m in zero] == sorted((m.score for m in zero), reverse=True)
        assert zero.below_floor == 0 and not zero.nothing_relevant
        assert all(0.0 <= m.relevance <= 1.0 for m in zero)
