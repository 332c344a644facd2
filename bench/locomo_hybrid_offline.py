"""Offline LoCoMo harness for hybrid retrieval: the production index path without Kafka or Postgres.

Not a test. It stores every turn of the chosen conversations as one point of a real Qdrant Edge
shard in a temporary directory, exactly as the ``EmbeddingProjector`` would (payload from
:func:`payload_of`, dense all-MiniLM-L6-v2 vector, ``lexical`` BM25 sparse vector), and answers every
question with :meth:`EdgeVectorIndex.query` under the production read filter
(:func:`memwarden.projections.recall.read_filter`), once with a filter that admits both participants
(``--merge union``, the default: what a read under a grant does, and what ``memwarden eval locomo``
does, where each speaker grants the other READ and one recall sees both), or once per participant,
merging the two ranked lists by score (``--merge per-speaker``: lower, since each list is fused and
lifted on its own). Scoring is turn-level evidence recall@k (``locomo_data.turn_recall``), per
conversation and over all.

``--lift`` runs the hybrid query with thread context (:func:`memwarden.projections.recall.hybrid_in_context`,
each turn ``follows`` the previous turn of its session) at the given weights (0: the plain fusion);
``--dev`` names the conversations the weight is chosen on and prints the others apart (held-out).
The production weight, 0.6, was chosen on conv-26, conv-30 and conv-41. With a lift the episode context of the
read path (:mod:`memwarden.commands.readmodel.episodes`, weight 0.4) applies too, as in production.

Dense vectors are cached in ``--cache`` (``.npy`` keyed by the text form and the data file), so a
grid over the sparse settings re-embeds nothing. Each grid point rebuilds the shard (seconds).

Usage::

    python bench/locomo_hybrid_offline.py [--data PATH] [--fusion rrf dbsf] [--prefetch 10 20 50]
        [--k1 1.2] [--b 0 0.75] [--avg-len 14] [--text memory_text] [--merge union per-speaker]
        [--modes hybrid dense lexical] [--lift 0 0.6] [--dev conv-26 conv-30 conv-41] [--idf namespace reader]

Every option takes several values (a grid); the defaults are the production settings.

``--idf`` chooses whose IDF weighs the lexical stage (``namespace``: the engine's over every turn of the
shard, all seven conversations; ``reader``: over the turns the read admits, its conversation; see
``lexical_idf`` in :mod:`memwarden.projections.vector_index`).

``--modes`` chooses among ``hybrid`` (the fused query), ``dense`` (the dense stage alone) and
``lexical`` (the sparse stage alone, through a one-stage fusion-free query).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from memwarden.commands.readmodel.filters import Filter
from memwarden.commands.readmodel.payload import point_payload as payload_of
from memwarden.evals.locomo import PURPOSE, principal_of
from memwarden.evals.locomo_data import Conversation, RecallTable, Turn, load_conversations, memory_text, turn_recall
from memwarden.projections import recall as recall_mod
from memwarden.projections import sparse
from memwarden.projections.edge_index import EdgeVectorIndex
from memwarden.projections.embedder import SentenceTransformerEmbedder
from memwarden.projections.index_projector import point_id
from memwarden.projections.sparse import Bm25Encoder
from memwarden.projections.vector_index import (
    DEFAULT_FUSION,
    DEFAULT_LEXICAL_IDF,
    PREFETCH_FACTOR,
    FusionMethod,
    Hit,
    IndexPoint,
    LexicalIdf,
    SparseVector,
)

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo" / "locomo7.json"
K = 10


def plain_text(turn: Turn) -> str:
    """``"speaker: text"`` without the image caption."""
    return f"{turn.speaker}: {turn.text}"


TEXT_FORMS: dict[str, Callable[[Turn], str]] = {"memory_text": memory_text, "speaker: text": plain_text}


def turn_id(conv: Conversation, turn: Turn) -> str:
    """The deterministic memory (and command) id of a turn in this harness."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"locomo/{conv.conversation_id}/{turn.dia_id}"))


