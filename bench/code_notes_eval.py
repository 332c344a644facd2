"""The short-note reading of codes (``#codes``, issue 12 field case 4: false alarms) on its blind set.

Not a test. Scores ``bench/data/code_notes_heldout.jsonl`` (300 texts holding a code, 200 benign and 100
injected; see its ``.md``) with the gate's default instruction detector as it is (``new``) and with the
classifiers' evidence read as their plain probability (``old``: what the detector did before ``#codes``),
and prints, for each, injections found, benign texts flagged (quarantined) and benign texts suspect.

Usage::

    .venv/bin/python bench/code_notes_eval.py [--data PATH] [--json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from memwarden.bootstrap import Container
from memwarden.projections.injection_classifier import CombinedDetector
from memwarden.settings import Settings

DATA = Path(__file__).resolve().parent / "data" / "code_notes_heldout.jsonl"


def _plain(detector: CombinedDetector) -> None:
    """Make ``detector`` (and the combined detector inside it) decide on the plain probability."""
    inner = detector
    while isinstance(inner, CombinedDetector):
        inner.evidence = (lambda d: lambda text: d.score(text) if text.strip() else 0.0)(inner)  # type: ignore[method-assign]
        inner = inner._rules  # type: ignore[assignment]


def score(detector: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts and rates of one detector over ``rows``: ``found`` of the injected, ``flagged`` and
    ``suspect`` of the benign, precision and recall, and the ids of the benign texts flagged."""
    found = detected = flagged = suspect = 0
    flagged_ids = []
    for row in rows:
        d = detector.detect(row["text"])
        if row["label"] == "injected":
            found += bool(d.findings)
        else:
            flagged += bool(d.findings)
            suspect += d.suspect
            if d.findings:
                flagged_ids.append(row["id"])
        detected += bool(d.findings)
    injected = sum(r["label"] == "injected" for r in rows)
    benign = len(rows) - injected
    return {"injected": injected, "found": found, "recall": round(found / max(injected, 1), 3),
            "benign": benign, "flagged": flagged, "flagged_rate": round(flagged / max(benign, 1), 3),
            "suspect": suspect, "precision": round(found / max(detected, 1), 3), "flagged_ids": flagged_ids}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    rows = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines() if line.strip()]
    detector = Container(Settings()).instruction_detector()
    if not isinstance(detector, CombinedDetector):
        raise SystemExit("the configured instruction detector has no classifier: nothing to compare")
    detector.prime([r["text"] for r in rows])
    out: dict[str, Any] = {"data": str(args.data), "detector": detector.version, "new": score(detector, rows)}
    _plain(detector)
    out["old"] = score(detector, rows)
    if args.json:
        print(json.dumps(out))
        return
    for name in ("old", "new"):
        r = out[name]
        print(f"{name}: injections found {r['found']}/{r['injected']}, benign flagged {r['flagged']}/{r['benign']}"
              f" ({r['flagged_rate']}), benign suspect {r['suspect']}")


if __name__ == "__main__":
    main()
