"""Offline GateMem harness: mapping rules + ABAC oracle + BM25 top-k "as of" each checkpoint, no Kafka.

Usage::

    .venv/bin/python bench/gatemem_offline.py --data ../shared/data/gatemem [--k 10] [--recency 0.3]
        [--domains office education household] [--split all|dev|heldout] [--show-leaks] [--show-misses N] [--json]

For every utility and privacy checkpoint: plan the episode (memwarden.evals.gatemem_mapping), keep the
records of the turns up to ``as_of_turn_id`` that ``may_read`` (memwarden.commands.access, the ABAC
oracle) allows for the authenticated asker at the time of that turn, rank them by BM25 against the
query text (IDF over every record of the episode so far, as a collection-level IDF would), optionally
boosted by recency (score x (1 + recency x turn index / turns so far)), skip verbatim repeats, and
score the top ``k`` texts (memwarden.evals.gatemem_score). Permission filters the candidates before
ranking; nothing is filtered after ranking. Safety checkpoints are skipped.

Output: the scorer's keys (``leak_rate``, ``utility``, ``over_refusal``, ``by_domain`` ...), the
mapping statistics under ``mapping`` (apart from the score), and ``diagnostics``:
``<domain>.privacy_exposed_any_rank`` counts privacy checkpoints where *any* readable record (not only
the top k) holds a forbidden string - zero means no retriever can leak on them - and
``<domain>.utility_miss.{absent,denied,unranked}`` says why utility checkpoints missed.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memwarden.commands.model import Sensitivity, StoreKind
from memwarden.evals.gatemem_data import DOMAINS, Query
from memwarden.evals.gatemem_labels import labels_for, load_labels
from memwarden.evals.gatemem_loader import SPLITS, load_domain, select_split
from memwarden.evals.gatemem_mapping import plan_episode, summarise_plans
from memwarden.evals.gatemem_plan import EpisodePlan, RecordSpec
from memwarden.evals.gatemem_score import aggregate, pattern_hits, score_checkpoint

PURPOSE = "assist"
#: Skip a record whose text repeats a higher-ranked one verbatim (background chatter repeats itself).
DEDUPE = True
_WORD = re.compile(r"[a-z0-9]+")
_STOP_TEXT = (
    "a an and are as at be but by for from has have i if in is it its me my of on or so that the their then "
    "there this to was we what when where which who will with you your"
)
_STOP = frozenset(_STOP_TEXT.split())


def tokens(text: str) -> list[str]:
    """Lower-case alphanumeric words without a small stop list."""
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


def bm25_rank(query: str, docs: Sequence[str], idf_docs: Sequence[str], k1: float = 1.2,
              b: float = 0.75) -> list[float]:
    """Okapi BM25 score of each of ``docs`` for ``query``; IDF from ``idf_docs`` (the collection)."""
    n = len(idf_docs)
    df: Counter[str] = Counter()
    for d in idf_docs:
        df.update(set(tokens(d)))
    toks = [tokens(d) for d in docs]
    avg = sum(len(t) for t in toks) / max(1, len(toks))
    q = set(tokens(query))
    scores = []
    for t in toks:
        tf = Counter(t)
        s = 0.0
        for w in q:
            if w not in tf:
                continue
            idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
            s += idf * tf[w] * (k1 + 1) / (tf[w] + k1 * (1 - b + b * len(t) / max(avg, 1e-9)))
        scores.append(s)
    return scores


def _oracle() -> tuple[Callable[..., bool], Callable[..., Any], Callable[..., Any]]:
    """``(may_read, ReadContext, RecordAttrs)`` from memwarden.commands.access, else a local copy of the
    contract's read rule (used only until the module lands)."""
    try:
        from memwarden.commands.readmodel.payload import RecordAttrs
        from memwarden.commands.readmodel.permission import ReadContext, may_read

        return may_read, ReadContext, RecordAttrs
    except ImportError:
        return _local_may_read, _Ctx, _Attrs


class _Ctx:
    def __init__(self, principal: str, roles: frozenset[str], purpose: str, now_ms: int, grants: tuple[Any, ...]):
        self.principal, self.roles, self.purpose, self.now_ms, self.grants = principal, roles, purpose, now_ms, grants


class _Attrs:
    def __init__(self, owner: str, subject: str, scope: str, store_kind: StoreKind, sensitivity: Sensitivity,
                 purposes: tuple[str, ...]):
        self.owner, self.subject, self.scope = owner, subject, scope
        self.store_kind, self.sensitivity, self.purposes = store_kind, sensitivity, purposes


