"""Replay: rebuild every projection of a namespace from offset 0 of its ledger, into another
namespace, without touching the live one (SSGM Principle 4 and Eq. 7: the immutable log is the
source of truth; seed 004 "derived index: rebuilt from the ledger").

1. **Gate state** (decisions, memories, fact slots, claims, digests, quarantine, policy, the
   principal registry, grants): the commands are read in ledger order up to the cut and every
   *recorded* decision is folded into state by the gate processor itself
   (:meth:`GateProcessor.handle` with ``recorded=``): nothing is decided again.
2. **Profile state and vector index**: the recorded events are applied by the same projectors as
   live, the embeddings taken from the source's sealed vector cache (no re-embedding; a forgotten
   memory's vector does not open without its shredded key).

The target reads (never writes) the source's topics: its settings carry ``ledger_prefix``. Each stage
stores its offsets with its rows, so a replay killed part way resumes where it stopped. A cut
(``--until`` / ``--until-time``) gives the state as the ledger stood then (point-in-time). The two
stages over the ledger read (gate state, projections) are :mod:`memwarden.processors.replay_stages`.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable
from typing import Any

from memwarden.bootstrap import Container
from memwarden.errors import ValidationError
from memwarden.processors.forked import Forked
from memwarden.processors.forked import available as forked_available
from memwarden.processors.replay_ledger import EventsPart, LedgerIndex, read_events, read_ledger
from memwarden.processors.replay_stages import Progress, ReplayReport, batches, fold_gate, project_events
from memwarden.settings import Settings
from memwarden.stores import namespaces
from memwarden.stores.pg import migrate

#: The stage a replay's index builder ticks once the target schema exists and belongs to the source.
TARGET_READY = "target schema ready"


#: PostgreSQL's longest identifier, in bytes (longer ones are cut silently).
PG_IDENTIFIER_BYTES = 63


def target_settings(source: Settings, target_prefix: str) -> Settings:
    """The settings of the namespace a replay of ``source`` builds; raises ``ValidationError`` (field
    ``into``) when it would be the live namespace itself, also under another spelling that names the same
    database schema ("TRIAL" and "trial", "a.b" and "a_b": a replay into it wrote into the live schema), or
    when its schema name would pass PostgreSQL's 63-byte limit (silently cut, two names would share it)."""
    target = source.projections_of_ledger(target_prefix)
    ledger = source.model_copy(update={"topic_prefix": source.ledger_prefix or source.topic_prefix})
    if target_prefix in (source.topic_prefix, source.ledger_prefix) or target.pg_schema in (source.pg_schema,
                                                                                            ledger.pg_schema):
        raise ValidationError("into", f"{target_prefix!r} is the source namespace (its database schema is "
                              f"{target.pg_schema}): a replay builds aside")
    if len(target.pg_schema.encode()) > PG_IDENTIFIER_BYTES:
        raise ValidationError("into", f"{target_prefix!r} is too long: its schema name {target.pg_schema!r} "
                              f"passes PostgreSQL's {PG_IDENTIFIER_BYTES}-byte limit")
    return target


async def _build_index(source: Settings, target: Settings, cut: dict[int, int], point_in_time: bool,
                       progress: Progress, inbox: Callable[[], Any]) -> tuple[int, int, dict[str, float]]:
    report = ReplayReport(source.topic_prefix, target.topic_prefix, cut, point_in_time)
    started = time.perf_counter()
    stages: dict[str, float] = {}

    def lap(stage: str) -> None:
        stages[stage] = round(time.perf_counter() - started - sum(stages.values()), 3)

    migrate(target)  # while the parent reads the ledger
    namespaces.claim(target, source, cut if point_in_time else None)
    progress(TARGET_READY, 1, 1)
    lap("migrate_s")
    container = Container(target)
    try:
        await asyncio.to_thread(container.index)
        lap("create_s")
        part: EventsPart = await asyncio.to_thread(inbox)
        lap("wait_ledger_s")
        await project_events(container, source, part.ledger(container.kek, container.codec), cut, point_in_time,
                             report, progress, profile=False)
        lap("project_s")
    finally:
        container.close()
    lap("close_s")
    return report.embedded, report.reused, stages


def build_index(source: Settings, target: Settings, cut: dict[int, int], point_in_time: bool, progress: Progress,
                inbox: Callable[[], Any]) -> tuple[int, int, dict[str, float]]:
    """The vector-index line of a replay on its own (in a forked child: :func:`run_replay`): create
    the target schema (then tick :data:`TARGET_READY`) and index, receive the :class:`EventsPart` of
    the ledger from ``inbox`` and project the events in the cut; returns (texts embedded, vectors
    reused, seconds by stage)."""
    return asyncio.run(_build_index(source, target, cut, point_in_time, progress, inbox))


