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
(``--until`` / ``--until-time``) gives the state as the ledger stood then (point-in-time).
"""

from __future__ import annotations

import asyncio
import gc
import heapq
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from memwarden.bootstrap import Container
from memwarden.epoch import to_ms
from memwarden.errors import ValidationError
from memwarden.processors.forked import Forked
from memwarden.processors.forked import available as forked_available
from memwarden.processors.gate_io import Inbound
from memwarden.processors.gate_processor import GateProcessor
from memwarden.processors.replay_ledger import DECISION_EVENTS, EventsPart, LedgerIndex, read_events, read_ledger
from memwarden.projections.events_in import EventIn, open_events
from memwarden.projections.index_projector import EmbeddingProjector
from memwarden.projections.profile_projector import ProfileProjector
from memwarden.settings import Settings
from memwarden.stores import namespaces
from memwarden.stores.offsets import load_offsets
from memwarden.stores.pg import connect_async, migrate

BATCH = 2048
#: The stage a replay's index builder ticks once the target schema exists and belongs to the source.
TARGET_READY = "target schema ready"
T = TypeVar("T")
#: Called with (stage, records done, records in the stage).
Progress = Callable[[str, int, int], None]


@dataclass
class ReplayReport:
    """What a replay did: source and target namespaces, the cut (exclusive ends per commands
    partition) and whether it is point-in-time, commands folded (and undecided ones left out),
    events applied, texts embedded vs vectors reused, seconds."""

    source: str
    target: str
    cut: dict[int, int]
    point_in_time: bool
    commands: int = 0
    undecided: int = 0
    events: int = 0
    embedded: int = 0
    reused: int = 0
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def records_per_s(self) -> float:
        """Ledger records (commands and events) replayed per second."""
        return (self.commands + self.events) / self.seconds if self.seconds else 0.0

    def to_json(self) -> dict[str, Any]:
        """Plain dict for ``--json``."""
        return {"source": self.source, "target": self.target, "cut": {str(k): v for k, v in self.cut.items()},
                "point_in_time": self.point_in_time, "commands": self.commands, "undecided": self.undecided,
                "events": self.events, "embedded": self.embedded, "reused": self.reused,
                "seconds": round(self.seconds, 3), "records_per_s": round(self.records_per_s, 1), **self.extra}


def batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of at most ``size``."""
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def target_settings(source: Settings, target_prefix: str) -> Settings:
    """The settings of the namespace a replay of ``source`` builds; raises ``ValidationError`` when
    it would be the live namespace itself."""
    if target_prefix in (source.topic_prefix, source.ledger_prefix):
        raise ValidationError("into", f"{target_prefix!r} is the source namespace: a replay builds aside")
    return source.projections_of_ledger(target_prefix)


async def _stored_offsets(container: Container, consumer: str, logical: str) -> dict[int, int]:
    conn = await container.pg()
    try:
        async with conn.cursor() as cur:
            return await load_offsets(cur, consumer, container.settings.topic(logical), lock=False)
    finally:
        await conn.close()


def decision_order(index: LedgerIndex) -> list[Any]:
    """The commands in the order the gate decided them: each partition in offset order, the
    partitions merged by the recorded ``decided_at`` (ties by partition, then offset; commands not
    decided yet last). A forget by selector or a hold lift changes memories of other partitions, so
    its recorded outcome folds onto the state as it stood when it was decided, not after a whole
    partition."""
    last = datetime.max.replace(tzinfo=UTC)
    by_partition: dict[int, list[Any]] = {}
    for r in index.commands:
        by_partition.setdefault(r.position.partition, []).append(r)

    def when(r: Any) -> tuple[datetime, int, int]:
        rec = index.recorded.get(r.position)
        return (rec.decision.decided_at if rec is not None else last, r.position.partition, r.position.offset)

    return list(heapq.merge(*(by_partition[p] for p in sorted(by_partition)), key=when))


async def _fold_gate(container: Container, index: LedgerIndex, cut: Mapping[int, int], report: ReplayReport,
                     progress: Progress) -> None:
    """Fold the recorded decisions of the commands not folded yet (a resumed replay, or the catch-up
    of an in-place rebuild, starts at the stored offsets); counts them in ``report.commands``."""
    s = container.settings
    folded = await _stored_offsets(container, "gate", "commands")
    conn = await container.pg()
    processor = GateProcessor(container.codec, index.keys, conn,  # type: ignore[arg-type]
                              container.limits, container.trust_anchor, container.digest_key)
    total = len(index.commands)
    done = 0
    stopped: set[int] = set()
    try:
        for chunk in batches(decision_order(index), BATCH):
            items = []
            for r in chunk:
                if r.position.offset < folded.get(r.position.partition, 0):
                    continue
                if r.position.partition in stopped or r.position not in index.recorded:
                    stopped.add(r.position.partition)  # the gate had not decided it yet: the partition ends here
                    report.undecided += 1
                    continue
                items.append(Inbound(r.key, r.value, r.position))
            if items:
                await processor.handle(items, recorded=index.recorded, offsets=("gate", s.topic("commands")))
            report.commands += len(items)
            done += len(chunk)
            progress("gate state", done, total)
    finally:
        await conn.close()


