"""Micro-benchmark of the Edge adapter: upsert throughput and filtered search latency.

For each size (default 10k and 100k points, 384-d, seeded random vectors) it builds a fresh shard in
a temporary directory and prints:

* upsert rate (points/s, batches of ``--batch``, including the Python-side conversion);
* filtered top-10 search latency p50/p95 in ms, filter = one owner (of ``--owners``) AND validity
  ``valid_from_ms <= t < valid_to_ms`` (about half of the points are valid at ``t``), in three states:
  ``plain`` (before ``optimize()``: brute force over the filter's candidates), ``hnsw`` (after
  ``optimize()``), and ``hnsw+exact`` (after it, with ``exact=True``);
* ``optimize()`` wall time and recall@10 of each state against a NumPy brute force.

Usage: ``python bench/vector_index_bench.py [--sizes 10000 100000] [--queries 200]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from memwarden.commands.readmodel.filters import FieldIn, FieldRange, Filter
from memwarden.commands.readmodel.payload import OPEN_END_MS
from memwarden.projections.edge_index import EdgeVectorIndex
from memwarden.projections.vector_index import IndexPoint

DIM = 384
T_MS = 500_000


def make_batch(rng: np.random.Generator, start: int, n: int, owners: int) -> tuple[np.ndarray, list[IndexPoint]]:
    """``n`` points numbered from ``start``: vectors (float32, ``(n, DIM)``) and index points."""
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    valid_from = rng.integers(0, 2 * T_MS, n)
    open_ended = rng.random(n) < 0.3
    valid_to = np.where(open_ended, OPEN_END_MS, valid_from + rng.integers(1, T_MS, n))
    points = [
        IndexPoint(
            str(uuid.UUID(int=start + i + 1)),
            vectors[i].tolist(),
            {
                "owner": f"owner-{(start + i) % owners}",
                "status": "active",
                "purposes": ["support"],
                "valid_from_ms": int(valid_from[i]),
                "valid_to_ms": int(valid_to[i]),
            },
        )
        for i in range(n)
    ]
    return vectors, points


def percentile_ms(samples: Sequence[float], q: float) -> float:
    """The ``q``-th percentile of ``samples`` (seconds), in milliseconds."""
    return float(np.percentile(np.asarray(samples) * 1000.0, q))


def run_queries(
    search: Callable[[list[float], Filter], list[str]], queries: np.ndarray, filters: list[Filter]
) -> tuple[list[float], list[list[str]]]:
    """Time each ``search``; returns (latencies in s, result ids)."""
    latencies, results = [], []
    for q, where in zip(queries, filters, strict=True):
        vec = q.tolist()
        t0 = time.perf_counter()
        ids = search(vec, where)
        latencies.append(time.perf_counter() - t0)
        results.append(ids)
    return latencies, results


def bench(size: int, n_queries: int, owners: int, batch: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory(prefix="mw-edge-bench-") as tmp:
        index = EdgeVectorIndex(Path(tmp), "bench")
        index.ensure(DIM)
        all_vectors, payload_owner, payload_from, payload_to = [], [], [], []
        upsert_s = 0.0
        for start in range(0, size, batch):
            vectors, points = make_batch(rng, start, min(batch, size - start), owners)
            t0 = time.perf_counter()
            index.upsert(points)
            upsert_s += time.perf_counter() - t0
            all_vectors.append(vectors)
            payload_owner += [p.payload["owner"] for p in points]
            payload_from += [p.payload["valid_from_ms"] for p in points]
            payload_to += [p.payload["valid_to_ms"] for p in points]
        mat = np.concatenate(all_vectors)
        mat /= np.linalg.norm(mat, axis=1, keepdims=True)
        owner_arr, from_arr, to_arr = (
            np.asarray(payload_owner),
            np.asarray(payload_from),
            np.asarray(payload_to),
        )
        ids = np.asarray([str(uuid.UUID(int=i + 1)) for i in range(size)])

        queries = rng.standard_normal((n_queries, DIM)).astype(np.float32)
        wanted_owners = [f"owner-{int(o)}" for o in rng.integers(0, owners, n_queries)]
        filters = [
            Filter(
                must=(
                    FieldIn("owner", (o,)),
                    FieldRange("valid_from_ms", lte=T_MS),
                    FieldRange("valid_to_ms", gt=T_MS),
                )
            )
            for o in wanted_owners
        ]
        truth, candidates = [], []
        for q, o in zip(queries, wanted_owners, strict=True):
            mask = (owner_arr == o) & (from_arr <= T_MS) & (to_arr > T_MS)
            candidates.append(int(mask.sum()))
            scores = mat[mask] @ (q / np.linalg.norm(q))
            truth.append(set(ids[mask][np.argsort(-scores)[:10]].tolist()))

        def edge_search(vec: list[float], where: Filter) -> list[str]:
            return [h.point_id for h in index.search(vec, where, 10)]

        def report(label: str, latencies: list[float], results: list[list[str]]) -> None:
            recall = np.mean([len(truth[i] & set(r)) / max(len(truth[i]), 1) for i, r in enumerate(results)])
            print(
                f"  {label:<11} search p50 {percentile_ms(latencies, 50):7.2f} ms"
                f"  p95 {percentile_ms(latencies, 95):7.2f} ms  recall@10 {recall:.3f}"
            )

        print(
            f"{size} points: upsert {size / upsert_s:,.0f} points/s ({upsert_s:.1f} s, batch {batch});"
            f" {owners} owners, {np.mean(candidates):.0f} points match a filter on average"
        )
        run_queries(edge_search, queries[:10], filters[:10])  # warm-up
        report("plain", *run_queries(edge_search, queries, filters))
        t0 = time.perf_counter()
        index.optimize()
        print(f"  optimize() {time.perf_counter() - t0:.1f} s")
        report("hnsw", *run_queries(edge_search, queries, filters))
        index.close()
        t0 = time.perf_counter()
        index = EdgeVectorIndex(Path(tmp), "bench", exact=True)
        print(f"  reopen {time.perf_counter() - t0:.2f} s")
        report("hnsw+exact", *run_queries(edge_search, queries, filters))
        index.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--owners", type=int, default=50)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    for size in args.sizes:
        bench(size, args.queries, args.owners, args.batch, args.seed)


if __name__ == "__main__":
    main()
