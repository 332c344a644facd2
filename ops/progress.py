"""Projection lag: how far each stage is behind the end of the topic it consumes, in records."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg
from confluent_kafka import KafkaException

from memwarden.errors import StackUnavailable
from memwarden.settings import Settings
from memwarden.stores.ledger import end_offsets, read
from memwarden.stores.offsets import consumer_offsets
from memwarden.stores.pg import connect


def lag(settings: Settings, index_label: str = "edge") -> dict[str, int]:
    """Records not yet processed per stage: ``gate`` (commands), ``profile`` and ``index:<label>``
    (events). The gate's offsets are stored after its outputs are acknowledged, so a gate lag of 0
    means every event it owes is on the events topic.

    The stored offsets are read *before* the topics' end offsets: read after, a gate that published
    and stored its offsets in between would show a gate lag of 0 against end offsets of the events
    topic that do not yet hold what it published, and the projections would look caught up with
    events they have not seen."""
    stages = {"gate": "commands", "profile": "events", f"index:{index_label}": "events"}
    with connect(settings) as conn:
        done = consumer_offsets(conn)
    ends = {t: end_offsets(settings, t) for t in set(stages.values())}
    return {stage: sum(max(0, high - done.get(stage, {}).get(p, 0)) for p, high in ends[topic].items())
            for stage, topic in stages.items()}


def backlog(settings: Settings, index_label: str = "edge", timeout_s: float = 3.0) -> dict[str, Any]:
    """The lag per stage (:func:`lag`) and ``oldest_undecided_s``: the age in seconds of the oldest
    command the gate has not decided (its broker timestamp; ``None`` when none waits). Raises
    ``StackUnavailable`` or ``psycopg.OperationalError`` when the broker or the database is down."""
    current = lag(settings, index_label)
    oldest: float | None = None
    if current.get("gate"):
        with connect(settings) as conn:
            done = consumer_offsets(conn).get("gate", {})
        ends = end_offsets(settings, "commands", timeout_s)
        waiting = {p: done.get(p, 0) for p, end in ends.items() if done.get(p, 0) < end}
        stamps = [r.timestamp_ms for r in read(settings, "commands", {p: o + 1 for p, o in waiting.items()}, waiting,
                                               timeout_s)]
        if stamps:
            oldest = max(0.0, time.time() - min(stamps) / 1000.0)
    return {"lag": current, "oldest_undecided_s": oldest}


def wait_caught_up(settings: Settings, index_label: str = "edge", timeout_s: float = 600.0,
                   alive: Callable[[], bool] | None = None) -> dict[str, int]:
    """Poll :func:`lag` until every stage is at 0 (gate first, then projections).

    Returns the final lag; raises ``StackUnavailable`` after ``timeout_s`` seconds, or at once when
    ``alive`` (the worker's liveness check) turns false. A broker or database that does not answer
    (restarting) is waited for within the same timeout, never a traceback.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        if alive is not None and not alive():
            raise StackUnavailable("the worker exited while projections were behind; see its log")
        try:
            current = lag(settings, index_label)
        except (KafkaException, StackUnavailable, psycopg.OperationalError) as exc:  # a dependency restarting
            if time.monotonic() > deadline:
                raise StackUnavailable(f"lag unknown after {timeout_s}s, a dependency is down: {exc}") from None
            time.sleep(1.0)
            continue
        if not any(current.values()):
            return current
        if time.monotonic() > deadline:
            raise StackUnavailable(f"projections still behind after {timeout_s}s: {current}")
        time.sleep(0.2)
