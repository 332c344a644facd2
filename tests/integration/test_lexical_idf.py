"""The reader's lexical IDF (``MEMWARDEN_LEXICAL_IDF=reader``) against the real broker, Postgres, index
and worker: the adversarial trial's probe of the twentieth session. A user who may not read another's
RESTRICTED memories wrote one memory holding a guess and watched its lexical score while the other
user's memories holding the same word came and went; with the index's IDF over every memory, the score
fell as they were added and told how many held it. With the reader's IDF the score is a function of the
query and of what the reader may read, so it does not move."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memwarden.errors import StackUnavailable
from memwarden.ops.progress import wait_caught_up
from memwarden.ops.worker_process import WorkerProcess, settings_env
from memwarden.producers.client import MemwardenClient
from memwarden.projections.edge_template import shard_lexical_idf
from memwarden.settings import Settings
from tests.integration.conftest import drop, enroll_ids, make_namespace

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def namespace(stack: Settings) -> Iterator[Settings]:
    """A namespace whose index weighs the lexical stage by the reader's IDF."""
    s = make_namespace(stack.model_copy(update={"lexical_idf": "reader"}))
    yield s
    drop(s)


def test_a_guess_scores_the_same_whether_or_not_unreadable_memories_hold_it(
        namespace: Settings, worker: WorkerProcess, client: MemwardenClient, principal: Callable[..., str]) -> None:
    prober, owner = principal(), principal()
    mine = [client.record(principal=prober, subject=prober, text=text)
            for text in ("my guess for the shed is 4721", "the shed needs new paint", "garden plans for spring")]
    assert set(client.decisions([r.command_id for r in mine], timeout_s=120).values()) == {"ACCEPTED"}
    wait_caught_up(namespace, alive=worker.alive)

    def probe() -> list[tuple[str, float]]:
        hits = client.recall(prober, "4721 shed", k=10, mode="lexical", freshness=False)
        return [(h.memory_id, h.score) for h in hits]

    before = probe()
    assert [m for m, _ in before] == [mine[0].memory_id, mine[1].memory_id]
    theirs = [client.record(principal=owner, subject=owner, sensitivity="RESTRICTED",
                            text=f"door code 4721, entry {i} for the shed") for i in range(12)]
    assert set(client.decisions([r.command_id for r in theirs], timeout_s=120).values()) == {"ACCEPTED"}
    wait_caught_up(namespace, alive=worker.alive)
    after = probe()
    assert [m for m, _ in after] == [m for m, _ in before]
    for (_, b), (_, a) in zip(before, after, strict=True):
        assert a == pytest.approx(b, rel=1e-6)
    # the owner's own lexical recall of the same word finds its memories (they are in the index)
    found = client.recall(owner, "4721", k=20, mode="lexical", freshness=False)
    assert {h.memory_id for h in found} == {r.memory_id for r in theirs}


def test_an_existing_namespace_switches_its_lexical_idf_by_an_in_place_replay(stack: Settings) -> None:
    """The steps the refusal gives: a namespace built with the index's IDF (the default before 2026-12-07),
    its worker stopped and started with ``reader``, is refused with the steps; ``memwarden replay --in-place``
    under the new setting rebuilds the index beside it and switches; the worker then starts, finds what was
    recorded before and projects what comes after. (The steps given before, delete the shard and its offsets,
    left the new shard empty: the worker's consumer group resumed where it had left the events topic.)"""
    ns = make_namespace(stack.model_copy(update={"lexical_idf": "namespace"}))
    reader = ns.model_copy(update={"lexical_idf": "reader"})
    who = f"user:{uuid.uuid4().hex[:8]}"
    shard = ns.data_dir / "qdrant" / ns.index_name
    try:
        with MemwardenClient(ns) as client:
            with WorkerProcess(ns) as worker:
                enroll_ids(client, ns, who)
                before = client.record(principal=who, subject=who, text="the shed door code is 4721")
                assert client.decisions([before.command_id], timeout_s=120)[before.command_id] == "ACCEPTED"
                wait_caught_up(ns, alive=worker.alive)
                # while the worker of the old setting runs, it refuses the rebuild before anything moves
                early = _replay_in_place(reader)
                assert early.returncode != 0 and "built for lexical_idf 'reader'" in " ".join(early.stdout.split() +
                                                                                          early.stderr.split())
                assert [h.memory_id for h in client.recall(who, "4721 shed", mode="lexical", freshness=False)] == [
                    before.memory_id]
            assert shard_lexical_idf(shard) == "namespace"
            with pytest.raises(StackUnavailable) as refused:
                WorkerProcess(reader).start()
            said = " ".join(str(refused.value).split())  # the console wraps the worker's error
            assert "run `memwarden replay --in-place` with MEMWARDEN_LEXICAL_IDF=reader" in said
            done = _replay_in_place(reader)
            assert done.returncode == 0, done.stderr[-2000:]
            assert json.loads(done.stdout)["switch"]["namespace"] == ns.topic_prefix
            assert shard_lexical_idf(shard) == "reader"
            with WorkerProcess(reader) as worker:
                hits = client.recall(who, "4721 shed", mode="lexical", freshness=False)
                assert [h.memory_id for h in hits] == [before.memory_id]
                after = client.record(principal=who, subject=who, text="the shed window latch is broken")
                assert client.decisions([after.command_id], timeout_s=120)[after.command_id] == "ACCEPTED"
                wait_caught_up(reader, alive=worker.alive)
                found = client.recall(who, "shed", mode="lexical", freshness=False)
                assert {h.memory_id for h in found} == {before.memory_id, after.memory_id}
    finally:
        drop(ns)


def _replay_in_place(settings: Settings) -> subprocess.CompletedProcess[str]:
    """``memwarden replay --in-place --json`` as a user runs it, under ``settings``."""
    return subprocess.run([str(Path(sys.executable).with_name("memwarden")), "replay", "--in-place", "--json"],
                          env=settings_env(settings), capture_output=True, text=True, timeout=900)
