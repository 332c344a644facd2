"""``memwarden eval replay``: ingest LoCoMo conversations through the whole system, replay the ledger
into a fresh namespace, and check that the ledger is the source of truth (issue 9).

Prints ``ingest_per_s`` (turns published to recallable, end to end), ``replay_per_s`` (ledger
commands folded and projected per second by the replay, which reuses the sealed vectors instead of
embedding again), ``digests_equal`` (every projection of the replayed namespace has the live digest)
and ``recall_equal`` (identical top-10 memory ids for every question on both namespaces).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memwarden.evals.locomo import PURPOSE, ingest, principal_of
from memwarden.evals.locomo_data import load_conversations
from memwarden.settings import Settings

K = 10
#: Replays of the same ledger, each into a fresh namespace: the rate reported is their median (one
#: replay of a small ledger lasts under a second, where a stray fsync or a scheduling hiccup of a
#: 2-core machine weighs); every one must give the live digests.
REPLAYS = 3


def _questions(conversations: Sequence[Any]) -> list[tuple[str, str]]:
    return [(principal_of(c.conversation_id, c.speakers[0]), q.question) for c in conversations
            for q in c.questions if q.evidence]


def _local_top(settings: Settings, asks: Sequence[tuple[str, str]]) -> list[list[str]]:
    from memwarden.bootstrap import Container
    from memwarden.projections.recall import Recaller

    container = Container(settings)

    async def run() -> list[list[str]]:
        recaller = Recaller(container.embedder(), container.index(), await container.pg(),
                            keys=container.keyring())
        return [[m.memory_id for m in await recaller.recall(p, q, K, purpose=PURPOSE, freshness=False)]
                for p, q in asks]

    try:
        return asyncio.run(run())
    finally:
        container.close()


def run_replay_eval(base: Settings, data: Path, ids: Sequence[str] | None, *, keep: bool = False,
                    progress: bool = True) -> dict[str, Any]:
    """Ingest, recall on the live namespace, stop its worker, replay :data:`REPLAYS` times into fresh
    namespaces (the median rate is reported), compare digests (every replay) and recalls (the first).
    Raises ``FileNotFoundError`` / ``ValueError`` for bad input, ``StackUnavailable`` when the stack
    is down."""
    from memwarden.bootstrap import drop_projections, namespace_digests
    from memwarden.evals.harness import eval_namespace
    from memwarden.ops.progress import wait_caught_up
    from memwarden.processors.replay import run_replay, target_settings
    from memwarden.processors.replay_cut import resolve_cut
    from memwarden.producers.client import MemwardenClient

    conversations = load_conversations(data, ids)
    turns = sum(len(c.turns) for c in conversations)
    asks = _questions(conversations)
    with eval_namespace(base, "replay", keep, progress) as run:
        s, console = run.settings, run.console
        with MemwardenClient(s) as client:
            t0 = ingest(client, s, conversations)
            wait_caught_up(s, alive=run.worker.alive)
            ingest_s = time.perf_counter() - t0
            live_top = [[m.memory_id for m in client.recall(p, q, k=K, purpose=PURPOSE, freshness=False)]
                        for p, q in asks]
        time.sleep(2.5)  # the read API publishes its last MemoryUsed batch once it is due (1 s)
        wait_caught_up(s, alive=run.worker.alive)
        run.worker.stop()
        console.print(f"ingested {turns} turns in {ingest_s:.1f} s; replaying")
        cut, pit = resolve_cut(s, None, None)
        live = namespace_digests(s)
        reports, all_equal, targets = [], True, []
        try:
            for i in range(REPLAYS):  # every replay first, then the recall (it loads the model here)
                targets.append(target_settings(s, f"{s.topic_prefix}-replayed" + (f"-{i}" if i else "")))
                reports.append(run_replay(s, targets[-1], cut, pit))
                replayed = namespace_digests(targets[-1])
                all_equal = all_equal and replayed == live
                if i == 0:
                    first = replayed
                else:
                    drop_projections(targets[-1])
            replay_top = _local_top(targets[0], asks)
        finally:
            for i, target in enumerate(targets):
                if not (keep and i == 0):
                    drop_projections(target)
    report = sorted(reports, key=lambda r: r.seconds)[len(reports) // 2]
    differing = [i for i, (a, b) in enumerate(zip(live_top, replay_top, strict=True)) if a != b]
    return {
        "conversations": [c.conversation_id for c in conversations], "turns": turns,
        "ingest_per_s": round(turns / ingest_s, 1),
        "replay_per_s": round(report.commands / report.seconds, 1) if report.seconds else 0.0,
        "replay_records_per_s": round(report.records_per_s, 1), "replay_s": round(report.seconds, 2),
        "replay_runs_s": [round(r.seconds, 3) for r in reports],
        "replay_stages": report.extra.get("stages", {}), "replay_index_stages": report.extra.get("index_stages", {}),
        "replayed_commands": report.commands, "replayed_events": report.events,
        "embedded_on_replay": report.embedded, "vectors_reused": report.reused,
        "digests_equal": all_equal, "recall_equal": not differing, "questions": len(asks),
        "recall_differing": len(differing),
        "recall_differences": [{"question": asks[i][1], "live": live_top[i], "replayed": replay_top[i]}
                               for i in differing[:3]],
        "namespace": s.topic_prefix, "replayed_namespace": f"{s.topic_prefix}-replayed",
        "digests": {name: {"live": live[name]["digest"][:16], "replayed": first[name]["digest"][:16],
                           "rows": live[name]["rows"]} for name in live},
    }
