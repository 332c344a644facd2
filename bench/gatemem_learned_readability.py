"""GateMem: can a readability model learned on the dev split open withheld records without exposures?

Not a retriever and never an input to the mapping: an experiment on the data, with the protocol of every
GateMem change (design on dev, held-out scored once). It asks whether the knowledge the mapping's rules
lack (which withheld turn is safe for which reader, bench/gatemem_bound.py) can be *learned* from the dev
half's own checkpoints and carried to episodes it has not seen.

Training pairs (dev only): for every privacy checkpoint, every record the mapping withholds from its asker
as of that checkpoint (``gatemem_offline.readable_records``), labelled *unsafe* when it holds one of the
checkpoint's forbidden strings (``not_include``, ``leak_targets``; ``gatemem_score.pattern_hits``).
Features: the asker's relationship kind crossed with the record's circle kind (track / thread / facet /
person / private), its sensitivity, whether the circle or text names the asker, digits in the text, and
its words (hashed, 2^20). Model: scikit-learn ``LogisticRegression`` (class-balanced, ``--C``).

Evaluation, for each threshold ``t``: every withheld record whose predicted P(unsafe) < t is opened to the
asker, then the offline harness ranks (BM25 + recency, ``gatemem_offline.rank``) and scores every utility
and privacy checkpoint, and counts *exposed* privacy checkpoints (any visible record, at any rank, holds a
forbidden string). Zero exposures on the held-out half is the bar, as for every rule opening.

Usage::

    .venv/bin/python bench/gatemem_learned_readability.py --data ../shared/data/gatemem [--C 0.05]
        [--thresholds 0.0001,0.001,0.005] [--recency 2.0] [--json]

Output (``--json``: one object): ``pairs`` (dev training pairs, unsafe), ``baseline`` (dev / held-out with
the mapping alone) and ``runs``: per threshold, dev and held-out ``utility``, ``over_refusal``,
``leak_rate``, ``exposed``, ``opened`` (record openings summed over checkpoints).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.feature_extraction import FeatureHasher
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gatemem_offline as offline  # noqa: E402

from memwarden.evals.gatemem_data import DOMAINS, DomainData  # noqa: E402
from memwarden.evals.gatemem_loader import load_domain, select_split  # noqa: E402
from memwarden.evals.gatemem_mapping import plan_episode  # noqa: E402
from memwarden.evals.gatemem_plan import EpisodePlan, RecordSpec  # noqa: E402
from memwarden.evals.gatemem_score import aggregate, pattern_hits, score_checkpoint  # noqa: E402

_WORD = re.compile(r"[a-z0-9]+")
Split = list[tuple[str, DomainData, dict[str, EpisodePlan]]]


def relationship_kind(plan: EpisodePlan, asker: str) -> str:
    """The asker's role without its episode namespace (``household_manager``), ``none`` without one."""
    roles = sorted(plan.roles_of(asker))
    return roles[0].split(".", 1)[1] if roles else "none"


def circle_kind(scope: str) -> str:
    """``kind|d<depth>|f<facet>`` of a ``gm-*`` scope (``track|d1|f1`` for a thread's credentials facet)."""
    local = scope.split("/", 1)[1] if "/" in scope else scope
    return f"{local.split(':', 1)[0]}|d{local.count('/')}|f{int('#' in local)}"


def features(domain: str, plan: EpisodePlan, asker: str, record: RecordSpec) -> dict[str, int]:
    """Sparse features of (asker, withheld record) as a ``{name: 1}`` dict for ``FeatureHasher``."""
    rk, ck, sens = relationship_kind(plan, asker), circle_kind(record.scope), record.sensitivity.name
    out = {f"rk={rk}": 1, f"rk={rk}|ck={ck}": 1, f"rk={rk}|s={sens}": 1, f"rk={rk}|ck={ck}|s={sens}": 1,
           f"d={domain}|s={sens}": 1, f"ck={ck}|s={sens}": 1}
    if asker in record.scope:
        out[f"rk={rk}|own-circle"] = 1
    first = asker.split("_")[1] if "_" in asker else asker
    if re.search(r"\b" + re.escape(first.lower()) + r"\b", record.text.lower()):
        out[f"rk={rk}|named"] = 1
    if any(c.isdigit() for c in record.text):
        out[f"rk={rk}|digit"] = 1
    for w in set(_WORD.findall(record.text.lower())):
        out[f"w={w}"] = 1
        out[f"rk={rk}|w={w}"] = 1
    return out


