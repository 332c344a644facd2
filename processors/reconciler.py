"""Reconciliation (SSGM Eq. 7, Principle 4): compare each live projection with the state the ledger
implies and repair every divergence from the ledger.

One run: the projectors are paused (``lock``); the events they have applied (their stored offsets)
are replayed into a scratch namespace (:func:`~memwarden.processors.replay.replay_projections`,
vectors from the sealed cache); each ``memory_versions`` row, each last use and each index point is
compared (:mod:`memwarden.projections.reconcile_diff`); what diverges is re-applied from the scratch
copy (rows copied, points upserted, extras deleted); the scratch namespace is dropped and a
``ReconciliationRun`` (checked, diverged by kind, repaired, drift δ before repair, duration) is
appended to the ledger's events topic. The projectors resume. The run costs a replay of the applied
events (about 1 ms per version on 2 cores); it runs in the process that owns the index.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memwarden.bootstrap import Container, drop_projections
from memwarden.commands.ledger import Outbound
from memwarden.errors import ValidationError
from memwarden.processors.replay import replay_projections
from memwarden.projections.reconcile_diff import Divergences, diff_points, diff_rows, diff_uses
from memwarden.projections.vector_index import IndexPoint, VectorIndex
from memwarden.stores import namespaces
from memwarden.stores.offsets import load_offsets
from memwarden.stores.profile_repair import repair_rows, rows_by_command, uses_by_memory

Publish = Callable[[Sequence[Outbound]], Awaitable[None]]


def _points(index: VectorIndex) -> dict[str, IndexPoint]:
    return {p.point_id: p for p in index.scan()}


@dataclass(frozen=True)
class Comparison:
    """A live projection against the expected one: the divergences, how many versions the expected
    state holds (|K| of the drift), and its points by id (what a repair writes back)."""

    divergences: Divergences
    versions: int
    expected_points: dict[str, IndexPoint]


async def compare(expected: Container, live: Container) -> Comparison:
    """Every ``memory_versions`` row, last use and index point of ``live`` against ``expected``
    (:mod:`memwarden.projections.reconcile_diff`): what a reconciliation repairs and what the drift
    evaluation measures."""
    out = Divergences()
    a, b = await expected.pg(), await live.pg()
    try:
        expected_rows = await rows_by_command(a)
        diff_rows(expected_rows, await rows_by_command(b), out)
        diff_uses(await uses_by_memory(a), await uses_by_memory(b), out)
    finally:
        await a.close()
        await b.close()
    want = await asyncio.to_thread(_points, expected.index())
    diff_points(want, await asyncio.to_thread(_points, live.index()), out)
    return Comparison(out, len(expected_rows), want)


async def applied_offsets(container: Container) -> dict[int, int]:
    """The next offset per events partition the profile projector has applied (0 for untouched ones)."""
    conn = await container.pg()
    try:
        async with conn.cursor() as cur:
            stored = await load_offsets(cur, "profile", container.settings.topic("events"), lock=False)
        await conn.commit()
    finally:
        await conn.close()
    return stored


async def reconcile(container: Container, lock: AbstractAsyncContextManager[Any] | None = None,
                    publish: Publish | None = None, repair: bool = True) -> dict[str, Any]:
    """One reconciliation of ``container``'s namespace; returns the ``ReconciliationRun`` record
    (also published when ``publish`` is given). ``repair=False`` only measures. Raises
    ``StackUnavailable`` when Kafka or Postgres fail, ``ValidationError`` for a point-in-time namespace."""
    s = container.settings
    if not s.owns_ledger and await asyncio.to_thread(namespaces.cut_of, s) is not None:
        raise ValidationError("namespace", f"{s.topic_prefix} is a point-in-time replay: reconciling it with the "
                              "ledger would carry it past its cut (it wrote later commands into it)")
    scratch = s.projections_of_ledger(f"{s.topic_prefix}.reconcile-{uuid.uuid4().hex[:8]}")
    started, t0 = datetime.now(UTC), time.perf_counter()
    async with lock or nullcontext():
        applied = await applied_offsets(container)
        await replay_projections(s, scratch, applied)
        expected = Container(scratch)
        try:
            found = await compare(expected, container)
            out = found.divergences
            repaired = await _repair(found, scratch.pg_schema, container) if repair else 0
        finally:
            expected.close()
            drop_projections(scratch)
    run = {"run_id": str(uuid.uuid4()), "namespace": s.topic_prefix, "started_at": started,
           "checked_versions": found.versions, "checked_points": len(found.expected_points), "diverged": out.counts(),
           "repaired": repaired, "drift": out.drift(found.versions),
           "duration_ms": int((time.perf_counter() - t0) * 1000)}
    if publish is not None:
        await publish([Outbound("events", b"reconciliation", container.codec.encode("ReconciliationRun", run))])
    return run


async def _repair(found: Comparison, scratch_schema: str, container: Container) -> int:
    out, want, index = found.divergences, found.expected_points, container.index()
    replace = [c for kind, ids in out.rows.items() if kind != "resurrected" for c in ids]
    remove = out.rows.get("resurrected", [])
    live = await container.pg()
    try:
        written = await repair_rows(live, scratch_schema, replace, remove, out.uses)
    finally:
        await live.close()
    refresh = [want[p] for kind in ("lost_point", "stale_payload", "wrong_vector") for p in out.points.get(kind, [])]
    extra = out.points.get("extra_point", [])
    if refresh:
        await asyncio.to_thread(index.upsert, refresh)
    if extra:
        await asyncio.to_thread(index.delete_points, extra)
    return written + len(refresh) + len(extra)
