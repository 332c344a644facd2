"""Recall latency on the embedded index with every read filter on (issue 4, "Speed"). Not a test.

For each size (default 10k and 100k) it builds a fresh Qdrant Edge shard in a temporary directory
with synthetic memories written exactly as the ``EmbeddingProjector`` writes them (payload from
``payload_of``, dense vector, ``lexical`` sparse vector with the tie-break key), then times recall the
way the ``Recaller`` does it, per query:

1. query embedding (all-MiniLM-L6-v2 on CPU, one text) and lexical encoding;
2. the Eq. 5 read filter (``recall.read_filter``: ABAC over owner, subject and the reader's grants
   -- a ``should`` of sub-filters --, purpose, status, validity at ``as_of``, known time, expiry,
   and the freshness horizon per store kind);
3. ``EdgeVectorIndex.query``: dense and lexical prefetch (each with the filter) fused by DBSF.

It prints p50/p95 (ms) of the whole recall, of the index query alone and of the embedding, the
share of the recall spent in query embedding, the dense-only ``search`` under the same filter for
comparison, and how many points the filter admits on average. Postgres verification (one indexed
lookup of at most ``k`` rows) is not included. ``optimize()`` is not called: segments stay
unindexed, so the engine scores the points the filter admits (the payload indexes choose them).

Synthetic world: ``size / 100`` principals in teams of 10 (a team scope each), roles, grants
(team membership on the team scope, a few direct delegations, role grants), store kinds,
sensitivities, purpose tags, validity windows over two years (15 % superseded with a closed
interval), 10 % with an expiry (half of them past), decision times. Texts are 8-20 words drawn
from a Zipf-distributed vocabulary of 20k pseudo-words; dense vectors are random unit vectors
(the cost of scoring does not depend on their content); queries are 3-8 words from the same
vocabulary, embedded for real.

``--writes-per-query W`` upserts ``W`` new memories of the same world before each query (default 0: a
static index), so that the reader document frequencies kept between recalls under ``--idf reader``
(:mod:`memwarden.projections.reader_frequencies`) are measured while writes make some of them stale; their
hits and misses over the timed queries are reported (``reader_frequencies``). ``--active-readers R`` asks
every query as one of ``R`` principals (default 0: any principal of the world, each about once at 100k,
so nothing kept is asked again; an agent's session recalls many times as the same reader).

``--torch-threads`` sets PyTorch's intra-op threads for the query embedding (default 1: one short
text gains nothing from two threads, and on a busy 2-core machine two threads wait on each other:
p95 of a single-text embedding measured 355 ms with 2 threads against 17 ms with 1).

Usage: ``python bench/recall_latency_bench.py [--sizes 10000 100000] [--queries 300] [--k 10]
[--torch-threads 1] [--idf namespace|reader] [--writes-per-query 0] [--active-readers 0] [--json]``. With
``--json`` it prints one JSON object (``sizes``: the figures per size, times in ms) instead of the lines.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memwarden.commands.model import Right
from memwarden.commands.readmodel.payload import point_payload as payload_of
from memwarden.commands.readmodel.permission import Grant
from memwarden.commands.readmodel.read_filter import read_filter
from memwarden.evals.recall_world import MemorySpec, World
from memwarden.projections.edge_index import EdgeVectorIndex
from memwarden.projections.embedder import SentenceTransformerEmbedder
from memwarden.projections.index_projector import point_id
from memwarden.projections.sparse import Bm25Encoder
from memwarden.projections.vector_index import DEFAULT_LEXICAL_IDF, PREFETCH_FACTOR, IndexPoint, LexicalIdf

DIM = 384
NOW = datetime(2025, 6, 1, tzinfo=UTC)


def grants_of(world: World) -> tuple[Grant, ...]:
    """The world's grants as the read filter takes them."""
    return tuple(Grant(g.grant_id, g.grantee, frozenset({Right.READ}), g.scopes, subjects=g.subjects,
                       purposes=g.purposes, store_kinds=g.store_kinds, sensitivity_ceiling=g.sensitivity_ceiling,
                       valid_from_ms=g.valid_from_ms or 0, valid_to_ms=g.valid_to_ms) for g in world.grants)


