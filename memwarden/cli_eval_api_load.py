"""``memwarden eval api-load`` (issue 10 part 5): concurrent HTTP clients against a real ``memwarden
serve`` on loopback for a bounded time; every acknowledged write must be decided and every accepted
memory recallable, with no error but the intended refusals (:mod:`memwarden.evals.api_load`)."""

from __future__ import annotations

from typing import Annotated

import typer


def eval_api_load(
    clients: Annotated[int, typer.Option(help="concurrent API clients, one principal and token each (1-500)")] = 50,
    duration: Annotated[float, typer.Option(help="seconds of load (5-1800)")] = 60.0,
    settle: Annotated[float, typer.Option(help="at most this many seconds for the last decisions and the"
                                          " recall checks")] = 120.0,
    think: Annotated[float, typer.Option(help="mean seconds a client pauses between requests (0: none)")] = 0.0,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    keep: Annotated[bool, typer.Option(help="keep the namespace and the principals' key files")] = False,
) -> None:
    """Start `memwarden serve` for a fresh evaluation namespace on a free loopback port, run CLIENTS
    concurrent clients mixing records (some ?wait=true), supersessions, recalls, forgets, decision
    lookups and a few intended refusals for DURATION seconds, then check that every acknowledged write
    was decided and every accepted memory is recallable. Prints throughput and p50/p95/p99 latency
    per endpoint; exits 1 when anything was lost, unrecallable or unexpectedly refused or failed."""
    from memwarden.cli_results import report
    from memwarden.errors import MemwardenError
    from memwarden.evals.api_load import render, run_api_load
    from memwarden.settings import Settings

    try:
        result = run_api_load(Settings(), clients=clients, duration_s=duration, settle_s=settle, think_s=think,
                              keep=keep, progress=not as_json)
    except (MemwardenError, ValueError, RuntimeError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    report(result, as_json, render)
