"""Unit tests for :mod:`memwarden.evals.peers_score` (the pure figures of ``memwarden bench peers``) and the
pure parts of :mod:`memwarden.evals.peers` (its Mem0 configuration and LLM guard)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memwarden.evals.locomo_data import RecallTable, turn_recall
from memwarden.evals.peers import UNUSED_LLM_URL, NoLLM, mem0_config
from memwarden.evals.peers_score import (
    DIRECTIONS,
    compare,
    figures_from_locomo,
    latency_ms,
    percentile,
    ranked_dia_ids,
    recall_key,
    system_figures,
)


def test_percentile_is_nearest_rank_like_eval_locomo() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 51.0  # round(0.5 * 99) = 50 (banker's rounding) -> 51st value
    assert percentile(values, 0.95) == 95.0
    assert percentile([3.0, 1.0, 2.0], 1.0) == 3.0
    assert percentile([], 0.95) == 0.0
    with pytest.raises(ValueError):
        percentile([1.0], 1.5)


def test_latency_ms_median_and_p95_rounded() -> None:
    assert latency_ms([1.0, 2.0, 3.0, 4.0]) == {"p50": 2.5, "p95": 4.0}
    assert latency_ms([10.123456]) == {"p50": 10.12, "p95": 10.12}
    assert latency_ms([]) == {"p50": 0.0, "p95": 0.0}


def test_ranked_dia_ids_keeps_order_and_blanks_missing_metadata() -> None:
    results = [{"metadata": {"dia_id": "D2:3"}}, {"memory": "no metadata"}, {"metadata": {"dia_id": "D1:1"}},
               {"metadata": None}]
    assert ranked_dia_ids(results) == ["D2:3", "", "D1:1", ""]
    assert ranked_dia_ids([]) == []


def test_mem0_hits_scored_like_memwarden_ones() -> None:
    """The same ranked ids give the same recall whichever system returned them."""
    table = RecallTable((10,), turn_recall)
    hits = [{"metadata": {"dia_id": d}} for d in ("D1:2", "D9:9", "D1:5")]
    table.add(4, ("D1:2", "D1:3"), ranked_dia_ids(hits))
    table.add(1, ("D1:5",), ranked_dia_ids(hits))
    table.add(2, (), [])  # no gold evidence: skipped by both systems
    assert table.result() == {10: {"1": 1.0, "4": 0.5, "all": 0.75}}
    assert table.skipped == 1


def test_system_figures() -> None:
    fig = system_figures(419, 10.0, [10.0, 20.0, 30.0], {10: {"1": 0.5, "all": 0.4}}, 10)
    assert fig == {"ingest_per_s": 41.9, "recall_p50_ms": 20.0, "recall_p95_ms": 30.0, "recall_at_10": 0.4,
                   "recall_by_category": {"1": 0.5, "all": 0.4}}
    assert system_figures(1, 1.0, [], {}, 5)["recall_at_5"] == 0.0
    with pytest.raises(ValueError):
        system_figures(1, 0.0, [], {}, 10)


def test_figures_from_locomo_reads_the_eval_json() -> None:
    result = {"ingest_per_s": 71.0, "recall_ms": {"p50": 12.2, "p95": 17.1},
              "recall_at_k": {"10": {"1": 0.4, "all": 0.698}}}
    fig = figures_from_locomo(result, 10)
    assert fig["ingest_per_s"] == 71.0 and fig["recall_p50_ms"] == 12.2 and fig["recall_p95_ms"] == 17.1
    assert fig["recall_at_10"] == 0.698 and fig["recall_by_category"] == {"1": 0.4, "all": 0.698}
    with pytest.raises(KeyError):
        figures_from_locomo(result, 5)


def _fig(ingest: float, p50: float, p95: float, recall: float) -> dict[str, float]:
    return {"ingest_per_s": ingest, "recall_p50_ms": p50, "recall_p95_ms": p95, "recall_at_10": recall}


def test_compare_ratios_are_memwarden_over_peer_with_directions() -> None:
    out = compare(_fig(100.0, 10.0, 20.0, 0.7), _fig(50.0, 20.0, 20.0, 0.35))
    assert out["ratios"] == {"ingest_per_s": 2.0, "recall_p50_ms": 0.5, "recall_p95_ms": 1.0, "recall_at_10": 2.0}
    assert set(out["better"]) == set(DIRECTIONS)
    assert out["better"]["recall_p50_ms"].startswith("lower") and out["better"]["ingest_per_s"].startswith("higher")
    assert out["goals"] == {"recall_at_10_higher": True, "ingest_per_s_no_worse": True,
                            "recall_p50_ms_no_worse": True, "all_met": True}


def test_compare_goals_ties_and_losses() -> None:
    tie = compare(_fig(50.0, 16.0, 20.0, 0.4), _fig(50.0, 16.0, 19.0, 0.4))["goals"]
    assert tie["ingest_per_s_no_worse"] and tie["recall_p50_ms_no_worse"]
    assert not tie["recall_at_10_higher"] and not tie["all_met"]  # recall must be strictly higher
    loss = compare(_fig(40.0, 17.0, 20.0, 0.7), _fig(50.0, 16.0, 19.0, 0.4))["goals"]
    assert not loss["ingest_per_s_no_worse"] and not loss["recall_p50_ms_no_worse"] and loss["recall_at_10_higher"]


def test_compare_zero_peer_figure_gives_no_ratio_and_other_k() -> None:
    out = compare({**_fig(1.0, 1.0, 1.0, 0.0), "recall_at_5": 0.5}, {**_fig(0.0, 1.0, 1.0, 0.0), "recall_at_5": 0.25},
                  k=5)
    assert out["ratios"]["ingest_per_s"] is None and out["ratios"][recall_key(5)] == 2.0
    assert "recall_at_5_higher" in out["goals"]


def test_mem0_config_is_local_and_llm_free(tmp_path: Path) -> None:
    cfg = mem0_config(tmp_path, Path("/models/all-MiniLM-L6-v2"))
    assert cfg["embedder"] == {"provider": "huggingface", "config": {
        "model": "/models/all-MiniLM-L6-v2", "embedding_dims": 384, "model_kwargs": {"device": "cpu"}}}
    store = cfg["vector_store"]
    assert store["provider"] == "qdrant" and store["config"]["path"] == str(tmp_path / "qdrant")
    assert "url" not in store["config"] and "host" not in store["config"]
    assert cfg["history_db_path"] == str(tmp_path / "history.db")
    assert cfg["llm"]["config"]["openai_base_url"] == UNUSED_LLM_URL


def test_no_llm_counts_and_refuses() -> None:
    guard = NoLLM()
    with pytest.raises(RuntimeError, match="infer=False"):
        guard.generate_response(messages=[])
    assert guard.calls == 1
