"""Calibration of the recall relevance floor (``min_score``, issue 12 field case Q1) on LoCoMo.

Not a test. Builds the production index of :mod:`bench.locomo_hybrid_offline` (a real Qdrant Edge
shard, every turn one point, the ``eval locomo`` text form), answers every LoCoMo question with the
hybrid query under a read filter admitting both speakers (what ``eval locomo``'s grants admit), and
computes each top-10 hit's ``relevance`` exactly as ``Recaller.recall`` does
(:func:`memwarden.commands.readmodel.relevance.relevance` of the query/memory cosine and the
lexical coverage). It also recalls :data:`NONSENSE` queries (written for this script) in every
conversation.

The split is fixed before any value is chosen: :data:`CHOOSE` (conv-26, conv-30) to choose, the other
conversations to report. The rule (also fixed first): the recommended floor is the *smallest* value
of the grid (0.05 steps) that empties at least 95 % of the nonsense recalls of the choosing split.
For each floor of the grid and each split the script prints recall@10 (turn-level evidence) with the
floor, the recall@10 without it, the share of nonsense recalls left empty, and the mean number of
hits kept per real question.

Recalls go the production way: ``hybrid_in_context`` (each turn ``follows`` the previous turn of its
session, thread context on) and queries embedded by the 8-bit query model when it loads
(``--query-model fp32`` for the fp32 graph, what the floor was first calibrated with).

**Coverage weighted by the reader's IDF (twenty-fourth session; rule committed before any score).** Plain
coverage counts a speaker's name like any other word, so "<name> <made-up token>" reaches 0.5 against every
memory naming that person (README, known limits). ``--coverage idf`` weighs each query term by its BM25 IDF
among the memories the reader may read (a term no readable memory holds weighs the most) and adds
:func:`named_nonsense` recalls (each speaker's name before each of the first 15 :data:`NONSENSE` queries: 30
per conversation). Rule: the IDF floor is the smallest grid value that empties >= 95 % of the nonsense *and*
>= 95 % of the named-nonsense recalls of the choosing split. The IDF coverage becomes the default, with that
floor as :data:`~memwarden.commands.readmodel.relevance.RECOMMENDED_MIN_SCORE`, only if on the report split at
that floor both kinds are emptied >= 95 % and recall@10 is at least the plain coverage's at 0.35 minus 0.01;
otherwise nothing ships and the figures go to the README. **Outcome: not shipped** (no floor up to 0.60 empties
95 % of the named-nonsense recalls with either coverage: the name is in the dense cosine; README, known limits).
The comparison (both coverages in one run, the named-nonsense recalls, ``VectorIndex.term_idf``) is commit 91b1602.

Usage::

    .venv/bin/python bench/relevance_floor.py [--data PATH] [--power 1 2] [--query-model int8|fp32] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo_hybrid_offline as hyb  # noqa: E402  (bench scripts are not a package)

from memwarden.commands.readmodel import relevance as rel  # noqa: E402
from memwarden.commands.readmodel.payload import point_payload  # noqa: E402
from memwarden.commands.readmodel.thread_context import inherited_relevance  # noqa: E402
from memwarden.evals.locomo import PURPOSE, principal_of  # noqa: E402
from memwarden.evals.locomo_data import RecallTable, load_conversations, memory_text, turn_recall  # noqa: E402
from memwarden.projections.edge_index import EdgeVectorIndex  # noqa: E402
from memwarden.projections.embedder import SentenceTransformerEmbedder  # noqa: E402
from memwarden.projections.index_projector import point_id  # noqa: E402
from memwarden.projections.recall import hybrid_in_context  # noqa: E402
from memwarden.projections.sparse import Bm25Encoder, tokens  # noqa: E402
from memwarden.projections.vector_index import IndexPoint  # noqa: E402

K = 10


def payload(conv: Any, turn: Any, command_id: str, follows: str | None = None) -> dict[str, Any]:
    """The point payload of a turn's ``MemoryRecorded`` (as ``eval locomo`` records it) plus its ``dia_id``."""
    principal = principal_of(conv.conversation_id, turn.speaker)
    envelope = {
        "principal": principal, "subject": principal, "scope": f"conversation:{conv.conversation_id}",
        "store_kind": "EXPERIENCE", "sensitivity": "INTERNAL", "purposes": [PURPOSE], "effective_from": None,
        "observed_at": turn.observed_at, "effective_to": None, "expires_at": None,
    }
    record = {"memory_id": command_id, "command_id": command_id, "version": 1, "envelope": envelope,
              "decided_at": turn.observed_at, "follows": follows}
    return {**point_payload(record), "source_ref": turn.dia_id}