def record_of(m: MemorySpec, i: int) -> dict[str, Any]:
    """A ``MemoryRecorded``-shaped record (the fields ``payload_of`` reads) of the world's memory ``m``."""
    envelope = {"principal": m.owner, "subject": m.subject, "scope": m.scope, "store_kind": m.store_kind,
                "sensitivity": m.sensitivity, "purposes": list(m.purposes), "effective_from": None,
                "observed_at": m.observed_at, "effective_to": m.effective_to, "expires_at": m.expires_at}
    mid = str(uuid.UUID(int=i + 1))
    return {"memory_id": mid, "command_id": mid, "version": 1, "envelope": envelope,
            "decided_at": m.observed_at + timedelta(seconds=1), "_closed": m.effective_to is not None}


def points_of(world: World, start: int, n: int, encoder: Bm25Encoder) -> list[IndexPoint]:
    """``n`` new memories of ``world`` as index points, numbered from ``start``."""
    vectors = world.rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    points = []
    for j in range(n):
        m = world.memory()
        rec = record_of(m, start + j)
        payload = payload_of(rec)
        if rec["_closed"]:
            payload["status"] = "superseded"
        pid = point_id(rec["memory_id"], rec["command_id"])
        points.append(IndexPoint(pid, vectors[j].tolist(), payload, encoder.document(m.text, key=pid)))
    return points


def build(index: EdgeVectorIndex, world: World, size: int, batch: int, encoder: Bm25Encoder) -> float:
    """Write ``size`` memories; returns the seconds spent in ``upsert`` (conversion included)."""
    spent = 0.0
    for start in range(0, size, batch):
        points = points_of(world, start, min(batch, size - start), encoder)
        t0 = time.perf_counter()
        index.upsert(points)
        spent += time.perf_counter() - t0
    return spent


def pct(values: Sequence[float], q: float) -> float:
    """``q``-th percentile of ``values`` (seconds) in ms."""
    return float(np.percentile(np.asarray(values) * 1000.0, q))


