"""``memwarden repair`` and ``memwarden eval repair`` (issue 14 part 4). Placeholder: being built."""

from __future__ import annotations

import typer


def repair() -> None:
    """Selective repair through lineage (not built yet)."""
    raise typer.Exit(2)


def eval_repair() -> None:
    """Repair evaluation (not built yet)."""
    raise typer.Exit(2)
