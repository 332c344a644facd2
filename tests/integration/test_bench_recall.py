"""``memwarden bench recall`` on a small world against the real stack (issue 11, part 2): the grants go
through the gate, every timed recall is a signed call answered by a real worker over HTTP with its
stages in ``Server-Timing``, the JSON has the keys the issue names, and the namespace is dropped.
Speed is not asserted here (the README has the figures)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memwarden.evals.recall_full import STAGES, run_recall_bench
from memwarden.settings import Settings
from tests.integration.conftest import rows

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def result(stack: Settings) -> dict[str, Any]:
    return run_recall_bench(stack, [400], queries=15, k=5, progress=False)


def test_every_grant_is_decided_by_the_gate_and_every_recall_finds_memories(result: dict[str, Any]) -> None:
    (run,) = result["runs"]
    governed = run["governance"]
    assert governed["principals"] == 20 and governed["grants_accepted"] == governed["grants"] > 20
    assert run["queries"] == 15 and run["build"]["memories"] == 400
    assert 0 < run["hits_per_query"] <= 5 and run["queries_with_hits"] > 0.5


def test_the_json_has_the_issue_keys_and_the_stages_account_for_the_call(result: dict[str, Any]) -> None:
    decoded = json.loads(json.dumps(result))
    for key in ("p50_ms", "p95_ms", "worker_rss_mb", "index_build_s"):
        assert isinstance(decoded[key], float), key
    assert 0 < decoded["p50_ms"] <= decoded["p95_ms"]
    shares = decoded["stage_share"]
    assert set(shares) == {*STAGES, "client"}
    assert all(shares[s] > 0 for s in ("auth", "embed", "index", "verify", "audit"))
    assert 0.95 <= sum(shares.values()) <= 1.05 + shares["embed"]  # the embedding overlaps authentication
    assert shares["client"] > 0 and result["runs"][0]["server_p50_ms"] < decoded["p50_ms"]
    assert decoded["worker_rss_mb"] > 50


def test_the_namespace_is_dropped(stack: Settings, result: dict[str, Any]) -> None:
    run = result["runs"][0]
    schema = stack.model_copy(update={"topic_prefix": run["namespace"]}).pg_schema
    assert run["kept"] is False
    assert not rows(stack, "SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
    assert not list_topics(stack, run["namespace"])


def list_topics(settings: Settings, prefix: str) -> list[str]:
    from confluent_kafka.admin import AdminClient

    names = AdminClient({"bootstrap.servers": settings.bootstrap_servers}).list_topics(timeout=10).topics
    return [n for n in names if n.startswith(prefix + ".")]