CHOOSE = ("conv-26", "conv-30")
GRID = tuple(round(0.05 * i, 2) for i in range(0, 13))
#: Nonsense queries: made-up tokens, keyboard mashes, hashes, pseudo-words (none is a LoCoMo word).
NONSENSE = (
    "zxqv-unknown-token", "qwpx-zzkt-771", "blorptastic frobnicator", "xyzzy plugh", "vrrmk glubbo",
    "kjdhf87 sdkjf", "asdfghjkl", "zzqx brindlewump", "0x7f3a9c11", "snarfle quibbix", "grx-4410-vxn",
    "wubbalubba zork", "plimsoft nergle", "fnord-fnord", "qqqq wwww eeee", "trelzik vamblor", "ooglyboogly",
    "mxyzptlk", "hjkl;'", "zorblax-9000 flinge", "ptarmigan-xq unknown", "kweepo dranth", "lkjh-poiu-mnbv",
    "ghrrblt", "sprocketfizz zanth", "uuid 9f8e7d6c", "vexnor quillibrath", "zibzab-unknown", "yarblek thrum",
    "wxq zzv kkp",
)


def quantiles(values: Sequence[float], qs: Sequence[float]) -> list[float]:
    """Percentiles ``qs`` of ``values`` rounded to 3 decimals (``[]`` for no values)."""
    return [round(float(x), 3) for x in np.percentile(values, qs)] if values else []


def floor_rows(records: list[dict[str, Any]], nonsense: list[list[float]], floors: Sequence[float]) -> list[dict]:
    """Per floor: recall@10 with the floor, share of nonsense recalls emptied, mean hits kept."""
    rows = []
    for f in floors:
        table = RecallTable((K,), turn_recall)
        kept = 0
        for r in records:
            ranked = [ref for ref, relevance in r["hits"] if relevance >= f]
            kept += len(ranked)
            table.add_question(r["question"], ranked)
        emptied = sum(1 for rels in nonsense if all(x < f for x in rels))
        rows.append({"floor": f, "recall_at_10": round(table.result()[K].get("all", 0.0), 4),
                     "nonsense_emptied": round(emptied / max(len(nonsense), 1), 4),
                     "hits_kept_per_question": round(kept / max(len(records), 1), 2)})
    return rows


Signals = dict[str, tuple[str, float, float]]


def signals(by_pid: dict[str, tuple[np.ndarray, set[str], str]], hits: Sequence[Any], vec: np.ndarray,
            qterms: list[str]) -> Signals:
    """Per hit, by memory id: its ``dia_id``, its cosine with the query and the query's coverage."""
    out: Signals = {}
    for h in hits:
        stored, terms, ref = by_pid[h.point_id]
        out[str(h.payload["memory_id"])] = (ref, rel.cosine(vec.tolist(), stored.tolist()), rel.coverage(qterms, terms))
    return out


def inherit(found: Any, sig: Signals) -> list[tuple[str, float, float]]:
    """``(dia_id, cosine, coverage)`` per hit, a lifted hit inheriting its predecessor's relevance as
    ``Recaller.recall`` does (the predecessor's own relevance when it is a hit, else its cosine),
    folded into the cosine (exact at the production coverage power)."""
    lifted = {str(e.payload["memory_id"]): e.by for e in found.ranked[:K] if e.by is not None}
    out = []
    for mid, (ref, c, v) in sig.items():
        prev = lifted.get(mid)
        if prev is not None:
            before = rel.relevance(sig[prev][1], sig[prev][2]) if prev in sig else found.memory_cosines.get(prev)
            c = max(c, inherited_relevance(0.0, before))
        out.append((ref, c, v))
    return out


