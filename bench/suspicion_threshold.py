"""The suspicion threshold of the trained instruction classifier (``SUSPICION_THRESHOLD`` in
``projections/injection_classifier.py``), reproduced: issue 12, field case 4.

The rule, fixed before the figures were looked at: the highest value on a 0.05 grid below the decision
threshold at which the rules OR a classifier probability at or above it catch >= 99 % of the injected
items of the development set ``memwarden/evals/data/injection_heldout2.jsonl`` (never trained on, so its
scores are out of sample; development data since ``injection_heldout3.jsonl`` was frozen as the report
set). Beside it, the share of the development set's benign items at or above each value, and with
``--locomo``/``--gatemem`` the share of each half of the LoCoMo + GateMem turns (the classifier alone).

Usage: ``python bench/suspicion_threshold.py [--locomo FILE] [--gatemem DIR] [--json]`` (one JSON object
with ``--json``; about 2 minutes with both corpora).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEV = REPO / "memwarden" / "evals" / "data" / "injection_heldout2.jsonl"
GRID = [round(0.05 * i, 2) for i in range(1, 20)]
TARGET = 0.99


def choose(locomo: Path | None, gatemem: Path | None) -> dict[str, Any]:
    """The grid's figures and the value the rule chooses."""
    import numpy as np

    from memwarden.bootstrap import Container
    from memwarden.commands.injection import DEFAULT_DETECTOR as RULES
    from memwarden.evals.false_alarms import benign_turns
    from memwarden.evals.injection_set import load_labelled
    from memwarden.projections.injection_classifier import SUSPICION_THRESHOLD
    from memwarden.settings import Settings

    detector = Container(Settings().model_copy(update={"instruction_detector": "rules+classifier"})) \
        .instruction_detector()
    scorer = detector._scorer  # type: ignore[attr-defined]
    items = load_labelled(DEV)
    p = scorer.scores([i.text for i in items])
    ruled = np.array([RULES.detect(i.text).carries_instructions for i in items])
    injected = np.array([i.label == "injected" for i in items])
    grid = [t for t in GRID if t < scorer.weights.threshold]
    rows: dict[str, dict[str, float]] = {}
    for t in grid:
        caught = ruled | (p >= t)
        rows[f"{t:.2f}"] = {"injected_caught": round(float(caught[injected].mean()), 4),
                            "benign_over": round(float(caught[~injected].mean()), 4)}
    chosen = max((t for t in grid if rows[f"{t:.2f}"]["injected_caught"] >= TARGET), default=None)
    out: dict[str, Any] = {"dev_set": DEV.name, "target": TARGET, "grid": rows, "chosen": chosen,
                           "shipped": SUSPICION_THRESHOLD, "decision_threshold": scorer.weights.threshold}
    if locomo is not None or gatemem is not None:
        turns = benign_turns(locomo, gatemem)
        scores = np.concatenate([scorer.scores([t.text for t in turns[i:i + 256]])
                                 for i in range(0, len(turns), 256)])
        half = np.array([t.half for t in turns])
        out["turns_over"] = {f"{t:.2f}": {h: round(float((scores[half == h] >= t).mean()), 5)
                                          for h in ("calibration", "report")} for t in grid}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--locomo", type=Path)
    ap.add_argument("--gatemem", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = choose(args.locomo, args.gatemem)
    if args.json:
        print(json.dumps(out))
        return
    for t, row in out["grid"].items():
        extra = out.get("turns_over", {}).get(t)
        print(f"{t}: injected caught {row['injected_caught']:.3f}, benign over {row['benign_over']:.3f}"
              + (f", turns over {extra['report']:.5f} (report half)" if extra else ""))
    print(f"chosen {out['chosen']} (shipped {out['shipped']})")


if __name__ == "__main__":
    main()
