"""``memwarden forget`` and ``memwarden hold place | lift`` (issue 14 part 3). Placeholder: being built."""

from __future__ import annotations

import typer

hold_app = typer.Typer(no_args_is_help=True, help="Legal holds: forgets of held memories wait until lifted.")


def forget() -> None:
    """Forget memories (not built yet)."""
    raise typer.Exit(2)