def load(data: Path, split: str) -> Split:
    """Each domain's checkpoints of ``split`` with its episodes' plans."""
    out = []
    for domain in DOMAINS:
        dd = select_split(load_domain(data, domain), split)
        out.append((domain, dd, {eid: plan_episode(ep) for eid, ep in dd.episodes.items()}))
    return out


def training_pairs(split: Split, oracle: Any) -> tuple[list[dict[str, int]], np.ndarray]:
    """(features, labels) of every (privacy checkpoint, withheld record) pair; label 1 = unsafe."""
    xs: list[dict[str, int]] = []
    ys: list[int] = []
    for domain, dd, plans in split:
        for q in dd.queries:
            j = dd.judgements[q.checkpoint_id]
            if j.query_type != "privacy":
                continue
            plan = plans[q.episode_id]
            readable, held = offline.readable_records(plan, q, tuple(plan.grants), oracle)
            seen = {r.record_id for r in readable}
            forbidden = (*j.not_include, *j.leak_targets)
            for r in held:
                if r.record_id not in seen:
                    xs.append(features(domain, plan, q.asker_id, r))
                    ys.append(int(any(pattern_hits(r.text, p) for p in forbidden)))
    return xs, np.array(ys)


def evaluate(split: Split, oracle: Any, model: LogisticRegression | None, hasher: FeatureHasher,
             threshold: float, k: int, recency: float) -> dict[str, Any]:
    """Offline scores with every withheld record of P(unsafe) < ``threshold`` opened (none without model)."""
    scores = []
    exposed = opened_total = 0
    for domain, dd, plans in split:
        for q in dd.queries:
            j = dd.judgements[q.checkpoint_id]
            if j.query_type == "safety":
                continue
            plan = plans[q.episode_id]
            readable, held = offline.readable_records(plan, q, tuple(plan.grants), oracle)
            seen = {r.record_id for r in readable}
            withheld = [r for r in held if r.record_id not in seen]
            opened: list[RecordSpec] = []
            if model is not None and withheld:
                x = hasher.transform([features(domain, plan, q.asker_id, r) for r in withheld])
                p_unsafe = model.predict_proba(x)[:, 1]
                opened = [r for r, p in zip(withheld, p_unsafe, strict=True) if p < threshold]
            opened_total += len(opened)
            visible = sorted([*readable, *opened], key=lambda r: r.index)
            if j.query_type == "privacy" and score_checkpoint(j, domain, [r.text for r in visible]).leaked:
                exposed += 1
            got = offline.rank(q.query_text, visible, held, k, recency)
            scores.append(score_checkpoint(j, domain, [r.text for r in got]))
    summary = aggregate(scores)
    return {"utility": summary["utility"], "over_refusal": summary["over_refusal"],
            "leak_rate": summary["leak_rate"], "exposed": exposed, "opened": opened_total}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--C", type=float, default=0.05, help="inverse regularisation strength")
    ap.add_argument("--thresholds", default="0.0001,0.001,0.005", help="P(unsafe) below which a record opens")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--recency", type=float, default=2.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    oracle = offline._oracle()
    dev, heldout = load(args.data, "dev"), load(args.data, "heldout")
    hasher = FeatureHasher(n_features=2**20, input_type="dict")
    xs, ys = training_pairs(dev, oracle)
    model = LogisticRegression(C=args.C, max_iter=2000, class_weight="balanced").fit(hasher.transform(xs), ys)
    out: dict[str, Any] = {
        "pairs": {"dev": len(ys), "unsafe": int(ys.sum())},
        "baseline": {name: evaluate(s, oracle, None, hasher, 0.0, args.k, args.recency)
                     for name, s in (("dev", dev), ("heldout", heldout))},
        "runs": [],
        "settings": {"C": args.C, "k": args.k, "recency": args.recency},
    }
    for t in (float(v) for v in args.thresholds.split(",")):
        out["runs"].append({"threshold": t, **{name: evaluate(s, oracle, model, hasher, t, args.k, args.recency)
                                              for name, s in (("dev", dev), ("heldout", heldout))}})
    print(json.dumps(out) if args.json else json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
