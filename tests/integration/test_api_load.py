"""``memwarden eval api-load`` end to end (issue 10 part 5), small: concurrent HTTP clients against a
real ``memwarden serve`` subprocess on loopback; every acknowledged write is decided, every accepted
memory recallable through the API, no error but the intended refusals, each answered as intended."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_eval_api_load_loses_nothing_and_errs_nowhere() -> None:
    cli = Path(sys.executable).with_name("memwarden")
    done = subprocess.run([str(cli), "eval", "api-load", "--clients", "8", "--duration", "15", "--json"],
                          capture_output=True, text=True, timeout=600)
    assert done.stdout, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["acknowledged"] > 0 and result["live_memories"] > 0
    assert result["lost"] == 0 and result["unrecallable"] == 0, result
    assert result["unexpected_errors"] == 0, result["unexpected_samples"]
    assert result["decided"] == result["acknowledged"]
    for endpoint in ("record", "record_wait", "supersede", "recall", "forget", "decision"):
        figures = result["endpoints"][endpoint]
        assert figures["count"] > 0 and figures["p50_ms"] <= figures["p95_ms"] <= figures["p99_ms"], endpoint
    assert result["intended_refusals"], "no intended refusal was sent"
    for kind, refusal in result["intended_refusals"].items():
        assert refusal["as_expected"] == refusal["count"], (kind, refusal)
    assert result["passed"] and done.returncode == 0
