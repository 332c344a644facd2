"""A question that enumerates what it asks for (issue 12 item 5) against the real broker, Postgres,
index and worker: each item asked for gets a place among the ``k`` (one ranking per part, merged in
turn), where one ranking of the whole question gives every place to the records that share the most
of its words; the parts are recalled under the same read filter (a stranger's record never enters)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memwarden.ops.progress import wait_caught_up
from memwarden.ops.worker_process import WorkerProcess
from memwarden.producers.client import MemwardenClient
from memwarden.settings import Settings

pytestmark = [pytest.mark.integration]

DATES = (
    "Larch project status: the current review date is June 2 and the current grant amount is 3,100 USD.",
    "Larch project recap: current review date June 2, current grant amount 3,100 USD, review on track.",
    "For the Larch project the current grant amount stays 3,100 USD and the current review date June 2.",
    "Larch project note: current review date confirmed as June 2; current grant amount unchanged.",
)
BLOCKER = "Larch blocker: the lab key card renewal is still pending."
THEIRS = "Larch blocker according to a rumour: the whole project is cancelled."
QUESTION = "As of now, what are the Larch project's current review date, current grant amount, and current blocker?"


def test_every_item_of_an_enumerating_question_gets_a_place(namespace: Settings, worker: WorkerProcess,
                                                              client: MemwardenClient,
                                                              principal: Callable[..., str]) -> None:
    who, stranger = principal(), principal()
    mine = [client.record(principal=who, subject=who, text=t, scope="conversation:larch") for t in (*DATES, BLOCKER)]
    theirs = client.record(principal=stranger, subject=stranger, text=THEIRS, scope="conversation:larch")
    decided = client.decisions([r.command_id for r in (*mine, theirs)], timeout_s=120)
    assert set(decided.values()) == {"ACCEPTED"}, decided
    wait_caught_up(namespace, alive=worker.alive)
    blocker = mine[-1].memory_id

    whole = [m.memory_id for m in client.recall(who, QUESTION, k=3, decompose=False)]
    assert len(whole) == 3 and blocker not in whole  # one ranking: the date and amount records take every place

    parts = client.recall(who, QUESTION, k=3)
    found = [m.memory_id for m in parts]
    assert len(found) == 3 and blocker in found
    assert set(found) <= {r.memory_id for r in mine}  # never the stranger's
    assert len(set(found) & {r.memory_id for r in mine[:-1]}) == 2  # the other places still answer the rest