def payload(conv: Conversation, turn: Turn, command_id: str, follows: str | None = None) -> dict[str, Any]:
    """The payload :func:`payload_of` gives the turn's ``MemoryRecorded`` (as ``eval locomo`` records
    it: ``follows`` the previous turn of the session), plus ``source_ref`` (the ``dia_id``) for scoring."""
    principal = principal_of(conv.conversation_id, turn.speaker)
    envelope = {
        "principal": principal, "subject": principal, "scope": f"conversation:{conv.conversation_id}",
        "store_kind": "PROFILE", "sensitivity": "INTERNAL", "purposes": [PURPOSE], "effective_from": None,
        "observed_at": turn.observed_at, "effective_to": None, "expires_at": None,
    }
    record = {"memory_id": command_id, "command_id": command_id, "version": 1, "envelope": envelope,
              "decided_at": turn.observed_at, "follows": follows}
    return {**payload_of(record), "source_ref": turn.dia_id}


def embed_cached(embedder: SentenceTransformerEmbedder, texts: list[str], cache: Path, tag: str) -> np.ndarray:
    """Embeddings of ``texts`` (float32, ``(n, 384)``), read from / written to ``cache``."""
    digest = hashlib.sha256(("\n".join(texts) + tag).encode()).hexdigest()[:16]
    path = cache / f"emb-{digest}.npy"
    if path.exists():
        return np.load(path)
    cache.mkdir(parents=True, exist_ok=True)
    vectors = embedder.embed(texts)
    np.save(path, vectors)
    return vectors


def read_filter_for(principals: Sequence[str], now: datetime) -> Filter:
    """The production read filter of one principal (``eval locomo``'s purpose, no freshness horizon:
    the data is years old), or an OR over several (what a grant covering both would admit)."""
    filters = [recall_mod.read_filter(p, now, now, purpose=PURPOSE, freshness=False) for p in principals]
    return filters[0] if len(filters) == 1 else Filter(should=tuple(filters))


def run(convs: Sequence[Conversation], dense_docs: np.ndarray, dense_q: np.ndarray, texts: list[str],
        encoder: Bm25Encoder, fusion: FusionMethod, prefetch: int, mode: str, merge: str, lift: float = 0.0,
        dev: Sequence[str] = (), idf: LexicalIdf = DEFAULT_LEXICAL_IDF) -> dict[str, float]:
    """One grid point: build a shard, answer every question, return recall@K per conversation and all
    (and ``dev`` / ``held_out`` when ``dev`` names conversations)."""
    now = datetime.now(UTC)
    tables = {c.conversation_id: RecallTable((K,), turn_recall) for c in convs}
    overall = RecallTable((K,), turn_recall)
    splits = {"dev": RecallTable((K,), turn_recall), "held_out": RecallTable((K,), turn_recall)}
    with tempfile.TemporaryDirectory(prefix="mw-locomo-hybrid-") as tmp:
        index = EdgeVectorIndex(Path(tmp), "locomo", idf=idf)
        index.ensure(dense_docs.shape[1])
        points, i = [], 0
        for conv in convs:
            for n, turn in enumerate(conv.turns):
                cid = turn_id(conv, turn)
                before = conv.turns[n - 1] if n and conv.turns[n - 1].session == turn.session else None
                pid = point_id(cid, cid)
                points.append(IndexPoint(pid, dense_docs[i].tolist(),
                                         payload(conv, turn, cid, turn_id(conv, before) if before else None),
                                         encoder.document(texts[i], key=pid)))
                i += 1
        for j in range(0, len(points), 500):
            index.upsert(points[j:j + 500])
        qi = 0
        for conv in convs:
            principals = [principal_of(conv.conversation_id, s) for s in conv.speakers]
            groups = [[p] for p in principals] if merge == "per-speaker" else [principals]
            for q in conv.questions:
                vec = dense_q[qi].tolist()
                qi += 1
                if not q.evidence:
                    continue
                lexical = encoder.query(q.question) if mode != "dense" else SparseVector()
                merged: list[Hit] = []
                for group in groups:
                    where = read_filter_for(group, now)
                    if mode == "lexical":
                        merged += _lexical_only(index, lexical, where)
                    elif mode == "hybrid" and lift:
                        merged += recall_mod.hybrid_in_context(index, vec, lexical, where, K, lift).hits(K)
                    else:
                        merged += index.query(vec, lexical, where, K, prefetch, fusion)
                merged.sort(key=lambda h: (-h.score, h.point_id))
                ranked = [str(h.payload["source_ref"]) for h in merged[:K]]
                tables[conv.conversation_id].add_question(q, ranked)
                overall.add_question(q, ranked)
                splits["dev" if conv.conversation_id in dev else "held_out"].add_question(q, ranked)
        index.close()
    out = {cid: t.result()[K].get("all", 0.0) for cid, t in tables.items()}
    out["all"] = overall.result()[K].get("all", 0.0)
    if dev:
        out.update({name: t.result()[K].get("all", 0.0) for name, t in splits.items()})
    return out


