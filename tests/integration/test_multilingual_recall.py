"""Keyword search in every script (issue 12, field case Q2) against the real broker, Postgres, index and
worker: memories in Chinese, Japanese and Korean are found by a lexical recall for one of their words
(the tokeniser gives CJK runs character unigrams and bigrams), and English recall is as before."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memwarden.ops.progress import wait_caught_up
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings

pytestmark = [pytest.mark.integration]

#: Field case Q2: the memories (by language) and a query that names one word of each.
MEMORIES = {"zh": "今天玩成语接龙游戏", "ja": "週末は京都で紅葉を見ました", "ko": "오늘은 도서관에서 공부했어요",
            "en": "We went hiking in the mountains last weekend and saw a waterfall."}
QUERIES = {"zh": "成语接龙", "ja": "紅葉", "ko": "도서관", "en": "hiking waterfall"}


@pytest.fixture(scope="module")
def recorded(namespace: Settings, worker: WorkerProcess, client: MemwardenClient,
             principal: Callable[..., str]) -> tuple[str, dict[str, str]]:
    """One user's four memories, decided and projected: (principal, memory id by language)."""
    who = principal()
    receipts = {lang: client.record(principal=who, subject=who, text=text) for lang, text in MEMORIES.items()}
    decided = client.decisions([r.command_id for r in receipts.values()], timeout_s=120)
    assert set(decided.values()) == {"ACCEPTED"}, decided
    wait_caught_up(namespace, alive=worker.alive)
    return who, {lang: r.memory_id for lang, r in receipts.items()}


@pytest.mark.parametrize("lang", ["zh", "ja", "ko"])
def test_a_cjk_word_finds_its_memory_lexically_and_only_it(
        client: MemwardenClient, recorded: tuple[str, dict[str, str]], lang: str) -> None:
    who, ids = recorded
    hits = client.recall(who, QUERIES[lang], k=10, mode="lexical", freshness=False)
    assert [h.memory_id for h in hits] == [ids[lang]]  # first, and no other memory shares a term
    assert hits[0].text == MEMORIES[lang] and hits[0].score > 0
    fused = client.recall(who, QUERIES[lang], k=10, mode="hybrid", freshness=False)
    assert ids[lang] in {h.memory_id for h in fused}


def test_an_english_query_is_unchanged(client: MemwardenClient, recorded: tuple[str, dict[str, str]]) -> None:
    who, ids = recorded
    hits = client.recall(who, QUERIES["en"], k=10, mode="lexical", freshness=False)
    assert [h.memory_id for h in hits] == [ids["en"]]
    assert client.recall(who, QUERIES["en"], k=10, mode="hybrid", freshness=False)[0].memory_id == ids["en"]
