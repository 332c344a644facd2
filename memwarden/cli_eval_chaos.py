"""``memwarden eval chaos`` (issue 13 "done when"): kill and restart each component under load on a
private stack and check that nothing was lost, duplicated or left undecided
(:mod:`memwarden.evals.chaos`)."""

from __future__ import annotations

from typing import Annotated

import typer


def eval_chaos(
    duration: Annotated[float, typer.Option(help="seconds of load over all faults (60-1800)")] = 180.0,
    outage: Annotated[float, typer.Option(help="seconds each component stays down")] = 6.0,
    fault: Annotated[list[str] | None, typer.Option(help="broker, postgres, gate, projector (default all, in turn)")]
    = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    keep: Annotated[bool, typer.Option(help="keep the private stack's folder (logs, data)")] = False,
) -> None:
    """SIGKILL the broker, PostgreSQL, the gate worker and the projector worker in turn under a steady
    load on a private loopback stack, restart each, and report per fault lost, duplicated, undecided
    and unrecallable commands, recovery time, false readiness and the read error rate. Exits 1 when
    a zero goal is not met."""
    from memwarden.cli_results import report
    from memwarden.errors import MemwardenError
    from memwarden.evals.chaos import render, run_chaos
    from memwarden.evals.chaos_stack import COMPONENTS
    from memwarden.settings import Settings

    try:
        result = run_chaos(Settings(), duration_s=duration, outage_s=outage, faults=tuple(fault or COMPONENTS),
                           keep=keep, progress=not as_json)
    except (MemwardenError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    report(result, as_json, render)
