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


def ready_probe(url: str, stall_s: float, timeout_s: float = 10.0) -> Callable[[], str | None]:
    """A probe for :class:`~memwarden.ops.supervisor.Supervisor`: ``GET {url}/ready`` and
    :func:`stall_reason` of its body. A worker that does not answer, or answers something that is not
    a ``/ready`` body, is not judged (``None``): starting, or busy; its exit is the supervisor's
    other signal."""
    def probe() -> str | None:
        try:
            body = httpx.get(f"{url}/ready", timeout=timeout_s).json()
        except (httpx.HTTPError, ValueError):
            return None
        return stall_reason(body, time.time(), stall_s) if isinstance(body, dict) else None

    return probe


__all__ = ["DEFAULT_STALL_S", "ready_probe", "stall_reason"]