async def replay(source: Settings, target: Settings, cut: dict[int, int], point_in_time: bool,
                 progress: Progress | None = None, *, ledger: LedgerIndex | None = None,
                 index_builder: Forked | None = None) -> ReplayReport:
    """Rebuild ``target`` (a namespace over ``source``'s ledger) from offset 0 up to ``cut``.

    ``ledger`` is the ledger already read (else it is read here). With ``index_builder`` (a child
    that creates the target schema and builds the vector index: :func:`run_replay`) this process
    waits for the schema, then folds the gate state and the profile rows while the child builds the
    index; without it, all three run here. Resumes a replay
    of the same source into the same target; raises ``ValidationError`` when the target already
    holds projections of another ledger, ``StackUnavailable`` when Kafka or Postgres do not answer."""
    report = ReplayReport(source.topic_prefix, target.topic_prefix, dict(cut), point_in_time)
    started = time.perf_counter()
    stages: dict[str, float] = {}

    def lap(stage: str) -> None:
        stages[stage] = round(time.perf_counter() - started - sum(stages.values()), 3)

    container = Container(target)
    tick = progress or (lambda stage, done, total: None)
    building: asyncio.Task[Any] | None = None
    try:
        making_index = None
        if ledger is None:
            migrate(target)
            namespaces.claim(target, source, cut if point_in_time else None)
            # the creation of the target index overlaps the ledger read
            making_index = asyncio.create_task(asyncio.to_thread(container.index))
            ledger = await asyncio.to_thread(read_ledger, target, container.codec, container.kek, cut)
            lap("read_s")
        if index_builder is not None:
            await index_builder.until(TARGET_READY, tick)
            lap("wait_schema_s")
            building = asyncio.create_task(index_builder.result(tick))  # relays its progress meanwhile
        await fold_gate(container, ledger, cut, report, tick)
        lap("fold_s")
        if making_index is not None:
            await making_index
        await project_events(container, source, ledger, cut, point_in_time, report, tick,
                             vectors=index_builder is None)
        lap("project_s")
        if building is not None:
            report.embedded, report.reused, report.extra["index_stages"] = await building
            lap("index_wait_s")
    finally:
        if building is not None and not building.done():  # this side failed: the child goes too
            index_builder.stop()  # type: ignore[union-attr]
            await asyncio.gather(building, return_exceptions=True)
        container.close()
    report.seconds = time.perf_counter() - started
    lap("close_s")
    report.extra["stages"] = stages
    return report


async def replay_projections(source: Settings, target: Settings, events_cut: dict[int, int],
                             progress: Progress | None = None) -> ReplayReport:
    """Rebuild only the profile rows and the vector index of ``target`` from the events before
    ``events_cut`` (exclusive ends per events partition) of ``source``'s ledger: the state the
    ledger implies for what the live projectors have applied (reconciliation)."""
    report = ReplayReport(source.topic_prefix, target.topic_prefix, dict(events_cut), False)
    started = time.perf_counter()
    migrate(target)
    namespaces.claim(target, source)
    container = Container(target)
    try:
        index = await asyncio.to_thread(read_events, target, container.codec, container.kek, events_cut)
        await project_events(container, source, index, None, False, report, progress or (lambda *_: None))
    finally:
        container.close()
    report.seconds = time.perf_counter() - started
    return report


def run_replay(source: Settings, target: Settings, cut: dict[int, int], point_in_time: bool,
               progress: Progress | None = None, *, parallel: bool = True) -> ReplayReport:
    """:func:`replay` on a fresh event loop (CLI and evaluations).

    With ``parallel`` (and where a process can fork) a forked child
    (:mod:`memwarden.processors.forked`) builds the vector index (:func:`build_index`): it creates
    the index while this process reads the ledger, receives the events part of it, and projects it
    while this process folds the gate state and the profile rows; the two use both cores. The child
    is forked before this process opens an event loop, a Kafka client or a database connection."""
    # no cyclic garbage collection while replaying: the ledger read is held anyway, and a full
    # collection walks the caller's whole heap (an evaluation's is large) again and again
    namespaces.check_cut(target, cut if point_in_time else None)  # before a child is forked to build anything
    collecting = gc.isenabled()
    gc.disable()
    try:
        if not (parallel and forked_available()):
            return asyncio.run(replay(source, target, cut, point_in_time, progress))
        return _run_parallel(source, target, cut, point_in_time, progress)
    finally:
        if collecting:
            gc.enable()


def _run_parallel(source: Settings, target: Settings, cut: dict[int, int], point_in_time: bool,
                  progress: Progress | None) -> ReplayReport:
    started = time.perf_counter()
    reader = Container(target)
    reader.codec  # noqa: B018  # built once, before the fork: the child inherits it (~25 ms of schema parsing)
    builder = Forked(build_index, source, target, dict(cut), point_in_time, name="memwarden-replay-index")
    try:
        try:
            ledger = read_ledger(target, reader.codec, reader.kek, cut)
        finally:
            reader.close()
        builder.send(EventsPart.of(ledger))
        read_s = time.perf_counter() - started
        report = asyncio.run(replay(source, target, cut, point_in_time, progress, ledger=ledger,
                                    index_builder=builder))
    finally:
        builder.stop()
    report.seconds = time.perf_counter() - started
    report.extra["stages"] = {"read_s": round(read_s, 3), **report.extra["stages"]}
    return report


__all__ = ["ReplayReport", "batches", "build_index", "replay", "replay_projections", "run_replay", "target_settings"]
