"""``memwarden bench``: benchmarks that print JSON (``--json``) so runs can be compared (issue 11)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from memwarden.errors import MemwardenError
from memwarden.settings import Settings

bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks, with --json for run-to-run comparison.")
_console = Console(stderr=True)

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
        _console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from exc
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        render(result, Console())
