"""How an evaluation command ends: its figures as one JSON object (``--json``) or its own rendering,
then exit 1 when a goal was not met (``result["passed"]`` false)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import typer
from rich.console import Console


def report(result: Mapping[str, Any], as_json: bool, render: Callable[[Any, Console], None]) -> None:
    """Print ``result`` (JSON, values that are not JSON as strings) or ``render`` it; raises
    ``typer.Exit(1)`` when ``result["passed"]`` is false."""
    import json

    if as_json:
        print(json.dumps(result, indent=2, default=str))
    else:
        render(result, Console())
    if not result["passed"]:
        raise typer.Exit(1)