def bench(size: int, n_queries: int, k: int, batch: int, seed: int, embedder: SentenceTransformerEmbedder,
          idf: LexicalIdf = DEFAULT_LEXICAL_IDF, writes_per_query: int = 0, active_readers: int = 0,
          quiet: bool = False) -> dict[str, Any]:
    """Build a ``size``-memory shard and time ``n_queries`` recalls (after 20 untimed); returns the figures
    (times in ms) and prints them unless ``quiet``."""
    say = (lambda _line: None) if quiet else print
    rng = np.random.default_rng(seed)
    world = World(size, rng, NOW)
    grants = grants_of(world)
    encoder = Bm25Encoder()
    with tempfile.TemporaryDirectory(prefix="mw-recall-bench-") as tmp:
        index = EdgeVectorIndex(Path(tmp), "bench", idf=idf)
        index.ensure(DIM)
        upsert_s = build(index, world, size, batch, encoder)
        written = size
        say(f"{size} memories: upsert {size / upsert_s:,.0f} points/s; {world.n_principals} principals,"
              f" {len(world.grants)} grants")
        total, in_index, in_embed, dense_only, admitted = [], [], [], [], []
        for qi in range(n_queries + 20):
            if writes_per_query:
                index.upsert(points_of(world, written, writes_per_query, encoder))
                written += writes_per_query
            if qi == 20 and getattr(index, "frequencies", None) is not None:
                index.frequencies.hits = index.frequencies.misses = 0  # count the timed queries only
            reader, purpose, text = world.query()
            if active_readers:
                reader = world.principals[int(rng.integers(0, min(active_readers, world.n_principals)))]
            t0 = time.perf_counter()
            vector = embedder.embed([text])[0].tolist()
            t1 = time.perf_counter()
            lexical = encoder.query(text)
            where = read_filter(reader, NOW, NOW, purpose=purpose, roles=frozenset(world.roles[reader]),
                                grants=grants)
            t2 = time.perf_counter()
            hits = index.query(vector, lexical, where, k, PREFETCH_FACTOR * k)
            t3 = time.perf_counter()
            index.search(vector, where, k)
            t4 = time.perf_counter()
            if qi < 20:  # warm-up
                continue
            total.append(t3 - t0)
            in_embed.append(t1 - t0)
            in_index.append(t3 - t2)
            dense_only.append(t4 - t3)
            if qi % 10 == 0:
                admitted.append(index.count(where))
            assert len(hits) <= k
        share = sum(in_embed) / sum(total)
        figures: dict[str, Any] = {
            "memories": size, "idf": idf, "writes_per_query": writes_per_query, "active_readers": active_readers,
            "queries": n_queries,
            "upsert_points_per_s": round(size / upsert_s), "principals": world.n_principals,
            "grants": len(world.grants),
            "recall_ms": {"p50": pct(total, 50), "p95": pct(total, 95)},
            "index_query_ms": {"p50": pct(in_index, 50), "p95": pct(in_index, 95)},
            "embedding_ms": {"p50": pct(in_embed, 50), "p95": pct(in_embed, 95)}, "embedding_share": share,
            "dense_only_ms": {"p50": pct(dense_only, 50), "p95": pct(dense_only, 95)},
            "admitted_mean": statistics.mean(admitted),
        }
        kept = getattr(index, "frequencies", None)  # an adapter of the commit before has none
        if kept is not None:
            hits, misses = kept.hits, kept.misses
            figures["reader_frequencies"] = {"hits": hits, "misses": misses,
                                             "hit_rate": hits / (hits + misses) if hits + misses else None}
        say(f"  recall (embed + encode + filter + hybrid query): p50 {pct(total, 50):6.2f} ms"
              f"  p95 {pct(total, 95):6.2f} ms")
        say(f"  hybrid index query alone:                      p50 {pct(in_index, 50):6.2f} ms"
              f"  p95 {pct(in_index, 95):6.2f} ms")
        say(f"  query embedding alone:                         p50 {pct(in_embed, 50):6.2f} ms"
              f"  p95 {pct(in_embed, 95):6.2f} ms  -> {share:.0%} of recall time")
        say(f"  dense-only search, same filter (comparison):   p50 {pct(dense_only, 50):6.2f} ms"
              f"  p95 {pct(dense_only, 95):6.2f} ms")
        say(f"  filter admits {statistics.mean(admitted):,.0f} points on average"
              f" ({statistics.mean(admitted) / size:.1%}); hybrid/dense-only p50 ratio"
              f" {pct(in_index, 50) / pct(dense_only, 50):.2f}")
        if "reader_frequencies" in figures:
            kept = figures["reader_frequencies"]
            say(f"  reader document frequencies kept: {kept['hits']:,} hits, {kept['misses']:,} counted"
                f" ({writes_per_query} writes per query)")
        index.close()
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=20250601)
    parser.add_argument("--torch-threads", type=int, default=1, help="0 keeps PyTorch's default")
    parser.add_argument("--idf", default=DEFAULT_LEXICAL_IDF, choices=["namespace", "reader"],
                        help="whose IDF weighs the lexical stage (lexical_idf)")
    parser.add_argument("--writes-per-query", type=int, default=0, help="memories upserted before each query")
    parser.add_argument("--active-readers", type=int, default=0, help="ask every query as one of this many"
                        " principals (0: any)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    args = parser.parse_args(argv)
    embedder = SentenceTransformerEmbedder()
    if args.torch_threads > 0:
        import torch

        torch.set_num_threads(args.torch_threads)
    import torch

    if not args.json:
        print(f"torch intra-op threads: {torch.get_num_threads()}")
    embedder.embed(["warm up"])
    sizes = [bench(size, args.queries, args.k, args.batch, args.seed, embedder, args.idf, args.writes_per_query,
                   args.active_readers, quiet=args.json) for size in args.sizes]
    if args.json:
        print(json.dumps({"torch_threads": torch.get_num_threads(), "sizes": sizes}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