def _lexical_only(index: EdgeVectorIndex, sparse: SparseVector, where: Filter) -> list[Hit]:
    """The lexical stage alone under the filter (the index's IDF applied)."""
    return index.search_lexical(sparse, where, K)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--ids", nargs="*", default=None, help="conversation ids (default all)")
    parser.add_argument("--fusion", nargs="+", default=[DEFAULT_FUSION], choices=["rrf", "dbsf"])
    parser.add_argument("--prefetch", type=int, nargs="+", default=[PREFETCH_FACTOR * K])
    parser.add_argument("--k1", type=float, nargs="+", default=[sparse.K1])
    parser.add_argument("--b", type=float, nargs="+", default=[sparse.B])
    parser.add_argument("--avg-len", type=float, nargs="+", default=[sparse.AVG_LEN])
    parser.add_argument("--text", nargs="+", default=["memory_text"], choices=list(TEXT_FORMS))
    parser.add_argument("--merge", nargs="+", default=["union"], choices=["union", "per-speaker"])
    parser.add_argument("--modes", nargs="+", default=["hybrid"], choices=["hybrid", "dense", "lexical"])
    parser.add_argument("--lift", type=float, nargs="+", default=[0.0],
                        help="thread-context weights (hybrid mode; 0 = plain fusion)")
    parser.add_argument("--dev", nargs="*", default=[], help="conversations to choose on (the rest: held-out)")
    parser.add_argument("--idf", nargs="+", default=[DEFAULT_LEXICAL_IDF], choices=["namespace", "reader"],
                        help="whose IDF weighs the lexical stage")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "mw-locomo-cache")
    parser.add_argument("--json", type=Path, default=None, help="append one JSON line per grid point")
    args = parser.parse_args(argv)

    convs = load_conversations(args.data, args.ids)
    embedder = SentenceTransformerEmbedder()
    questions = [q.question for c in convs for q in c.questions]
    dense_q = embed_cached(embedder, questions, args.cache, "questions")
    for form in args.text:
        texts = [TEXT_FORMS[form](t) for c in convs for t in c.turns]
        dense_docs = embed_cached(embedder, texts, args.cache, form)
        grid = itertools.product(args.modes, args.merge, args.fusion, args.prefetch, args.k1, args.b, args.avg_len,
                                 args.lift, args.idf)
        for mode, merge, fusion, prefetch, k1, b, avg_len, lift, idf in grid:
            t0 = time.perf_counter()
            res = run(convs, dense_docs, dense_q, texts, Bm25Encoder(k1, b, avg_len), fusion, prefetch, mode, merge,
                      lift, args.dev, idf)
            took = time.perf_counter() - t0
            per = " ".join(f"{cid}={v:.3f}" for cid, v in res.items() if cid != "all")
            print(f"{mode:<7} {merge:<11} text={form!r:<15} fusion={fusion} prefetch={prefetch} k1={k1} b={b} "
                  f"avg_len={avg_len} lift={lift} idf={idf}: R@{K} all={res['all']:.4f}  [{per}] ({took:.0f}s)",
                  flush=True)
            if args.json:
                row = {"mode": mode, "merge": merge, "text": form, "fusion": fusion, "prefetch": prefetch, "k1": k1,
                       "b": b, "avg_len": avg_len, "lift": lift, "idf": idf, "recall_at_10": res}
                with args.json.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
