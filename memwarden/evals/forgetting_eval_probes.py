"""The readability probes of ``memwarden eval forgetting`` (:mod:`memwarden.evals.forgetting_eval`):
which retrieval modes still return a memory to its owner, rounds of probes until a forget's memories
are unreadable, the broker timestamp at which a forget was published, and the percentiles reported."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from memwarden.evals.forgetting_eval_plan import MODES, PROBE_PAUSE_S, UNREADABLE_TIMEOUT_S, Mem
from memwarden.settings import Settings


def modes_returning(client: Any, m: Mem) -> list[str]:
    """The retrieval modes in which a recall by the owner, with the memory's own text, returns it."""
    return [mode for mode in MODES if _returned(client, m, mode)]


def _returned(client: Any, m: Mem, mode: str) -> bool:
    from memwarden.commands.readmodel.query import MAX_K

    found = client.recall(m.owner, m.text, k=MAX_K, mode=mode, freshness=False, include_untrusted=True)
    return any(x.memory_id == m.memory_id for x in found)


def _probes(mems: Sequence[Mem]) -> list[tuple[str, str, list[Mem]]]:
    """``(owner, query, memories)``: the memories grouped by owner, each group's query their own
    texts joined (at most ``MAX_QUERY_CHARS``). An owner's readable memories are fewer than ``MAX_K``,
    so a dense or hybrid recall returns every one of them that is readable, and a lexical one every
    one sharing a term with the query: one probe per group per mode says whether any is readable."""
    from memwarden.commands.readmodel.query import MAX_QUERY_CHARS

    out: list[tuple[str, str, list[Mem]]] = []
    for owner in dict.fromkeys(m.owner for m in mems):
        group: list[Mem] = []
        for m in (x for x in mems if x.owner == owner):
            if group and sum(len(x.text) + 1 for x in group) + len(m.text) > MAX_QUERY_CHARS:
                out.append((owner, " ".join(x.text for x in group), group))
                group = []
            group.append(m)
        out.append((owner, " ".join(x.text for x in group), group))
    return out


def still_readable(client: Any, mems: Sequence[Mem]) -> list[Mem]:
    """The memories of ``mems`` that some mode still returns to their owner, queried with their own
    words (:func:`_probes`; a mode is skipped once every memory of a group is known readable)."""
    from memwarden.commands.readmodel.query import MAX_K

    out: list[Mem] = []
    for owner, query, group in _probes(mems):
        unseen = {m.memory_id: m for m in group}
        for mode in MODES:
            found = client.recall(owner, query, k=MAX_K, mode=mode, freshness=False, include_untrusted=True)
            for x in found:
                if unseen.pop(x.memory_id, None) is not None:
                    out.append(next(m for m in group if m.memory_id == x.memory_id))
            if not unseen:
                break
    return out


def until_unreadable(client: Any, mems: Sequence[Mem], started: float,
                     timeout_s: float = UNREADABLE_TIMEOUT_S) -> tuple[float | None, list[Mem]]:
    """Probe ``mems`` in rounds (:func:`still_readable`) until no mode returns any of them; returns
    the wall clock (epoch ms) at the end of the round that found the last one gone, or ``None`` and
    the memories still readable ``timeout_s`` after ``started`` (monotonic)."""
    pending = list(mems)
    while True:
        pending = still_readable(client, pending)
        if not pending:
            return time.time() * 1000.0, []
        if time.monotonic() - started > timeout_s:
            return None, pending
        time.sleep(PROBE_PAUSE_S)


def published_ms(settings: Settings, position: dict[str, Any]) -> float | None:
    """The broker timestamp (the producer's create time: when it was published) of the command at
    ``position`` (``{topic, partition, offset}``, as a decision gives it), epoch ms."""
    from memwarden.stores.ledger import read

    p, o = int(position["partition"]), int(position["offset"])
    for rec in read(settings, "commands", {p: o + 1}, {p: o}):
        return float(rec.timestamp_ms)
    return None


def percentiles(values: Sequence[float]) -> dict[str, float | int | None]:
    """p50 / p99 (nearest rank), max and n of ``values`` in ms."""
    if not values:
        return {"p50": None, "p99": None, "max": None, "n": 0}
    ordered = sorted(values)

    def rank(q: float) -> float:
        return round(ordered[max(0, -(-int(q * 100) * len(ordered) // 100) - 1)], 1)

    return {"p50": rank(0.50), "p99": rank(0.99), "max": round(ordered[-1], 1), "n": len(ordered)}