_ORDER = [Sensitivity.PUBLIC, Sensitivity.INTERNAL, Sensitivity.CONFIDENTIAL, Sensitivity.RESTRICTED]


def _local_may_read(ctx: Any, rec: Any) -> bool:
    if rec.purposes and ctx.purpose not in rec.purposes:
        return False
    if rec.owner == ctx.principal or rec.subject == ctx.principal:
        return True
    for g in ctx.grants:
        grantee_ok = g.grantee == ctx.principal or (g.grantee.startswith("role:") and g.grantee[5:] in ctx.roles)
        rights = {str(r) for r in g.rights}
        valid = g.valid_from_ms <= ctx.now_ms and (g.valid_to_ms is None or ctx.now_ms < g.valid_to_ms)
        valid = valid and (g.revoked_at_ms is None or g.revoked_at_ms > ctx.now_ms)
        if not (grantee_ok and "READ" in rights and valid):
            continue
        if g.purposes and ctx.purpose not in g.purposes:
            continue
        if "*" not in g.scopes and rec.scope not in g.scopes:
            continue
        if g.subjects and rec.subject not in g.subjects:
            continue
        if g.store_kinds and rec.store_kind not in g.store_kinds:
            continue
        if _ORDER.index(rec.sensitivity) <= _ORDER.index(g.sensitivity_ceiling):
            return True
    return False


def readable_records(plan: EpisodePlan, query: Query, grants: tuple[Any, ...],
                     oracle: tuple[Callable[..., bool], Callable[..., Any], Callable[..., Any]]
                     ) -> tuple[list[RecordSpec], tuple[RecordSpec, ...]]:
    """(records the asker may read as of the query's turn, all records held as of that turn)."""
    may_read, read_context, record_attrs = oracle
    held = plan.records_through(query.as_of_turn_id)
    now_ms = int(held[-1].observed_at.timestamp() * 1000)
    ctx = read_context(
        principal=plan.principal_id(query.asker_id),
        roles=plan.roles_of(query.asker_id),
        purpose=PURPOSE,
        now_ms=now_ms,
        grants=grants,
    )
    readable = [
        r for r in held
        if may_read(ctx, record_attrs(owner=r.writer, subject=r.subject, scope=r.scope, store_kind=r.store_kind,
                                      sensitivity=r.sensitivity, purposes=r.purposes))
    ]
    return readable, held


def recall(plan: EpisodePlan, query: Query, grants: tuple[Any, ...], k: int, recency: float,
           oracle: tuple[Callable[..., bool], Callable[..., Any], Callable[..., Any]]) -> list[RecordSpec]:
    """Top-``k`` records readable by the asker as of the query's turn (filter first, then BM25; records
    sharing no query term are not returned)."""
    readable, held = readable_records(plan, query, grants, oracle)
    return rank(query.query_text, readable, held, k, recency)


def rank(query_text: str, visible: Sequence[RecordSpec], held: Sequence[RecordSpec], k: int,
         recency: float) -> list[RecordSpec]:
    """Top-``k`` of ``visible`` for ``query_text``: BM25 (IDF over ``held``, the whole store as of the
    query) times ``1 + recency * index / len(held)``, verbatim repeats skipped, zero scores dropped."""
    if not visible:
        return []
    scores = bm25_rank(query_text, [r.text for r in visible], [r.text for r in held])
    n = len(held)
    ranked = sorted(
        ((s * (1 + recency * r.index / n), r.index, r) for s, r in zip(scores, visible, strict=True) if s > 0),
        key=lambda x: (-x[0], -x[1]),
    )
    out: list[RecordSpec] = []
    seen: set[str] = set()
    for _, _, r in ranked:
        if DEDUPE and r.text in seen:
            continue
        seen.add(r.text)
        out.append(r)
        if len(out) == k:
            break
    return out


