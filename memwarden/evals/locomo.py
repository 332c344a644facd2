"""``memwarden eval locomo``: LoCoMo conversations through the whole system, scored by evidence recall.

Each run gets its own namespace (topic prefix, Postgres schema, index shard) and its own worker, so
runs never see each other's data. Each dialogue turn becomes one ``RecordMemory``: the speaker is
principal and subject (``user:<conversation>/<speaker>``), the turn a user statement quoted with its
speaker (attribution kept), the session date the observed time, the ``dia_id`` the source reference,
and ``follows`` the previous turn of the same session (thread context for the hybrid ranking).

Both participants heard the whole conversation, so each grants the other READ on its own memories
in the conversation's scope, for the evaluation purpose (``GrantAccess`` by the subject, through the
gate). A question is then recalled once, as the first speaker: ABAC lets that one hybrid query see
both speakers' turns, fused in one ranking. Latency is measured per recall call.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from memwarden.evals.locomo_data import (
    CATEGORY_NAMES,
    Conversation,
    RecallTable,
    load_conversations,
    memory_text,
    session_recall,
    turn_recall,
)
from memwarden.settings import Settings

INGEST_BATCH = 500


def sample_path() -> Path:
    """The small conversation written for this project, used when the LoCoMo file is absent."""
    return Path(str(resources.files("memwarden.evals") / "samples" / "sample_conversation.json"))


PURPOSE = "evaluation"


def principal_of(conversation_id: str, speaker: str) -> str:
    """Principal (and subject) id of a LoCoMo speaker."""
    return f"user:{conversation_id}/{speaker.lower()}"


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def ingest(client: Any, settings: Settings, conversations: Sequence[Conversation]) -> float:
    """Register the speakers, grant each the other's turns, publish every turn as a signed
    ``RecordMemory``; returns ``time.perf_counter()`` taken when the turns started to be published.
    Raises ``MemwardenError`` when a conversation grant is refused."""
    from memwarden.errors import MemwardenError
    from memwarden.keystore import admin_signer
    from memwarden.producers.enroll import enroll

    speakers = sorted({principal_of(c.conversation_id, s) for c in conversations for s in c.speakers})
    enroll(client, admin_signer(settings), [(p, "USER", ()) for p in speakers])
    grants = [client.grant_access(other, by=me, rights=("READ",), scopes=(f"conversation:{c.conversation_id}",),
                                  subjects=(me,), purposes=(PURPOSE,), relationship="conversation_partner", wait=False)
              for c in conversations
              for me in (principal_of(c.conversation_id, s) for s in c.speakers)
              for other in (principal_of(c.conversation_id, s) for s in c.speakers) if other != me]
    refused = [o for o in client.decisions([g.command_id for g in grants]).values() if o != "ACCEPTED"]
    if refused:
        raise MemwardenError(f"{len(refused)} conversation grants were refused: {refused[:3]}")
    t0 = time.perf_counter()
    for conv in conversations:
        items = turn_records(conv)
        for i in range(0, len(items), INGEST_BATCH):
            client.record_many(items[i:i + INGEST_BATCH])
    return t0


def turn_records(conv: Conversation) -> list[dict[str, Any]]:
    """The ``record_many`` items of a conversation's turns, in order: speaker as principal and subject,
    the turn's text (:func:`memory_text`), scope ``conversation:<id>``, ``dia_id`` as source reference,
    the session date as observed time, and ``follows`` the previous turn of the same session (thread
    context for hybrid recall; the first turn of a session follows nothing). Memory and command ids are
    derived from the conversation and the turn's position, so two runs order equal scores alike (every
    evaluation has a namespace of its own)."""
    items: list[dict[str, Any]] = []
    for i, t in enumerate(conv.turns):
        before = conv.turns[i - 1] if i and conv.turns[i - 1].session == t.session else None
        key = f"memwarden/eval-locomo/{conv.conversation_id}/{i}/{t.dia_id}"
        items.append({
            "principal": principal_of(conv.conversation_id, t.speaker),
            "subject": principal_of(conv.conversation_id, t.speaker),
            "memory_id": str(uuid.uuid5(uuid.NAMESPACE_URL, key)),
            "command_id": str(uuid.uuid5(uuid.NAMESPACE_URL, key + "/command")),
            "text": memory_text(t), "scope": f"conversation:{conv.conversation_id}",
            "source_kind": "USER_STATEMENT", "source_ref": t.dia_id, "observed_at": t.observed_at,
            "purposes": (PURPOSE,), "follows": items[-1]["memory_id"] if before is not None else None})
    return items


def run_locomo(base: Settings, data: Path, ids: Sequence[str] | None, ks: Sequence[int], *, keep: bool = False,
               progress: bool = True) -> dict[str, Any]:
    """Run the evaluation; returns the figures (see the README for the keys).

    Raises ``FileNotFoundError`` / ``ValueError`` for bad input, ``StackUnavailable`` when the stack
    is down.
    """
    from memwarden.bootstrap import Container
    from memwarden.evals.harness import eval_namespace
    from memwarden.ops.progress import wait_caught_up
    from memwarden.producers.client import MemwardenClient
    from memwarden.stores.decisions import outcome_counts
    from memwarden.stores.pg import connect
    from memwarden.stores.profile_rows import version_count

    conversations = load_conversations(data, ids)
    with eval_namespace(base, "eval", keep, progress) as run:
        settings, worker, console = run.settings, run.worker, run.console
        texts = [memory_text(t) for c in conversations for t in c.turns]
        embedder = Container(settings).embedder()
        embedder.embed(texts[:32])  # warm-up
        t0 = time.perf_counter()
        embedder.embed(texts)
        embed_per_s = len(texts) / (time.perf_counter() - t0)
        console.print(f"raw embedding: {embed_per_s:.0f} texts/s")

        with MemwardenClient(settings) as client:
            t0 = ingest(client, settings, conversations)
            console.print(f"published {len(texts)} commands; waiting for the projections")
            final_lag = wait_caught_up(settings, alive=worker.alive)
            ingest_s = time.perf_counter() - t0
            with connect(settings) as conn:
                outcomes = outcome_counts(conn)
                projected = version_count(conn)
            turns_tab, sessions_tab = RecallTable(ks, turn_recall), RecallTable(ks, session_recall)
            latencies: list[float] = []
            kmax = max(ks)
            for conv in conversations:
                principals = [principal_of(conv.conversation_id, s) for s in conv.speakers]
                for q in conv.questions:
                    if not q.evidence:
                        turns_tab.add_question(q, [])
                        sessions_tab.add_question(q, [])
                        continue
                    start = time.perf_counter()
                    # the data is years old: the Eq. 3 horizon would hide it against today's clock
                    found = client.recall(principals[0], q.question, k=kmax, purpose=PURPOSE, freshness=False)
                    latencies.append((time.perf_counter() - start) * 1000)
                    merged = found
                    ranked = [m.source_ref or "" for m in merged[:kmax]]
                    turns_tab.add_question(q, ranked)
                    sessions_tab.add_question(q, ranked)
        return {
            "conversations": [c.conversation_id for c in conversations],
            "namespace": settings.topic_prefix,
            "turns": len(texts),
            "ingested": int(projected),
            "rejected": int(outcomes.get("REJECTED", 0)),
            "quarantined": int(outcomes.get("QUARANTINED", 0)),
            # duplicates are not projected: what was neither projected, rejected nor quarantined
            "duplicates": len(texts) - int(projected) - int(outcomes.get("REJECTED", 0))
            - int(outcomes.get("QUARANTINED", 0)),
            "lag": sum(final_lag.values()),
            "questions": turns_tab.counts(),
            "skipped_questions": turns_tab.skipped,
            "recall_at_k": {str(k): v for k, v in turns_tab.result().items()},
            "session_recall_at_k": {str(k): v for k, v in sessions_tab.result().items()},
            "ingest_per_s": round(len(texts) / ingest_s, 1),
            "embed_per_s": round(embed_per_s, 1),
            "ingest_to_embed_ratio": round(len(texts) / ingest_s / embed_per_s, 3),
            "recall_ms": {"p50": round(statistics.median(latencies), 2) if latencies else 0.0,
                          "p95": round(_percentile(latencies, 0.95), 2)},
            "recall_calls": len(latencies),
        }


def render(result: dict[str, Any], console: Console) -> None:
    """Print the summary tables."""
    console.print(f"conversations {', '.join(result['conversations'])}: ingested {result['ingested']} of "
                  f"{result['turns']} turns, rejected {result['rejected']}, projection lag {result['lag']}")
    for title, key in (("turn-level evidence recall@k", "recall_at_k"), ("session-level recall@k",
                                                                        "session_recall_at_k")):
        table = Table(title=title)
        table.add_column("k")
        cats = sorted({c for row in result[key].values() for c in row if c != "all"}, key=int)
        for c in cats:
            table.add_column(f"{c} {CATEGORY_NAMES.get(int(c), '')}")
        table.add_column("all")
        for k, row in result[key].items():
            table.add_row(k, *[f"{row.get(c, 0):.3f}" for c in cats], f"{row.get('all', 0):.3f}")
        console.print(table)
    console.print(f"ingest {result['ingest_per_s']} commands/s end to end (raw embedding {result['embed_per_s']}"
                  f" texts/s, ratio {result['ingest_to_embed_ratio']}); recall p50 {result['recall_ms']['p50']} ms,"
                  f" p95 {result['recall_ms']['p95']} ms")


__all__ = ["Conversation", "run_locomo", "render", "sample_path"]