def query_vectors(embedder: SentenceTransformerEmbedder, questions: list[str], cache: Path
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The questions' and the nonsense queries' vectors, by the query model the read path uses."""
    if embedder.query_quantized:
        print("query model: int8")
        return embedder.embed_query(questions), embedder.embed_query(list(NONSENSE))
    print("query model: fp32")
    return hyb.embed_cached(embedder, questions, cache, "questions"), embedder.embed(list(NONSENSE))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=hyb.DEFAULT_DATA)
    parser.add_argument("--power", type=float, nargs="+", default=[rel.COVERAGE_POWER])
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "mw-locomo-cache")
    parser.add_argument("--query-model", choices=["int8", "fp32"], default="int8",
                        help="query embeddings: the 8-bit query model (production) or the fp32 graph")
    parser.add_argument("--json", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args(argv)

    convs = load_conversations(args.data, None)
    embedder = SentenceTransformerEmbedder(query_quantized=args.query_model == "int8")
    questions = [q.question for c in convs for q in c.questions]
    dense_q, dense_n = query_vectors(embedder, questions, args.cache)
    texts = [memory_text(t) for c in convs for t in c.turns]
    dense_docs = hyb.embed_cached(embedder, texts, args.cache, "memory_text")
    encoder = Bm25Encoder()
    now = datetime.now(UTC)
    by_pid: dict[str, tuple[np.ndarray, set[str], str]] = {}
    # raw per-hit signals: (cosine, coverage) for every top-10 hit of every question / nonsense query
    raw: dict[str, list[tuple[Any, list[tuple[str, float, float]]]]] = {c.conversation_id: [] for c in convs}
    raw_nonsense: dict[str, list[list[tuple[float, float]]]] = {c.conversation_id: [] for c in convs}
    evidence_rel: dict[str, list[tuple[float, float]]] = {c.conversation_id: [] for c in convs}
    with tempfile.TemporaryDirectory(prefix="mw-floor-") as tmp:
        index = EdgeVectorIndex(Path(tmp), "locomo")
        index.ensure(dense_docs.shape[1])
        points, i = [], 0
        for conv in convs:
            for n, turn in enumerate(conv.turns):
                cid = hyb.turn_id(conv, turn)
                before = conv.turns[n - 1] if n and conv.turns[n - 1].session == turn.session else None
                pid = point_id(cid, cid)
                points.append(IndexPoint(pid, dense_docs[i].tolist(),
                                         payload(conv, turn, cid, hyb.turn_id(conv, before) if before else None),
                                         encoder.document(texts[i], key=pid)))
                by_pid[pid] = (dense_docs[i], set(tokens(texts[i])), turn.dia_id)
                i += 1
        for j in range(0, len(points), 500):
            index.upsert(points[j:j + 500])

        def top(vec: np.ndarray, query: str, where: Any) -> list[tuple[str, float, float]]:
            found = hybrid_in_context(index, vec.tolist(), encoder.query(query), where, K)
            return inherit(found, signals(by_pid, found.hits(K), vec, tokens(query)))


        qi = 0
        for conv in convs:
            where = hyb.read_filter_for([principal_of(conv.conversation_id, s) for s in conv.speakers], now)
            for q in conv.questions:
                vec = dense_q[qi]
                qi += 1
                if not q.evidence:
                    continue
                hits = top(vec, q.question, where)
                raw[conv.conversation_id].append((q, hits))
                evidence_rel[conv.conversation_id] += [(c, v) for ref, c, v in hits if ref in q.evidence]
            for n, text in enumerate(NONSENSE):
                raw_nonsense[conv.conversation_id].append([(c, v) for _, c, v in top(dense_n[n], text, where)])
        index.close()

    out: dict[str, Any] = {"choose": list(CHOOSE), "report": [c.conversation_id for c in convs
                                                              if c.conversation_id not in CHOOSE],
                           "nonsense_queries": len(NONSENSE), "powers": {}}
    for power in args.power:
        def score(c: float, v: float, p: float = power) -> float:
            return round(max(rel.clamp(c), rel.clamp(v) ** p), 6)

        per_split: dict[str, Any] = {}
        for split, ids in (("choose", out["choose"]), ("report", out["report"])):
            records = [{"question": q, "hits": [(ref, score(c, v)) for ref, c, v in hits]}
                       for cid in ids for q, hits in raw[cid]]
            nonsense = [[score(c, v) for c, v in rels] for cid in ids for rels in raw_nonsense[cid]]
            evid = [score(c, v) for cid in ids for c, v in evidence_rel[cid]]
            non_evid = [score(c, v) for cid in ids for q, hits in raw[cid] for ref, c, v in hits[:1]
                        if ref not in q.evidence]
            per_split[split] = {
                "rows": floor_rows(records, nonsense, GRID),
                "evidence_relevance_quartiles": quantiles(evid, [10, 25, 50, 75]),
                "wrong_top1_relevance_quartiles": quantiles(non_evid, [10, 25, 50, 75]),
                "nonsense_max_relevance_quartiles": quantiles([max(r) for r in nonsense if r], [50, 90, 95, 100]),
            }
        chosen = next((r["floor"] for r in per_split["choose"]["rows"] if r["nonsense_emptied"] >= 0.95), GRID[-1])
        per_split["recommended_floor"] = chosen
        out["powers"][str(power)] = per_split
        print(f"coverage power {power}: recommended floor (choose split) = {chosen}")
        for split in ("choose", "report"):
            s = per_split[split]
            print(f"  [{split}] evidence relevance p10/25/50/75 {s['evidence_relevance_quartiles']}; wrong top-1 "
                  f"{s['wrong_top1_relevance_quartiles']}; nonsense max p50/90/95/100 "
                  f"{s['nonsense_max_relevance_quartiles']}")
            for r in s["rows"]:
                mark = " <= recommended" if r["floor"] == chosen else ""
                print(f"    floor {r['floor']:.2f}: R@10 {r['recall_at_10']:.4f}  nonsense emptied "
                      f"{r['nonsense_emptied']:.3f}  hits kept {r['hits_kept_per_question']}{mark}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
