"""``memwarden eval chaos`` end to end (issue 13 "done when"), on its own private stack: the broker,
PostgreSQL, the gate worker and the projector worker are each killed with SIGKILL under load and
restarted; nothing acknowledged is lost, duplicated or left undecided, every accepted memory is
recallable, and no ``/ready`` said ready while a component it needs was down."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_eval_chaos_loses_nothing_and_health_never_lies() -> None:
    cli = Path(sys.executable).with_name("memwarden")
    done = subprocess.run([str(cli), "eval", "chaos", "--duration", "60", "--outage", "3", "--json"],
                          capture_output=True, text=True, timeout=900)
    result = json.loads(done.stdout)
    assert set(result["faults"]) == {"broker", "postgres", "gate", "projector"}
    for name, fault in result["faults"].items():
        assert fault["acknowledged"] > 0, name
        for goal in ("lost", "duplicated", "undecided_after_recovery", "unrecallable", "health_false_ok_s"):
            assert fault[goal] == 0, (name, goal, fault)
        assert fault["recovery_s"] is not None, name
    assert result["faults"]["postgres"]["read_error_rate"] >= 0.5  # reads during the outage answer 503
    assert result["totals"]["live_memories"] > 0 and result["passed"] and done.returncode == 0
