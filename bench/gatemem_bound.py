"""GateMem: the highest utility any exposure-free read policy can reach, from the benchmark's own checkpoints.

Not a test, not a retriever: an analysis of the data. It uses the hidden fields (``include``,
``not_include``, ``leak_targets``), which is why it lives in ``bench/`` and never feeds the mapping.

A read policy is *exposure-free* for a principal A if no record A may read holds a string that a privacy
checkpoint asked by A forbids, from the time that record exists to the time of the checkpoint (the
standard ``bench/gatemem_offline.py`` holds the mapping to: "exposures" at any rank, not only in the top
k). Under that standard a record (one turn, its text as spoken) is *safe for A* when no privacy checkpoint
of A asked as of that turn or later forbids a pattern it matches (``gatemem_score.pattern_hits``, the
scorer's own matching). A utility checkpoint of A asked as of turn U can then pass at best if every one of
its ``include`` patterns occurs in some record up to U that is safe for A. The bound is optimistic: it
ignores k (any number of records may hold the answer), the ranking, forgetting (redaction could make a
record safe, a forget could remove the only source) and the mapping's need to decide from text alone.

``--relaxed`` drops the answer-level patterns ``yes`` / ``no`` (a record saying "no office access" matches
"no") from the forbidden strings, to show how much of the bound they account for.

Usage::

    .venv/bin/python bench/gatemem_bound.py --data ../shared/data/gatemem [--domains office education household]
        [--split all|dev|heldout] [--relaxed] [--json]

Output: per domain and over all, the utility checkpoints, how many pass the bound, the bound (their share),
and the utility checkpoints that fail it only because of a forbidden string (``blocked_by_privacy``) as
against a gold string stated in no record up to the checkpoint (``absent``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memwarden.evals.gatemem_data import DOMAINS, DomainData
from memwarden.evals.gatemem_loader import SPLITS, load_domain, select_split
from memwarden.evals.gatemem_score import pattern_hits

ANSWER_LEVEL = frozenset({"yes", "no"})


def domain_bound(dd: DomainData, relaxed: bool = False) -> dict[str, int]:
    """``{"utility": n, "pass": passing the bound, "blocked_by_privacy": n, "absent": n}`` for one domain."""
    forbidding: dict[tuple[str, str], list[tuple[int, tuple[str, ...]]]] = {}
    for q in dd.queries:
        j = dd.judgements[q.checkpoint_id]
        if j.query_type != "privacy":
            continue
        patterns = tuple(p for p in (*j.not_include, *j.leak_targets)
                         if not (relaxed and p.strip().lower() in ANSWER_LEVEL))
        at = dd.episodes[q.episode_id].turn_index(q.as_of_turn_id)
        forbidding.setdefault((q.episode_id, q.asker_id), []).append((at, patterns))
    out = {"utility": 0, "pass": 0, "blocked_by_privacy": 0, "absent": 0}
    for q in dd.queries:
        j = dd.judgements[q.checkpoint_id]
        if j.query_type != "utility":
            continue
        out["utility"] += 1
        episode = dd.episodes[q.episode_id]
        upto = episode.turn_index(q.as_of_turn_id)
        turns = episode.turns[: upto + 1]
        rules = forbidding.get((q.episode_id, q.asker_id), [])

        def safe(index: int, text: str, rules: list[tuple[int, tuple[str, ...]]] = rules) -> bool:
            return not any(at >= index and any(pattern_hits(text, p) for p in patterns) for at, patterns in rules)

        stated = [any(pattern_hits(t.text, p) for t in turns) for p in j.include]
        if not all(stated):
            out["absent"] += 1
            continue
        if all(any(pattern_hits(t.text, p) and safe(t.index, t.text) for t in turns) for p in j.include):
            out["pass"] += 1
        else:
            out["blocked_by_privacy"] += 1
    return out


def run(data: Path, domains: Sequence[str], split: str, relaxed: bool) -> dict[str, Any]:
    """The bound per domain and over all (``bound`` = ``pass`` / ``utility``)."""
    per: dict[str, Any] = {}
    total = {"utility": 0, "pass": 0, "blocked_by_privacy": 0, "absent": 0}
    for domain in domains:
        counts = domain_bound(select_split(load_domain(data, domain), split), relaxed)
        per[domain] = {**counts, "bound": round(counts["pass"] / max(1, counts["utility"]), 4)}
        for key in total:
            total[key] += counts[key]
    return {"split": split, "relaxed": relaxed, "by_domain": per, **total,
            "bound": round(total["pass"] / max(1, total["utility"]), 4)}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--domains", nargs="+", default=list(DOMAINS))
    ap.add_argument("--split", choices=SPLITS, default="all")
    ap.add_argument("--relaxed", action="store_true", help="ignore the answer-level patterns yes / no")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    result = run(args.data, args.domains, args.split, args.relaxed)
    if args.json:
        print(json.dumps(result))
    else:
        for domain, row in result["by_domain"].items():
            print(f"{domain:<10} utility {row['utility']:>4}  pass {row['pass']:>4}  blocked by privacy "
                  f"{row['blocked_by_privacy']:>4}  absent {row['absent']:>3}  bound {row['bound']:.3f}")
        print(f"{'all':<10} utility {result['utility']:>4}  pass {result['pass']:>4}  blocked by privacy "
              f"{result['blocked_by_privacy']:>4}  absent {result['absent']:>3}  bound {result['bound']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