def _events_in_cut(events: Iterable[tuple[Any, str, dict[str, Any]]], container: Container,
                   cut: Mapping[int, int] | None, until_ms: int | None) -> Iterator[tuple[Any, str, dict[str, Any]]]:
    """Events of the decisions before the cut (every event when ``cut`` is ``None``); uses
    (``MemoryUsed``) up to ``until_ms``; and, as the live projectors get them, the records that tie
    to no decision (``ReconciliationRun``, ``ErasureReceipted``): they change no projection, but the
    projectors' offsets pass them, as live (an in-place switch would otherwise wait for them forever).
    Undecodable records are left out, as live."""
    commands = container.settings.topic("commands")
    for r, name, rec in events:
        if r.value is None or not name:
            continue
        if cut is None:
            yield r, name, rec
            continue
        if name == "MemoryUsed":
            if until_ms is None or all(to_ms(u["used_at"]) <= until_ms for u in rec["uses"]):
                yield r, name, rec
            continue
        pos = rec.get("position")
        tied = pos is not None or name in DECISION_EVENTS
        if not tied or (pos and pos.get("topic") == commands and pos.get("offset", 0) < cut.get(pos["partition"], 0)):
            yield r, name, rec


def _latest_uses(events: Iterable[tuple[Any, str, dict[str, Any]]]) -> dict[str, int]:
    """The latest use (epoch ms) of each memory over the ``MemoryUsed`` events of ``events``."""
    latest: dict[str, int] = {}
    for _, name, rec in events:
        if name == "MemoryUsed":
            for use in rec["uses"]:
                latest[use["memory_id"]] = max(latest.get(use["memory_id"], 0), to_ms(use["used_at"]))
    return latest


async def _project(container: Container, source: Settings, index: LedgerIndex, cut: Mapping[int, int] | None,
                   point_in_time: bool, report: ReplayReport, progress: Progress, *, profile: bool = True,
                   vectors: bool = True) -> None:
    """Apply the events in the cut to the profile rows (``profile``) and/or the vector index
    (``vectors``); counts the events applied when ``profile`` and the texts embedded or reused when
    ``vectors``."""
    s = container.settings
    events_topic = s.topic("events")
    conns = []
    appliers = []
    try:
        if profile:
            conns.append(await container.pg())
            appliers.append(ProfileProjector(conns[-1], events_topic).apply)
        projector = None
        until_ms = to_ms(index.last_decided) if point_in_time and index.last_decided else None
        applied = await _stored_offsets(container, "profile", "events") if profile else {}
        if vectors:
            conns += [await container.pg(), await connect_async(source)]
            # apart from the profile projection, the index cannot read the uses from its rows
            floor = None if profile else _latest_uses(_events_in_cut(index.events, container, cut, until_ms))
            projector = EmbeddingProjector(container.lazy_embedder(), container.index(), conns[-2], events_topic,
                                           f"index:{container.index_label}", cache_from=conns[-1], uses_floor=floor)
            appliers.append(projector.apply)
        total = len(index.events)
        done = 0
        for chunk in batches(index.events, BATCH):
            done += len(chunk)
            kept = list(_events_in_cut(chunk, container, cut, until_ms))
            if kept:
                decoded = await open_events(index.keys,  # type: ignore[arg-type]
                                            [EventIn(name, rec, r.position) for r, name, rec in kept])
                for apply in appliers:
                    await apply(decoded)
                report.events += sum(r.position.offset >= applied.get(r.position.partition, 0)
                                     for r, _, _ in kept) if profile else 0
            progress("projections" if profile else "vector index", done, total)
        # no HNSW build here: the live projector never builds one either (Edge has no background
        # optimizer), and an approximate index next to an exact one would rank differently
        if projector is not None:
            report.embedded, report.reused = projector.embedded, projector.reused
    finally:
        for conn in conns:
            await conn.close()


async def _build_index(source: Settings, target: Settings, cut: dict[int, int], point_in_time: bool,
                       progress: Progress, inbox: Callable[[], Any]) -> tuple[int, int, dict[str, float]]:
    report = ReplayReport(source.topic_prefix, target.topic_prefix, cut, point_in_time)
    started = time.perf_counter()
    stages: dict[str, float] = {}

    def lap(stage: str) -> None:
        stages[stage] = round(time.perf_counter() - started - sum(stages.values()), 3)

    migrate(target)  # while the parent reads the ledger
    namespaces.claim(target, source)
    progress(TARGET_READY, 1, 1)
    lap("migrate_s")
    container = Container(target)
    try:
        await asyncio.to_thread(container.index)
        lap("create_s")
        part: EventsPart = await asyncio.to_thread(inbox)
        lap("wait_ledger_s")
        await _project(container, source, part.ledger(container.kek, container.codec), cut, point_in_time, report,
                       progress, profile=False)
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
            namespaces.claim(target, source)
            # the creation of the target index overlaps the ledger read
            making_index = asyncio.create_task(asyncio.to_thread(container.index))
            ledger = await asyncio.to_thread(read_ledger, target, container.codec, container.kek, cut)
            lap("read_s")
        if index_builder is not None:
            await index_builder.until(TARGET_READY, tick)
            lap("wait_schema_s")
            building = asyncio.create_task(index_builder.result(tick))  # relays its progress meanwhile
        await _fold_gate(container, ledger, cut, report, tick)
        lap("fold_s")
        if making_index is not None:
            await making_index
        await _project(container, source, ledger, cut, point_in_time, report, tick, vectors=index_builder is None)
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
        await _project(container, source, index, None, False, report, progress or (lambda *_: None))
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
