"""Per-request stage timings (milliseconds), collected without threading a timer through every call.

A request opens :func:`timed`; code on its path wraps each stage in :func:`stage` ("embed", "index",
"verify", ...). The collector lives in a context variable, so stages run in ``asyncio.to_thread``
(which copies the context) count too, and code outside a timed request pays one ``ContextVar.get``.
:func:`server_timing` renders the W3C ``Server-Timing`` header the read API answers with
(``embed;dur=5.12, index;dur=8.40``), :func:`parse_server_timing` reads it back (the client, the
recall benchmark of issue 11).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

_current: ContextVar[dict[str, float] | None] = ContextVar("memwarden_stage_timings", default=None)


@contextmanager
def timed() -> Iterator[dict[str, float]]:
    """Collect the stages run inside this block (and in threads started from it) into the yielded
    dict: stage name -> milliseconds, summed when a stage runs more than once."""
    found: dict[str, float] = {}
    token = _current.set(found)
    try:
        yield found
    finally:
        _current.reset(token)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Time the block as stage ``name`` of the current :func:`timed` request (no-op outside one)."""
    found = _current.get()
    if found is None:
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        found[name] = found.get(name, 0.0) + (time.perf_counter() - start) * 1000.0


def server_timing(stages: Mapping[str, float]) -> str:
    """The ``Server-Timing`` header value of ``stages`` (ms, two decimals), in insertion order."""
    return ", ".join(f"{name};dur={ms:.2f}" for name, ms in stages.items())


def parse_server_timing(header: str | None) -> dict[str, float]:
    """Stage name -> ms from a ``Server-Timing`` header (metrics without ``dur`` are skipped); ``{}``
    for ``None`` or an empty header. Malformed durations are skipped, never raised."""
    out: dict[str, float] = {}
    for metric in (header or "").split(","):
        name, *params = (part.strip() for part in metric.split(";"))
        for param in params:
            key, _, value = param.partition("=")
            if name and key.strip() == "dur":
                try:
                    out[name] = out.get(name, 0.0) + float(value)
                except ValueError:
                    continue
    return out
