"""Reconnect, don't die (issue 13 part 1-2): a batch interrupted by a lost database connection is
retried from its start after reconnecting, with bounded exponential backoff; the transactional gate
and projections make the retry idempotent (a redelivered position re-sends its stored records, an
applied event is dropped). Past the give-up time the error propagates: the agent crashes, and the
worker's crashing supervisor makes the process exit non-zero so that its process manager starts a
fresh one — never a live process with a dead agent. Timers log an outage and try again next tick.

:class:`Health` is what the agents report (running, or retrying since when and why), read by the
worker's ``/ready``."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from confluent_kafka import KafkaException

from memwarden.stores.pg import DB_ERRORS

log = logging.getLogger("memwarden.resilience")
T = TypeVar("T")
#: Errors a timer survives (database or broker unavailable): logged, tried again next tick.
OUTAGE_ERRORS: tuple[type[BaseException], ...] = (*DB_ERRORS, KafkaException, ConnectionError, OSError)


@dataclass(frozen=True)
class Backoff:
    """Waits between retries: ``first_s``, doubling up to ``max_s``; give up after ``give_up_s``
    seconds of failing (all in seconds)."""

    first_s: float = 0.2
    max_s: float = 5.0
    give_up_s: float = 180.0


@dataclass
class Health:
    """The state of each agent of a worker: ``running``, ``retrying`` (since, reason) or ``crashed`` (since,
    reason)."""

    agents: dict[str, dict[str, Any]] = field(default_factory=dict)

    def running(self, agent: str) -> None:
        """``agent`` processed a batch (or started): ``last_progress_at`` is now (epoch seconds; the
        supervisor's liveness probe, :func:`memwarden.ops.liveness.stall_reason`, reads it)."""
        self.agents[agent] = {"state": "running", "last_progress_at": time.time()}

    def crashed(self, agent: str, reason: str) -> None:
        """``agent`` failed on an error no retry mends: not ready from now on (its supervisor ends the process;
        until it does, ``/ready`` must not say the agent runs)."""
        self.agents[agent] = {"state": "crashed", "since": time.time(), "reason": reason[:300]}

    def retrying(self, agent: str, reason: str) -> None:
        """``agent`` is waiting for a dependency; the first failure's time is kept."""
        since = self.agents.get(agent, {}).get("since") or time.time()
        self.agents[agent] = {"state": "retrying", "since": since, "reason": reason[:300]}

    @property
    def ready(self) -> bool:
        """Every agent that reported is running."""
        return all(a["state"] == "running" for a in self.agents.values())


async def retry_batch(agent: str, step: Callable[[], Awaitable[T]], reconnect: Callable[[], Awaitable[None]],
                      health: Health | None = None, backoff: Backoff = Backoff()) -> T:
    """``await step()``; on a database error, wait, ``reconnect()`` and run ``step`` again from its
    start, until it succeeds or has failed for ``backoff.give_up_s`` seconds (then the last error
    propagates). ``health`` learns of the outage and of the recovery, and of any other error, which
    propagates at once (the agent crashes; ``health`` marks it ``crashed``)."""
    delay, started = backoff.first_s, time.monotonic()
    while True:
        try:
            out = await step()
        except asyncio.CancelledError:
            raise
        except DB_ERRORS as exc:
            if time.monotonic() - started > backoff.give_up_s:
                log.error("%s: database unavailable for %.0f s, giving up: %s", agent, backoff.give_up_s, exc)
                if health is not None:
                    health.crashed(agent, f"database unavailable for {backoff.give_up_s:.0f} s: {exc}")
                raise
            if health is not None:
                health.retrying(agent, f"database unavailable: {exc}")
            log.warning("%s: database unavailable (%s); the batch is retried in %.1f s", agent,
                        str(exc).splitlines()[0], delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, backoff.max_s)
            try:
                await reconnect()
            except DB_ERRORS:
                continue
            continue
        except Exception as exc:
            if health is not None:  # the agent dies with it: /ready says so at once, not "running"
                health.crashed(agent, f"{type(exc).__name__}: {exc}")
            raise
        if health is not None:
            health.running(agent)
        return out


def survive_outage(what: str, fun: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
    """A timer body that logs a database or broker outage and returns (the next tick tries again)
    instead of crashing the worker."""
    async def guarded() -> None:
        try:
            await fun()
        except OUTAGE_ERRORS as exc:
            log.warning("%s: skipped, a dependency is unavailable: %s", what, str(exc).splitlines()[0] if str(exc)
                        else type(exc).__name__)

    guarded.__name__ = getattr(fun, "__name__", what)
    guarded.__doc__ = fun.__doc__
    return guarded


async def close_quietly(conn: Any) -> None:
    """Close a connection that may already be broken."""
    try:
        await conn.close()
    except Exception:  # noqa: BLE001 - a broken connection may fail to close in any way
        return


__all__ = ["DB_ERRORS", "OUTAGE_ERRORS", "Backoff", "Health", "close_quietly", "retry_batch", "survive_outage"]
