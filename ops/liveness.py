"""Liveness of a supervised worker beyond "the process runs" (issue 13's "never a live process with a
dead agent", extended to a *stalled* one). A Kafka consumer can stop fetching after a broker outage while
its process, its HTTP endpoints and its agent all look alive (faust-streaming issues #175 and #523: after
the coordinator comes back, "nothing is consumed, the offset never advances"); the gate then decides
nothing and every write waits. The worker's ``/ready`` already says so (``oldest_undecided_s`` past
``MAX_UNDECIDED_S``); :func:`stall_reason` turns it into a decision the supervisor acts on (a fresh worker
process: a new consumer, a new group membership), the way a liveness probe does.

:func:`stall_reason` is pure; :func:`ready_probe` is the HTTP wiring the supervisor calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

#: Default seconds a command may wait while the gate completes no batch before the worker is restarted
#: (``MEMWARDEN_STALL_S``; 0 turns the probe off).
DEFAULT_STALL_S = 300.0


def stall_reason(ready: Mapping[str, Any], now_s: float, stall_s: float) -> str | None:
    """Why the worker whose ``/ready`` body is ``ready`` is stalled, or ``None``.

    Stalled means all of: the database and the broker answer (``"database"`` and ``"broker"`` are ``True``:
    an outage is the agents' own retry's business), the gate agent reports ``running`` (not retrying, not
    crashed: a crash ends the process anyway), the oldest command the gate has not decided waited more than
    ``stall_s`` seconds (``oldest_undecided_s``), and the gate's last batch (``last_progress_at``, epoch
    seconds, else never) is more than ``stall_s`` seconds before ``now_s``. A slow gate that still completes
    batches, a quiet one with nothing waiting, and a worker without the gate role are never stalled.
    ``stall_s <= 0`` turns the check off."""
    if stall_s <= 0 or ready.get("database") is not True or ready.get("broker") is not True:
        return None
    gate = (ready.get("agents") or {}).get("gate")
    if not isinstance(gate, Mapping) or gate.get("state") != "running":
        return None
    oldest = ready.get("oldest_undecided_s")
    if not isinstance(oldest, int | float) or oldest <= stall_s:
        return None
    last = gate.get("last_progress_at")
    idle = now_s - last if isinstance(last, int | float) else None
    if idle is not None and idle <= stall_s:
        return None
    since = "no batch since it started" if idle is None else f"its last batch {idle:.0f} s ago"
    return (f"the gate is stalled: the oldest undecided command waited {oldest:.0f} s, {since} "
            f"(database and broker answer; limit {stall_s:.0f} s)")


#: Seconds a stall must be seen without a break before it counts (right after a long outage the gate
#: needs a moment to rejoin its group and take its first batch).
CONFIRM_S = 60.0


class StallWatch:
    """A stall that lasts: :meth:`observe` returns the reason only once it has been seen on every probe
    for ``confirm_s`` seconds (any answer without it starts over). Pure (times are passed in)."""

    def __init__(self, confirm_s: float = CONFIRM_S) -> None:
        self.confirm_s = confirm_s
        self._since: float | None = None

    def observe(self, reason: str | None, now_s: float) -> str | None:
        """The reason to act on at ``now_s`` (seconds) given this probe's ``reason``, else ``None``."""
        if reason is None:
            self._since = None
            return None
        if self._since is None:
            self._since = now_s
        seen = now_s - self._since
        return f"{reason}; seen for {seen:.0f} s" if seen >= self.confirm_s else None


def ready_probe(url: str, stall_s: float, timeout_s: float = 10.0,
                confirm_s: float = CONFIRM_S) -> Callable[[], str | None]:
    """A probe for :class:`~memwarden.ops.supervisor.Supervisor`: ``GET {url}/ready`` and
    :func:`stall_reason` of its body, acted on once it has held for ``confirm_s`` seconds
    (:class:`StallWatch`). A worker that does not answer, or answers something that is not a ``/ready``
    body, is not judged (``None``, and the watch starts over): starting, or busy; its exit is the
    supervisor's other signal."""
    watch = StallWatch(confirm_s)

    def probe() -> str | None:
        try:
            body = httpx.get(f"{url}/ready", timeout=timeout_s).json()
        except (httpx.HTTPError, ValueError):
            body = None
        now = time.time()
        return watch.observe(stall_reason(body, now, stall_s) if isinstance(body, dict) else None, now)

    return probe


__all__ = ["CONFIRM_S", "DEFAULT_STALL_S", "StallWatch", "ready_probe", "stall_reason"]
