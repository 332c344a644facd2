"""``memwarden eval forgetting`` at a small size against the real broker, Postgres, index and worker
(issue 14 "done when"): every forgetting path makes its memories unreadable within the goal, with a
complete receipt each, kept memories stay readable, shredded keys leave the disk within the bound,
and the byte-for-byte scan of every data folder finds its canaries and no memory text."""

from __future__ import annotations

from typing import Any

import pytest

from memwarden.evals.forgetting_eval import run_forgetting
from memwarden.evals.forgetting_eval_plan import (
    EXPIRY,
    GOAL_P99_MS,
    KEPT,
    LINEAGE,
    PATHS,
    PRUNING,
    prune_command,
)
from memwarden.settings import Settings

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def result(stack: Settings) -> dict[str, Any]:
    return run_forgetting(stack, memories=24, progress=False)


def test_every_path_forgets_within_the_goal_with_receipts_and_kept_memories_stay(result: dict[str, Any]) -> None:
    assert result["not_readable_before_forget"] == 0  # no unreadable check passes vacuously
    assert result["readable_after_forget"] == 0
    assert result["receipts_complete"] == 1.0
    assert result["legitimate_kept"] == 1.0
    latency = result["forget_to_unreadable_ms"]
    assert latency["unmeasured"] == 0 and latency["n"] >= 9 and latency["p99"] <= GOAL_P99_MS, latency
    assert result["decisions_not_as_expected"] == []
    paths = result["paths"]
    for path in PATHS:
        if path == PRUNING and prune_command() is None:
            assert paths[path]["memories"] == 0 and paths[path]["how"].startswith("not built"), paths[path]
            continue
        row = paths[path]
        assert row["memories"] >= 1 and row["forgotten"] == row["memories"] == row["receipts"], (path, row)
        assert row["readable_at_end"] == 0, (path, row)
        assert row["forgets"] >= 1 or path == LINEAGE, (path, row)
    assert paths[EXPIRY]["forgets"] >= 1
    assert paths[KEPT]["forgotten"] == 0 and paths[KEPT]["readable_at_end"] == paths[KEPT]["memories"]
    hold = result["legal_hold"]
    assert hold["forget_outcome"] == "DEFERRED" and hold["readable_while_held"]
    expiry = result["expiry"]
    assert expiry["readable_just_before"] and expiry["readable_long_after_expiry"] == 0, expiry
    assert 0 <= expiry["unreadable_after_expires_at_ms"] <= GOAL_P99_MS, expiry  # the read filter, not the sweep


def test_shredded_keys_leave_the_disk_and_the_scan_finds_its_canaries_and_no_kept_text(result: dict[str, Any]) -> None:
    keys = result["keys"]
    assert keys["forgotten_keys"] > 0 and keys["forgotten_keys_on_disk"] == 0, keys
    assert keys["kept_keys_on_disk"] == keys["kept_keys"] > 0, keys  # the key scan sees live keys
    assert keys["left_disk_s_after_last_forget"] <= keys["bound_s"]
    scan = result["scan"]
    assert all(scan["canaries"].values()), scan["canaries"]  # raw files, Kafka records, WAL, rows, a temp file
    assert scan["areas"]["kafka_records"]["segments"] > 0 and scan["areas"]["postgres_rows"]["rows"] > 0
    assert scan["dead_letter_dirs"] >= 1 and scan["areas"]["postgres_data"]["files"] > 0
    assert scan["found"]["kept"] == 0, scan["survivals"]


def test_no_plaintext_of_a_forgotten_memory_survives(result: dict[str, Any]) -> None:
    assert result["plaintext_survivals"] == 0, result["scan"]["survivals"]
    assert result["goals"] and result["passed"], result["goals"]
