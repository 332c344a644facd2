"""``memwarden bench``: benchmarks that print JSON (``--json``) so runs can be compared (issue 11)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from memwarden.cli_ledger import fail
from memwarden.errors import MemwardenError
from memwarden.settings import Settings

bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks, with --json for run-to-run comparison.")

#: Where ``make demo`` and the README expect the LoCoMo file.
DEFAULT_LOCOMO = Path("../shared/data/locomo/locomo7.json")


@bench_app.command("peers")
def bench_peers(
    data: Annotated[Path, typer.Option(help="LoCoMo JSON file")] = DEFAULT_LOCOMO,
    conversations: Annotated[str | None, typer.Option(help="comma-separated sample ids, e.g. conv-26")] = None,
    k: Annotated[int, typer.Option(help="recall cut-off, the same for both systems")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    keep: Annotated[bool, typer.Option(help="keep memwarden's evaluation namespace")] = False,
) -> None:
    """The same LoCoMo turns through memwarden and through Mem0 (infer=False, same MiniLM weights):
    ingest/s, recall p50/p95 ms, recall@k and the ratios memwarden/Mem0. Needs the optional dependency
    group named peers (mem0ai; see the README)."""
    from memwarden.evals.peers import render, run_peers

    ids = [c.strip() for c in conversations.split(",") if c.strip()] if conversations else None
    try:
        result = run_peers(Settings(), data, ids, k, keep=keep, progress=not as_json)
    except (MemwardenError, ValueError, FileNotFoundError) as exc:
        fail(exc)
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        render(result, Console())


@bench_app.command("recall")
def bench_recall(
    sizes: Annotated[str, typer.Option(help="comma-separated memory counts, e.g. 100000,1000000")] = "10000,100000",
    queries: Annotated[int, typer.Option(help="timed recalls per size (after 20 warm-up ones)")] = 300,
    k: Annotated[int, typer.Option(help="memories per recall")] = 10,
    seed: Annotated[int, typer.Option(help="seed of the synthetic world")] = 20250601,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    keep: Annotated[bool, typer.Option(help="keep each size's namespace (topics, schema, index)")] = False,
) -> None:
    """Recall as a user pays it: signed recalls through the client and the worker's HTTP read API
    (authentication, grants, the filter inside the hybrid query, Postgres verification, decryption,
    the audit append) over a synthetic world of each size, every filter on; p50/p95 ms at the client,
    each stage's share (Server-Timing), the worker's resident memory and the index build time.
    Brings nothing up: run `memwarden stack up` first."""
    from memwarden.evals.recall_full import run_recall_bench

    try:
        counts = [int(x) for x in sizes.split(",") if x.strip()]
        result = run_recall_bench(Settings(), counts, queries, k, seed, progress=not as_json, keep=keep)
    except (MemwardenError, ValueError) as exc:
        fail(exc)
    if as_json:
        print(json.dumps(result, indent=2))
        return
    for run in result["runs"]:
        shares = ", ".join(f"{name} {share:.0%}" for name, share in run["stage_share"].items() if share >= 0.01)
        Console().print(f"{run['size']:>9,} memories: p50 {run['p50_ms']} ms, p95 {run['p95_ms']} ms"
                        f" (worker {run['server_p50_ms']} ms at p50); {shares}; worker RSS {run['worker_rss_mb']} MB;"
                        f" index build {run['build']['index_build_s']} s; {run['hits_per_query']} hits per query")
