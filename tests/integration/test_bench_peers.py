"""``memwarden bench peers`` on the small shipped conversation against the real stack and the Mem0
library (issue 11, part 4): both systems get every turn and every question, Mem0 never calls an LLM,
and the JSON carries the keys the issue names. Speed is not asserted here (the README has the figures)."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest

from memwarden.evals.locomo import sample_path
from memwarden.evals.locomo_data import load_conversations
from memwarden.settings import Settings

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("mem0") is None,
                       reason='mem0ai is not installed (optional group: pip install -e ".[peers]")'),
]

FIGURES = ("ingest_per_s", "recall_p50_ms", "recall_p95_ms", "recall_at_10")


@pytest.fixture(scope="module")
def result(stack: Settings) -> dict[str, Any]:
    from memwarden.evals.peers import run_peers

    return run_peers(stack, sample_path(), None, 10, progress=False)


def test_both_systems_get_the_same_turns_and_questions(result: dict[str, Any]) -> None:
    (conv,) = load_conversations(sample_path())
    ours, peer = result["memwarden"], result["mem0"]
    assert ours["turns"] == peer["turns"] == len(conv.turns)
    assert ours["ingested"] == peer["stored"] == len(conv.turns) and ours["rejected"] == 0
    assert ours["questions"] == peer["questions"] and ours["recall_calls"] == peer["recall_calls"] > 0
    assert peer["llm_calls"] == 0 and peer["config"]["infer"] is False and peer["config"]["telemetry"] is False


def test_json_has_the_issue_keys(result: dict[str, Any]) -> None:
    decoded = json.loads(json.dumps(result))
    for system in ("memwarden", "mem0"):
        for key in FIGURES:
            assert isinstance(decoded[system][key], float), (system, key)
        assert 0.0 <= decoded[system]["recall_at_10"] <= 1.0
    assert set(decoded["ratios"]) == set(FIGURES) and decoded["k"] == 10
