"""Recency in ranking for current-value questions (issue 12 item 5) against the real broker, Postgres,
index and worker: "what is the budget now" is answered by the latest statement of it first, while
the same question without the word for "now" (or with ``recency=0``) ranks by relevance alone; the
weight reorders what the read filter let through and never lets another's memory in."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memwarden.errors import ValidationError
from memwarden.ops.progress import wait_caught_up
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings

pytestmark = [pytest.mark.integration]

OLD = "Maple budget: the budget is 262,000 USD."
NEW = "Maple update: the budget moved to 221,000 USD."
NEWEST_OTHER = "Maple budget rumour: 500,000 USD."  # a stranger's, the newest of all
CURRENT = "What is the Maple budget now?"
PLAIN = "What is the Maple budget?"


@pytest.fixture()
def budget(namespace: Settings, worker: WorkerProcess, client: MemwardenClient,
           principal: Callable[..., str]) -> dict[str, str]:
    """Two statements of one value by one user, a day apart (the older one shares more of the query's
    words), and a stranger's newer one in the same scope."""
    who, stranger = principal(), principal()
    day = datetime.now(UTC) - timedelta(days=3)
    old = client.record(principal=who, subject=who, text=OLD, scope="conversation:maple", observed_at=day)
    new = client.record(principal=who, subject=who, text=NEW, scope="conversation:maple",
                        observed_at=day + timedelta(days=1))
    theirs = client.record(principal=stranger, subject=stranger, text=NEWEST_OTHER, scope="conversation:maple",
                           observed_at=day + timedelta(days=2))
    decided = client.decisions([r.command_id for r in (old, new, theirs)], timeout_s=120)
    assert set(decided.values()) == {"ACCEPTED"}, [client.decision(r.command_id) for r in (old, new, theirs)]
    wait_caught_up(namespace, alive=worker.alive)
    return {"who": who, "old": old.memory_id, "new": new.memory_id, "theirs": theirs.memory_id}


@pytest.mark.parametrize("mode", ["hybrid", "dense", "lexical"])
def test_a_question_about_now_gets_the_latest_statement_first(client: MemwardenClient, budget: dict[str, str],
                                                              mode: str) -> None:
    plain = [m.memory_id for m in client.recall(budget["who"], PLAIN, k=5, mode=mode)]  # type: ignore[arg-type]
    assert plain == [budget["old"], budget["new"]]  # relevance alone: the older statement shares more words
    flat = [m.memory_id for m in client.recall(budget["who"], CURRENT, k=5, mode=mode,  # type: ignore[arg-type]
                                                recency=0)]
    assert flat == [budget["old"], budget["new"]]
    current = [m.memory_id for m in client.recall(budget["who"], CURRENT, k=5, mode=mode)]  # type: ignore[arg-type]
    assert current == [budget["new"], budget["old"]]
    # an explicit weight applies to any query; the stranger's newer statement never enters
    assert [m.memory_id for m in client.recall(budget["who"], PLAIN, k=5, mode=mode,  # type: ignore[arg-type]
                                               recency=2.0)] == [budget["new"], budget["old"]]


def test_a_bad_weight_is_refused_naming_the_field(client: MemwardenClient, budget: dict[str, str]) -> None:
    with pytest.raises(ValidationError) as err:
        client.recall(budget["who"], CURRENT, recency=-1)
    assert err.value.field == "recency"


SAID = "the external reader signature is the only live Orchid Committee blocker at this stage."
REPEATS = (f"Helen: {SAID}", f"Owen: {SAID}", f"Aria: again, {SAID}")
FACTS = ("The Orchid Committee support amount is 2,600 USD.", "The Orchid Committee review date is May 13.")


def test_repeats_of_one_statement_make_room_for_the_other_facts(namespace: Settings, worker: WorkerProcess,
                                                                 client: MemwardenClient,
                                                                 principal: Callable[..., str]) -> None:
    who = principal()
    receipts = [client.record(principal=who, subject=who, text=t, scope="conversation:orchid")
                for t in (*REPEATS, *FACTS)]
    decided = client.decisions([r.command_id for r in receipts], timeout_s=120)
    assert set(decided.values()) == {"ACCEPTED"}, decided
    wait_caught_up(namespace, alive=worker.alive)
    query = "Is the external reader signature the only live Orchid Committee blocker at this stage?"
    everything = [m.text for m in client.recall(who, query, k=10)]
    assert sorted(everything) == sorted((*REPEATS, *FACTS))  # nothing is dropped
    assert set(everything[-2:]) <= set(REPEATS)  # the repeats come last
    top = [m.text for m in client.recall(who, query, k=3)]
    assert set(FACTS) <= set(top) and len(set(top) & set(REPEATS)) == 1
