"""``memwarden eval forgetting`` (issue 14 "done when"). Placeholder: being built."""

from __future__ import annotations

import typer


def eval_forgetting() -> None:
    """Forgetting evaluation (not built yet)."""
    raise typer.Exit(2)
