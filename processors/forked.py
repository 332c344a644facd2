"""One piece of CPU-bound work in a forked child process, its progress and result sent back through a pipe.

Why a process: the replay's two heavy lines of work (folding the gate state, building the vector
index) are Python and Qdrant Edge calls, and Edge holds the GIL while it writes; threads would take
turns on one core. A forked child starts with every module already imported (a spawned one would
pay about 0.4 s of imports), so a replay uses both cores from its first millisecond.

Rules the caller keeps: fork before any event loop, Kafka client or database connection exists in
the parent (the child opens its own), and only where the ``fork`` start method exists (Linux;
:func:`available`). The child never writes to the terminal.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import pickle
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from memwarden.errors import MemwardenError

#: Called with (stage, done, total).
Tick = Callable[[str, int, int], None]


class ChildFailed(MemwardenError):
    """The child process died without a result (killed, or an error that could not be sent back)."""


def available() -> bool:
    """True where a child can be forked (the ``fork`` start method exists)."""
    return "fork" in multiprocessing.get_all_start_methods()


def _portable(exc: BaseException) -> BaseException:
    """``exc`` when it survives pickling, else a :class:`ChildFailed` naming it."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # an exception whose constructor takes other arguments than its args
        return ChildFailed(f"{type(exc).__name__}: {exc}")


def _child(fn: Callable[..., Any], args: tuple[Any, ...], out: Connection, inbox: Connection) -> None:
    def tick(stage: str, done: int, total: int) -> None:
        out.send(("tick", (stage, done, total)))

    try:
        out.send(("done", fn(*args, tick, inbox.recv)))
    except BaseException as exc:
        out.send(("error", _portable(exc)))
        raise SystemExit(1) from None
    finally:
        out.close()


class Forked:
    """``fn(*args, tick, inbox)`` running in a forked child: ``fn`` is called with the arguments, a
    :data:`Tick` and ``inbox`` (a call that blocks until the parent :meth:`send` s the next object;
    ``EOFError`` once the parent is gone), and returns a picklable result. :meth:`result` relays the
    ticks and returns the result, or raises what ``fn`` raised (:class:`ChildFailed` when the child
    died silently). :meth:`stop` kills the child (idempotent)."""

    def __init__(self, fn: Callable[..., Any], *args: Any, name: str = "memwarden-child") -> None:
        context = multiprocessing.get_context("fork")
        self._recv, send = context.Pipe(duplex=False)
        inbox, self._send = context.Pipe(duplex=False)
        self._process = context.Process(target=_child, args=(fn, args, send, inbox), name=name, daemon=True)
        self._process.start()
        send.close()
        inbox.close()

    def send(self, obj: Any) -> None:
        """Pass ``obj`` (picklable) to the child's ``inbox``."""
        self._send.send(obj)

    async def _next(self) -> tuple[str, Any]:
        try:
            kind, value = await asyncio.to_thread(self._recv.recv)
        except EOFError:
            await asyncio.to_thread(self._process.join)
            raise ChildFailed(f"{self._process.name} exited with code {self._process.exitcode} without"
                              " a result") from None
        if kind == "error":
            raise value
        return kind, value

    async def until(self, stage: str, tick: Tick | None = None) -> None:
        """Wait (without blocking the event loop) until the child ticks ``stage``; relay the ticks
        before it to ``tick``. Raises what the child raised, or :class:`ChildFailed` when it ended
        first."""
        while True:
            kind, value = await self._next()
            if kind == "tick" and value[0] == stage:
                return
            if kind == "tick" and tick is not None:
                tick(*value)
            if kind == "done":
                raise ChildFailed(f"{self._process.name} ended before {stage!r}")

    async def result(self, tick: Tick | None = None) -> Any:
        """Wait for the child (without blocking the event loop); relay its ticks to ``tick``."""
        try:
            while True:
                kind, value = await self._next()
                if kind == "done":
                    return value
                if tick is not None:
                    tick(*value)
        finally:
            await asyncio.to_thread(self._process.join, 5.0)
            self.stop()

    def stop(self) -> None:
        """Kill the child if it still runs, and release the pipe."""
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._recv.close()
        self._send.close()


__all__ = ["ChildFailed", "Forked", "Tick", "available"]
