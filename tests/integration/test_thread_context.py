"""Thread context in the hybrid ranking (issue 12 item 6) against the real broker, Postgres, index and
worker: a reply that shares no word with the query is lifted by the question it follows; the lift stays
inside the caller's permission and the predecessor's scope, and ends when the predecessor is forgotten."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memwarden.ops.progress import wait_caught_up
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings

pytestmark = [pytest.mark.integration]

QUERY = "adopting a dog from the animal shelter"
QUESTION = "Did you end up adopting a dog from the animal shelter?"
REPLY = "Yes, we picked him up on Saturday."  # shares no term with the query
OTHER_SCOPE_REPLY = "Yes, we picked her up on Sunday."
# animals: nearer the query than the reply is, without its words
DISTRACTORS = ("My cat knocked a glass off the table.", "The zoo opened a new penguin enclosure.",
               "I bought new running shoes for the marathon.", "The quarterly budget review moved to Friday.",
               "We painted the kitchen a pale yellow.", "My sister is learning to play the cello.",
               "The train to Lyon was forty minutes late.", "I finally finished reading that long novel.")


def _decided(client: MemwardenClient, receipts: list) -> None:  # type: ignore[type-arg]
    decided = client.decisions([r.command_id for r in receipts], timeout_s=120)
    assert set(decided.values()) == {"ACCEPTED"}, decided


@pytest.fixture()
def thread(namespace: Settings, worker: WorkerProcess, client: MemwardenClient,
           principal: Callable[..., str]) -> dict[str, str]:
    """A user's question and the reply that follows it (conversation:a), the same reply shape in another
    scope following the same question, unrelated memories, and a stranger's reply to the same question."""
    who, stranger = principal(), principal()
    question = client.record(principal=who, subject=who, text=QUESTION, scope="conversation:a")
    reply = client.record(principal=who, subject=who, text=REPLY, scope="conversation:a", follows=question.memory_id)
    elsewhere = client.record(principal=who, subject=who, text=OTHER_SCOPE_REPLY, scope="conversation:b",
                              follows=question.memory_id)
    theirs = client.record(principal=stranger, subject=stranger, text="He sleeps all day on the sofa.",
                           scope="conversation:a",
                           follows=question.memory_id)
    rest = [client.record(principal=who, subject=who, text=t, scope="conversation:a") for t in DISTRACTORS]
    _decided(client, [question, reply, elsewhere, theirs, *rest])
    wait_caught_up(namespace, alive=worker.alive)
    return {"who": who, "question": question.memory_id, "reply": reply.memory_id, "elsewhere": elsewhere.memory_id,
            "theirs": theirs.memory_id}


def test_the_reply_follows_its_question_into_the_top_two(client: MemwardenClient, thread: dict[str, str]) -> None:
    hits = client.recall(thread["who"], QUERY, k=2, freshness=False)
    assert [h.memory_id for h in hits] == [thread["question"], thread["reply"]]


def test_the_lift_stays_in_the_predecessors_scope_and_the_callers_permission(
        client: MemwardenClient, thread: dict[str, str]) -> None:
    hits = {h.memory_id: h for h in client.recall(thread["who"], QUERY, k=20, freshness=False)}
    assert thread["theirs"] not in hits  # a stranger's memory is never a candidate, lifted or not
    question, reply, elsewhere = hits[thread["question"]], hits[thread["reply"]], hits[thread["elsewhere"]]
    # the same reply in another scope gets no lift: the gap is the lift (0.6 x the question's fused score)
    assert reply.score - elsewhere.score > 0.4 * question.score


def test_forgetting_the_question_ends_the_lift(namespace: Settings, worker: WorkerProcess, client: MemwardenClient,
                                              thread: dict[str, str]) -> None:
    who = thread["who"]
    lifted = {h.memory_id: h.score for h in client.recall(who, QUERY, k=20, freshness=False)}
    client.forget(thread["question"], principal=who, subject=who, reason="test")
    wait_caught_up(namespace, alive=worker.alive)
    after = {h.memory_id: h.score for h in client.recall(who, QUERY, k=20, freshness=False)}
    assert thread["question"] not in after
    assert after.get(thread["reply"], 0.0) < lifted[thread["reply"]] - 0.4 * lifted[thread["question"]]


def test_a_floor_keeps_the_reply_its_question_clears(client: MemwardenClient, thread: dict[str, str]) -> None:
    # the reply alone is not relevant to the query (no shared word); lifted, it inherits 0.6 x its question's
    # relevance, so the recommended floor keeps it; a nonsense query still finds nothing
    hits = {h.memory_id: h for h in client.recall(thread["who"], QUERY, k=10, freshness=False, min_score=0.35)}
    assert thread["question"] in hits and thread["reply"] in hits
    assert hits[thread["reply"]].relevance >= 0.35
    assert list(client.recall(thread["who"], "zxqv-unknown-token", k=10, freshness=False, min_score=0.35)) == []
