"""``memwarden eval forgetting`` (issue 14 "done when"): every forgetting path through the real
pipeline, then a byte-for-byte scan of every data folder (:mod:`memwarden.evals.forgetting_eval`)."""

from __future__ import annotations

from typing import Annotated

import typer


def eval_forgetting(
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    keep: Annotated[bool, typer.Option(help="keep the evaluation namespace (topics, schema, index)")] = False,
    memories: Annotated[int, typer.Option(help="memories in the workload (20-200)")] = 60,
) -> None:
    """Forget by id, query, tags, scope, source, subject, legal hold, repair, lineage and expiry; time
    forget → unreadable, check receipts, then scan every data folder for forgotten and kept text.
    Exits 1 when a goal is not met."""
    from memwarden.cli_results import report
    from memwarden.errors import MemwardenError
    from memwarden.evals.forgetting_eval import render, run_forgetting
    from memwarden.settings import Settings

    try:
        result = run_forgetting(Settings(), memories=memories, keep=keep, progress=not as_json)
    except (MemwardenError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    report(result, as_json, render)