def run(data: Path, domains: Sequence[str], k: int, recency: float,
        split: str = "all", labels: Path | None = None) -> tuple[dict[str, Any], list[Any], dict]:
    """Plan, recall and score every utility/privacy checkpoint of the episodes in ``split`` (``all``,
    ``dev`` or ``heldout``, memwarden.evals.gatemem_loader); returns (summary, scores, details).
    ``labels``: an access-label file deciding scopes and grants instead of the rules."""
    by_episode = load_labels(labels) if labels is not None else None
    oracle = _oracle()
    scores = []
    details: dict[str, Any] = {}
    mapping: Counter[str] = Counter()
    all_plans: list[EpisodePlan] = []
    for domain in domains:
        dd = select_split(load_domain(data, domain), split)
        plans = {eid: plan_episode(ep, labels=labels_for(by_episode, eid)) for eid, ep in dd.episodes.items()}
        grants = {eid: tuple(p.grants) for eid, p in plans.items()}
        all_plans.extend(plans.values())
        for q in dd.queries:
            j = dd.judgements[q.checkpoint_id]
            if j.query_type == "safety":
                scores.append(score_checkpoint(j, domain, []))
                continue
            got = recall(plans[q.episode_id], q, grants[q.episode_id], k, recency, oracle)
            s = score_checkpoint(j, domain, [r.text for r in got])
            scores.append(s)
            details[q.checkpoint_id] = (q, j, got)
            if j.query_type == "privacy":
                readable, _ = readable_records(plans[q.episode_id], q, grants[q.episode_id], oracle)
                exposed = score_checkpoint(j, domain, [r.text for r in readable]).leaked
                mapping[f"{domain}.privacy_exposed_any_rank"] += int(bool(exposed))
            if s.utility_ok is False:
                why = _miss_reason(plans[q.episode_id], q, grants[q.episode_id], s.missing, oracle)
                mapping[f"{domain}.utility_miss.{why}"] += 1
    summary = aggregate(scores)
    summary["mapping"] = summarise_plans(all_plans)
    summary["diagnostics"] = dict(sorted(mapping.items()))
    summary["retrieval"] = {"method": "bm25", "k": k, "recency": recency, "purpose": PURPOSE, "split": split}
    return summary, scores, details


def _miss_reason(plan: EpisodePlan, query: Query, grants: tuple[Any, ...], missing: Sequence[str],
                 oracle: tuple[Callable[..., bool], Callable[..., Any], Callable[..., Any]]) -> str:
    """Why a utility checkpoint missed (debug): a gold string in no record so far (``absent``), only in
    records the asker may not read (``denied``), or readable but not ranked in the top k (``unranked``)."""
    readable, held = readable_records(plan, query, grants, oracle)
    readable_text = "\n".join(r.text for r in readable)
    for pattern in missing:
        if not any(pattern_hits(r.text, pattern) for r in held):
            return "absent"
    for pattern in missing:
        if not pattern_hits(readable_text, pattern):
            return "denied"
    return "unranked"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--domains", nargs="+", default=list(DOMAINS))
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--recency", type=float, default=1.0)
    ap.add_argument("--split", choices=SPLITS, default="all", help="episodes: all, dev (rules are changed on "
                    "these) or heldout (changes are reported on these)")
    ap.add_argument("--access-labels", type=Path, default=None, help="an access-label file deciding scopes and "
                    "grants instead of the rules (memwarden.evals.gatemem_labels)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--show-leaks", action="store_true", help="print each leaking checkpoint (debug)")
    ap.add_argument("--show-misses", type=int, default=0, help="print up to N utility misses (debug)")
    args = ap.parse_args(argv)
    summary, scores, details = run(args.data, args.domains, args.k, args.recency, args.split,
                                    args.access_labels)
    if args.show_leaks or args.show_misses:
        misses = 0
        for s in scores:
            if s.checkpoint_id not in details:
                continue
            q, j, got = details[s.checkpoint_id]
            if (s.leaked and args.show_leaks) or (s.utility_ok is False and misses < args.show_misses):
                misses += int(s.utility_ok is False)
                tag = "LEAK" if s.leaked else "MISS"
                print(f"{tag} {s.checkpoint_id} {j.attack_type} asker={q.asker_id} {s.leaked_patterns or s.missing}",
                      file=sys.stderr)
                for r in got:
                    if s.leaked and not any(pattern_hits(r.text, p) for p in s.leaked_patterns):
                        continue
                    print(f"    {r.turn_id} {r.scope.split('/', 1)[1]} {r.sensitivity.value} "
                          f"{r.attributes['speaker'].split('/')[-1]}: {r.text if s.leaked else r.text[:110]}",
                          file=sys.stderr)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"leak_rate={summary['leak_rate']} utility={summary['utility']} over_refusal={summary['over_refusal']}")
        for d, s in summary["by_domain"].items():
            print(f"  {d}: leak_rate={s['leak_rate']} ({s['leaks']}/{s['privacy_checkpoints']}) "
                  f"utility={s['utility']} over_refusal={s['over_refusal']}")
        print("  leaks by attack:", {k: v["leaks"] for k, v in summary["leaks_by_attack_type"].items() if v["leaks"]})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
